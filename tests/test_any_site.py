"""What must hold for any site, checked on the owner's site_data/ and on sites of other shapes.

No assertion here names an id, a count or a brand: each is read from the site itself
(load_site), so a site owner adding, removing or renaming content never breaks these.
The spec's exact tables are test_conformance's, on the tests' own spec-shaped site.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openapi_spec_validator import validate as validate_openapi

from agent_contract import links, models, paths
from agent_contract.routes import rule_for
from content_builder.loaded import Site
from content_builder.loader import LOCK_FILE, load_site
from content_builder.search_eval import QUESTIONS_FILE
from tests import sites
from tests.conftest import SITE_DATA, TEST_BASE_URL, run_cli, tree_digest


def _owner(root: Path) -> None:
    shutil.copytree(SITE_DATA, root)


def _owner_renamed(root: Path) -> None:
    shutil.copytree(SITE_DATA, root)
    sites.rename_brand(root, "acme-docs")
    sites.refresh_lock(root)


def _linked_from_elsewhere(root: Path, document_id: str) -> bool:
    own = root / "content" / f"{document_id}.yaml"
    link = paths.document(document_id)
    return any(
        link in other.read_text(encoding="utf-8")
        for other in root.rglob("*.yaml")
        if other != own and other.name != QUESTIONS_FILE
    )


def _owner_without(document_id: str) -> Callable[[Path], None]:
    def make(root: Path) -> None:
        shutil.copytree(SITE_DATA, root)
        documents = sorted(p.stem for p in (root / "content").glob("*.yaml") if p.stem != "site")
        # The owner's content changes: remove the named document if it is still there,
        # else one no other file links to (removing a linked one is, rightly, a build error).
        unlinked = [d for d in documents if not _linked_from_elsewhere(root, d)]
        assert unlinked, f"every document in {SITE_DATA} is linked from another file"
        victim = document_id if document_id in unlinked else unlinked[-1]
        (root / "content" / f"{victim}.yaml").unlink()
        sites.refresh_lock(root)

    return make


def _generated(shape: sites.Shape) -> Callable[[Path], None]:
    return lambda root: sites.make_site(root, shape)


def _generated_then_removed(root: Path) -> None:
    sites.make_site(root, sites.Shape(documents=6, faqs=6))
    sites.remove_document(root, "topic-003")
    sites.refresh_lock(root)


SHAPES: dict[str, Callable[[Path], None]] = {
    "site_data": _owner,
    "site_data-brand-renamed": _owner_renamed,
    "site_data-document-removed": _owner_without("compatibility"),
    "one-document-no-faq": _generated(sites.Shape(documents=1, faqs=0)),
    "50-documents-80-faq": _generated(sites.Shape(documents=50, faqs=80, brand="big-site")),
    "unicode": _generated(
        sites.Shape(documents=5, faqs=4, name="Ünïcödé Söftware ✨", unicode=True)
    ),
    "generated-document-removed": _generated_then_removed,
    # site.yaml's identity keys and content/, nothing else (issue 23).
    "minimal-no-faq": _generated(sites.Shape(documents=3, faqs=0, minimal=True)),
}


@dataclass(frozen=True)
class Built:
    site_dir: Path
    site: Site
    out: Path

    def json(self, path: str) -> Any:
        return json.loads((self.out / path.lstrip("/")).read_bytes())

    @property
    def document_ids(self) -> list[str]:
        return [d.id for d in self.site.documents]

    @property
    def faq_ids(self) -> list[str]:
        return [f.id for f in self.site.faqs]

    @property
    def published(self) -> frozenset[str]:
        return frozenset(self.json("manifest.json")["files"])


@pytest.fixture(scope="module", params=list(SHAPES))
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Built:
    root = tmp_path_factory.mktemp(request.param) / "site_data"
    SHAPES[request.param](root)
    out = root.parent / "dist"
    result = run_cli("build", "--site", root, "--out", out, "--base-url", TEST_BASE_URL, "--frozen")
    assert result.code == 0, result.err
    return Built(root, load_site(root, TEST_BASE_URL), out)


def test_the_shape_is_what_it_claims(built: Built) -> None:
    # Guards the generator: a shape that silently lost its FAQ would prove nothing.
    name = built.site_dir.parent.name
    if name.startswith("one-document"):
        assert built.document_ids == ["site"] and built.faq_ids == []
    if name.startswith("50-documents"):
        assert (len(built.document_ids), len(built.faq_ids)) == (50, 80)
    if "brand-renamed" in name:
        assert built.site.config.brand == "acme-docs"
    if name.startswith("generated-document-removed"):
        assert len(built.document_ids) == 5 and "topic-003" not in built.document_ids
    if name.startswith("minimal"):
        assert sorted(p.name for p in built.site_dir.iterdir()) == [
            "content", "content.lock.json", "site.yaml"
        ]  # fmt: skip
        assert built.faq_ids == [] and built.site.architecture is None
    if name.startswith("site_data-document-removed"):
        owner = len(list((SITE_DATA / "content").glob("*.yaml")))
        assert len(built.document_ids) == owner - 1


def test_every_published_file_has_a_route_rule_and_its_media_type(built: Built) -> None:
    files = built.json("manifest.json")["files"]
    for path, entry in files.items():
        rule = rule_for(path)
        assert entry["media_type"] == rule.media_type, path
        assert (built.out / path.lstrip("/")).stat().st_size == entry["size"]


def test_every_link_into_the_api_resolves(built: Built) -> None:
    seen = 0
    for path in built.published:
        text = (built.out / path.lstrip("/")).read_text(encoding="utf-8")
        for linked in links.api_paths(text, TEST_BASE_URL):
            seen += 1
            assert links.resolves(linked, built.published), (path, linked)
    assert seen > 20, "the scan saw the links"


def test_mcp_enums_are_the_real_ids(built: Built) -> None:
    tools = {tool["name"]: tool for tool in built.json(paths.MCP_MANIFEST)["tools"]}
    document_enum = tools["get_content_document"]["inputSchema"]["properties"]["document_id"]
    assert document_enum["enum"] == built.document_ids
    if built.faq_ids:
        assert tools["get_faq"]["inputSchema"]["properties"]["faq_id"]["enum"] == built.faq_ids
    else:
        assert "get_faq" not in tools, "no FAQ: no tool that could only fail"
    for document_id in built.document_ids:
        assert paths.document(document_id) in built.published
    for faq_id in built.faq_ids:
        assert paths.faq(faq_id) in built.published
    assert (built.out / paths.MCP_WELL_KNOWN.lstrip("/")).read_bytes() == (
        built.out / paths.MCP_MANIFEST.lstrip("/")
    ).read_bytes()


def test_every_aggregate_covers_every_entry(built: Built) -> None:
    ids = built.document_ids + built.faq_ids
    api_urls = [TEST_BASE_URL + paths.document(i) for i in built.document_ids] + [
        TEST_BASE_URL + paths.faq(i) for i in built.faq_ids
    ]
    index = built.json(paths.CONTENT_INDEX)
    assert [entry["id"] for entry in index["documents"]] == ids
    assert index["total_documents"] == len(ids)
    assert [entry["api_url"] for entry in index["documents"]] == api_urls
    assert [e["id"] for e in built.json(paths.SEARCH_INDEX)["entries"]] == ids
    llms = (built.out / "llms.txt").read_text(encoding="utf-8")
    full = (built.out / "llms-full.txt").read_text(encoding="utf-8")
    for url in api_urls:
        assert f"]({url})" in llms, url
        assert f"Source: {url}" in full, url
    discovery = built.json(paths.discovery(built.site.config.brand))
    assert list(discovery["content"]["documents"]) == built.document_ids
    assert list(discovery["content"]["faq"]) == built.faq_ids


def test_openapi_is_valid_and_describes_every_file(built: Built) -> None:
    document = built.json(paths.OPENAPI)
    validate_openapi(document)
    patterns = [links.template_pattern(template) for template in document["paths"]]
    # The web conventions are published beside the API, not as operations (issue 26), and
    # so is the Agent Skill's copy at the discovery RFC's v0.1.0 location.
    brand = built.site.config.brand
    conventions = {paths.SITEMAP, paths.ROBOTS_TXT, paths.API_CATALOG, paths.SKILLS_INDEX_V0_1}
    conventions.add(paths.skill_v0_1_file(brand, "SKILL.md"))
    assert not conventions & set(document["paths"])
    for path in built.published - {paths.NOT_FOUND} - conventions:
        assert any(pattern.fullmatch(path) for pattern in patterns), path


def test_every_json_file_validates_against_its_model(built: Built) -> None:
    brand = built.site.config.brand
    checks: dict[str, type[models.Resource]] = {
        paths.discovery(brand): models.DiscoveryDocument,
        paths.CONTENT_INDEX: models.ContentIndex,
        paths.SEARCH_INDEX: models.SearchIndex,
        paths.MCP_MANIFEST: models.McpManifest,
        paths.ARCHITECTURE: models.ArchitectureDocument,
        paths.ON_SITE_AGENT: models.OnSiteAgentStatus,
        paths.NOT_FOUND: models.ErrorResponse,
        paths.SKILLS_INDEX: models.SkillsIndex,
        paths.SKILLS_INDEX_V0_1: models.LegacySkillsIndex,
        **{paths.document(i): models.ContentDocument for i in built.document_ids},
        **{paths.faq(i): models.FAQEntry for i in built.faq_ids},
    }
    for path, model in checks.items():
        model.model_validate(built.json(path))
    assert built.json(paths.NOT_FOUND)["error"]["discovery"] == TEST_BASE_URL + paths.discovery(
        brand
    )


def test_no_token_is_left_unsubstituted(built: Built) -> None:
    for path in built.published:
        text = (built.out / path.lstrip("/")).read_text(encoding="utf-8")
        for token in ("{base_url}", "{discovery_url}", "{brand}", "{name}", "{contact}"):
            assert token not in text, (path, token)


def test_same_input_same_bytes(built: Built, tmp_path: Path) -> None:
    copy = tmp_path / "copy" / "site_data"
    shutil.copytree(built.site_dir, copy)
    result = run_cli("build", "--site", copy, "--out", tmp_path / "again",
                     "--base-url", TEST_BASE_URL, "--frozen")  # fmt: skip
    assert result.code == 0, result.err
    assert tree_digest(tmp_path / "again") == tree_digest(built.out)


def test_the_lock_tracks_exactly_the_entries_and_stays_put(built: Built, tmp_path: Path) -> None:
    lock = json.loads((built.site_dir / LOCK_FILE).read_bytes())
    assert sorted(lock["entries"]) == sorted(built.document_ids + built.faq_ids)
    for document_id in built.document_ids:
        document = built.json(paths.document(document_id))
        entry = lock["entries"][document_id]
        assert document["updated_at"] == entry["updated_at"]
        assert document["metadata"]["content_version"] == entry["content_version"]
    check = run_cli("check", "--site", built.site_dir, "--frozen")
    assert check.code == 0, check.err
    assert "lock would change" not in check.out


# --- hypothesis: any valid shape builds, and its aggregates are complete -------------

# Valid brands only (source.py: a letter first, an Agent Skills name, not `mcp`): the
# refused ones are tests/test_agent_directives.py's.
brands = st.from_regex(r"[a-z][a-z0-9]{0,5}(-[a-z0-9]{1,5}){0,2}", fullmatch=True).filter(
    lambda b: b != "mcp"
)
names = st.text(
    alphabet=st.characters(categories=["L", "N", "Zs"], exclude_characters="{}"),
    min_size=1,
    max_size=20,
).filter(lambda name: name.strip() and name == name.strip())
shapes = st.builds(
    sites.Shape,
    documents=st.integers(1, 8),
    faqs=st.integers(0, 8),
    brand=brands,
    name=names,
    unicode=st.booleans(),
)


@settings(
    max_examples=8,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(shape=shapes)
def test_any_valid_shape_builds_and_covers_every_entry(tmp_path: Path, shape: sites.Shape) -> None:
    root = tmp_path / "hypothesis" / "site_data"
    sites.make_site(root, shape)
    out = root.parent / "dist"
    if out.exists():
        shutil.rmtree(out)
    result = run_cli("build", "--site", root, "--out", out, "--base-url", TEST_BASE_URL,
                     "--frozen")  # fmt: skip
    assert result.code == 0, result.err
    built = Built(root, load_site(root, TEST_BASE_URL), out)
    assert built.document_ids == sites.document_ids(shape)
    assert built.faq_ids == sites.faq_ids(shape)
    test_every_aggregate_covers_every_entry(built)
    test_mcp_enums_are_the_real_ids(built)
    test_every_link_into_the_api_resolves(built)
    assert built.json(paths.discovery(shape.brand))["name"] == shape.name
