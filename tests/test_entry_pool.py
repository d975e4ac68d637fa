"""The process pool that renders the entries the build cache does not hold
(render/entries.py `_render_all`): the same bytes as one process, the same error for an
entry that fails, and an interrupt that leaves no worker behind."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from content_builder.build import build, plan
from content_builder.errors import SiteDataError
from content_builder.loader import load_site
from content_builder.lock import LockEntry
from content_builder.render import entries
from content_builder.render.entries import build_catalog
from tests.conftest import tree_digest
from tests.sites import Shape, make_site

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"  # httpx-site: Markdown pages (markdown_tree.py)


@pytest.fixture(autouse=True)
def two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pool runs only with two cores or more: these tests must not pass without one
    on a one-core runner."""
    monkeypatch.setattr(entries, "_cores", lambda: 2)


class _EndsTheWorker:
    """Unpickled in a worker, ends it at once (as the kernel's OOM killer would)."""

    def __reduce__(self) -> tuple[object, tuple[int]]:
        return os._exit, (3,)


def test_a_worker_that_dies_leaves_its_entries_to_this_process(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _build(site, tmp_path / "alone", 10**9, monkeypatch)
    real = entries._known_hash
    calls = iter(range(10**6))

    def poisoned(data: object, loaded: object) -> object:
        return _EndsTheWorker() if next(calls) == 30 else real(data, loaded)  # type: ignore[arg-type]

    monkeypatch.setattr(entries, "_known_hash", poisoned)
    _build(site, tmp_path / "pooled", 0, monkeypatch)  # no BrokenProcessPool traceback
    assert tree_digest(tmp_path / "pooled") == tree_digest(tmp_path / "alone")


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return make_site(tmp_path / "site_data", Shape(documents=40, faqs=60, unicode=True))


def _build(site: Path, out: Path, threshold: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(entries, "POOL_THRESHOLD", threshold)
    monkeypatch.setenv("AGENT_ACCESS_CACHE_DIR", "off")  # every entry rendered
    build(site, out)


def test_the_pool_publishes_the_bytes_one_process_does(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _build(site, tmp_path / "alone", 10**9, monkeypatch)
    _build(site, tmp_path / "pooled", 0, monkeypatch)
    assert tree_digest(tmp_path / "pooled") == tree_digest(tmp_path / "alone")


def test_an_edit_built_from_a_pooled_build_s_cache_is_a_clean_build(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The cache then holds what the workers sent (their links packed, their terms
    # interned here): read back, it must give what rendering from scratch gives.
    monkeypatch.setattr(entries, "POOL_THRESHOLD", 10)
    monkeypatch.setenv("AGENT_ACCESS_CACHE_DIR", str(tmp_path / "cache"))
    build(site, tmp_path / "out")
    faq = sorted((site / "faq").glob("*.yaml"))[3]
    data = yaml.safe_load(faq.read_text(encoding="utf-8"))
    data["answer"] = "Edited. " + data["answer"]
    faq.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    build(site, tmp_path / "out")  # one entry rendered, here; the rest from the cache
    monkeypatch.setenv("AGENT_ACCESS_CACHE_DIR", "off")
    build(site, tmp_path / "clean")
    assert tree_digest(tmp_path / "out") == tree_digest(tmp_path / "clean")


def test_the_pool_renders_a_markdown_docs_tree_as_one_process_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_ACCESS_CACHE_DIR", "off")
    for name in ("httpx", "httpx-site"):  # site.yaml names ../httpx/docs
        shutil.copytree(FIXTURES / name, tmp_path / name)
    site = tmp_path / "httpx-site"
    build(site, tmp_path / "first")  # its lock written: the builds below date nothing

    def files(threshold: int) -> dict[str, bytes]:
        monkeypatch.setattr(entries, "POOL_THRESHOLD", threshold)
        return {artifact.path: artifact.body for artifact in plan(site).artifacts}

    assert files(0) == files(10**9)


def test_an_entry_that_fails_in_a_worker_is_the_same_error_naming_its_file(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_ACCESS_CACHE_DIR", "off")  # every entry parsed and rendered

    def failure(threshold: int) -> str:
        monkeypatch.setattr(entries, "POOL_THRESHOLD", threshold)
        loaded = load_site(site)
        # Text the build reserves for joining files: what the loader refuses in a file
        # (NUL), put in a parsed entry so that rendering it is what fails.
        faq = loaded.faqs[37]
        models = faq._lazy._models
        assert models is not None
        bad = models[0].model_copy(update={"question": "\x00agent-access splice\x00"})
        faq._lazy._models = (bad,)
        lock = {
            entry.id: LockEntry("sha256:" + "0" * 64, "1.0.0", "2025-01-01T00:00:00Z")
            for entry in (*loaded.documents, *loaded.faqs)
        }
        with pytest.raises(SiteDataError) as raised:
            build_catalog(loaded, lock)
        return str(raised.value)

    alone, pooled = failure(10**9), failure(0)
    assert pooled == alone
    assert "q038-question.yaml" in pooled and "reserves" in pooled


def test_pooled_entries_keep_every_field_of_their_terms(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker's terms are re-interned here: nothing else of them may be lost (the body
    weights were, and every later build worked them out again)."""
    monkeypatch.setenv("AGENT_ACCESS_CACHE_DIR", "off")

    def terms(threshold: int) -> list[object]:
        monkeypatch.setattr(entries, "POOL_THRESHOLD", threshold)
        loaded = load_site(site)
        lock = {
            entry.id: LockEntry("sha256:" + "0" * 64, "1.0.0", "2025-01-01T00:00:00Z")
            for entry in (*loaded.documents, *loaded.faqs)
        }
        return [
            (entry.terms.body, entry.terms.body_counts, entry.terms.body_weights)  # type: ignore[attr-defined]
            for entry in build_catalog(loaded, lock).entries
        ]

    pooled = terms(0)
    assert pooled == terms(10**9)
    assert all(len(weights) == len(body) > 0 for body, _, weights in pooled)


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children = (task / "children").read_text().split()
        found += map(int, children)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc (Linux)")
@pytest.mark.parametrize("ending", ["ctrl-c", "sigterm"])
def test_a_build_ended_during_the_pool_leaves_no_worker(tmp_path: Path, ending: str) -> None:
    big = make_site(tmp_path / "site_data", Shape(documents=150, faqs=250))
    script = (
        "from pathlib import Path\n"
        "from content_builder.render import entries\n"
        "from content_builder.build import build\n"
        "entries.POOL_THRESHOLD = 0\n"
        f"build(Path({str(big)!r}), Path({str(tmp_path / 'dist')!r}))\n"
    )
    env = {**os.environ, "AGENT_ACCESS_CACHE_DIR": "off"}
    # In a session of its own, as a terminal's foreground job: Ctrl-C signals the group.
    process = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=REPO,
        env=env,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    workers: list[int] = []
    deadline = time.monotonic() + 60
    while len(workers) < 2 and process.poll() is None and time.monotonic() < deadline:
        # The pool's workers: the build's children that run multiprocessing's spawn_main
        # (not its resource tracker).
        workers = [
            child
            for child in _children(process.pid)
            if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes()
        ]
        time.sleep(0.005)
    assert len(workers) >= 2, "the pool never started"
    time.sleep(0.3)  # the workers import the builder, then render
    if ending == "ctrl-c":
        os.killpg(process.pid, signal.SIGINT)  # every process of the group, as Ctrl-C does
    else:
        process.terminate()  # the build alone, which ends without any cleanup
    _, err = process.communicate(timeout=60)
    assert process.returncode != 0
    if ending == "ctrl-c":
        # The build's own interrupt, once: no worker's traceback, no broken pool.
        assert err.count(b"Traceback") == 1 and b"KeyboardInterrupt" in err, err.decode()
    assert not (tmp_path / "dist").exists()
    deadline = time.monotonic() + 10
    while any(map(_alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [pid for pid in workers if _alive(pid)] == []
