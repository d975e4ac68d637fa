"""`serve --watch` is woken by inotify: an edit is seen at once, an idle watcher scans nothing."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from agent_edge import serve as serve_module
from agent_edge.changes import DirectoryEvents

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="inotify is Linux's")


def test_an_edit_wakes_the_waiter_at_once(tmp_path: Path) -> None:
    (tmp_path / "faq").mkdir()
    events = DirectoryEvents.open(tmp_path)
    assert events is not None
    stop = threading.Event()
    try:
        assert events.wait(0.2, stop) is False  # nothing happened: it times out
        threading.Timer(0.2, (tmp_path / "faq" / "a.yaml").write_text, ["x"]).start()
        started = time.monotonic()
        assert events.wait(10, stop) is True
        assert time.monotonic() - started < 2
        (tmp_path / "faq" / "new").mkdir()  # a folder made since is watched too
        assert events.wait(10, stop) is True
        threading.Timer(0.2, (tmp_path / "faq" / "new" / "b.yaml").write_text, ["y"]).start()
        assert events.wait(10, stop) is True
    finally:
        events.close()


def test_an_idle_watcher_with_events_does_not_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Polling was the idle cost (64 % of a core at 20,000 files): with inotify the
    watcher scans once at start, then only when woken (or every SAFETY_SCAN_SECONDS)."""
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
    time.sleep(1.5)
    stop.set()
    watcher.join(5)
    assert not watcher.is_alive()
    assert len(scans) == 1, f"{len(scans)} scans in 1.5 s idle"
    assert time.process_time() - started < 0.2  # this process, watcher included, idled
