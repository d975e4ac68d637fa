"""The sharded search index laid out from the last build's (render/shards.py) is byte for
byte the index a clean build lays out: after every step of a random series of edits,
additions and removals of documents and FAQ entries, on a generated site and on a real
Markdown docs tree, both through the build cache on disk (a `build` after another) and in
memory (`plan(..., last=)`, what `serve --watch` runs)."""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks import sitegen
from content_builder import build
from content_builder.cache import CACHE_ENV
from content_builder.render import shards
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures"

SEARCH = "/api/v1/search/"
EPOCH = 1_767_225_600  # 2026-01-01: every step dated alike, whichever way it is built


def _search_files(plan: build.Plan) -> dict[str, bytes]:
    return {a.path: a.body for a in plan.artifacts if a.path.startswith(SEARCH)}


@pytest.fixture
def whole_builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times a build laid the index out from nothing."""
    calls: list[int] = []
    real = shards._from_nothing

    def counted(*args: object) -> object:
        calls.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(shards, "_from_nothing", counted)
    return calls


class _Words:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.fresh = 0
        self.pool = [
            *("cache", "shard", "index", "query", "token", "edit", "agent", "build", "answer"),
            *("search", "term", "weight", "stale", "header", "field", "route", "bucket"),
            *("deploy", "policy", "client", "server", "vector"),
        ]

    def sentence(self) -> str:
        words = [self.rng.choice(self.pool) for _ in range(self.rng.randint(3, 12))]
        if self.rng.random() < 0.5:  # a word no entry had: a new term, a new shard
            self.fresh += 1
            words.append(f"zq{self.fresh}x{self.rng.randint(0, 999)}")
        return " ".join(words).capitalize() + "."


def _generated_steps(root: Path, rng: random.Random) -> Iterator[str]:
    words = _Words(rng)
    added: list[Path] = []
    faqs = sorted((root / "faq").glob("*.yaml"))
    pages = [
        p for p in sorted((root / "content").glob("*.yaml")) if "      body: >-\n" in p.read_text()
    ]
    for step in range(10):
        kind = rng.choice(["faq", "faq", "page", "add", "add", "remove", "shrink"])
        if kind == "remove" and added:
            path = added.pop(rng.randrange(len(added)))
            path.unlink()
        elif kind in ("add", "remove"):
            path = root / "faq" / f"q9{step:04d}-added.yaml"
            path.write_text(
                f"id: q9{step:04d}-added\nquestion: {words.sentence()[:-1]}?\n"
                f"answer: {' '.join(words.sentence() for _ in range(rng.randint(1, 6)))}\n",
                encoding="utf-8",
            )
            added.append(path)
        elif kind == "page":
            sitegen.edit_document(root, rng.choice(pages).stem, words.sentence())
        elif kind == "shrink":  # words taken away: their postings must go
            path = rng.choice(faqs)
            text = path.read_text(encoding="utf-8")
            lines = text.splitlines(keepends=True)
            answer = [i for i, line in enumerate(lines) if line.startswith("  ") and line.strip()]
            if len(answer) > 1:
                del lines[rng.choice(answer[1:])]
            path.write_text("".join(lines), encoding="utf-8")
        else:
            path = rng.choice(faqs)
            text = path.read_text(encoding="utf-8")
            at = text.index("answer: |\n") + len("answer: |\n")
            path.write_text(text[:at] + "  " + words.sentence() + "\n" + text[at:], "utf-8")
        yield kind


def _markdown_steps(docs: Path, rng: random.Random) -> Iterator[str]:
    words = _Words(rng)
    added: list[Path] = []
    pages = sorted(docs.glob("*.md"))
    for step in range(8):
        kind = rng.choice(["edit", "edit", "add", "remove"])
        if kind == "remove" and added:
            added.pop(rng.randrange(len(added))).unlink()
        elif kind in ("add", "remove"):
            path = docs / f"added-{step}.md"
            path.write_text(f"# {words.sentence()[:-1]}\n\n{words.sentence()}\n", "utf-8")
            added.append(path)
        else:
            path = rng.choice(pages)
            text = path.read_text(encoding="utf-8")
            path.write_text(text + f"\n\n## {words.sentence()[:-1]}\n\n{words.sentence()}\n")
        yield kind


def _check_series(
    site: Path,
    steps: Iterator[str],
    cache: Path,
    monkeypatch: pytest.MonkeyPatch,
    whole_builds: list[int],
) -> int:
    """After each step, the index from the disk cache and from the last plan in memory
    against a clean build's; returns the steps run."""
    monkeypatch.setenv(CACHE_ENV, str(cache))
    with sitegen.source_date_epoch(EPOCH):
        sitegen.refresh_lock(site, EPOCH)
        build.plan(site)  # the cache's first state
        last = build.plan(site)
    count = 0
    for epoch, kind in enumerate(steps, start=EPOCH + 1):
        sitegen.refresh_lock(site, epoch)
        with sitegen.source_date_epoch(epoch):
            whole_builds.clear()
            from_disk = _search_files(build.plan(site))
            last = build.plan(site, last=last)
            in_memory = _search_files(last)
            assert not whole_builds, f"step {count} ({kind}) laid the index out whole"
            monkeypatch.setenv(CACHE_ENV, "off")
            clean = _search_files(build.plan(site))
            monkeypatch.setenv(CACHE_ENV, str(cache))
        assert sorted(from_disk) == sorted(clean), f"step {count} ({kind}): other files"
        for path, body in clean.items():
            assert from_disk[path] == body, f"step {count} ({kind}): {path} differs (disk)"
            assert in_memory[path] == body, f"step {count} ({kind}): {path} differs (memory)"
        assert sorted(in_memory) == sorted(clean)
        count += 1
    return count


def test_a_generated_site_edited_at_random(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, whole_builds: list[int]
) -> None:
    site = sitegen.generate(tmp_path / "site", 40).root  # common words have tails
    steps = _generated_steps(site, random.Random(25))
    assert _check_series(site, steps, tmp_path / "cache", monkeypatch, whole_builds) == 10


def test_a_markdown_tree_edited_at_random(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, whole_builds: list[int]
) -> None:
    shutil.copytree(FIXTURES / "httpx", tmp_path / "httpx")
    shutil.copytree(FIXTURES / "httpx-site", tmp_path / "httpx-site")
    steps = _markdown_steps(tmp_path / "httpx" / "docs", random.Random(22))
    site = tmp_path / "httpx-site"
    assert _check_series(site, steps, tmp_path / "cache", monkeypatch, whole_builds) == 8


def _random_postings(rng: random.Random, terms: int) -> dict[str, dict[str, int]]:
    """term -> {key: weight}: most terms rare, some held by thousands of keys at several
    weights (their rest spans several tail shards, as a common word's at 10,000 entries)."""
    keys = [f"{rng.getrandbits(24):06x}" for _ in range(6000)]
    found = {}
    for index in range(terms):
        held = rng.choice([2, 5, 40, 90, 3000]) if index % 7 else 5000
        found[f"t{rng.getrandbits(20):05x}"] = {
            key: rng.choice([1, 2, 3, 6, 8, 10]) for key in rng.sample(keys, held)
        }
    return found


def _groups(held: dict[str, int]) -> list[list[object]]:
    weights = sorted(set(held.values()), reverse=True)
    return [[w, *sorted(k for k, v in held.items() if v == w)] for w in weights]


def test_a_layout_from_the_last_is_the_layout_from_nothing() -> None:
    """shard_layout alone, at a size where a word's postings span many tail shards: each
    step moves, adds and removes keys of a few terms, adds and drops terms."""
    from content_builder.render.shard_layout import Change, Layout, lay_out, spread_for

    rng = random.Random(11)
    postings = _random_postings(rng, 120)

    def from_nothing() -> tuple[Layout, dict[str, bytes]]:
        changes = {t: Change([], _groups(held)) for t, held in postings.items() if held}
        laid = lay_out(Layout(spread_for(len(changes))), changes, lambda name: {})
        return laid.layout, laid.bodies

    layout, bodies = from_nothing()
    assert len({chunk.items[0][0] for chunk in layout.tail_chunks}) < len(layout.tail_chunks)
    for step in range(25):
        changed = rng.sample(sorted(postings), 3)
        if step % 5 == 4:
            changed.append(f"new{step}")
        before = {t: dict(postings.get(t, {})) for t in changed}
        for term in changed:
            held = postings.setdefault(term, {})
            for key in rng.sample(sorted(held), min(len(held), rng.choice([0, 1, 30]))):
                del held[key]  # the df falls: every tail shard of the word says so
            for key in rng.sample(sorted(held), min(len(held), 2)):
                held[key] = rng.choice([1, 4, 10])
            if rng.random() < 0.5:
                held[f"{rng.getrandbits(24):06x}"] = rng.choice([2, 8])
            if step % 6 == 5:
                held.clear()  # the term is gone
        by_name = {chunk.name: bodies[chunk.sha256] for chunk in layout.chunks}
        changes = {t: Change(_groups(before[t]), _groups(postings[t])) for t in changed}
        laid = lay_out(layout, changes, lambda name, kept=by_name: json.loads(kept[name]))
        bodies = {**bodies, **laid.bodies}
        layout = laid.layout
        clean, clean_bodies = from_nothing()
        assert clean.chunks == layout.chunks, f"step {step}"
        for chunk in clean.chunks:
            assert bodies[chunk.sha256] == clean_bodies[chunk.sha256], f"step {step}"
        assert len(laid.bodies) < len(clean.chunks) / 2, "most shards are the last build's"
        bodies = {c.sha256: bodies[c.sha256] for c in layout.chunks}
