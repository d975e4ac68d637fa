"""Issue 14's doors beside the spec's files: Markdown mirrors (and `Accept: text/markdown`
at the local edge), the change feed and `client.sync`, the RFC 9727 API catalog, the
sitemap and robots.txt. Checked on generated sites and the spec fixture, never on the
owner's sample content."""

from __future__ import annotations

import json
import re
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
import yaml

from agent_client.client import AgentClient, SyncState
from agent_contract import paths
from agent_contract.artifacts import Artifact
from agent_contract.models import ApiCatalog, ChangeFeed
from agent_edge.edge import Edge, prefers_markdown
from agent_edge.serve import load_edge
from content_builder import lock as lock_module
from content_builder.build import build, plan
from tests import sites
from tests.conftest import SPEC_SITE, TEST_BASE_URL, run_cli, running_server

SITEMAP_NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


@pytest.fixture(scope="module")
def spec_files() -> dict[str, Artifact]:
    return {a.path: a for a in plan(SPEC_SITE, TEST_BASE_URL).artifacts}


# --- Markdown mirrors ------------------------------------------------------------------


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


def test_every_mirror_holds_every_field_of_its_json(spec_files: dict[str, Artifact]) -> None:
    """Lossless: every string a client reads from the JSON is in the Markdown, verbatim
    (headings are joined onto one line, so they are compared that way)."""
    mirrors = [p for p in spec_files if p.endswith(".md") and not p.endswith("/SKILL.md")]
    assert len(mirrors) == 12
    for path in mirrors:
        twin = path.removesuffix(".md") + ".json"
        text = spec_files[path].body.decode("utf-8")
        # One directive line first (issue 26), naming the index.
        first = text.split("\n", 1)[0]
        assert first.startswith("> Agents: ") and f" {TEST_BASE_URL}/llms.txt," in first
        assert spec_files[path].media_type == "text/markdown; charset=utf-8"
        data = json.loads(spec_files[twin].body)
        for value in _strings(data):
            assert value in text or " ".join(value.split()) in text, (path, value[:60])
        assert f"- json: {TEST_BASE_URL}{twin}" in text


def test_a_code_example_keeps_its_text_in_a_fence_longer_than_its_backticks() -> None:
    from content_builder.render.markdown import _fence

    code = "print('```')\n"
    fence = _fence(code)
    assert fence == ["````", "print('```')", "````"]


@pytest.mark.parametrize(
    ("accept", "markdown"),
    [
        (None, False),
        ("application/json", False),
        ("*/*", False),
        ("text/*", False),
        ("text/markdown", True),
        ("text/markdown, text/html, */*", True),  # what coding agents send
        ("application/json, text/markdown;q=0.5", False),
        ("text/markdown;q=0.9, application/json;q=0.5", True),
        ("text/markdown;q=0", False),
        ("text/markdown;q=abc", False),
    ],
)
def test_accept_negotiation(accept: str | None, markdown: bool) -> None:
    assert prefers_markdown(accept) is markdown


def test_edge_answers_markdown_on_a_document_url_with_vary_and_its_own_etag(
    spec_files: dict[str, Artifact],
) -> None:
    edge = Edge(spec_files, TEST_BASE_URL + "/.well-known/service.json")
    for path in (paths.document("site"), paths.faq("q01-difference")):
        as_json = edge.handle("GET", path, {})
        as_md = edge.handle("GET", path, {"Accept": "text/markdown"})
        json_headers, md_headers = dict(as_json.headers), dict(as_md.headers)
        assert as_json.body == spec_files[path].body
        assert as_md.body == spec_files[path.removesuffix(".json") + ".md"].body
        assert json_headers["Vary"] == md_headers["Vary"] == "Accept"
        assert md_headers["Content-Type"] == "text/markdown; charset=utf-8"
        assert json_headers["ETag"] != md_headers["ETag"]
        twin = path.removesuffix(".json") + ".md"
        # Each answer links the other representation, never itself.
        assert f'<{twin}>; rel="alternate"; type="text/markdown"' in json_headers["Link"]
        assert f'<{path}>; rel="alternate"; type="application/json"' in md_headers["Link"]
        # A validator of one representation never answers 304 for the other.
        cross = edge.handle(
            "GET", path, {"Accept": "text/markdown", "If-None-Match": json_headers["ETag"]}
        )
        assert cross.status == 200 and cross.body == as_md.body
        same = edge.handle(
            "GET", path, {"Accept": "text/markdown", "If-None-Match": md_headers["ETag"]}
        )
        assert same.status == 304
    index = dict(edge.handle("GET", paths.CONTENT_INDEX, {"Accept": "text/markdown"}).headers)
    assert index["Content-Type"] == "application/json" and "Vary" not in index
    # Every answer's links (agent_contract/directives.py), and no alternate for an index.
    assert index["Link"] == (
        '</.well-known/api-catalog>; rel="api-catalog", </llms.txt>; rel="llms-txt", '
        '</.well-known/service.json>; rel="describedby"; type="application/json"'
    )


# --- API catalog, sitemap, robots.txt ----------------------------------------------------


def test_api_catalog_is_an_rfc9727_linkset(spec_files: dict[str, Artifact]) -> None:
    artifact = spec_files[paths.API_CATALOG]
    assert artifact.media_type == (
        'application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"'
    )
    data = json.loads(artifact.body)
    ApiCatalog.model_validate(data)
    # RFC 9264 section 4.2: an object with one member `linkset`, an array of link context
    # objects, each with an `anchor` and relation-type members holding arrays of target
    # objects with an `href`. Checked on the raw JSON, as a linkset parser reads it.
    assert list(data) == ["linkset"]
    relations: dict[str, list[str]] = {}
    for context in data["linkset"]:
        assert context["anchor"].startswith(TEST_BASE_URL)
        for relation, targets in context.items():
            if relation == "anchor":
                continue
            assert isinstance(targets, list) and targets
            assert all(isinstance(t, dict) and "href" in t for t in targets)
            relations.setdefault(relation, []).extend(t["href"] for t in targets)
    assert TEST_BASE_URL + paths.API_CATALOG in {c["anchor"] for c in data["linkset"]}
    assert relations["service-desc"] == [TEST_BASE_URL + paths.OPENAPI]
    assert {TEST_BASE_URL + paths.LLMS_TXT, TEST_BASE_URL + "/.well-known/service.json"} <= set(
        relations["service-doc"]
    )
    assert TEST_BASE_URL + paths.MCP_MANIFEST in relations["service-meta"]
    assert relations["status"] and relations["item"]


_W3C_DATETIME = re.compile(
    r"\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?"
)  # sitemap.xsd's tLastmod: xsd:date or xsd:dateTime (with a time zone, per the protocol)


def sitemap_problems(body: bytes) -> list[str]:
    """The checks http://www.sitemaps.org/schemas/sitemap/0.9/sitemap.xsd makes, written
    out (no PyPI package ships the XSD; lxml is not a dependency): a `urlset` root in the
    namespace, only `url` children, each with one `loc` (anyURI, 12 to 2,048 characters)
    first, then optional lastmod / changefreq / priority in that order; the protocol's
    50,000 URLs and 50 MiB per file."""
    problems: list[str] = []
    root = ElementTree.fromstring(body)
    if root.tag != SITEMAP_NS + "urlset":
        return [f"root is {root.tag}"]
    order = ["loc", "lastmod", "changefreq", "priority"]
    for index, url in enumerate(root):
        if url.tag != SITEMAP_NS + "url":
            problems.append(f"child {index} is {url.tag}")
            continue
        names = [child.tag.removeprefix(SITEMAP_NS) for child in url]
        if not names or names[0] != "loc" or names != sorted(names, key=order.index):
            problems.append(f"url {index}: elements {names}")
            continue
        loc = url[0].text or ""
        if not 12 <= len(loc) <= 2048 or not re.fullmatch(r"https?://\S+", loc):
            problems.append(f"url {index}: loc {loc!r}")
        lastmod = url.find(SITEMAP_NS + "lastmod")
        if lastmod is not None and not _W3C_DATETIME.fullmatch(lastmod.text or ""):
            problems.append(f"url {index}: lastmod {lastmod.text!r}")
    if len(root) > 50_000 or len(body) > 50 * 1024 * 1024:
        problems.append("over the protocol's 50,000 URLs / 50 MiB")
    return problems


def test_sitemap_is_valid_and_lastmod_is_updated_at(spec_files: dict[str, Artifact]) -> None:
    body = spec_files[paths.SITEMAP].body
    assert sitemap_problems(body) == []
    index = json.loads(spec_files[paths.CONTENT_INDEX].body)["documents"]
    expected = {entry["api_url"]: entry["updated_at"] for entry in index}
    root = ElementTree.fromstring(body)
    found = {u[0].text: u.find(SITEMAP_NS + "lastmod").text for u in root}  # type: ignore[union-attr]
    assert found == expected


def test_sitemap_checks_can_fail() -> None:
    bad = (
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<url><lastmod>2026-01-01</lastmod><loc>https://a.example/x</loc></url>"
        b"<url><loc>https://a.example/y</loc><lastmod>yesterday</lastmod></url></urlset>"
    )
    assert sitemap_problems(bad) == [
        "url 0: elements ['lastmod', 'loc']",
        "url 1: lastmod 'yesterday'",
    ]


def test_robots_allows_every_agent_and_names_the_sitemap(spec_files: dict[str, Artifact]) -> None:
    text = spec_files[paths.ROBOTS_TXT].body.decode("utf-8")
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert lines[:2] == ["User-agent: *", "Allow: /"]
    assert "Disallow: /" not in lines
    assert f"Sitemap: {TEST_BASE_URL}{paths.SITEMAP}" in lines
    assert paths.SITEMAP in spec_files


# --- change feed and sync --------------------------------------------------------------


def _feed(site: Path, base_url: str = TEST_BASE_URL) -> ChangeFeed:
    files = {a.path: a for a in plan(site, base_url).artifacts}
    return ChangeFeed.model_validate_json(files[paths.CHANGES].body)


def _edit_faq(site: Path, faq_id: str, answer: str) -> None:
    path = site / "faq" / f"{faq_id}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["answer"] = answer
    path.write_text(yaml.safe_dump(data), encoding="utf-8")


def _remove_faq(site: Path, faq_id: str) -> None:
    """Delete a FAQ entry and every sentence that links to it, as its author would."""
    (site / "faq" / f"{faq_id}.yaml").unlink()
    sentence = sites.link_sentence(f"faq/{faq_id}")
    for path in sorted(site.rglob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        if sentence in text:
            path.write_text(text.replace(" " + sentence, "").replace(sentence, ""), "utf-8")


def _add_faq(site: Path, faq_id: str) -> None:
    data = {"id": faq_id, "question": f"What is {faq_id}?", "answer": "A new entry."}
    (site / "faq" / f"{faq_id}.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")


def test_generation_moves_only_with_content_and_check_frozen_still_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1800000000")
    site = sites.make_site(tmp_path / "site", sites.Shape(documents=3, faqs=3))
    start = _feed(site).generation
    out = tmp_path / "out"
    build(site, out, TEST_BASE_URL)  # nothing changed: same generation, lock untouched
    assert _feed(site).generation == start
    assert run_cli("check", "--site", site, "--frozen").code == 0
    faq_id = sites.faq_ids(sites.Shape(documents=3, faqs=3))[0]
    _edit_faq(site, faq_id, "An edited answer.")
    assert run_cli("check", "--site", site, "--frozen").code != 0  # the lock is stale
    build(site, out, TEST_BASE_URL)
    assert _feed(site).generation == start + 1
    assert run_cli("check", "--site", site, "--frozen").code == 0
    _remove_faq(site, faq_id)
    build(site, out, TEST_BASE_URL)
    feed = _feed(site)
    assert feed.generation == start + 2
    assert [(group.generation, group.ids) for group in feed.removed] == [(start + 2, [faq_id])]
    # Reproducible: the same content plans the same feed, byte for byte.
    first = {a.path: a.body for a in plan(site, TEST_BASE_URL).artifacts}[paths.CHANGES]
    assert first == {a.path: a.body for a in plan(site, TEST_BASE_URL).artifacts}[paths.CHANGES]


def _requests(agent: AgentClient) -> int:
    return sum(agent.requests.values())


def test_sync_across_three_builds_fetches_only_what_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1800000000")
    shape = sites.Shape(documents=4, faqs=4)
    site = sites.make_site(tmp_path / "site", shape)
    faqs = sites.faq_ids(shape)
    out = tmp_path / "out"
    with running_server(site) as server:
        agent = AgentClient(server.base_url)
        # Build 1: a new client fetches the feed and every entry.
        first = agent.sync(SyncState())
        assert first.started_over and sorted(first.fetched) == sorted(
            sites.document_ids(shape) + faqs
        )
        assert _requests(agent) == 1 + 8
        # Build 2: one FAQ edited, one added, one removed.
        _edit_faq(site, faqs[0], "Edited in build two.")
        _add_faq(site, "q-new")
        _remove_faq(site, faqs[1])
        build(site, out, server.base_url)
        server.edge = load_edge(site, server.base_url)
        before = _requests(agent)
        second = agent.sync(first.state)
        assert not second.started_over
        # The edited and the new FAQ, and the document whose link to the removed one went.
        held = {i: e.content_hash for i, e in first.state.entries.items()}
        changed = {
            e.id for e in _feed(site, server.base_url).entries if held.get(e.id) != e.content_hash
        }
        assert {faqs[0], "q-new"} < changed and len(changed) < 5
        assert sorted(second.fetched) == sorted(changed)
        assert second.removed == [faqs[1]]
        assert _requests(agent) - before == 1 + len(changed)
        assert second.state.generation == first.state.generation + 1  # type: ignore[operator]
        assert b"Edited in build two." in second.state.entries[faqs[0]].body
        assert faqs[1] not in second.state.entries
        # Build 3: nothing changed; the feed itself answers 304.
        build(site, out, server.base_url)
        server.edge = load_edge(site, server.base_url)
        before, not_modified = _requests(agent), agent.requests.get(304, 0)
        third = agent.sync(second.state)
        assert third.fetched == [] and third.removed == [] and not third.started_over
        assert _requests(agent) - before == 1 and agent.requests[304] == not_modified + 1
        # What a fresh full sync would hold, the incremental one holds.
        fresh = AgentClient(server.base_url).sync(SyncState())
        assert fresh.state == third.state


def test_a_kept_state_is_confirmed_by_one_304_in_a_new_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A state kept between runs (a new client, as in another process) asks for the feed
    with the ETag it was made from: nothing published, one 304 and the state as it was;
    after a publish, the feed and only what changed, and the new feed's ETag."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1800000000")
    shape = sites.Shape(documents=2, faqs=2)
    site = sites.make_site(tmp_path / "site", shape)
    faq = sites.faq_ids(shape)[0]
    with running_server(site) as server:
        kept = AgentClient(server.base_url).sync(SyncState()).state
        assert kept.feed_etag and kept.feed_etag.startswith('"')
        later = AgentClient(server.base_url)
        result = later.sync(kept)
        assert result.state == kept and result.fetched == result.removed == []
        assert later.requests == {304: 1}, "one conditional GET of the feed, nothing else"
        _edit_faq(site, faq, "Edited while the client was away.")
        server.edge = load_edge(site, server.base_url)
        again = AgentClient(server.base_url)
        result = again.sync(kept)
        assert result.fetched == [faq] and not result.started_over
        assert again.requests == {200: 2}, "the feed and the edited entry"
        assert result.state.feed_etag not in (None, kept.feed_etag)
        # The new state, kept in turn, is confirmed by a 304 from a client that holds the
        # old feed: it asks for the state's version, not its own.
        assert again.sync(result.state).state == result.state
        assert AgentClient(server.base_url).sync(result.state).fetched == []


def test_sync_trusts_the_hashes_when_the_generation_does_not_move(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`serve --watch` rebuilds from an unchanged lock (and two content branches merged
    cleanly publish one generation): new content under the same generation number must
    still reach a client that synced the first one."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1800000000")
    shape = sites.Shape(documents=2, faqs=2)
    site = sites.make_site(tmp_path / "site", shape)
    faq = sites.faq_ids(shape)[0]
    with running_server(site) as server:
        agent = AgentClient(server.base_url)
        state = agent.sync(SyncState()).state
        generations = []
        for text in ("First edit.", "Second edit."):
            _edit_faq(site, faq, text)
            server.edge = load_edge(site, server.base_url)  # the lock is not written
            result = agent.sync(state)
            state = result.state
            generations.append(state.generation)
            assert result.fetched == [faq] and text.encode() in state.entries[faq].body
        assert generations[0] == generations[1]


def test_sync_starts_over_when_the_held_generation_is_too_old(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1800000000")
    monkeypatch.setattr(lock_module, "KEEP_GENERATIONS", 1)
    shape = sites.Shape(documents=2, faqs=2)
    site = sites.make_site(tmp_path / "site", shape)
    faqs = sites.faq_ids(shape)
    out = tmp_path / "out"
    with running_server(site) as server:
        agent = AgentClient(server.base_url)
        old = agent.sync(SyncState()).state
        for round_ in (1, 2):
            _edit_faq(site, faqs[0], f"Edit {round_}.")
            build(site, out, server.base_url)
        server.edge = load_edge(site, server.base_url)
        feed = ChangeFeed.model_validate(agent.get_json(server.base_url + paths.CHANGES))
        assert old.generation is not None and old.generation < feed.oldest_generation
        again = agent.sync(old)
        assert again.started_over and len(again.fetched) == 4
        assert again.state.generation == feed.generation
        # A generation ahead of the feed (a rollback) starts over too.
        ahead = SyncState(feed.generation + 5, dict(again.state.entries))
        assert agent.sync(ahead).started_over


def test_the_lock_keeps_a_bounded_history() -> None:
    history = lock_module.History()
    for generation in range(1, 80):
        change = lock_module.LockChange(f"id{generation}", None, "entry removed")
        history = lock_module.advance(history, [change])
    assert history.generation == 79
    assert len(history.removed) == lock_module.KEEP_GENERATIONS
    assert history.removed[0][0] == 79 - lock_module.KEEP_GENERATIONS + 1
    assert history.oldest_generation == 79 - lock_module.KEEP_GENERATIONS
    version_only = lock_module.LockChange("x", None, "version changed")
    assert lock_module.advance(history, [version_only]) == history
    assert lock_module.advance(history, []) == history


def test_a_bad_generation_in_the_lock_names_the_field(tmp_path: Path) -> None:
    site = tmp_path / "site"
    shutil.copytree(SPEC_SITE, site)
    lock_path = site / "content.lock.json"
    data = json.loads(lock_path.read_text(encoding="utf-8"))
    data["generation"] = "seven"
    lock_path.write_text(json.dumps(data), encoding="utf-8")
    result = run_cli("check", "--site", site)
    assert result.code != 0
    assert "content.lock.json" in result.err and "generation" in result.err
    assert "Traceback" not in result.err


def test_feed_updated_at_is_a_timestamp(spec_files: dict[str, Artifact]) -> None:
    feed = ChangeFeed.model_validate_json(spec_files[paths.CHANGES].body)
    assert len(feed.entries) == 12 and feed.removed == []
    for entry in feed.entries:
        assert datetime.fromisoformat(entry.updated_at).tzinfo is not None
        assert entry.content_hash.startswith("sha256:")


# --- size budgets ------------------------------------------------------------------------


def test_an_entry_over_the_budget_fails_the_build_naming_it(site_copy: Path) -> None:
    path = site_copy / "faq" / "q02-endpoints.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["answer"] = ("An answer that goes on and on. " * 3_400).strip()  # > 100,000
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    result = run_cli("check", "--site", site_copy)
    assert result.code != 0 and "Traceback" not in result.err
    assert "q02-endpoints.yaml" in result.err
    assert "entry 'q02-endpoints'" in result.err and "100,000" in result.err


def test_llms_txt_nests_into_parts_under_the_budget(tmp_path: Path) -> None:
    from content_builder.budgets import budget_report
    from content_builder.render.llms import LLMS_TXT_BUDGET

    shape = sites.Shape(documents=40, faqs=600)
    site = sites.make_site(tmp_path / "site", shape)
    artifacts = plan(site, TEST_BASE_URL).artifacts
    files = {a.path: a.body.decode("utf-8") for a in artifacts}
    parts = sorted(p for p in files if p.startswith("/llms/"))
    assert len(parts) > 2 and all(len(files[p]) < LLMS_TXT_BUDGET for p in parts)
    root = files[paths.LLMS_TXT]
    assert len(root) < LLMS_TXT_BUDGET
    # The root links every part and no entry; the parts link every entry once.
    assert all(f"]({TEST_BASE_URL}{p})" in root for p in parts)
    assert paths.faq(sites.faq_ids(shape)[0]) not in root
    linked = [line for p in parts for line in files[p].splitlines() if line.startswith("- [")]
    assert len(linked) == 40 + 600
    import llms_txt

    parsed = llms_txt.parse_llms_file(files[parts[-1]])
    assert parsed.title and list(parsed.sections) in (["Documents"], ["FAQ"])
    report = "\n".join(budget_report(artifacts))
    assert f"{len(parts) + 1} files" in report and "llms-full.txt is" in report


def test_verify_walks_the_new_doors_and_names_a_missing_catalog_link() -> None:
    from agent_client.verify import verify
    from agent_edge.edge import Response

    with running_server() as server:
        report = verify(server.base_url)
        subjects = {finding.subject for finding in report.findings}
        assert not report.failures, report.failures[:3]
        assert {
            paths.CHANGES, paths.API_CATALOG, paths.SITEMAP, paths.ROBOTS_TXT,
            "/api/v1/content/site.md", "/api/v1/faq/q06-architecture.md", "/llms/faq-1.txt",
        } <= subjects  # fmt: skip

        real = server.edge.handle

        def without_link(method: str, target: str, headers: Any) -> Response:
            response = real(method, target, headers)
            kept = tuple(h for h in response.headers if h[0] != "Link")
            return Response(response.status, kept, response.body)

        server.edge.handle = without_link  # type: ignore[method-assign]
        failures = verify(server.base_url).failures
        assert failures and all('rel="api-catalog"' in f.message for f in failures)
