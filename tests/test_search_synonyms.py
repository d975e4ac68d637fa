"""Synonyms the site's owner declares (site.yaml `search.synonyms`, issue 25's recall):
published in the sharded index's term map and applied by the one query procedure, on a
generated site whose entries never use the query's word."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from agent_contract import paths, search_query, search_shards
from content_builder.build import plan
from content_builder.errors import SiteDataError
from tests import sites
from tests.conftest import TEST_BASE_URL

#: An answer in the owner's words ("endpoints") that a visitor asks about in theirs
#: ("routes"): no other entry of the generated site says either.
ANSWER_ID = "q-endpoints"
ANSWER = {
    "id": ANSWER_ID,
    "question": "Which endpoints does {name} publish?",
    "answer": "Every endpoint answers a GET with a static JSON file.",
}


def _site(root: Path, synonyms: list[list[str]] | None) -> Path:
    sites.make_site(root, sites.Shape(documents=20, faqs=20))
    (root / "faq" / f"{ANSWER_ID}.yaml").write_text(yaml.safe_dump(ANSWER), encoding="utf-8")
    if synonyms is not None:
        config = yaml.safe_load((root / "site.yaml").read_text(encoding="utf-8"))
        config["search"] = {"synonyms": synonyms}
        (root / "site.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    sites.refresh_lock(root)
    return root


def _search_files(root: Path) -> dict[str, bytes]:
    return {a.path: a.body for a in plan(root, TEST_BASE_URL).artifacts}


@pytest.fixture(scope="module")
def declared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    root = tmp_path_factory.mktemp("synonyms") / "site"
    return _search_files(_site(root, [["Endpoints", "routes", "paths"]]))


def test_the_term_map_publishes_the_owners_groups_folded(declared: dict[str, bytes]) -> None:
    term_map = json.loads(declared[paths.SEARCH_TERMS])
    assert term_map["synonyms"] == [["endpoints", "routes", "paths"]]
    assert "synonyms" in term_map["procedure"]


def test_a_query_in_the_visitors_words_finds_the_answer_in_the_owners(
    declared: dict[str, bytes], tmp_path: Path
) -> None:
    found = search_query.query(declared.__getitem__, "which routes are there", limit=3)
    assert [hit.id for hit in found.hits][:1] == [ANSWER_ID]
    assert found.hits[0].matched == ("routes",)  # the query's word, not the entry's
    # A form of a group's word finds the group too ("route" -> "routes").
    single = search_query.query(declared.__getitem__, "route", limit=3)
    assert [hit.id for hit in single.hits][:1] == [ANSWER_ID]
    # Without the owner's group nothing says "routes": no hit at all.
    plain = _search_files(_site(tmp_path / "plain", None))
    assert json.loads(plain[paths.SEARCH_TERMS])["synonyms"] == []
    assert search_query.query(plain.__getitem__, "which routes are there", limit=3).hits == []


def test_a_word_of_a_group_counts_once_with_its_best_weight() -> None:
    """An entry holding two words of a group is not counted twice (nor as holding two
    of the query's words): "routes" in a title beats "endpoints" and "routes" in prose."""
    from tests.test_search_shards import _index

    files = _index({"endpoints": {"b2": 4, "c3": 4}, "routes": {"a1": 10, "b2": 4}}, 100)
    term_map = json.loads(files[paths.SEARCH_TERMS])
    term_map["synonyms"] = [["routes", "endpoints"]]
    files[paths.SEARCH_TERMS] = json.dumps(term_map).encode()
    found = search_query.query(files.__getitem__, "routes", limit=3)
    assert [hit.id for hit in found.hits] == ["a1", "b2", "c3"]
    assert found.hits[1].score == round(4 * search_shards.idf(2, 100), 4)


@pytest.mark.parametrize(
    ("synonyms", "message"),
    [
        ([["rate limit", "throttle"]], "not one search word"),
        ([["the", "endpoint"]], "not one search word"),
        ([["routes"]], "at least two different words"),
        ([["routes", "Routes"]], "at least two different words"),
        ([["routes", "endpoints"], ["route", "paths"]], "two synonym groups"),
        # Bounded: the term map every query reads first carries them all.
        ([[f"word{n}x" for n in range(21)]], "at most 20 items"),
        ([[f"left{n}x", f"right{n}x"] for n in range(201)], "at most 200 items"),
    ],
)
def test_a_group_search_cannot_match_is_refused(
    tmp_path: Path, synonyms: list[list[str]], message: str
) -> None:
    root = sites.make_site(tmp_path / "site", sites.Shape(documents=3, faqs=0))
    config = yaml.safe_load((root / "site.yaml").read_text(encoding="utf-8"))
    config["search"] = {"synonyms": synonyms}
    (root / "site.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    with pytest.raises(SiteDataError, match=message):
        plan(root, TEST_BASE_URL)


@pytest.mark.parametrize("damaged", ["routes", [["routes", 3]], [{"routes": "endpoints"}]])
def test_damaged_synonyms_are_a_clear_error_never_a_traceback(
    declared: dict[str, bytes], damaged: object
) -> None:
    term_map = json.loads(declared[paths.SEARCH_TERMS])
    term_map["synonyms"] = damaged
    files = {**declared, paths.SEARCH_TERMS: json.dumps(term_map).encode()}
    with pytest.raises(search_query.SearchFormatError, match="synonyms"):
        search_query.query(files.__getitem__, "routes", limit=3)


def test_an_edit_of_the_groups_alone_republishes_the_term_map(tmp_path: Path) -> None:
    """The groups are site.yaml's, not an entry's: a build that reuses every entry's
    cached terms still writes the new groups (the term map is the only file that moves)."""
    root = _site(tmp_path / "site", [["endpoints", "routes"]])
    before = _search_files(root)
    config = yaml.safe_load((root / "site.yaml").read_text(encoding="utf-8"))
    config["search"] = {"synonyms": [["endpoints", "routes", "paths"]]}
    (root / "site.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    after = _search_files(root)
    assert json.loads(after[paths.SEARCH_TERMS])["synonyms"] == [["endpoints", "routes", "paths"]]
    search = [p for p in after if p.startswith("/api/v1/search/")]
    assert [p for p in search if before.get(p) != after[p]] == [paths.SEARCH_TERMS]
