"""The process pool that parses, dates and renders many new entries into the build
cache before the build loads them (prime.py): the same bytes as one process, the same
error for an entry that fails, the same lock dates, and an interrupt that leaves no worker
behind."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from content_builder import prime as prime_module
from content_builder.build import build, plan
from content_builder.errors import SiteDataError
from content_builder.loader import LOCK_FILE
from content_builder.render.catalog import Catalog
from tests.conftest import catalogs_built, tree_digest
from tests.sites import Shape, make_site, remove_document

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pool runs only with two cores or more: these tests must not pass without one
    on a one-core runner."""
    monkeypatch.setattr(prime_module, "_cores", lambda: 2)


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return make_site(tmp_path / "site_data", Shape(documents=40, faqs=60, unicode=True))


def _pool(monkeypatch: pytest.MonkeyPatch, on: bool) -> None:
    monkeypatch.setattr(prime_module, "POOL_THRESHOLD", 0 if on else 10**9)


def _build(site: Path, out: Path, pooled: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    _pool(monkeypatch, pooled)
    monkeypatch.setenv("AGENT_ACCESS_CACHE_DIR", "off")  # every entry parsed and rendered
    build(site, out)


def _renders(catalogs: list[Catalog]) -> list[int]:
    """How many entries each build rendered in this process (the rest: the cache)."""
    return [catalog.rendered_now for catalog in catalogs]


def _assert_pooled_is_serial(site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _build(site, tmp_path / "alone", False, monkeypatch)
    _build(site, tmp_path / "pooled", True, monkeypatch)
    assert tree_digest(tmp_path / "pooled") == tree_digest(tmp_path / "alone")


@pytest.mark.parametrize("with_lock", [True, False])
def test_the_pool_publishes_the_bytes_one_process_does(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_lock: bool
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")  # a first build dates every entry
    if with_lock:
        _build(site, tmp_path / "first", False, monkeypatch)
    copies = {name: tmp_path / name for name in ("alone", "pooled")}
    for copy in copies.values():
        shutil.copytree(site, copy)
    catalogs = catalogs_built(monkeypatch)
    _build(copies["alone"], tmp_path / "alone-out", False, monkeypatch)
    _build(copies["pooled"], tmp_path / "pooled-out", True, monkeypatch)
    assert tree_digest(tmp_path / "pooled-out") == tree_digest(tmp_path / "alone-out")
    assert (copies["pooled"] / LOCK_FILE).read_bytes() == (copies["alone"] / LOCK_FILE).read_bytes()
    assert _renders(catalogs) == [100, 0]  # the pool rendered every entry: none again here


def test_the_sample_site_pooled_is_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A site with its own architecture and on-site agent files, synonyms, pinned
    versions: what a worker renders with (the site without its entries) must be enough."""
    sample = tmp_path / "site_data"
    shutil.copytree(REPO / "site_data", sample)
    _assert_pooled_is_serial(sample, tmp_path, monkeypatch)


def test_entries_changed_since_the_lock_are_dated_once_by_the_pool(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without SOURCE_DATE_EPOCH the clock is read once a build: the pool's workers date
    a changed entry with the stamp the build's lock then records, so none is rendered
    twice, and the lock and the output agree."""
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    _build(site, tmp_path / "first", False, monkeypatch)
    for faq in sorted((site / "faq").glob("*.yaml"))[:5]:
        data = yaml.safe_load(faq.read_text(encoding="utf-8"))
        data["answer"] = "Edited. " + data["answer"]
        faq.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    catalogs = catalogs_built(monkeypatch)
    _pool(monkeypatch, True)
    result = plan(site)
    assert _renders(catalogs) == [0]
    assert len(result.lock_changes) == 5
    stamps = {result.lock[change.id].updated_at for change in result.lock_changes}
    assert len(stamps) == 1
    # Each changed entry's pieces were rendered under that stamp: its sitemap URL, its
    # change feed entry and its index entry carry it (and nothing else does).
    stamp = stamps.pop().encode()
    assert sum(artifact.body.count(stamp) for artifact in result.artifacts) >= 3 * 5


def test_an_edit_built_from_a_pooled_build_s_cache_is_a_clean_build(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The cache then holds what the workers sent (their links packed, their terms
    # interned here): read back, it must give what rendering from scratch gives.
    _pool(monkeypatch, True)
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


def test_an_entry_a_worker_cannot_parse_is_the_build_s_own_error(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_ACCESS_CACHE_DIR", "off")
    faq = sorted((site / "faq").glob("*.yaml"))[37]
    faq.write_text(faq.read_text(encoding="utf-8") + "unknown_field: 1\n", encoding="utf-8")
    (site / "content" / "broken.yaml").write_text("id: [unclosed\n", encoding="utf-8")

    def failure(pooled: bool) -> str:
        _pool(monkeypatch, pooled)
        with pytest.raises(SiteDataError) as raised:
            plan(site)
        return str(raised.value)

    alone, pooled = failure(False), failure(True)
    assert pooled == alone
    assert faq.name in pooled and "unknown_field" in pooled and "broken.yaml" in pooled


def _edit(path: Path, **fields: str) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data.update(fields)
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")


def _edit_site(site: Path) -> None:
    """After a build: FAQ entries edited, a document removed, one pinned to a version, one
    changed and pinned, and Markdown pages beside the YAML (parsed by the build itself)."""
    for faq in sorted((site / "faq").glob("*.yaml"))[1:3]:
        _edit(faq, answer="Edited. " + yaml.safe_load(faq.read_text("utf-8"))["answer"])
    remove_document(site, "topic-005")
    _edit(site / "content" / "topic-007.yaml", version="3.1.4")
    _edit(site / "content" / "topic-008.yaml", version="4.0.0", title="A new title")
    (site / "content" / "guide.md").write_text(
        "# Guide\n\nThe guide's first paragraph. See [a topic](topic-003.yaml).\n",
        encoding="utf-8",
    )


def _conflict_in_lock(site: Path) -> None:
    """The lock as git leaves it when two branches dated the same entries otherwise."""
    original = json.loads((site / LOCK_FILE).read_text("utf-8"))
    ours, theirs = json.loads(json.dumps(original)), json.loads(json.dumps(original))
    first, second = sorted(original["entries"])[3:5]
    ours["entries"][first].update(content_version="1.0.7", updated_at="2030-01-02T00:00:00Z")
    theirs["entries"][first].update(content_version="1.0.5", updated_at="2030-01-01T00:00:00Z")
    theirs["entries"][second].update(content_version="2.1.0", updated_at="2030-02-01T00:00:00Z")
    lines = ["<<<<<<< HEAD", *json.dumps(ours, indent=2).splitlines(), "======="]
    lines += [*json.dumps(theirs, indent=2).splitlines(), ">>>>>>> other-branch"]
    (site / LOCK_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")


#: How a site built once is then changed, and how it is built again.
_CASES = {
    "edited": (_edit_site, {}),
    "merge conflict in the lock": (_conflict_in_lock, {}),
    "--frozen, lock stale": (_conflict_in_lock, {"frozen": True}),
    "--base-url": (_edit_site, {"base_url": "https://agents.other.example"}),
    "serve --watch series": (lambda site: None, {"then": _edit_site}),
}


@pytest.mark.parametrize("case", list(_CASES))
def test_a_pooled_build_is_the_serial_build_whatever_the_site_and_lock(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """The same files, lock, lock changes and warnings, or the same error, pooled or not;
    and every entry the pool primed is taken from the cache, never rendered again (an
    entry a worker dated or rendered otherwise than the build would be rendered twice,
    or published with the worker's pieces)."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    _build(site, tmp_path / "first", False, monkeypatch)
    change, options = _CASES[case]
    then = options.pop("then", None)
    change(site)
    catalogs = catalogs_built(monkeypatch)
    primed: list[int] = []
    real_prime = prime_module.prime

    def counted(*args: object) -> int:
        primed.append(real_prime(*args))  # type: ignore[arg-type]
        return primed[-1]

    import content_builder.build as build_module

    monkeypatch.setattr(build_module, "prime", counted)

    def outcome(pooled: bool) -> object:
        # In a copy at the same relative path: problems name files as the user typed them.
        folder = tmp_path / ("pooled" if pooled else "serial")
        shutil.copytree(site, folder / "site_data")
        monkeypatch.chdir(folder)
        _pool(monkeypatch, pooled)
        cache = str(folder / "cache") if then else "off"  # a series: the cache it lends
        monkeypatch.setenv("AGENT_ACCESS_CACHE_DIR", cache)
        catalogs.clear()
        primed.clear()
        try:
            result = plan(Path("site_data"), **options)
            if then is not None:
                then(Path("site_data"))
                result = plan(Path("site_data"), **options, last=result)
        except SiteDataError as error:
            return str(error)
        files = {artifact.path: artifact.body for artifact in result.artifacts}
        changes = [(change.id, change.file, change.reason) for change in result.lock_changes]
        return files, result.lock.rows, changes, result.lock_body, result.site.warnings

    serial = outcome(False)
    serial_renders = sum(_renders(catalogs))
    pooled = outcome(True)
    assert pooled == serial
    if not isinstance(serial, str):
        assert sum(primed) > 0
        assert sum(_renders(catalogs)) == serial_renders - sum(primed)


class _EndsTheWorker:
    """Unpickled in a worker, ends it at once (as the kernel's OOM killer would)."""

    def __reduce__(self) -> tuple[object, tuple[int]]:
        return os._exit, (3,)


def test_a_worker_that_dies_leaves_its_entries_to_this_process(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _build(site, tmp_path / "alone", False, monkeypatch)
    real = prime_module._in_pool

    def poisoned(context: object, chunks: list[list[object]]) -> object:
        chunks[0][0] = _EndsTheWorker()  # type: ignore[call-overload]
        return real(context, chunks)  # type: ignore[arg-type]

    monkeypatch.setattr(prime_module, "_CHUNK", 10)
    monkeypatch.setattr(prime_module, "_in_pool", poisoned)
    _build(site, tmp_path / "pooled", True, monkeypatch)  # no BrokenProcessPool traceback
    assert tree_digest(tmp_path / "pooled") == tree_digest(tmp_path / "alone")


def test_a_worker_that_dies_as_it_starts_leaves_its_entries_to_this_process(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed (out of memory) or crashed while it reads what it renders with: on Python
    3.11 the process starting it waits forever to write the rest of that, if it is more
    than a pipe holds (64 KiB; the lock of a site the pool runs for is ~1 MB), because
    it still holds the worker's end of the pipe open (CPython gh-118981, fixed upstream
    in 2025, not in 3.11)."""
    _build(site, tmp_path / "alone", False, monkeypatch)
    script = (
        "from dataclasses import replace\n"
        "from pathlib import Path\n"
        "from content_builder import prime\n"
        "from content_builder.build import build\n"
        "from tests.test_prime import _EndsTheWorker\n"
        "prime.POOL_THRESHOLD = 0\n"
        "prime._cores = lambda: 2\n"
        "real = prime._in_pool\n"
        "def poisoned(context, chunks):\n"
        "    rows = ('sha256:' + '0' * 64, '1.0.0', '2026-01-01T00:00:00Z')\n"
        "    old = {**context.old, **{f'gone-{n}': rows for n in range(8000)}}\n"
        "    return real(replace(context, site=_EndsTheWorker(), old=old), chunks)\n"
        "prime._in_pool = poisoned\n"
        f"build(Path({str(site)!r}), Path({str(tmp_path / 'pooled')!r}))\n"
    )
    env = {**os.environ, "AGENT_ACCESS_CACHE_DIR": "off"}
    process = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, env=env)
    try:
        assert process.wait(timeout=60) == 0
    finally:
        process.kill()
    assert tree_digest(tmp_path / "pooled") == tree_digest(tmp_path / "alone")


def _refuse_semaphores() -> None:
    raise NotImplementedError("system provides too few semaphores")


def _refuse_process(self: object) -> None:
    raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")


@pytest.mark.parametrize(
    "refused",
    [
        ("concurrent.futures.process._check_system_limits", _refuse_semaphores),
        ("multiprocessing.context.SpawnProcess.start", _refuse_process),
    ],
    ids=["no semaphores", "a process limit"],
)
def test_a_pool_that_cannot_start_leaves_every_entry_to_this_process(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refused: tuple[str, object]
) -> None:
    """A container without /dev/shm, `ulimit -u` reached: the serial build's output,
    slower, as when a worker dies, not a traceback the serial build would not have."""
    _build(site, tmp_path / "alone", False, monkeypatch)
    monkeypatch.setattr(*refused)
    _build(site, tmp_path / "pooled", True, monkeypatch)
    assert tree_digest(tmp_path / "pooled") == tree_digest(tmp_path / "alone")


def test_pooled_entries_keep_every_field_of_their_terms(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker's terms are re-interned here: nothing else of them may be lost (the body
    weights were, and every later build worked them out again)."""
    monkeypatch.setenv("AGENT_ACCESS_CACHE_DIR", "off")
    catalogs = catalogs_built(monkeypatch)
    for pooled in (True, False):
        _pool(monkeypatch, pooled)
        plan(site)
    seen = [
        [
            (e.terms.body, e.terms.body_counts, e.terms.body_weights)  # type: ignore[attr-defined]
            for e in catalog.entries
        ]
        for catalog in catalogs
    ]
    assert seen[0] == seen[1]
    assert all(len(weights) == len(body) > 0 for body, _, weights in seen[0])


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
        "from content_builder import prime\n"
        "from content_builder.build import build\n"
        "prime.POOL_THRESHOLD = 0\n"
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


def test_a_word_rendered_by_the_workers_is_one_string_in_the_build(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each chunk's words arrive as new strings: without one string per word, the cache's
    pickle and the build's memory would hold a copy per chunk."""
    monkeypatch.setenv("AGENT_ACCESS_CACHE_DIR", "off")
    monkeypatch.setattr(prime_module, "_CHUNK", 10)
    _pool(monkeypatch, True)
    catalogs = catalogs_built(monkeypatch)
    plan(site)
    strings: dict[str, set[int]] = {}
    entries_of: dict[str, int] = {}
    for entry in catalogs[0].entries:
        for word in entry.terms.body:  # type: ignore[attr-defined]
            strings.setdefault(word, set()).add(id(word))
            entries_of[word] = entries_of.get(word, 0) + 1
    shared = [ids for word, ids in strings.items() if entries_of[word] > 10]
    assert len(shared) >= 10
    assert all(len(ids) == 1 for ids in shared)


def test_a_stamp_the_clock_cannot_give_fails_no_pooled_build_that_dates_nothing(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pool reads the change stamp before it knows whether an entry changed: a
    SOURCE_DATE_EPOCH out of any calendar's range must fail only a build that dates an
    entry, as the serial build does (lock.py reads it at the first change)."""
    _build(site, tmp_path / "first", False, monkeypatch)  # the lock: nothing to date now
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "9" * 30)
    _assert_pooled_is_serial(site, tmp_path, monkeypatch)


def test_files_read_too_soon_after_their_change_are_known_by_stat_after_a_pooled_build(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh clone built at once: every file changed just before the build read it, too
    soon to be trusted by its stat later. The pool outlasts that window: the files are
    read once more after it (`settle_racy_reads`), and the next build reads none."""
    import content_builder.build as build_module
    from content_builder import loader

    monkeypatch.setenv("AGENT_ACCESS_CACHE_DIR", str(tmp_path / "cache"))
    _pool(monkeypatch, True)
    # The loader's clock moved past the window once the pool is done, as a pool of
    # 20,000 entries takes ~10 s: deterministic, whatever this machine's speed.
    later = [0]

    class Clock:
        @staticmethod
        def time_ns() -> int:
            return time.time_ns() + later[0]

    real_prime = build_module.prime

    def prime_that_takes_long(*args: object) -> int:
        primed = real_prime(*args)  # type: ignore[arg-type]
        later[0] = loader.RACY_NS + 1
        return primed

    monkeypatch.setattr(loader, "time", Clock)
    monkeypatch.setattr(build_module, "prime", prime_that_takes_long)
    for file in [*(site / "content").glob("*.yaml"), *(site / "faq").glob("*.yaml")]:
        file.touch()  # changed now: every file is read within the window
    plan(site)
    reads: list[str] = []
    real = loader.read_site_file

    def counted(path: object, display: str) -> bytes:
        reads.append(display)
        return real(path, display)  # type: ignore[arg-type]

    monkeypatch.setattr(loader, "read_site_file", counted)
    plan(site)
    assert [name for name in reads if name.endswith(".yaml")] == []


def test_a_stop_asked_during_the_pool_ends_the_build_and_cancels_the_chunks_left(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`serve --watch` shutting down sets its stop event while a rebuild may be in the
    pool: the build ends at the next chunk (BuildStopped), the chunks not started are
    cancelled (at Python's exit concurrent.futures would run them all first: ~10 s at
    10,000 entries), and no worker is left."""
    import threading

    from content_builder.errors import BuildStopped

    monkeypatch.setenv("AGENT_ACCESS_CACHE_DIR", "off")
    monkeypatch.setattr(prime_module, "_CHUNK", 2)  # 50 chunks of this site's 100 entries
    _pool(monkeypatch, True)
    stop = threading.Event()
    kept: list[object] = []
    real_keep = prime_module._keep

    def keep_then_stop(*args: object) -> None:
        kept.append(args[1])
        real_keep(*args)  # type: ignore[arg-type]
        stop.set()  # as if Ctrl-C came while the first chunk was taken back

    monkeypatch.setattr(prime_module, "_keep", keep_then_stop)
    with pytest.raises(BuildStopped):
        plan(site, stop=stop)
    assert 0 < len(kept) < 100 / 2, len(kept)  # far from every chunk
    # Unset, the same build runs to the end.
    kept.clear()
    monkeypatch.setattr(prime_module, "_keep", real_keep)
    assert plan(site, stop=threading.Event()).artifacts
