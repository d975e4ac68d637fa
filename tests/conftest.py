"""Shared fixtures: every test works on copies in temp folders; nothing writes into the repo."""

from __future__ import annotations

import contextlib
import hashlib
import io
import shutil
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from agent_access.cli import main
from agent_edge.serve import EdgeServer, live_mcp_endpoint, load_edge
from content_builder.cache import CACHE_ENV

if TYPE_CHECKING:
    from content_builder.render.catalog import Catalog

REPO = Path(__file__).resolve().parents[1]
#: The site owner's content: only properties that hold for any site are tested on it.
SITE_DATA = REPO / "site_data"
#: The tests' own site, shaped exactly as the spec's tables (six documents, six FAQ
#: entries, brand `service`); tests that pin ids, counts or wording use this one.
SPEC_SITE = REPO / "tests" / "fixtures" / "spec_site"
TEST_BASE_URL = "https://agents.example.test"


@dataclass(frozen=True)
class CliResult:
    code: int
    out: str
    err: str


def run_cli(*args: str | Path) -> CliResult:
    """Run `python -m content_builder ...` in-process (fast) and capture its output."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(arg) for arg in args])
    return CliResult(code, out.getvalue(), err.getvalue())


def catalogs_built(monkeypatch: pytest.MonkeyPatch) -> list[Catalog]:
    """Every catalog the build makes from now on (`content_builder.build`'s
    `build_catalog`), in order: how many entries each build rendered (`rendered_now`)
    and what it rendered them into."""
    from content_builder import build as pipeline

    made: list[Catalog] = []
    real = pipeline.build_catalog

    def recorded(*args: Any, **kwargs: Any) -> Catalog:
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(pipeline, "build_catalog", recorded)
    return made


def tree_digest(folder: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under `folder` (to prove a folder did not change)."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


@pytest.fixture(autouse=True, scope="session")
def _build_cache_in_a_temp_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Builds in tests use (and so exercise) the build cache, but in a folder of the test
    session's own, not the user's ~/.cache/agent-access (one file per temp site)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_ENV, str(tmp_path_factory.mktemp("build-cache")))
        yield


@pytest.fixture
def site_copy(tmp_path: Path) -> Path:
    """A private copy of the spec-shaped fixture site (tests may pin its ids and wording)."""
    target = tmp_path / "site_data"
    shutil.copytree(SPEC_SITE, target)
    return target


@pytest.fixture
def owner_site_copy(tmp_path: Path) -> Path:
    """A private copy of the repository's site_data (the owner's content, any shape)."""
    target = tmp_path / "site_data"
    shutil.copytree(SITE_DATA, target)
    return target


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One fresh build of the spec-shaped fixture site, for read-only conformance tests."""
    root = tmp_path_factory.mktemp("built")
    site = root / "site_data"
    shutil.copytree(SPEC_SITE, site)
    out = root / "dist"
    result = run_cli("build", "--site", site, "--out", out, "--base-url", TEST_BASE_URL, "--frozen")
    assert result.code == 0, result.err
    return out


@pytest.fixture
def cli() -> Callable[..., CliResult]:
    return run_cli


@contextlib.contextmanager
def running_server(site_dir: Path = SPEC_SITE, name_mcp: bool = False) -> Iterator[EdgeServer]:
    """`serve` on a free loopback port, built for its own base URL, in a daemon thread.
    `name_mcp`: its files name the MCP server it answers at /mcp, as `serve` does (the
    others compare it with a plain `build`)."""
    server = EdgeServer(("127.0.0.1", 0), quiet=True)
    endpoint = live_mcp_endpoint(server.base_url) if name_mcp else None
    server.edge = load_edge(site_dir, server.base_url, endpoint)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def plan_errors(site: Path) -> list[str]:
    """The problems, as printed, of an in-memory build (`plan`) of `site` that must fail."""
    from content_builder.build import plan
    from content_builder.errors import SiteDataError

    with pytest.raises(SiteDataError) as raised:
        plan(site)
    return [str(problem) for problem in raised.value.problems]


def build_errors(site: Path, out: Path) -> list[str]:
    """The problems, as printed, of a build of `site` that must fail."""
    from content_builder import build as pipeline
    from content_builder.errors import SiteDataError

    with pytest.raises(SiteDataError) as raised:
        pipeline.build(site, out)
    return [str(problem) for problem in raised.value.problems]


#: Tests that share the session fixture `bench` (every benchmark at a small N, ~17 s):
#: scheduled on one pytest-xdist worker, so that it runs once, not once per worker.
_SCHEDULED_TOGETHER = "tests/test_benchmarks_smoke.py::"


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # `-p no:xdist` knows no such hook
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """`-n auto`'s default scheduling ("load"), except that the benchmark smoke tests are
    one unit of work. xdist's own `--dist loadgroup` would do it with an `xdist_group`
    mark, but under pytest 9 it groups nothing: xdist 3.8 renames `item._nodeid`, which
    pytest 9's `nodeid` no longer reads (checked on a stand-in suite). Any other `--dist`
    keeps xdist's scheduler."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class _BenchmarksTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _SCHEDULED_TOGETHER if nodeid.startswith(_SCHEDULED_TOGETHER) else nodeid

    return _BenchmarksTogether(config, log)  # type: ignore[arg-type]
