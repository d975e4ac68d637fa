"""Search quality floors: a content edit that breaks search for agents fails CI.

The evaluation set (tests/search_eval/questions.yaml) holds questions phrased the way
users and agents ask, each with the ids that answer it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from content_builder import paths
from content_builder.build import plan
from content_builder.models import SearchEntry, SearchIndex
from content_builder.search_eval import (
    evaluate,
    index_stats,
    load_questions,
    naive_rank,
    project_rank,
)
from tests.conftest import REPO, SITE_DATA, run_cli

QUESTIONS = REPO / "tests" / "search_eval" / "questions.yaml"
# Written without seeing questions.yaml or the authored keywords: catches overfitting.
HOLDOUT = REPO / "tests" / "search_eval" / "holdout.yaml"
NAIVE_RECALL_AT_1 = 0.70
NAIVE_RECALL_AT_3 = 0.90
# Guards against flooding: every word form of every word would match everything.
MAX_KEYWORDS_PER_ENTRY = 600
MAX_INDEX_BYTES = 200_000


@pytest.fixture(scope="module")
def index_body() -> bytes:
    artifacts = {a.path: a for a in plan(SITE_DATA).artifacts}
    return artifacts[paths.SEARCH_INDEX].body


@pytest.fixture(scope="module")
def index(index_body: bytes) -> SearchIndex:
    return SearchIndex.model_validate_json(index_body)


@pytest.mark.parametrize(("questions_file", "minimum"), [(QUESTIONS, 40), (HOLDOUT, 30)])
def test_the_evaluation_sets_are_sound(
    index: SearchIndex, questions_file: Path, minimum: int
) -> None:
    questions = load_questions(questions_file)
    assert len(questions) >= minimum
    ids = {entry.id for entry in index.entries}
    firsts: dict[str, int] = {}
    for question in questions:
        assert question.answers and set(question.answers) <= ids, question
        firsts[question.answers[0]] = firsts.get(question.answers[0], 0) + 1
    assert set(firsts) == ids, "every document and FAQ entry is the best answer somewhere"


@pytest.mark.parametrize("questions_file", [QUESTIONS, HOLDOUT])
def test_naive_client_meets_the_floors(index: SearchIndex, questions_file: Path) -> None:
    scores = evaluate(index, load_questions(questions_file), naive_rank)
    assert scores.recall_at_3 >= NAIVE_RECALL_AT_3, scores.misses
    assert scores.recall_at_1 >= NAIVE_RECALL_AT_1, scores


@pytest.mark.parametrize("questions_file", [QUESTIONS, HOLDOUT])
def test_project_client_is_at_least_as_good_as_the_naive_one(
    index: SearchIndex, questions_file: Path
) -> None:
    questions = load_questions(questions_file)
    naive = evaluate(index, questions, naive_rank)
    client = evaluate(index, questions, project_rank)
    assert client.recall_at_1 >= naive.recall_at_1
    assert client.recall_at_3 >= naive.recall_at_3
    assert client.mrr >= naive.mrr


def test_the_index_stays_small(index_body: bytes) -> None:
    stats = index_stats(index_body)
    assert stats.keywords_per_entry <= MAX_KEYWORDS_PER_ENTRY, stats
    assert stats.size_bytes <= MAX_INDEX_BYTES, stats


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


def test_search_eval_command_prints_both_clients(tmp_path: Path) -> None:
    result = run_cli("search-eval", "--site", SITE_DATA, "--questions", QUESTIONS, "--misses")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert "questions" in lines[0] and "keywords per entry" in lines[0]
    assert lines[1].split() == ["client", "recall@1", "recall@3", "MRR"]
    assert [line.split()[0] for line in lines[2:] if not line.startswith("  ")] == [
        "naive",
        "client",
    ]
