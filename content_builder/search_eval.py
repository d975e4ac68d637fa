"""`python -m content_builder search-eval`: how well the published keywords answer real questions.

Two clients are measured on an evaluation set of questions (tests/search_eval/questions.yaml,
each with the ids that answer it):

- naive: the spec's rule and nothing more, as most agents will implement it: lowercase
  the query, split it on non-alphanumerics, keep entries with at least one query word
  equal to one of their keywords, rank by the number of distinct words matched (ties:
  more of them in the title, then index order);
- client: this project's agent client (`content_builder.client.rank`), which also drops
  stop words and tries each word's stem.

A question is answered at k when any of its ids is among the first k results. MRR is the
mean of 1/rank of the first right result (0 when none is returned).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from content_builder import paths
from content_builder.client import rank as client_rank
from content_builder.models import SearchIndex

_SPLIT = re.compile(r"[^0-9a-z]+")

Ranker = Callable[[SearchIndex, str], list[str]]


def naive_words(text: str) -> list[str]:
    return [word for word in _SPLIT.split(text.lower()) if word]


def naive_rank(index: SearchIndex, query: str) -> list[str]:
    words = set(naive_words(query))
    scored = []
    for position, entry in enumerate(index.entries):
        matched = words & set(entry.keywords)
        if matched:
            in_title = len(matched & set(naive_words(entry.title)))
            scored.append((-len(matched), -in_title, position, entry.id))
    return [entry_id for *_, entry_id in sorted(scored)]


def project_rank(index: SearchIndex, query: str) -> list[str]:
    return [hit.id for hit in client_rank(index, query)]


RANKERS: dict[str, Ranker] = {"naive": naive_rank, "client": project_rank}


@dataclass(frozen=True)
class Question:
    q: str
    answers: tuple[str, ...]


@dataclass(frozen=True)
class Scores:
    recall_at_1: float
    recall_at_3: float
    mrr: float
    misses: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]  # question, answers, top 3


def load_questions(path: Path) -> list[Question]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [Question(item["q"], tuple(item["answers"])) for item in data["questions"]]


def evaluate(index: SearchIndex, questions: list[Question], ranker: Ranker) -> Scores:
    at_1 = at_3 = reciprocal = 0.0
    misses = []
    for question in questions:
        ranked = ranker(index, question.q)
        ranks = [ranked.index(a) + 1 for a in question.answers if a in ranked]
        best = min(ranks) if ranks else None
        at_1 += best == 1
        at_3 += best is not None and best <= 3
        reciprocal += 1 / best if best else 0.0
        if best is None or best > 3:
            misses.append((question.q, question.answers, tuple(ranked[:3])))
    count = len(questions)
    return Scores(at_1 / count, at_3 / count, reciprocal / count, tuple(misses))


@dataclass(frozen=True)
class IndexStats:
    size_bytes: int
    entries: int
    keywords_per_entry: float


def index_stats(body: bytes) -> IndexStats:
    index = SearchIndex.model_validate_json(body)
    total = sum(len(entry.keywords) for entry in index.entries)
    return IndexStats(len(body), len(index.entries), total / max(len(index.entries), 1))


def report(site_dir: Path, questions_file: Path, show_misses: bool = False) -> str:
    from content_builder.build import plan

    artifacts = {a.path: a for a in plan(site_dir).artifacts}
    body = artifacts[paths.SEARCH_INDEX].body
    index = SearchIndex.model_validate_json(body)
    questions = load_questions(questions_file)
    stats = index_stats(body)
    lines = [
        f"{len(questions)} questions, {stats.entries} entries, search index {stats.size_bytes} "
        f"bytes, {stats.keywords_per_entry:.0f} keywords per entry",
        f"{'client':<8} {'recall@1':>9} {'recall@3':>9} {'MRR':>6}",
    ]
    for name, ranker in RANKERS.items():
        scores = evaluate(index, questions, ranker)
        lines.append(
            f"{name:<8} {scores.recall_at_1:>9.3f} {scores.recall_at_3:>9.3f} {scores.mrr:>6.3f}"
        )
        if show_misses:
            lines += [
                f"  miss: {q!r} wants {list(a)}, got {list(top)}" for q, a, top in scores.misses
            ]
    return "\n".join(lines)
