"""A site needs site.yaml's identity keys and content, nothing else (issue 23, item 6).

architecture.yaml, on-site-agent.yaml, faq/ and search-questions.yaml are optional; the
spec's architecture and on-site agent files are still published, saying only what is
true of the build (render/site_facts.py), never the sample's claims.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from agent_client.verify import verify
from agent_contract import links, paths
from agent_contract.models import ArchitectureDocument, OnSiteAgentStatus
from content_builder.build import plan
from content_builder.search_eval import QUESTIONS_FILE
from tests import sites
from tests.conftest import SITE_DATA, TEST_BASE_URL, run_cli, running_server

#: What the sample's own files claim of Parlance, which no other site may inherit.
SAMPLE_CLAIMS = (
    "search console",
    "k-anonymity",
    "chat widget",
    "embedded chat",
    "Capture telemetry",
    "Deploy the on-site agent",
    "lower right corner",
)


@pytest.fixture(scope="module")
def minimal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("minimal") / "docs-site"
    return sites.make_site(root, sites.Shape(documents=3, faqs=0, minimal=True))


@pytest.fixture(scope="module")
def minimal_files(minimal: Path) -> dict[str, bytes]:
    return {a.path: a.body for a in plan(minimal, TEST_BASE_URL, frozen=True).artifacts}


def test_the_minimal_site_is_identity_keys_and_content(minimal: Path) -> None:
    config = yaml.safe_load((minimal / "site.yaml").read_text(encoding="utf-8"))
    assert sorted(config) == sorted(sites.IDENTITY_KEYS)
    assert sorted(p.name for p in minimal.iterdir()) == ["content", "content.lock.json",
                                                         "site.yaml"]  # fmt: skip


def test_the_spec_files_are_published_with_what_the_build_knows(
    minimal_files: dict[str, bytes],
) -> None:
    architecture = ArchitectureDocument.model_validate_json(minimal_files[paths.ARCHITECTURE])
    agent = OnSiteAgentStatus.model_validate_json(minimal_files[paths.ON_SITE_AGENT])
    # Every resource type is a file (or template) this build publishes, and no FAQ one:
    # the site has no FAQ.
    published = frozenset(minimal_files)
    endpoints = [r.endpoint for r in architecture.data_layer.resource_types]
    assert endpoints
    for endpoint in endpoints:
        path = endpoint.removeprefix(TEST_BASE_URL)
        if "{" in path:
            pattern = links.template_pattern(path)
            assert any(pattern.fullmatch(p) for p in published), endpoint
        else:
            assert path in published, endpoint
    assert not any("/faq/" in endpoint for endpoint in endpoints)
    assert TEST_BASE_URL + paths.ARCHITECTURE in endpoints
    # No live MCP server in this build: the JSON-RPC server is not claimed.
    (server,) = [p for p in architecture.protocols if p.name == "MCP JSON-RPC server"]
    assert server.status == "planned" and server.endpoint is None
    # The on-site agent: not deployed, nothing recorded, nothing it reads.
    assert agent.status == "disabled"
    assert agent.configuration.telemetry.enabled is False
    assert agent.configuration.telemetry.retention_days == 0
    assert agent.configuration.knowledge_sources == [] and agent.capabilities == []
    assert agent.configuration.languages == []


def test_a_live_mcp_server_is_named_when_the_build_has_one(minimal: Path) -> None:
    endpoint = TEST_BASE_URL + "/mcp"
    files = {a.path: a.body for a in plan(minimal, TEST_BASE_URL, mcp_endpoint=endpoint).artifacts}
    architecture = ArchitectureDocument.model_validate_json(files[paths.ARCHITECTURE])
    (server,) = [p for p in architecture.protocols if p.name == "MCP JSON-RPC server"]
    assert (server.status, server.endpoint) == ("available", endpoint)


def test_no_sample_claim_reaches_a_site_that_did_not_make_it(
    minimal_files: dict[str, bytes],
) -> None:
    sample = {a.path: a.body for a in plan(SITE_DATA, TEST_BASE_URL).artifacts}
    sample_text = b"".join(sample.values()).decode("utf-8").lower()
    for claim in SAMPLE_CLAIMS:
        assert claim.lower() in sample_text, f"{claim!r}: the guard still guards something"
        for path, body in minimal_files.items():
            assert claim.lower() not in body.decode("utf-8").lower(), (claim, path)


def test_site_yaml_defaults_fill_what_a_new_site_left_out(
    minimal_files: dict[str, bytes],
) -> None:
    discovery = json.loads(minimal_files[paths.discovery("service")])
    assert discovery["api_version"] == "1.0.0"
    assert discovery["content"]["language"] == "en"
    llms = minimal_files[paths.LLMS_TXT].decode("utf-8")
    # No link without text or target (the search example's jq `.shards[]` is code, not a link).
    assert "](" in llms and "[](" not in llms and "]()" not in llms
    assert "## FAQ" not in llms, "no FAQ: no empty FAQ section"


def test_verify_passes_on_a_site_without_faq_or_architecture(minimal: Path) -> None:
    with running_server(minimal) as server:
        report = verify(server.base_url)
    assert not report.failures, report.render(False)
    subjects = {finding.subject for finding in report.findings}
    assert paths.ARCHITECTURE in subjects and paths.ON_SITE_AGENT in subjects


def test_a_site_file_the_author_wrote_is_still_checked(tmp_path: Path) -> None:
    """Optional is not ignored: a broken architecture.yaml is an error naming it."""
    site = tmp_path / "site"
    shutil.copytree(SITE_DATA, site)
    path = site / "architecture.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "extra_field: 1\n", encoding="utf-8")
    result = run_cli("check", "--site", site)
    assert result.code == 1
    assert "architecture.yaml: field 'extra_field': unknown field" in result.err


@pytest.mark.parametrize("content", ["missing", "empty"])
def test_a_site_without_documents_is_one_clear_error(tmp_path: Path, content: str) -> None:
    site = tmp_path / "site"
    site.mkdir()
    config = yaml.safe_load((SITE_DATA / "site.yaml").read_text(encoding="utf-8"))
    (site / "site.yaml").write_text(
        yaml.safe_dump({key: config[key] for key in sites.IDENTITY_KEYS}), encoding="utf-8"
    )
    if content == "empty":
        (site / "content").mkdir()
    result = run_cli("check", "--site", site)
    assert result.code == 1
    (line,) = result.err.splitlines()
    assert line.startswith("error: ") and "content: no content: add content/" in line
    assert "docs_dir" in line


def test_questions_without_held_out_are_measured(tmp_path: Path) -> None:
    site = tmp_path / "site"
    shutil.copytree(SITE_DATA, site)
    path = site / QUESTIONS_FILE
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    del data["held_out"]
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    checked = run_cli("check", "--site", site)
    assert checked.code == 0, checked.err
    assert "search: questions: " in checked.out and "held_out" not in checked.out
    measured = run_cli("search-eval", "--site", site)
    assert measured.code == 0, measured.err
    assert f"{len(data['questions'])} questions" in measured.out


def test_a_questions_file_with_no_question_is_an_error_not_a_division(tmp_path: Path) -> None:
    site = tmp_path / "site"
    shutil.copytree(SITE_DATA, site)
    (site / QUESTIONS_FILE).write_text("questions: []\n", encoding="utf-8")
    result = run_cli("search-eval", "--site", site)
    assert result.code == 1
    assert "search-questions.yaml: field 'questions': no questions" in result.err
    assert "Traceback" not in result.err


def test_openapi_of_a_site_without_faq_describes_only_callable_operations(
    minimal_files: dict[str, bytes],
) -> None:
    from openapi_spec_validator import validate as validate_openapi

    document = json.loads(minimal_files[paths.OPENAPI])
    validate_openapi(document)
    assert not any("/faq/" in path for path in document["paths"])
    for path, item in document["paths"].items():
        for parameter in item["get"].get("parameters", []):
            # Ids are listed; the sharded index's shard names (issue 25) have a pattern.
            schema = parameter["schema"]
            assert schema.get("enum") or schema.get("pattern"), (path, "no id can call it")
    assert paths.document("{document_id}") in document["paths"]


def test_a_site_without_a_site_document_gets_an_overview_of_its_own_words(
    tmp_path: Path,
) -> None:
    """The MCP manifest's get_site_overview points at content/site.json: a site that wrote
    no `site` document gets one made of site.yaml's identity keys, and nothing else."""
    site = tmp_path / "site"
    site.mkdir()
    identity = {
        "name": "Frobnicator",
        "description": "Frobnicator turns widgets into gadgets.",
        "about": "Frobnicator is a command-line tool maintained by a small team.",
        "website": "https://frob.example",
        "base_url": "https://agents.frob.example",
        "contact": "team@frob.example",
    }
    (site / "site.yaml").write_text(yaml.safe_dump(identity), encoding="utf-8")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "usage.md").write_text("# Usage\n\nRun `frob`.\n", encoding="utf-8")
    with (site / "site.yaml").open("a", encoding="utf-8") as config:
        config.write("docs_dir: ../docs\n")
    files = {a.path: a.body for a in plan(site, TEST_BASE_URL).artifacts}
    overview = json.loads(files[paths.document("site")])
    assert overview["title"] == "Frobnicator"
    assert overview["canonical_url"] == "https://frob.example"
    assert overview["content"]["headline"] == identity["description"]
    bodies = [section["body"] for section in overview["content"]["sections"]]
    assert bodies == [identity["about"]]
    twin = files[paths.markdown_twin(paths.document("site"))].decode()
    assert identity["about"] in twin
    published = b"\n".join(files.values()).decode("utf-8", "replace")
    assert not [claim for claim in SAMPLE_CLAIMS if claim in published]
    # The author's own `site` document wins over the generated one.
    (tmp_path / "docs" / "home.md").write_text(
        "---\nid: site\n---\n# Home of Frobnicator\n\nOur words.\n", encoding="utf-8"
    )
    files = {a.path: a.body for a in plan(site, TEST_BASE_URL).artifacts}
    assert json.loads(files[paths.document("site")])["title"] == "Home of Frobnicator"
