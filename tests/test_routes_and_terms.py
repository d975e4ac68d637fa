"""The route table covers every file exactly as intended; tokenization does what the index needs."""

from __future__ import annotations

import json
import re

import pytest

from agent_contract.artifacts import Artifact
from agent_contract.routes import (
    AGGREGATE_CACHE,
    DOCUMENT_CACHE,
    ERROR_CACHE,
    ROUTE_RULES,
    PublishTier,
    RouteRule,
    rule_for,
)
from agent_contract.search_terms import fold, inflections, stem, words
from content_builder.build import plan
from tests.conftest import SPEC_SITE as SITE_DATA  # pins the spec's files and brand


@pytest.fixture(scope="module")
def artifacts():  # type: ignore[no-untyped-def]
    return plan(SITE_DATA).artifacts


def test_every_rule_serves_a_file_and_every_file_has_a_rule(artifacts) -> None:  # type: ignore[no-untyped-def]
    used = {rule_for(a.path) for a in artifacts}
    assert used == set(ROUTE_RULES), "a rule no file uses is dead code, or shadowed"


@pytest.mark.parametrize(
    ("path", "cache", "tier"),
    [
        ("/.well-known/service.json", AGGREGATE_CACHE, PublishTier.ENTRY_POINT),
        ("/llms.txt", AGGREGATE_CACHE, PublishTier.ENTRY_POINT),
        ("/.well-known/mcp.json", AGGREGATE_CACHE, PublishTier.ENTRY_POINT),
        ("/api/v1/mcp.json", AGGREGATE_CACHE, PublishTier.ENTRY_POINT),
        ("/api/v1/content/index.json", AGGREGATE_CACHE, PublishTier.AGGREGATE),
        ("/api/v1/content/search-index.json", AGGREGATE_CACHE, PublishTier.AGGREGATE),
        ("/api/v1/openapi.json", AGGREGATE_CACHE, PublishTier.AGGREGATE),
        ("/llms-full.txt", AGGREGATE_CACHE, PublishTier.AGGREGATE),
        ("/api/v1/content/site.json", DOCUMENT_CACHE, PublishTier.LEAF),
        ("/api/v1/faq/q01-difference.json", DOCUMENT_CACHE, PublishTier.LEAF),
        ("/api/v1/architecture.json", DOCUMENT_CACHE, PublishTier.LEAF),
        ("/errors/404.json", ERROR_CACHE, PublishTier.ENTRY_POINT),
    ],
)
def test_route_rule_of_each_kind_of_file(path: str, cache: object, tier: PublishTier) -> None:
    rule = rule_for(path)
    assert rule.cache == cache
    assert rule.tier == tier


def test_an_unrouted_path_is_an_error() -> None:
    with pytest.raises(LookupError, match="no route rule"):
        rule_for("/images/logo.png")


def _first_match(path: str) -> RouteRule | None:
    """The table's rule, read the slow and obvious way."""
    return next((rule for rule in ROUTE_RULES if rule.matches(path)), None)


@pytest.mark.parametrize(
    "path",
    [
        "/llms.txt", "/llms.txt.bak", "/llms/documents-1.txt", "/llms/a/b.txt",
        "/.well-known/mcp.json", "/.well-known/x.json", "/.well-known/api-catalog",
        "/api/v1/content/index.json", "/api/v1/content/a.md", "/api/v1/content/a/b.json",
        "/api/v1/faq/x.json", "/api/v1/faq/x.md", "/api/v1/x.json", "/api/v1/x.jsonx",
        "/API/v1/x.json", "/errors/404.json", "/errors/404.json\n", "/", "",
        "/sitemap.xml", "/robots.txt", "/api/v1/content/index.json/", "/llms-full.txt",
    ],
)  # fmt: skip
def test_rule_for_is_the_first_rule_of_the_table_that_matches(path: str) -> None:
    """rule_for matches all globs at once; it must agree with the table read in order."""
    expected = _first_match(path)
    if expected is None:
        with pytest.raises(LookupError):
            rule_for(path)
    else:
        assert rule_for(path) is expected


def _structural_links(artifact: Artifact, base_url: str) -> set[str]:
    """Paths this file links as data (a JSON value that is a URL, a llms.txt link), not prose."""
    text = artifact.body.decode()
    if artifact.path.endswith(".txt"):
        urls = re.findall(r"\]\((\S+?)\)", text)
    elif artifact.path.endswith(".xml"):
        urls = re.findall(r"<loc>(\S+?)</loc>", text)
    elif artifact.path.endswith(".md"):
        urls = re.findall(r"^- json: (\S+)$", text, flags=re.MULTILINE)
    else:
        urls = []
        stack = [json.loads(text)]
        while stack:
            value = stack.pop()
            if isinstance(value, dict):
                stack.extend(value.values())
            elif isinstance(value, list):
                stack.extend(value)
            elif isinstance(value, str) and re.fullmatch(r"(GET )?https?://\S+", value):
                urls.append(value.removeprefix("GET "))
    return {url.removeprefix(base_url) for url in urls if url.startswith(base_url + "/")}


def test_upload_order_puts_links_after_their_targets(artifacts) -> None:  # type: ignore[no-untyped-def]
    """A file lists only files of its own publish tier or an earlier one, so a new file is
    uploaded before anything points at it.

    Files rendered from one authored file (documents, FAQ, architecture, on-site agent)
    may link anything: a feature document lists the OpenAPI file among its endpoints, and
    the index lists the document, a cycle no order can break (docs/decisions.md). Every
    file the builder generates itself must be ordered.
    """
    by_path = {a.path: a for a in artifacts}
    checked = 0
    for artifact in artifacts:
        if artifact.source is not None:
            continue
        for target in _structural_links(artifact, "https://agents.parlance.example"):
            if target in by_path:
                checked += 1
                assert by_path[target].rule.tier <= artifact.rule.tier, (artifact.path, target)
    assert checked > 60


def test_fold_strips_accents_and_case() -> None:
    assert fold("Café ÉTÉ ﬁle") == "cafe ete file"


def test_words_split_and_drop_stop_words_and_noise() -> None:
    assert words("How does the MCP-manifest work? HTTP/2, 404 & 7") == [
        "mcp", "manifest", "work", "http", "404",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("forms", "shared"),
    [
        (["agent", "agents"], "agent"),
        (["deploy", "deploying", "deployed", "deployment", "deploys"], "deploy"),
        (["policy", "policies"], "policy"),
        (["create", "creating", "created"], "create"),
        (["map", "mapping", "mapped"], "map"),
        (["search", "searches", "searching"], "search"),
    ],
)
def test_word_forms_share_a_stem(forms: list[str], shared: str) -> None:
    assert {stem(form) for form in forms} == {shared}


@pytest.mark.parametrize("word", ["access", "status", "analysis", "api", "mcp"])
def test_stem_leaves_words_that_only_look_inflected(word: str) -> None:
    assert stem(word) == word


@pytest.mark.parametrize(
    ("base", "forms"),
    [
        ("deploy", {"deploys", "deploying", "deployed"}),
        ("cache", {"caches", "caching", "cached"}),
        ("policy", {"policies", "policying", "policied"}),
        ("search", {"searches", "searching", "searched"}),
    ],
)
def test_inflections_of_a_base_word(base: str, forms: set[str]) -> None:
    assert inflections(base) == forms
