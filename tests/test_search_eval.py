"""Search quality: measured on the questions the site owner keeps with the content.

The product's ranking is held to the floors on the tests' own spec-shaped site (its
search-questions.yaml is a frozen copy of the sample's); `check` is tested to report
recall and misses on any site and to fail only when the owner asks it to.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from agent_contract import paths
from agent_contract.models import SearchEntry, SearchIndex
from content_builder.build import plan
from content_builder.search_eval import (
    QUESTIONS_FILE,
    evaluate,
    index_stats,
    load_question_sets,
    naive_rank,
    project_rank,
)
from tests.conftest import SITE_DATA, SPEC_SITE, run_cli

QUESTIONS = SPEC_SITE / QUESTIONS_FILE
NAIVE_RECALL_AT_1 = 0.70
NAIVE_RECALL_AT_3 = 0.90
# Guards against flooding: every word form of every word would match everything.
MAX_KEYWORDS_PER_ENTRY = 600
MAX_INDEX_BYTES = 200_000


@pytest.fixture(scope="module")
def index_body() -> bytes:
    artifacts = {a.path: a for a in plan(SPEC_SITE).artifacts}
    return artifacts[paths.SEARCH_INDEX].body


@pytest.fixture(scope="module")
def index(index_body: bytes) -> SearchIndex:
    return SearchIndex.model_validate_json(index_body)


SETS = [("questions", 40), ("held_out", 30)]


@pytest.mark.parametrize(("name", "minimum"), SETS)
def test_the_evaluation_sets_are_sound(index: SearchIndex, name: str, minimum: int) -> None:
    questions = load_question_sets(QUESTIONS)[name]
    assert len(questions) >= minimum
    ids = {entry.id for entry in index.entries}
    firsts: dict[str, int] = {}
    for question in questions:
        assert question.answers and set(question.answers) <= ids, question
        firsts[question.answers[0]] = firsts.get(question.answers[0], 0) + 1
    assert set(firsts) == ids, "every document and FAQ entry is the best answer somewhere"


@pytest.mark.parametrize(("name", "minimum"), SETS)
def test_naive_client_meets_the_floors(index: SearchIndex, name: str, minimum: int) -> None:
    scores = evaluate(index, load_question_sets(QUESTIONS)[name], naive_rank)
    assert scores.recall_at_3 >= NAIVE_RECALL_AT_3, scores.misses
    assert scores.recall_at_1 >= NAIVE_RECALL_AT_1, scores


@pytest.mark.parametrize(("name", "minimum"), SETS)
def test_project_client_is_at_least_as_good_as_the_naive_one(
    index: SearchIndex, name: str, minimum: int
) -> None:
    questions = load_question_sets(QUESTIONS)[name]
    naive = evaluate(index, questions, naive_rank)
    client = evaluate(index, questions, project_rank)
    assert client.recall_at_1 >= naive.recall_at_1
    assert client.recall_at_3 >= naive.recall_at_3
    assert client.mrr >= naive.mrr


def test_the_index_stays_small(index_body: bytes) -> None:
    stats = index_stats(index_body)
    assert stats.keywords_per_entry <= MAX_KEYWORDS_PER_ENTRY, stats
    assert stats.size_bytes <= MAX_INDEX_BYTES, stats


# --- check: the owner's questions, floors and choice ---------------------------------


def _settings(site: Path, **values: object) -> None:
    data = yaml.safe_load((site / "site.yaml").read_text(encoding="utf-8"))
    data["search_eval"] = {**data.get("search_eval", {}), **values}
    (site / "site.yaml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def test_check_reports_recall_per_set_on_the_owners_site() -> None:
    result = run_cli("check", "--site", SITE_DATA)
    assert result.code == 0, result.err
    lines = [line for line in result.out.splitlines() if line.startswith("search: ")]
    # The sets the owner's file has: `held_out` is optional (issue 23).
    owners = load_question_sets(SITE_DATA / QUESTIONS_FILE)
    present = [name for name, questions in owners.items() if questions]
    assert "questions" in present
    for name in present:
        (summary,) = [line for line in lines if line.startswith(f"search: {name}: ") and
                      "recall@1" in line]  # fmt: skip
        assert "recall@3" in summary and "floors" in summary


def test_a_drop_below_the_floor_fails_check_only_when_the_owner_says_so(site_copy: Path) -> None:
    _settings(site_copy, recall_at_1=1.0, recall_at_3=1.0, fail_below=True)
    failed = run_cli("check", "--site", site_copy)
    assert failed.code == 1
    assert "search-questions.yaml: field 'questions': recall@3" in failed.err
    assert "below the floor 1.00" in failed.err
    assert "Traceback" not in failed.err
    assert "miss: " in failed.out, "the misses are listed"

    _settings(site_copy, fail_below=False)
    reported = run_cli("check", "--site", site_copy)
    assert reported.code == 0, reported.err
    assert "warning: questions: recall@3" in reported.out


def test_entries_without_questions_and_unknown_ids_are_reported_not_failures(
    site_copy: Path,
) -> None:
    path = site_copy / QUESTIONS_FILE
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["questions"] = [q for q in data["questions"] if q["answers"][0] != "compatibility"]
    data["held_out"] = [q for q in data["held_out"] if q["answers"][0] != "compatibility"]
    data["questions"].append({"q": "pricing plans", "answers": ["pricing", "site"]})
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    result = run_cli("check", "--site", site_copy)
    assert result.code == 0, result.err
    assert "no question has these entries as its best answer: ['compatibility']" in result.out
    assert "'pricing plans' names unknown ids ['pricing']" in result.out


def test_a_site_without_questions_is_not_measured(site_copy: Path) -> None:
    (site_copy / QUESTIONS_FILE).unlink()
    result = run_cli("check", "--site", site_copy)
    assert result.code == 0, result.err
    assert "search quality is not measured" in result.out


def test_a_malformed_questions_file_names_the_file_and_field(site_copy: Path) -> None:
    path = site_copy / QUESTIONS_FILE
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["questions"][2]["answers"] = []
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    result = run_cli("check", "--site", site_copy)
    assert result.code == 1
    assert f"{QUESTIONS_FILE}: field 'questions[2].answers'" in result.err
    assert "Traceback" not in result.err


def test_the_floors_are_validated(site_copy: Path) -> None:
    _settings(site_copy, recall_at_3=1.5)
    result = run_cli("check", "--site", site_copy)
    assert result.code == 1
    assert "site.yaml: field 'search_eval.recall_at_3'" in result.err


def _entry(entry_id: str, title: str, keywords: list[str]) -> SearchEntry:
    return SearchEntry(
        id=entry_id, title=title, description="", api_url="https://x.test/a.json", keywords=keywords
    )


def test_naive_rule_ranks_by_distinct_words_then_title_then_order() -> None:
    index = SearchIndex(
        version="1",
        entries=[
            _entry("one-word", "Other", ["cache"]),
            _entry("two-words", "Other", ["cache", "headers"]),
            _entry("title-match", "Cache rules", ["cache"]),
            _entry("none", "Cache", ["unrelated"]),
        ],
    )
    # "Cache" is matched case-insensitively, "headers," despite the comma; each word once.
    assert naive_rank(index, "Cache headers, cache") == ["two-words", "title-match", "one-word"]
    assert naive_rank(index, "caching") == [], "the naive rule does no stemming"
    assert project_rank(index, "caches") == ["title-match", "one-word", "two-words"]


def test_search_eval_command_prints_every_ranking(tmp_path: Path) -> None:
    # The questions default to the site's own search-questions.yaml.
    site = tmp_path / "site_data"
    shutil.copytree(SPEC_SITE, site)
    result = run_cli("search-eval", "--site", site, "--misses")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert "questions" in lines[0] and "keywords per entry" in lines[0]
    assert lines[1].split() == ["client", "recall@1", "recall@3", "MRR"]
    assert [line.split()[0] for line in lines[2:] if not line.startswith("  ")] == [
        "naive",
        "client",
        "shards",  # the agent client's own search since issue 25
    ]
