"""The sharded search index (issue 25): what a query costs, what it finds, what an edit
publishes, on a generated site with the sample's entries inside; and the client through it.

The smoke version of `python -m benchmarks.shard_bench` (benchmarks/README.md): it fails
when bytes per query or recall regress past the issue's targets at a small N."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_client.client import AgentClient
from agent_contract import paths, search_query, search_shards
from benchmarks import shard_bench, sitegen
from content_builder.render import shard_layout
from tests.conftest import SITE_DATA, running_server

N = 40  # 91 entries: a few seconds to generate and build twice
BYTES_PER_QUERY = 300_000  # the target at N = 10,000, held at every size
#: The issue's target. Met here (0.031 on `questions`, 0.034 on held_out at N = 40) and,
#: since the sample's owner declares synonyms (site.yaml `search.synonyms`), at N = 1,000
#: and 10,000 too (0.046 / 0.034; benchmarks/README.md, "Issue 25").
RECALL_DROP = 0.05


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> sitegen.GeneratedSite:
    return sitegen.generate_with_sample(tmp_path_factory.mktemp("shards") / "site", N)


@pytest.fixture(scope="module")
def measured(mixed: sitegen.GeneratedSite) -> shard_bench.SiteResult:
    page = next(d for d in mixed.document_ids[1:] if d[-5:].isdigit() and _is_page(mixed, d))
    return shard_bench.measure(mixed.root, edit=page)


def _is_page(site: sitegen.GeneratedSite, document_id: str) -> bool:
    text = (site.root / "content" / f"{document_id}.yaml").read_text(encoding="utf-8")
    return "content_type: page" in text and "      body: >-\n" in text


def test_a_query_reads_few_bytes(measured: shard_bench.SiteResult) -> None:
    assert measured.query_bytes.questions >= 90
    assert measured.query_bytes.raw_max < BYTES_PER_QUERY
    assert measured.query_bytes.gzip_median < measured.query_bytes.raw_median
    assert measured.query_bytes.files_max < 40


def test_recall_holds_with_the_sample_inside_a_larger_site(
    measured: shard_bench.SiteResult,
) -> None:
    alone = shard_bench.measure(SITE_DATA)
    assert measured.entries > alone.entries * 5
    for name in ("questions", "held_out"):
        assert measured.recall[name]["questions"] == alone.recall[name]["questions"]
        drop = alone.recall[name]["recall_at_3"] - measured.recall[name]["recall_at_3"]
        assert drop <= RECALL_DROP, (name, alone.recall[name], measured.recall[name])
    assert alone.recall["questions"]["recall_at_3"] >= 0.9


def test_a_one_entry_edit_publishes_a_few_shards(measured: shard_bench.SiteResult) -> None:
    edit = measured.edit
    assert edit is not None
    assert any(path.endswith(".json") and "/content/" in path for path in edit.paths)
    shards = [p for p in edit.paths if p.startswith("/api/v1/search/shards/")]
    assert shards, "the edit's new word is in some shard"
    # A few shards and the term map, never the index: most shards kept their names.
    assert len(shards) <= max(6, measured.shard_files // 10), edit.paths
    assert paths.SEARCH_TERMS in edit.paths


def test_every_term_of_an_entry_is_posted(mixed: sitegen.GeneratedSite) -> None:
    """No budget: the sample's rarest words are found at any size, in the entry's shard."""
    from content_builder.build import plan

    files = {artifact.path: artifact.body for artifact in plan(mixed.root).artifacts}
    for word, expected in (("zyzzyva", None), ("scrapers", "q01-difference")):
        found = search_query.query(files.__getitem__, word, limit=3)
        if expected is None:
            assert not found.hits
        else:
            assert expected in [hit.id for hit in found.hits], word
    term_map = json.loads(files[paths.SEARCH_TERMS])
    assert [first for first, _ in term_map["shards"]] == sorted(
        first for first, _ in term_map["shards"]
    )


def test_the_client_searches_through_the_shards(site_copy: Path) -> None:
    with running_server(site_copy) as server:
        client = AgentClient(server.base_url)
        page = client.search_page("how do agents check if a document changed", limit=3)
        assert len(page.hits) == 3 and page.more
        assert page.files[0] == paths.SEARCH_TERMS
        assert paths.SEARCH_INDEX not in page.files, "the whole index is not read"
        assert all(hit.api_url.startswith(server.base_url) for hit in page.hits)
        following = client.search("how do agents check if a document changed", 3, offset=3)
        assert not {hit.id for hit in following} & {hit.id for hit in page.hits}
        # A shard replaced since the term map was read answers 404: the map is read again.
        stale = {**{p: b for p, b in _files(client, page.files)}}
        fetched: list[str] = []

        def fetch(path: str) -> bytes:
            fetched.append(path)
            if path.startswith("/api/v1/search/shards/") and fetched.count(paths.SEARCH_TERMS) < 2:
                raise search_query.MissingFile(path)
            return stale.get(path) or client.fetch(client.url(path)).body

        again = search_query.query(fetch, "how do agents check if a document changed", 3)
        assert [hit.id for hit in again.hits] == [hit.id for hit in page.hits]
        assert fetched.count(paths.SEARCH_TERMS) == 2


def _files(client: AgentClient, read: list[str]) -> list[tuple[str, bytes]]:
    return [(path, client.fetch(client.url(path)).body) for path in read]


def test_content_named_shards_are_never_invalidated_unless_rewritten_in_place() -> None:
    from infra import publisher

    def entry(sha: str, path: str) -> dict[str, object]:
        from agent_contract.routes import rule_for

        rule = rule_for(path)
        return {"sha256": sha, "size": 1, "media_type": rule.media_type,
                "cache_control": rule.cache_control}  # fmt: skip

    old_shard, new_shard = (
        "/api/v1/search/shards/" + "a" * 16 + ".json",
        ("/api/v1/search/shards/" + "b" * 16 + ".json"),
    )
    kept = "/api/v1/search/shards/" + "c" * 16 + ".json"
    previous = {
        old_shard: entry("1", old_shard),
        kept: entry("2", kept),
        paths.SEARCH_TERMS: entry("3", paths.SEARCH_TERMS),
    }
    current = {
        new_shard: entry("4", new_shard),
        kept: {**entry("2", kept), "cache_control": "public, max-age=60, s-maxage=60"},
        paths.SEARCH_TERMS: entry("5", paths.SEARCH_TERMS),
    }
    plan = publisher.plan_publish(previous, current)
    assert plan.changed_paths == sorted([old_shard, new_shard, kept, paths.SEARCH_TERMS])
    # Added and deleted shards: never served under another content; a shard rewritten in
    # place (its headers changed) is invalidated like any file.
    assert plan.stale_paths == sorted([kept, paths.SEARCH_TERMS])
    assert plan.with_repairs([]).stale_paths == plan.stale_paths


@pytest.mark.skipif(
    shutil.which("jq") is None or shutil.which("curl") is None, reason="needs curl and jq"
)
def test_the_documented_curl_example_finds_an_entry(site_copy: Path, tmp_path: Path) -> None:
    """The worked example llms.txt and the README publish, run as written."""
    with running_server(site_copy) as server:
        script = search_shards.curl_example(server.base_url)
        llms = AgentClient(server.base_url).fetch(server.base_url + paths.LLMS_TXT).body
        assert script in llms.decode("utf-8")
        done = subprocess.run(
            ["bash", "-c", "set -euo pipefail\n" + script],
            cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    entry = json.loads(done.stdout.split("\n", 1)[1])
    assert entry["api_url"].startswith(server.base_url) and entry["id"] and entry["title"]


@pytest.mark.parametrize(
    "damage",
    [
        lambda shard: {"terms": {t: {"df": "x", "postings": []} for t in shard["terms"]}},
        lambda shard: {"terms": {t: {"df": 1, "postings": [[]]} for t in shard["terms"]}},
        lambda shard: {"terms": {t: {"df": 1} for t in shard["terms"]}},
        lambda shard: {"terms": {t: {"df": 1, "postings": 3} for t in shard["terms"]}},
        lambda shard: ["not", "an", "object"],
    ],
)
def test_a_damaged_shard_is_a_clear_error_never_a_traceback(damage: Any) -> None:
    from content_builder.build import plan

    files = {a.path: a.body for a in plan(SITE_DATA).artifacts}
    damaged = {
        path: json.dumps(damage(json.loads(body))).encode()
        if path.startswith("/api/v1/search/shards/")
        else body
        for path, body in files.items()
    }
    with pytest.raises(search_query.SearchFormatError):
        search_query.query(damaged.__getitem__, "cache headers for agents", limit=3)


def test_a_page_is_the_exact_ranking_in_its_order(mixed: sitegen.GeneratedSite) -> None:
    """Reading `more` shards stops early (NRA); that may settle which entries are on the
    page, but their order too must be the full ranking's, or a page of 10 answers a
    wrong first 3 (it did, once coordination made an entry's score jump with a word)."""
    from content_builder import search_eval
    from content_builder.build import plan

    files = {artifact.path: artifact.body for artifact in plan(mixed.root).artifacts}
    sets = search_eval.load_question_sets(mixed.root / "search-questions.yaml")
    stopped_early = 0
    for question in [q for questions in sets.values() for q in questions]:
        exact = [hit.id for hit in search_query.query(files.__getitem__, question.q, None).hits]
        for offset in (0, 3):
            page = search_query.query(files.__getitem__, question.q, 10, offset)
            assert [hit.id for hit in page.hits] == exact[offset : offset + 10], question.q
            stopped_early += len(page.files) < len(
                search_query.query(files.__getitem__, question.q, None).files
            )
    assert stopped_early > 50  # the early stop is exercised, not bypassed


def _index(postings: dict[str, dict[str, int]], entries: int) -> dict[str, bytes]:
    """A hand-made sharded index: one shard, one entry file, word -> {key: weight}."""
    terms = {
        word: {
            "df": len(held),
            "postings": [
                [weight, *sorted(k for k, w in held.items() if w == weight)]
                for weight in sorted(set(held.values()), reverse=True)
            ],
        }
        for word, held in sorted(postings.items())
    }
    keys = sorted({key for held in postings.values() for key in held})
    return _index_files(terms, keys, entries, "one")


def _index_files(
    terms: dict[str, Any], keys: list[str], entries: int, shard: str
) -> dict[str, bytes]:
    """The term map of a hand-made index whose first shard, `shard`, holds `terms`; that
    shard; and the entry files of `keys` (each its own title, by its first letter)."""
    term_map = {
        "version": search_shards.FORMAT_VERSION,
        "entries": entries,
        "prefix_length": 1,
        "shard_url": "https://x.invalid/s/{shard}.json",
        "entries_url": "https://x.invalid/e/{prefix}.json",
        "procedure": "",
        "shards": [[min(terms), shard]],
    }
    files = {
        paths.SEARCH_TERMS: json.dumps(term_map).encode(),
        f"/s/{shard}.json": json.dumps({"terms": terms}).encode(),
    }
    for prefix in {key[0] for key in keys}:
        held = {
            key: {"id": key, "title": key, "url": f"https://x.invalid/{key}", "description": "",
                  "api_url": f"https://x.invalid/api/{key}"}
            for key in keys if key[0] == prefix
        }  # fmt: skip
        files[f"/e/{prefix}.json"] = json.dumps({"entries": held}).encode()
    return files


def test_an_entry_holding_every_word_beats_one_holding_a_rare_word_strongly() -> None:
    """Coordination: "rare" in a title (weight 10) alone does not beat "rare" and
    "common" in prose, though its sum of weight * idf is the higher."""
    files = _index({"rare": {"a1": 10, "b2": 4}, "common": {"b2": 4, "c3": 4}}, 100)
    found = search_query.query(files.__getitem__, "rare common", limit=3)
    assert [hit.id for hit in found.hits][:2] == ["b2", "a1"]
    rare, common = search_shards.idf(2, 100), search_shards.idf(2, 100)
    assert 10 * rare > 4 * rare + 4 * common  # what a plain sum would have ranked first
    assert found.hits[1].score == round(10 * rare * (1 / 2) ** search_shards.COORDINATION, 4)
    # One word: no coordination, the heavier weight first.
    single = search_query.query(files.__getitem__, "rare", limit=3)
    assert [hit.id for hit in single.hits] == ["a1", "b2"]


def test_prose_weights_saturate_and_fall_with_length() -> None:
    weight = search_shards.body_weight
    reference = search_shards.BODY_REFERENCE_LENGTH
    assert weight(1, reference) < weight(3, reference) < weight(20, reference)
    assert weight(20, reference) <= search_shards.BODY_TOP < search_shards.TITLE_WEIGHT
    assert weight(3, reference // 4) > weight(3, reference * 4) >= 1
    assert weight(1, 10 * reference) == 1  # never 0: every word stays findable


@pytest.mark.parametrize("length", [1, 17, search_shards.BODY_REFERENCE_LENGTH, 5_000])
def test_an_entry_s_prose_weights_are_each_word_s_weight(length: int) -> None:
    counts = [1, 2, 1, 7, 40, 2, 1, 300, 3]
    weights = search_shards.body_weights(iter(counts), length)  # a view: read once
    assert list(weights) == [search_shards.body_weight(count, length) for count in counts]


# The index's values: strings of any character a site can hold (controls, U+2028, astral
# ones), ints, and lists and objects of them.
_JSON_VALUES = st.recursive(
    st.one_of(st.text(), st.integers(min_value=-(2**63), max_value=2**63 - 1), st.booleans()),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=500, deadline=None)
@given(_JSON_VALUES)
def test_the_shards_json_is_json_dumps_compact(value: Any) -> None:
    """shard_layout.compact_json (pydantic's serializer, for speed) writes the bytes
    `json.dumps(ensure_ascii=False, separators=(",", ":"))` writes: the shards' names are
    their bytes' digest, so any other spelling would rename every shard."""
    expected = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    assert shard_layout.compact_json(value) == expected


def _index_with_more(
    head: dict[str, list[list[Any]]],
    more: dict[str, list[list[Any]]],
    entries: int,
    df: dict[str, int],
) -> dict[str, bytes]:
    """A hand-made sharded index whose words have `more` shards: word -> its head groups
    [weight, key, ...], word -> its further groups (one `more` shard each), and word ->
    its df (the entries holding it: more than those listed, whose weights are too low
    to matter here)."""
    terms: dict[str, Any] = {}
    files: dict[str, bytes] = {}
    for word, groups in head.items():
        held = {key for group in groups + more.get(word, []) for key in group[1:]}
        terms[word] = {"df": max(df[word], len(held)), "postings": groups, "more": []}
        for number, group in enumerate(more.get(word, [])):
            name = f"{word}-{number}"
            terms[word]["more"].append([group[0], name, len(group) - 1])
            files[f"/s/{name}.json"] = json.dumps({"terms": {word: {"postings": [group]}}}).encode()
    every = [group for groups in [*head.values(), *more.values()] for group in groups]
    keys = sorted({key for group in every for key in group[1:]})
    return {**files, **_index_files(terms, keys, entries, "head")}


def test_an_entry_titled_with_every_word_is_found_when_the_budget_stops_the_reading() -> None:
    """At 10,000 entries a title's words are each in thousands of entries, and reading
    `more` shards stops at MORE_POSTINGS_BUDGET. Read by idf * weight alone, the budget
    went on the rarer word's low weights (its prose) before the common word's title
    postings were read, so the entry whose title holds both never got the coordination
    it earns: an exact title found its entry in the top 5 for 58 of 100 random titles of
    a generated 10,000-entry site (96 read highest weight first; session 27)."""
    rare_title = [f"r{i:05d}" for i in range(40)]  # "rare" in their titles, not "common"
    files = _index_with_more(
        head={
            "rare": [[10, *rare_title[:31], "t0"]],
            "common": [[10, *(f"c{i:05d}" for i in range(32))]],
        },
        more={
            # rare's next title postings, then its prose: more than the whole budget
            "rare": [
                [10, *rare_title[31:]],
                [4, *(f"p{i:05d}" for i in range(search_query.MORE_POSTINGS_BUDGET + 10))],
            ],
            # common's other titles, the entry titled "rare common" among them
            "common": [[10, "t0", *(f"d{i:05d}" for i in range(500))]],
        },
        entries=100_000,
        df={"rare": 16_050, "common": 90_000},
    )
    found = search_query.query(files.__getitem__, "rare common", limit=5)
    assert not found.exact  # the budget stopped the reading: the case of a large site
    assert found.hits[0].id == "t0", [hit.id for hit in found.hits]
    assert found.hits[0].matched == ("rare", "common")
