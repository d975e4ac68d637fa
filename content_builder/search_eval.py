"""How well the published keywords answer real questions: `check` and `search-eval`.

The questions belong to the site: site_data/search-questions.yaml holds `questions`
and `held_out` (each question with the ids that answer it, best first), and
site.yaml's `search_eval` sets the floors and whether falling below them fails `check`.
Two clients are measured:

- naive: the spec's rule and nothing more, as most agents will implement it: lowercase
  the query, split it on non-alphanumerics, keep entries with at least one query word
  equal to one of their keywords, rank by the number of distinct words matched (ties:
  more of them in the title, then index order);
- client: this project's agent client (`agent_client.client.rank`), which also drops
  stop words and tries each word's stem.

A question is answered at k when any of its ids is among the first k results. MRR is the
mean of 1/rank of the first right result (0 when none is returned).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from agent_client.client import rank as client_rank
from agent_contract import paths, search_query
from agent_contract.models import SearchIndex
from content_builder.errors import Problem, SiteDataError
from content_builder.loaded import Site
from content_builder.model_errors import validate_model
from content_builder.yaml_io import read_yaml_mapping

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


QUESTIONS_FILE = "search-questions.yaml"
SETS = ("questions", "held_out")


class _QuestionSource(BaseModel):
    model_config = ConfigDict(extra="forbid")
    q: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
    answers: Annotated[list[str], Field(min_length=1)]


class _QuestionsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    questions: list[_QuestionSource] = []
    held_out: list[_QuestionSource] = []


def load_question_sets(path: Path, display: str | None = None) -> dict[str, list[Question]]:
    """Each set of the questions file (`questions`, `held_out`); errors name file and field."""
    display = display or str(path)
    problems: list[Problem] = []
    try:
        raw = read_yaml_mapping(path, display)
    except SiteDataError as error:
        raise error from None
    parsed = validate_model(_QuestionsFile, raw, display, problems, path=path)
    if parsed is None:
        raise SiteDataError(problems)
    return {
        name: [Question(item.q, tuple(item.answers)) for item in getattr(parsed, name)]
        for name in SETS
    }


def load_questions(path: Path) -> list[Question]:
    """Every question of the file, both sets."""
    return [question for group in load_question_sets(path).values() for question in group]


def evaluate(index: SearchIndex, questions: list[Question], ranker: Ranker) -> Scores:
    return evaluate_with(questions, lambda query: ranker(index, query))


def evaluate_with(questions: list[Question], ranked_ids: Callable[[str], list[str]]) -> Scores:
    """Recall and MRR of any ranking (query -> ids, best first): the sharded index's too.
    At least one question: a set may be absent, and the callers leave an empty one out
    rather than score it."""
    if not questions:
        raise ValueError("no questions to evaluate")
    at_1 = at_3 = reciprocal = 0.0
    misses = []
    for question in questions:
        ranked = ranked_ids(question.q)
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


def shard_ranker(files: dict[str, bytes]) -> Callable[[str], list[str]]:
    """The agent client's own search (issue 25): the sharded index of the built `files`."""

    def ranked_ids(query: str) -> list[str]:
        return [hit.id for hit in search_query.query(files.__getitem__, query, limit=3).hits]

    return ranked_ids


def report(site_dir: Path, questions_file: Path | None = None, show_misses: bool = False) -> str:
    from content_builder.build import plan

    artifacts = {a.path: a for a in plan(site_dir).artifacts}
    body = artifacts[paths.SEARCH_INDEX].body
    index = SearchIndex.model_validate_json(body)
    source = questions_file or site_dir / QUESTIONS_FILE
    questions = load_questions(source)
    if not questions:
        raise SiteDataError.single(
            str(source),
            "questions",
            "no questions: add `questions` (and, if you like, "
            "`held_out`), each a `q` with the ids that answer it in `answers`",
        )
    stats = index_stats(body)
    lines = [
        f"{len(questions)} questions, {stats.entries} entries, search index {stats.size_bytes} "
        f"bytes, {stats.keywords_per_entry:.0f} keywords per entry",
        f"{'client':<8} {'recall@1':>9} {'recall@3':>9} {'MRR':>6}",
    ]
    files = {path: artifact.body for path, artifact in artifacts.items()}
    rankings: dict[str, Callable[[str], list[str]]] = {
        name: functools.partial(ranker, index) for name, ranker in RANKERS.items()
    }
    rankings["shards"] = shard_ranker(files)  # the agent client's own search (issue 25)
    for name, ranked_ids in rankings.items():
        scores = evaluate_with(questions, ranked_ids)
        lines.append(
            f"{name:<8} {scores.recall_at_1:>9.3f} {scores.recall_at_3:>9.3f} {scores.mrr:>6.3f}"
        )
        if show_misses:
            lines += [
                f"  miss: {q!r} wants {list(a)}, got {list(top)}" for q, a, top in scores.misses
            ]
    return "\n".join(lines)


@dataclass(frozen=True)
class SiteSearchQuality:
    """What `check` says about search: the lines it prints and the problems that fail it."""

    lines: list[str]
    problems: list[Problem]


def usable_questions(questions: list[Question], known: AbstractSet[str]) -> list[Question]:
    """The questions with an answer among the ids `known`, each with those answers only:
    a removed document must not fail the build by itself."""
    usable = []
    for question in questions:
        answers = tuple(answer for answer in question.answers if answer in known)
        if answers:
            usable.append(Question(question.q, answers))
    return usable


def site_search_quality(site: Site, search_index_body: bytes) -> SiteSearchQuality:
    """Recall of the spec's naive client on each question set, against the site's floors.

    Questions naming an id the site no longer has are reported and scored on the ids
    that remain (a removed document must not fail the build by itself); an entry that
    no question answers first is reported, not a failure.
    """
    path = site.root / QUESTIONS_FILE
    display = site.display(QUESTIONS_FILE)
    if not path.is_file():
        return SiteSearchQuality([f"search: no {display}; search quality is not measured"], [])
    sets = load_question_sets(path, display)
    index = SearchIndex.model_validate_json(search_index_body)
    ids = [entry.id for entry in index.entries]
    known = set(ids)
    settings = site.config.search_eval
    lines: list[str] = []
    problems: list[Problem] = []
    best_somewhere: set[str] = set()
    for name, questions in sets.items():
        if not questions:
            continue
        for question in questions:
            unknown = [a for a in question.answers if a not in known]
            if unknown:
                lines.append(
                    f"search: {display}: {name}: {question.q!r} names unknown ids {unknown}"
                )
        usable = usable_questions(questions, known)
        best_somewhere.update(question.answers[0] for question in usable)
        if not usable:
            continue
        scores = evaluate(index, usable, naive_rank)
        floors = f"floors {settings.recall_at_1:.2f} / {settings.recall_at_3:.2f}"
        lines.append(
            f"search: {name}: {len(usable)} questions, recall@1 {scores.recall_at_1:.3f}, "
            f"recall@3 {scores.recall_at_3:.3f}, MRR {scores.mrr:.3f} ({floors})"
        )
        lines += [
            f"search: {name}: miss: {q!r} wants {list(a)}, got {list(top)}"
            for q, a, top in scores.misses
        ]
        for label, value, floor in (
            ("recall@1", scores.recall_at_1, settings.recall_at_1),
            ("recall@3", scores.recall_at_3, settings.recall_at_3),
        ):
            if value < floor:
                message = f"{label} {value:.3f} is below the floor {floor:.2f}"
                if settings.fail_below:
                    problems.append(Problem(display, name, message + " (search_eval in site.yaml)"))
                else:
                    lines.append(f"search: warning: {name}: {message} (fail_below is false)")
    unanswered = [entry_id for entry_id in ids if entry_id not in best_somewhere]
    if unanswered:
        lines.append(f"search: no question has these entries as its best answer: {unanswered}")
    return SiteSearchQuality(lines, problems)
