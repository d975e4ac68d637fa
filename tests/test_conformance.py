"""A fresh build of the tests' own spec-shaped site against the spec's tables
(../shared/spec/service-spec.md). tests/fixtures/spec_site/ has exactly the spec's six
documents, six FAQ entries and brand; the owner's site_data/ is checked for what holds
on any site in test_any_site.py.

Expected values are written out from the spec here, not imported from the code that
renders them, so a renderer that drifts from the spec fails.
"""

from __future__ import annotations

import json
import re
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import llms_txt
import pytest
from openapi_spec_validator import validate as validate_openapi

from agent_contract import models
from agent_contract.hashing import canonical_json
from tests import sites
from tests.conftest import SPEC_SITE, TEST_BASE_URL, run_cli

DOCUMENT_IDS = [
    "site",
    "how-it-works",
    "agent-experience",
    "llm-search-console",
    "compatibility",
    "developer-guide",
]
FAQ_IDS = [
    "q01-difference",
    "q02-endpoints",
    "q03-protection",
    "q04-protocols",
    "q05-insights",
    "q06-architecture",
]
SPEC_PATHS = {
    "/.well-known/service.json": "application/json",
    "/api/v1/content/index.json": "application/json",
    "/api/v1/content/search-index.json": "application/json",
    **{f"/api/v1/content/{doc}.json": "application/json" for doc in DOCUMENT_IDS},
    **{f"/api/v1/faq/{faq}.json": "application/json" for faq in FAQ_IDS},
    "/api/v1/architecture.json": "application/json",
    "/api/v1/on-site-agent.json": "application/json",
    "/api/v1/mcp.json": "application/json",
    "/.well-known/mcp.json": "application/json",
    "/api/v1/openapi.json": "application/json",
    "/llms.txt": "text/plain",
    "/llms-full.txt": "text/plain",
    "/errors/404.json": "application/json",
}
# Issue 14's extensions, beside the spec's files (which stay exactly as they are).
EXTENSION_PATHS = {
    **{f"/api/v1/content/{doc}.md": "text/markdown" for doc in DOCUMENT_IDS},
    **{f"/api/v1/faq/{faq}.md": "text/markdown" for faq in FAQ_IDS},
    "/api/v1/changes.json": "application/json",
    "/.well-known/api-catalog": "application/linkset+json",
    "/sitemap.xml": "application/xml",
    "/robots.txt": "text/plain",
    "/llms/documents-1.txt": "text/plain",  # llms.txt's parts (one each on a small site)
    "/llms/faq-1.txt": "text/plain",
    # Issue 26: the Agent Skill and its discovery index (the RFC's v0.2.0 location), and
    # both again at v0.1.0's for older clients.
    "/.well-known/agent-skills/index.json": "application/json",
    "/.well-known/agent-skills/service/SKILL.md": "text/markdown",
    "/.well-known/skills/index.json": "application/json",
    "/.well-known/skills/service/SKILL.md": "text/markdown",
    "/api/v1/search/terms.json": "application/json",  # the sharded search index (issue 25)
}
#: The sharded search index's shards and entry files: named by the build.
SEARCH_FILE_TEMPLATES = {
    "/api/v1/search/shards/{shard}.json",
    "/api/v1/search/entries/{prefix}.json",
}
MARKDOWN_TEMPLATES = {"/api/v1/content/{document_id}.md", "/api/v1/faq/{faq_id}.md"}
TEMPLATES = {*MARKDOWN_TEMPLATES, "/llms/{part}.txt", *SEARCH_FILE_TEMPLATES}


def without_search_files(files: set[str]) -> set[str]:
    """The paths, less the sharded index's shards and entry files (one of each at least)."""
    heads = [template.split("{", 1)[0] for template in SEARCH_FILE_TEMPLATES]
    for head in heads:
        assert any(path.startswith(head) for path in files), head
    return {path for path in files if not path.startswith(tuple(heads))}


def read_json(out: Path, path: str) -> Any:
    return json.loads((out / path.lstrip("/")).read_text(encoding="utf-8"))


def is_timestamp(value: Any) -> bool:
    return isinstance(value, str) and datetime.fromisoformat(value).tzinfo is not None


def is_absolute_url(value: Any) -> bool:
    parts = urlsplit(value) if isinstance(value, str) else None
    return parts is not None and parts.scheme == "https" and bool(parts.netloc)


def test_every_spec_path_is_built_with_its_media_type(built: Path) -> None:
    manifest = read_json(built, "manifest.json")
    assert without_search_files(set(manifest["files"])) == set(SPEC_PATHS) | set(EXTENSION_PATHS)
    for path, media_type in {**SPEC_PATHS, **EXTENSION_PATHS}.items():
        assert (built / path.lstrip("/")).is_file(), path
        entry = manifest["files"][path]
        assert entry["media_type"].split(";")[0] == media_type, path
        assert entry["cache_control"].startswith("public, max-age="), path
        assert entry["size"] == (built / path.lstrip("/")).stat().st_size
    assert manifest["base_url"] == TEST_BASE_URL


def test_text_files_declare_utf8(built: Path) -> None:
    files = read_json(built, "manifest.json")["files"]
    assert files["/llms.txt"]["media_type"] == "text/plain; charset=utf-8"
    assert files["/llms-full.txt"]["media_type"] == "text/plain; charset=utf-8"


def test_discovery_document_fields_and_links(built: Path) -> None:
    discovery = read_json(built, "/.well-known/service.json")
    assert list(discovery) == [
        "name", "description", "website", "api_version",
        "interfaces", "content", "protocols", "access",
    ]  # fmt: skip
    for field in ("name", "description", "api_version"):
        assert isinstance(discovery[field], str) and discovery[field]
    assert is_absolute_url(discovery["website"])
    for field in ("interfaces", "content", "protocols", "access"):
        assert isinstance(discovery[field], dict)
    linked = {urlsplit(url).path for url in discovery["interfaces"].values()}
    linked |= {urlsplit(url).path for url in discovery["content"]["documents"].values()}
    linked |= {urlsplit(url).path for url in discovery["content"]["faq"].values()}
    # Every interface of the spec's endpoint table, reachable from the entry point.
    # The extensions are linked too (the keys inside `interfaces` are the spec's "not shown").
    extensions = {p for p in EXTENSION_PATHS if not p.endswith(".md")} | TEMPLATES
    extensions |= {
        "/.well-known/agent-skills/service/SKILL.md", "/.well-known/skills/service/SKILL.md"
    }  # fmt: skip
    extensions -= {"/llms/documents-1.txt", "/llms/faq-1.txt"}
    assert linked == (set(SPEC_PATHS) - {"/errors/404.json"}) | extensions
    assert all(url.startswith(TEST_BASE_URL + "/") for url in discovery["interfaces"].values())


def test_content_index_fields_and_coverage(built: Path) -> None:
    index = read_json(built, "/api/v1/content/index.json")
    assert list(index) == ["version", "total_documents", "documents"]
    assert isinstance(index["version"], str)
    assert index["total_documents"] == len(index["documents"]) == 12
    assert [entry["id"] for entry in index["documents"]] == DOCUMENT_IDS + FAQ_IDS
    for entry in index["documents"]:
        # The spec's fields in its order, then our extension (issue 26): the sizes of the
        # files, measured here on the built bytes.
        assert list(entry) == [
            "id", "title", "content_type", "canonical_url", "api_url", "description", "updated_at",
            "size",
        ]  # fmt: skip
        api_file = built / urlsplit(entry["api_url"]).path.lstrip("/")
        twin_file = api_file.with_suffix(".md")
        json_size, md_size = api_file.stat().st_size, twin_file.stat().st_size
        assert entry["size"] == {
            "json_bytes": json_size, "json_tokens": -(-json_size // 4),
            "markdown_bytes": md_size, "markdown_tokens": -(-md_size // 4),
        }  # fmt: skip
        assert entry["content_type"] in ("page", "faq", "feature", "product")
        assert is_absolute_url(entry["canonical_url"])
        assert is_timestamp(entry["updated_at"])
        assert entry["title"] and entry["description"]
        assert (built / urlsplit(entry["api_url"]).path.lstrip("/")).is_file()
    assert {e["content_type"] for e in index["documents"] if e["id"] in FAQ_IDS} == {"faq"}


def test_content_documents_fields_types_and_hash(built: Path) -> None:
    index = {e["id"]: e for e in read_json(built, "/api/v1/content/index.json")["documents"]}
    for doc_id in DOCUMENT_IDS:
        document = read_json(built, f"/api/v1/content/{doc_id}.json")
        assert set(document) == {
            "id", "title", "content_type", "canonical_url",
            "updated_at", "language", "content", "metadata",
        }  # fmt: skip
        assert document["id"] == doc_id
        assert re.fullmatch(r"[a-z]{2}", document["language"])
        assert is_timestamp(document["updated_at"])
        assert document["updated_at"] == index[doc_id]["updated_at"]
        assert set(document["metadata"]) == {"content_version", "content_hash"}
        assert re.fullmatch(r"\d+\.\d+\.\d+", document["metadata"]["content_version"])
        # design.md: sha256 over the canonical JSON without metadata; updated_at is left out
        # too, since it is derived from the hash (docs/decisions.md).
        rest = {k: v for k, v in document.items() if k not in ("metadata", "updated_at")}
        expected = "sha256:" + __import__("hashlib").sha256(canonical_json(rest)).hexdigest()
        assert document["metadata"]["content_hash"] == expected
        content = document["content"]
        if document["content_type"] == "feature":
            assert set(content) == {"headline", "summary", "capabilities", "for_agent_developers"}
            for capability in content["capabilities"].values():
                assert set(capability) == {"title", "description", "endpoints"}
                assert capability["endpoints"], "a capability names its endpoints"
                assert all(is_absolute_url(url) for url in capability["endpoints"])
        else:
            assert set(content) == {"headline", "sections", "contact", "api_base"}
            assert content["api_base"] == TEST_BASE_URL + "/api/v1"
            assert len(content["sections"]) >= 3
            for section in content["sections"]:
                assert {"title", "body"} <= set(section) <= {"title", "body", "code_example"}
                assert all(isinstance(value, str) and value for value in section.values())


def test_developer_guide_has_code_calling_real_endpoints(built: Path) -> None:
    guide = read_json(built, "/api/v1/content/developer-guide.json")
    code = "\n".join(s.get("code_example", "") for s in guide["content"]["sections"])
    assert code.count("\n") > 20
    for endpoint in ("/.well-known/service.json", "search-index.json", "/api/v1/faq/"):
        assert endpoint in code


def test_faq_entries(built: Path) -> None:
    for faq_id in FAQ_IDS:
        entry = read_json(built, f"/api/v1/faq/{faq_id}.json")
        assert list(entry) == ["id", "question", "answer"]
        assert entry["id"] == faq_id
        assert entry["question"].endswith("?")
        assert len(entry["answer"].split("\n\n")) >= 2, "answers are full paragraphs"


def test_search_index_fields_and_coverage(built: Path) -> None:
    search = read_json(built, "/api/v1/content/search-index.json")
    assert list(search) == ["version", "entries"]
    assert [entry["id"] for entry in search["entries"]] == DOCUMENT_IDS + FAQ_IDS
    for entry in search["entries"]:
        assert list(entry) == ["id", "title", "description", "api_url", "keywords"]
        assert (built / urlsplit(entry["api_url"]).path.lstrip("/")).is_file()
        keywords = entry["keywords"]
        assert keywords == sorted(set(keywords)), "keywords are unique and sorted"
        assert all(k == k.lower() and re.fullmatch(r"[0-9a-z]+", k) for k in keywords)
        assert not {"the", "and", "of", "how", "what"} & set(keywords), "stop words dropped"


def naive_search(search: dict[str, Any], query: str) -> list[str]:
    """The spec's client: lowercase, split on non-alphanumerics, exact match, rank by count."""
    words = set(re.split(r"[^0-9a-z]+", query.lower())) - {""}
    scored = [
        (len(words & set(e["keywords"])), i, e["id"]) for i, e in enumerate(search["entries"])
    ]
    return [doc_id for score, _, doc_id in sorted(scored, key=lambda s: (-s[0], s[1])) if score]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("privacy preserving analytics of agent questions", "llm-search-console"),
        ("Which AI assistants are supported?", "compatibility"),
        ("code examples with curl", "developer-guide"),
        ("deploying the on-site agent", "how-it-works"),
    ],
)
def test_naive_client_finds_the_right_entry(built: Path, query: str, expected: str) -> None:
    ranked = naive_search(read_json(built, "/api/v1/content/search-index.json"), query)
    assert expected in ranked[:3], ranked[:5]


def test_surface_form_and_stem_are_both_published(built: Path) -> None:
    entries = read_json(built, "/api/v1/content/search-index.json")["entries"]
    how = next(e for e in entries if e["id"] == "how-it-works")
    # "Deploy on-site agent", "deployment", "endpoints": the words and their stems. (Under
    # the keyword budget, generated forms such as "agents" for "agent" rank last.)
    assert {"deployment", "deploy", "endpoints", "endpoint", "agent"} <= set(how["keywords"])


SPEC_TOOLS = {
    "get_site_overview": ([], "/api/v1/content/site.json"),
    "get_content_index": ([], "/api/v1/content/index.json"),
    "search_content": (["query"], "/api/v1/content/search-index.json"),
    "get_content_document": (["document_id"], "/api/v1/content/{document_id}.json"),
    "get_faq": (["faq_id"], "/api/v1/faq/{faq_id}.json"),
    "get_architecture": ([], "/api/v1/architecture.json"),
    "get_full_content": ([], "/llms-full.txt"),
}
SPEC_RESOURCES = [
    ("service://discovery", "Discovery Document", "application/json", "/.well-known/service.json"),
    ("service://content/index", "Content Index", "application/json", "/api/v1/content/index.json"),
    ("service://content/site", "Site Overview", "application/json", "/api/v1/content/site.json"),
    (
        "service://content/search-index",
        "Search Index",
        "application/json",
        "/api/v1/content/search-index.json",
    ),
    ("service://openapi", "OpenAPI Specification", "application/json", "/api/v1/openapi.json"),
    (
        "service://architecture",
        "Architecture Specification",
        "application/json",
        "/api/v1/architecture.json",
    ),
    ("service://llms-full", "Full Content (plaintext)", "text/plain", "/llms-full.txt"),
]


def test_mcp_manifest_matches_the_spec_tables(built: Path) -> None:
    manifest = read_json(built, "/api/v1/mcp.json")
    assert list(manifest) == ["mcpVersion", "serverInfo", "capabilities", "tools", "resources"]
    assert manifest["mcpVersion"] == "2024-11-05"
    assert manifest["serverInfo"]["name"] == "service-mcp-server"
    assert manifest["serverInfo"]["version"] == "1.0.0"
    assert isinstance(manifest["serverInfo"]["description"], str)
    assert manifest["capabilities"] == {"tools": True, "resources": True, "prompts": False}
    tools = {tool["name"]: tool for tool in manifest["tools"]}
    assert list(tools) == list(SPEC_TOOLS)
    for name, (inputs, path) in SPEC_TOOLS.items():
        tool = tools[name]
        assert set(tool) == {"name", "description", "inputSchema", "endpoint", "returns"}
        assert tool["endpoint"] == f"GET {TEST_BASE_URL}{path}"
        schema = tool["inputSchema"]
        assert schema["type"] == "object"
        assert sorted(schema["properties"]) == inputs
        assert schema["required"] == inputs
        for prop in schema["properties"].values():
            assert prop["type"] == "string"
    assert (
        tools["get_content_document"]["inputSchema"]["properties"]["document_id"]["enum"]
        == DOCUMENT_IDS
    )
    assert tools["get_faq"]["inputSchema"]["properties"]["faq_id"]["enum"] == FAQ_IDS
    resources = [(r["uri"], r["name"], r["mimeType"], r["endpoint"]) for r in manifest["resources"]]
    assert resources == [
        (uri, name, mime, f"GET {TEST_BASE_URL}{path}") for uri, name, mime, path in SPEC_RESOURCES
    ]
    assert all(r["description"] for r in manifest["resources"])


def test_mcp_well_known_serves_the_same_manifest(built: Path) -> None:
    assert (built / ".well-known/mcp.json").read_bytes() == (built / "api/v1/mcp.json").read_bytes()


def test_mcp_enums_and_endpoints_resolve(built: Path) -> None:
    manifest = read_json(built, "/api/v1/mcp.json")
    for tool in manifest["tools"]:
        url = tool["endpoint"].removeprefix("GET ")
        for name, prop in tool["inputSchema"]["properties"].items():
            for value in prop.get("enum", []):
                path = urlsplit(url.replace("{" + name + "}", value)).path
                assert (built / path.lstrip("/")).is_file(), (tool["name"], value)
        if "{" not in url:
            assert (built / urlsplit(url).path.lstrip("/")).is_file()
    for resource in manifest["resources"]:
        path = urlsplit(resource["endpoint"].removeprefix("GET ")).path
        assert (built / path.lstrip("/")).is_file()


def test_tool_input_schemas_are_valid_json_schema(built: Path) -> None:
    tools = {t["name"]: t for t in read_json(built, "/api/v1/mcp.json")["tools"]}
    for tool in tools.values():
        jsonschema.Draft202012Validator.check_schema(tool["inputSchema"])
    document_schema = jsonschema.Draft202012Validator(tools["get_content_document"]["inputSchema"])
    assert document_schema.is_valid({"document_id": "developer-guide"})
    assert not document_schema.is_valid({"document_id": "no-such-document"})
    assert not document_schema.is_valid({})
    search_schema = jsonschema.Draft202012Validator(tools["search_content"]["inputSchema"])
    assert search_schema.is_valid({"query": "mcp"})
    assert not search_schema.is_valid({"query": 3})


def test_openapi_is_valid_and_covers_every_file(built: Path) -> None:
    document = read_json(built, "/api/v1/openapi.json")
    validate_openapi(document)
    assert document["openapi"].startswith("3.1")
    assert document["info"]["version"] == "1.0.0"
    assert document["servers"] == [{"url": TEST_BASE_URL}]
    templates = [re.sub(r"\\\{[a-z_]+\\\}", "[^/]+", re.escape(p)) for p in document["paths"]]
    for path in SPEC_PATHS:
        assert any(re.fullmatch(t, path) for t in templates), path
    for operation in document["paths"].values():
        assert list(operation) == ["get"], "GET only"
    schemas = document["components"]["schemas"]
    for name in ("DiscoveryDocument", "ContentIndex", "ContentIndexEntry", "ContentDocument",
                 "FAQEntry", "SearchIndex", "McpManifest", "ErrorResponse"):  # fmt: skip
        assert name in schemas
    # The spec's fields, every one required, plus our one documented, optional extension
    # (issue 26: the entry's sizes), whose schema says it is an extension.
    spec_fields = {
        "id", "title", "content_type", "canonical_url", "api_url", "description", "updated_at",
    }  # fmt: skip
    entry_schema = schemas["ContentIndexEntry"]
    assert set(entry_schema["properties"]) == spec_fields | {"size"}
    assert set(entry_schema["required"]) == spec_fields
    assert schemas["EntrySize"]["description"].startswith("Extension:")
    parameter = document["paths"]["/api/v1/faq/{faq_id}.json"]["get"]["parameters"][0]
    assert parameter["schema"]["enum"] == FAQ_IDS


def test_openapi_schemas_accept_the_built_files(built: Path) -> None:
    """Each built JSON file validates against the schema its OpenAPI operation declares."""
    document = read_json(built, "/api/v1/openapi.json")
    registry_root = {"components": document["components"]}
    for path in SPEC_PATHS:
        if not path.endswith(".json") or path == "/api/v1/openapi.json":
            continue
        template = next(
            t
            for t in document["paths"]
            if t == path
            or (t not in SPEC_PATHS
                and re.fullmatch(re.sub(r"\\\{[a-z_]+\\\}", "[^/]+", re.escape(t)), path))
        )  # fmt: skip
        schema = document["paths"][template]["get"]["responses"]["200"]["content"][
            "application/json"
        ]["schema"]
        validator = jsonschema.Draft202012Validator({**registry_root, **schema})
        errors = list(validator.iter_errors(read_json(built, path)))
        assert not errors, (path, errors[:1])


def test_every_json_file_validates_against_its_model(built: Path) -> None:
    checks = {
        "/.well-known/service.json": models.DiscoveryDocument,
        "/api/v1/content/index.json": models.ContentIndex,
        "/api/v1/content/search-index.json": models.SearchIndex,
        "/api/v1/architecture.json": models.ArchitectureDocument,
        "/api/v1/on-site-agent.json": models.OnSiteAgentStatus,
        "/api/v1/mcp.json": models.McpManifest,
        "/errors/404.json": models.ErrorResponse,
        **{f"/api/v1/content/{d}.json": models.ContentDocument for d in DOCUMENT_IDS},
        **{f"/api/v1/faq/{f}.json": models.FAQEntry for f in FAQ_IDS},
    }
    for path, model in checks.items():
        model.model_validate(read_json(built, path))


def test_error_body(built: Path) -> None:
    body = read_json(built, "/errors/404.json")
    assert body["error"]["status"] == 404
    assert body["error"]["code"] == "not_found"
    assert body["error"]["message"]
    assert body["error"]["discovery"] == TEST_BASE_URL + "/.well-known/service.json"


def test_no_dangling_internal_url(built: Path) -> None:
    files = set(SPEC_PATHS) | set(EXTENSION_PATHS)
    published = set(read_json(built, "manifest.json")["files"])  # shards too
    found = 0
    for path in files:
        text = (built / path.lstrip("/")).read_text(encoding="utf-8")
        for url in re.findall(r"https?://[^\s\"'<>()\[\]\\`|]+", text):
            url = url.rstrip(".,;:!?*")
            parts = urlsplit(url)
            if f"{parts.scheme}://{parts.netloc}" != TEST_BASE_URL:
                continue
            found += 1
            target = parts.path
            if "{" in target:
                pattern = re.sub(r"\\\{[a-z_]+\\\}", "[^/]+", re.escape(target))
                assert any(re.fullmatch(pattern, f) for f in published), (path, url)
            else:
                assert target in published | {"", "/", "/api/v1"}, (path, url)
    assert found > 100, "the scan saw the internal links"


def test_llms_txt_parses_with_the_reference_parser(built: Path) -> None:
    text = (built / "llms.txt").read_text(encoding="utf-8")
    parsed = llms_txt.parse_llms_file(text)
    site = read_json(built, "/.well-known/service.json")
    assert parsed.title == site["name"]
    assert parsed.summary and "\n" not in parsed.summary
    assert site["description"].startswith(parsed.summary)
    assert parsed.info.strip()
    assert list(parsed.sections) == ["Interfaces", "Documents", "FAQ", "Optional"]
    links = [link for section in parsed.sections.values() for link in section]
    assert all(link["url"].startswith(TEST_BASE_URL + "/") for link in links)
    linked = {urlsplit(link["url"]).path for link in links}
    extensions = {
        "/api/v1/changes.json", "/.well-known/api-catalog",
        "/.well-known/agent-skills/service/SKILL.md", "/api/v1/search/terms.json",
    }  # fmt: skip
    assert linked == (set(SPEC_PATHS) - {"/llms.txt", "/errors/404.json"}) | extensions
    # No template in a link (a reader following it gets a 404); each entry names its
    # Markdown twin by its real, published URL instead.
    assert not [link for link in links if "{" in link["url"]]
    for section in ("Documents", "FAQ"):
        for link in parsed.sections[section]:
            twin = link["url"].removesuffix(".json") + ".md"
            assert (built / urlsplit(twin).path.lstrip("/")).is_file(), twin
            # Both files' sizes, measured here on the built bytes (issue 26).
            sizes = [
                (built / urlsplit(url).path.lstrip("/")).stat().st_size
                for url in (link["url"], twin)
            ]
            assert link["desc"].endswith(
                f"(Markdown: {twin}; JSON {sizes[0]:,} bytes ~{-(-sizes[0] // 4):,} tokens; "
                f"Markdown {sizes[1]:,} bytes ~{-(-sizes[1] // 4):,} tokens)"
            ), link
    # The directive to the machine-readable index (issue 26), in the info paragraph.
    assert f"the index of every entry is {TEST_BASE_URL}/api/v1/content/index.json" in parsed.info
    titles = [link["title"] for link in parsed.sections["Documents"]]
    index = read_json(built, "/api/v1/content/index.json")["documents"]
    assert titles == [entry["title"] for entry in index if entry["id"] in DOCUMENT_IDS]


def test_llms_full_txt_carries_everything_in_full(built: Path) -> None:
    text = (built / "llms-full.txt").read_text(encoding="utf-8")
    for doc_id in DOCUMENT_IDS:
        document = read_json(built, f"/api/v1/content/{doc_id}.json")
        heading = f"## {document['title']}\n\nSource: {TEST_BASE_URL}/api/v1/content/{doc_id}.json"
        assert heading in text
        content = document["content"]
        for section in content.get("sections", []):
            assert section["body"] in text
        for capability in content.get("capabilities", {}).values():
            assert capability["description"] in text
    for faq_id in FAQ_IDS:
        entry = read_json(built, f"/api/v1/faq/{faq_id}.json")
        assert f"{entry['question']}\n\nSource: {TEST_BASE_URL}/api/v1/faq/{faq_id}.json" in text
        assert entry["answer"] in text


# --- the spec-table tests can fail ----------------------------------------------------
#
# The tables above are checked on the tests' own site (tests/fixtures/spec_site/). These
# prove they are tables and not mirrors: the same checks, run on a build of a fixture
# that drifted from the spec, fail.


def _drifted_build(tmp_path: Path, drift: str) -> Path:
    site = tmp_path / "site_data"
    shutil.copytree(SPEC_SITE, site)
    if drift == "seventh-faq":
        text = (site / "faq/q06-architecture.yaml").read_text(encoding="utf-8")
        (site / "faq/q07-extra.yaml").write_text(
            text.replace("id: q06-architecture", "id: q07-extra", 1), encoding="utf-8"
        )
    elif drift == "document-removed":
        (site / "content/compatibility.yaml").unlink()
        agent = site / "on-site-agent.yaml"
        lines = agent.read_text(encoding="utf-8").splitlines(keepends=True)
        agent.write_text("".join(x for x in lines if "compatibility.json" not in x), "utf-8")
    elif drift == "brand-renamed":
        sites.rename_brand(site, "parlance")
    out = tmp_path / "dist"
    result = run_cli("build", "--site", site, "--out", out, "--base-url", TEST_BASE_URL)
    assert result.code == 0, result.err
    return out


SPEC_TABLE_TESTS = [
    test_every_spec_path_is_built_with_its_media_type,
    test_content_index_fields_and_coverage,
    test_mcp_manifest_matches_the_spec_tables,
    test_discovery_document_fields_and_links,
    test_llms_txt_parses_with_the_reference_parser,
]


@pytest.mark.parametrize("drift", ["seventh-faq", "document-removed", "brand-renamed"])
def test_the_spec_tables_fail_on_a_fixture_that_drifts_from_the_spec(
    tmp_path: Path, drift: str
) -> None:
    out = _drifted_build(tmp_path, drift)
    failed = []
    for check in SPEC_TABLE_TESTS:
        try:
            check(out)
        except (AssertionError, FileNotFoundError):
            failed.append(check.__name__)
    # Every table that the drift touches notices it.
    expected = {
        "seventh-faq": {"test_every_spec_path_is_built_with_its_media_type",
                        "test_content_index_fields_and_coverage",
                        "test_mcp_manifest_matches_the_spec_tables"},
        "document-removed": {"test_every_spec_path_is_built_with_its_media_type",
                             "test_content_index_fields_and_coverage",
                             "test_mcp_manifest_matches_the_spec_tables"},
        "brand-renamed": {"test_every_spec_path_is_built_with_its_media_type",
                          "test_mcp_manifest_matches_the_spec_tables",
                          "test_discovery_document_fields_and_links"},
    }[drift]  # fmt: skip
    assert expected <= set(failed), failed


def test_the_spec_tables_pass_on_the_fixture_itself(tmp_path: Path) -> None:
    out = _drifted_build(tmp_path, "none")
    for check in SPEC_TABLE_TESTS:
        check(out)
