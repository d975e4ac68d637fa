"""`serve --watch` is woken by change events (watchfiles): an edit is seen at once, an idle
watcher scans nothing, and a site folder removed and made anew is watched again (issue 24,
item 10: the inotify watcher went deaf then, until its 60-second safety scan)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agent_edge import serve as serve_module
from agent_edge.changes import CHECK_SECONDS, SiteChanges
from tests.conftest import SPEC_SITE
from tests.test_serve import FAQ_PATH, get, start_server


@pytest.fixture
def stop() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def _later(seconds: float, action: Callable[[], object]) -> None:
    timer = threading.Timer(seconds, action)
    timer.daemon = True
    timer.start()


def test_an_edit_wakes_the_waiter_at_once(tmp_path: Path, stop: threading.Event) -> None:
    (tmp_path / "faq").mkdir()
    events = SiteChanges.open([tmp_path], stop)
    assert events is not None
    try:
        assert events.wait(0.2) is False  # nothing happened: it times out
        _later(0.2, lambda: (tmp_path / "faq" / "a.yaml").write_text("x"))
        started = time.monotonic()
        assert events.wait(10) is True
        assert time.monotonic() - started < 2
        (tmp_path / "faq" / "new").mkdir()  # a folder made since is watched too
        assert events.wait(10) is True
        _later(0.2, lambda: (tmp_path / "faq" / "new" / "b.yaml").write_text("y"))
        assert events.wait(10) is True
    finally:
        events.close()


def test_a_file_root_is_heard_edited_in_place_and_replaced(
    tmp_path: Path, stop: threading.Event
) -> None:
    """mkdocs.yml beside a docs tree outside the site is a root of its own (a file)."""
    config = tmp_path / "mkdocs.yml"
    config.write_text("nav: []\n")
    before = serve_module.fingerprint(config)
    events = SiteChanges.open([config], stop)
    assert events is not None
    try:
        assert events.wait(0.2) is False
        _later(0.2, lambda: config.write_text("nav: [a.md]\n"))
        assert events.wait(10) is True
        assert serve_module.fingerprint(config) != before
        # An editor's atomic save: a new file renamed over it (the old watch dies).
        staged = tmp_path / ".mkdocs.yml.tmp"
        staged.write_text("nav: [a.md, b.md]\n")
        _later(0.2, lambda: os.replace(staged, config))
        assert events.wait(10) is True
        _later(0.2, lambda: config.write_text("nav: [b.md]\n"))  # the new file is watched
        assert events.wait(10) is True
    finally:
        events.close()


def _swap_by_removal(site: Path) -> None:
    shutil.rmtree(site)
    shutil.copytree(SPEC_SITE, site)


def _remove_then_make(site: Path) -> None:
    # `git checkout` of a branch without the folder and back, a tool that clears the
    # folder and writes it again: for a while there is no folder at all.
    shutil.rmtree(site)
    time.sleep(0.5)
    shutil.copytree(SPEC_SITE, site)


def _swap_by_rename(site: Path) -> None:
    # An editor's or a tool's atomic save of a folder: the new one renamed over the old.
    fresh = site.with_name(site.name + ".new")
    shutil.copytree(SPEC_SITE, fresh)
    old = site.with_name(site.name + ".old")
    os.rename(site, old)
    os.rename(fresh, site)
    shutil.rmtree(old)


SWAPS = pytest.mark.parametrize(
    "swap",
    [_swap_by_removal, _remove_then_make, _swap_by_rename],
    ids=["removed", "removed-then-made", "renamed"],
)


@SWAPS
def test_a_waiter_on_a_recreated_root_hears_the_next_edit(
    tmp_path: Path, stop: threading.Event, swap: Callable[[Path], None]
) -> None:
    site = tmp_path / "site_data"
    shutil.copytree(SPEC_SITE, site)
    events = SiteChanges.open([site], stop)
    assert events is not None
    try:
        swap(site)
        assert events.wait(10) is True  # the swap itself
        while events.wait(0.3):  # its trailing events, and the watch set again
            pass
        _later(0.1, lambda: (site / "faq" / "q01-difference.yaml").write_text("x"))
        started = time.monotonic()
        assert events.wait(30) is True
        assert time.monotonic() - started < CHECK_SECONDS + 1.5
    finally:
        events.close()


def test_a_root_missing_at_first_is_watched_once_made(
    tmp_path: Path, stop: threading.Event
) -> None:
    site, docs = tmp_path / "site_data", tmp_path / "docs"
    site.mkdir()
    events = SiteChanges.open([site, docs], stop)  # docs/ does not exist yet
    assert events is not None
    try:
        docs.mkdir()
        assert events.wait(10) is True
        _later(0.1, lambda: (docs / "guide.md").write_text("# Guide"))
        started = time.monotonic()
        assert events.wait(10) is True
        assert time.monotonic() - started < 2
    finally:
        events.close()


def test_no_root_at_all_means_polling(tmp_path: Path, stop: threading.Event) -> None:
    assert SiteChanges.open([tmp_path / "nothing-here"], stop) is None


def _wait_for(condition: Callable[[], bool], timeout: float) -> float | None:
    """Seconds until `condition` held, or None."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if condition():
            return time.monotonic() - started
        time.sleep(0.05)
    return None


def _shows(port: int, word: str) -> Callable[[], bool]:
    def check() -> bool:
        status, body = get(port, FAQ_PATH)
        return status == 200 and word in json.loads(body)["answer"]

    return check


@SWAPS
def test_serve_watch_serves_an_edit_after_the_site_folder_was_made_anew(
    tmp_path: Path, swap: Callable[[Path], None]
) -> None:
    """The issue's case: site_data/ deleted and recreated (git checkout, a folder saved
    atomically), then an edit. The inotify watcher saw it ~60 s later; now in seconds."""
    site = tmp_path / "site_data"
    shutil.copytree(SPEC_SITE, site)
    faq = site / "faq" / "q01-difference.yaml"
    built_from = serve_module.fingerprint(site)
    running = start_server(site)
    stop = threading.Event()
    reports: list[str] = []
    watcher = threading.Thread(
        target=serve_module.watch,
        args=(running.server, site, running.base_url, stop),
        kwargs={"interval": 0.05, "report": reports.append, "built_from": built_from},
        daemon=True,
    )
    watcher.start()
    try:
        time.sleep(0.5)
        swap(site)
        time.sleep(2)  # the swap's own rebuild, and the watch set on the new folder
        original = faq.read_text()
        faq.write_text(original.replace("A sitemap tells a crawler", "AFTER-SWAP edit"))
        took = _wait_for(_shows(running.port, "AFTER-SWAP"), 10)
        assert took is not None and took < 3, f"edit not served in time; reports: {reports}"
    finally:
        stop.set()
        watcher.join(5)
        running.stop()
    assert not watcher.is_alive()


@contextlib.contextmanager
def _watching(site: Path, roots: list[Path], last: object = None) -> Iterator[list[Path]]:
    """`watch` over `roots` in a thread, as `serve` starts it (`last`: the build it
    serves); the site folders it rebuilds from, as it rebuilds."""
    built_from = tuple(e for root in roots for e in serve_module.fingerprint(root))
    loads: list[Path] = []
    stop = threading.Event()
    real_build_edge = serve_module.build_edge

    class Holder:
        edge = None

    def counting_build_edge(site_dir: Path, base_url: str, *rest: object) -> object:
        loads.append(site_dir)
        return real_build_edge(site_dir, base_url, *rest)  # type: ignore[arg-type]

    watcher = threading.Thread(
        target=serve_module.watch,
        args=(Holder, site, "http://127.0.0.1:1", stop),
        kwargs={"report": lambda message: None, "built_from": built_from, "roots": roots,
                "last": last},
        daemon=True,
    )  # fmt: skip
    original = serve_module.build_edge
    serve_module.build_edge = counting_build_edge  # type: ignore[assignment]
    try:
        watcher.start()
        yield loads
    finally:
        stop.set()
        watcher.join(5)
        serve_module.build_edge = original  # type: ignore[assignment]


def test_an_edit_under_a_second_root_rebuilds(tmp_path: Path) -> None:
    """A docs tree outside site_data/ (`docs_dir: ../docs`) is one more root: an edit
    there wakes the watcher and rebuilds."""
    site, docs = tmp_path / "site_data", tmp_path / "docs"
    shutil.copytree(SPEC_SITE, site)
    docs.mkdir()
    with _watching(site, [site, docs]) as loads:
        time.sleep(0.3)
        assert loads == []  # nothing changed yet
        (docs / "guide.md").write_text("# Guide\n")
        assert _wait_for(lambda: len(loads) == 1, 5) is not None


def test_an_idle_watcher_with_events_does_not_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Polling was the idle cost (64 % of a core at 20,000 files): with change events the
    watcher scans once at start, then only when woken (or every SAFETY_SCAN_SECONDS);
    the once-a-second check of the roots costs a stat each."""
    scans: list[float] = []
    monkeypatch.setattr(serve_module, "fingerprint", lambda site_dir: scans.append(1) or ())
    stop = threading.Event()
    watcher = threading.Thread(
        target=serve_module.watch,
        args=(None, tmp_path, "http://unused", stop),
        kwargs={"interval": 0.01, "report": lambda message: None, "built_from": ()},
        daemon=True,
    )
    started = time.process_time()
    watcher.start()
    time.sleep(2.5)
    stop.set()
    watcher.join(5)
    assert not watcher.is_alive()
    assert len(scans) == 1, f"{len(scans)} scans in 2.5 s idle"
    assert time.process_time() - started < 0.2  # this process, watcher included, idled


def test_a_backend_that_cannot_watch_means_polling_not_a_dead_watcher(
    tmp_path: Path, stop: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The per-user inotify watch limit reached: no exception reaches the watcher."""
    from agent_edge import changes

    def refuse(*args: object) -> None:
        raise OSError(28, "No space left on device (inotify watches)")

    monkeypatch.setattr(changes, "RustNotify", refuse)
    assert SiteChanges.open([tmp_path], stop) is None
    events = SiteChanges([tmp_path], stop)
    assert events.wait(0.2) is False  # waits its time out, no exception


def test_an_edit_to_an_included_file_outside_the_tree_rebuilds(tmp_path: Path) -> None:
    """FastAPI's code examples live beside the docs tree, included by name (site.yaml
    `include_root`): the build read them, and an edit there was not seen until something
    under a root changed. The files a build read beyond the roots are watched too."""
    from content_builder.build import plan
    from content_builder.markdown_tree import watch_roots
    from tests.test_real_docs_trees import _FASTAPI_BODY, _fastapi_site

    site = _fastapi_site(tmp_path, _FASTAPI_BODY, include_root="../repo")
    example = tmp_path / "repo" / "docs_src" / "body" / "tutorial001_py310.py"
    served = plan(site)
    assert str(example) in served.site.read_files
    roots = watch_roots(site)
    assert not any(str(example).startswith(str(root)) for root in roots)
    with _watching(site, roots, served) as loads:
        time.sleep(0.5)
        assert loads == []  # nothing changed yet: no rebuild for the newly watched file
        example.write_text("from fastapi import FastAPI\n\napp = FastAPI(title='Edited')\n")
        assert _wait_for(lambda: len(loads) == 1, 10) is not None
