"""Wake the `serve --watch` watcher when something under its roots changes.

watchfiles (Rust's notify: inotify on Linux, FSEvents, ReadDirectoryChangesW) reports a
file written, created, removed or renamed at once, so an edit is seen in ~0.1 s and an
idle watcher scans nothing. It replaces inotify through ctypes (issue 24, item 10),
which went deaf when the site folder itself was removed and made anew (an editor's
atomic save of a folder, `git checkout`): its watches died with the old folder and the
next edit was seen only by the 60-second safety scan.

A watch dies with the folder it was set on, whoever sets it, so `SiteChanges` watches
again when an event names a root itself (removed, moved away), and checks each root's
identity (device, inode) whenever it wakes and at least every `CHECK_SECONDS` in case
no event said so (a folder renamed over it): one stat per root per second, not a
recursive watch on the parent folder (which, for site_data/ in a repository, would mean
a watch on every folder of .git and .venv). A root that is missing is waited for the
same way.

Several roots: the site folder, and any folder it names outside itself (a docs tree,
`docs_dir: ../docs`), each watched with everything below it, and the mkdocs.yml beside
such a tree (its `nav`), a file root.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path

# The Rust backend itself (documented in watchfiles' API reference, "Rust backend"):
# unlike the `watchfiles.watch` generator, it sets its watches when made, so a scan made
# right after cannot miss an edit, and one instance lives across many waits.
from watchfiles._rust_notify import RustNotify

#: How often, at most, a root's identity goes unchecked: a root replaced between two
#: wake-ups is watched again within this long, whatever the backend reported.
CHECK_SECONDS = 1.0
#: A wake-up comes once a look for events (one every STEP_MS) finds none new after one
#: that did: 2 x STEP_MS after a save's last write (an editor's save is several events,
#: taken together), at the latest DEBOUNCE_MS after its first. Idle, those looks are the
#: cost: a 10,000-entry site's waiter took 0.10 % of a core at 50 ms (woken 0.1 s after
#: a save), 0.067 % at 100 (0.2 s), 0.041 % at 200. 0.1 s is what inotify gave.
STEP_MS = 50
DEBOUNCE_MS = 1_600

_Identity = tuple[tuple[int, int] | None, ...]


def _identity(roots: Sequence[Path]) -> _Identity:
    found: list[tuple[int, int] | None] = []
    for root in roots:
        try:
            stat = os.stat(root)
        except OSError:
            found.append(None)
            continue
        # A root is a folder, or a file (mkdocs.yml beside a docs tree outside the site):
        # an editor's save replaces a file, as a checkout does a folder.
        found.append((stat.st_dev, stat.st_ino))
    return tuple(found)


class SiteChanges:
    """Blocks until something under `roots` changes, a root is replaced, `timeout`
    passes or `stop` is set. One watcher thread waits on it."""

    def __init__(self, roots: Sequence[Path], stop: threading.Event) -> None:
        # Absolute, as the backend names paths in its events.
        self.roots = [Path(os.path.abspath(root)) for root in roots]
        self._root_paths = {str(root) for root in self.roots}
        self._stop = stop
        self._seen: _Identity = ()
        self._notify: RustNotify | None = None
        self._start()

    @classmethod
    def open(cls, roots: Sequence[Path], stop: threading.Event) -> SiteChanges | None:
        """None when no root exists or the platform's watch cannot be set (e.g. the
        per-user inotify watch limit reached): the caller polls instead."""
        changes = cls(roots, stop)
        if changes._notify is None:
            return None
        return changes

    def _start(self) -> None:
        """(Re)watch every root that is there now, each with everything below it."""
        self.close()
        self._seen = _identity(self.roots)
        present = [str(root) for root, seen in zip(self.roots, self._seen, strict=True) if seen]
        if not present:
            return
        try:
            self._notify = RustNotify(present, False, False, 300, True, False)
        except FileNotFoundError:  # removed between the stat and the watch
            self._seen = ()  # differs from any identity: the next wait starts again
        except (OSError, RuntimeError):
            # No watch to be had now (the per-user inotify watch limit; RuntimeError is
            # watchfiles' internal error): the caller's safety scan covers, and a root
            # that changes identity is tried again. Never an exception in the watcher.
            pass

    def wait(self, timeout: float) -> bool:
        """True when something changed (or may have: a root came, went or was replaced);
        False when `timeout` passed or `stop` was set."""
        deadline = time.monotonic() + timeout
        while not self._stop.is_set():
            if _identity(self.roots) != self._seen:
                # Removed, replaced or made: its old watch is dead (or there was none).
                self._start()
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            wait_ms = max(1, int(min(left, CHECK_SECONDS) * 1000))
            if self._notify is None:  # every root is missing: wait for one to appear
                self._stop.wait(wait_ms / 1000)
                continue
            try:
                changes = self._notify.watch(DEBOUNCE_MS, STEP_MS, wait_ms, self._stop)
            except (OSError, RuntimeError):  # the backend gave up: watch again, and scan
                self._start()
                return True
            if isinstance(changes, set):
                if any(path in self._root_paths for _, path in changes):
                    # A root itself removed, moved or made: its watch is dead even when a
                    # new folder took its place at once (and, freed, maybe its inode
                    # number too, so the identity check alone could not tell).
                    self._start()
                return True
            # "timeout": check the roots and wait on; "stop": the loop ends; "signal"
            # does not reach a thread other than the main one.
        return False

    def close(self) -> None:
        notify, self._notify = self._notify, None
        if notify is not None:
            notify.close()
