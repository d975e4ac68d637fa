"""The Makefile's bootstrap: `make -n` (dry run) in a copy of the repository's build files.

A dry run still evaluates the Makefile, so these check what a target would do without
installing anything: the port a `make serve PORT=N` passes, and that a .venv made by
another Python is started over instead of being used as it is.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _project(tmp_path: Path) -> Path:
    for name in ("Makefile", "pyproject.toml", "constraints.txt"):
        shutil.copy(REPO / name, tmp_path / name)
    return tmp_path


def _venv_with(project: Path, python: str) -> None:
    """A .venv whose bin/python is `python` (a script), with up-to-date stamps."""
    bin_dir = project / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").write_text(python)
    (bin_dir / "python").chmod(0o755)
    for stamp in (".installed-serve", ".installed-dev"):
        (project / ".venv" / stamp).touch()


def _dry_run(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "-n", *args, f"PYTHON={sys.executable}"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "MAKEFLAGS": ""},
    )


def _same_python_script() -> str:
    return f'#!/bin/sh\nexec "{sys.executable}" "$@"\n'


def test_make_serve_takes_a_port(tmp_path: Path) -> None:
    project = _project(tmp_path)
    _venv_with(project, _same_python_script())
    default, chosen = _dry_run(project, "serve"), _dry_run(project, "serve", "PORT=8123")
    assert "--port 8000" in default.stdout, default
    assert "--port 8123" in chosen.stdout, chosen
    assert "pip install" not in chosen.stdout  # stamps fresh: nothing to install


def test_serve_installs_only_the_runtime(tmp_path: Path) -> None:
    project = _project(tmp_path)
    result = _dry_run(project, "serve")
    installs = [line for line in result.stdout.splitlines() if "pip install" in line]
    assert installs and all("[dev]" not in line for line in installs), result.stdout
    assert all("-c constraints.txt" in line for line in installs), result.stdout
    test = _dry_run(project, "test")
    assert any("pip install" in line and "[dev]" in line for line in test.stdout.splitlines())


@pytest.mark.parametrize(
    "python",
    [
        '#!/bin/sh\necho "(3, 8)"\n',  # a venv made by an older Python
        "#!/bin/sh\nexit 127\n",  # its Python removed since (a dangling interpreter)
    ],
    ids=["other-version", "not-runnable"],
)
def test_a_venv_made_by_another_python_is_started_over(tmp_path: Path, python: str) -> None:
    project = _project(tmp_path)
    _venv_with(project, python)
    result = _dry_run(project, "serve")
    assert "recreating it" in result.stdout, result
    assert "-m venv .venv" in result.stdout, result.stdout
    assert "pip install" in result.stdout, result.stdout


def test_a_good_venv_is_kept(tmp_path: Path) -> None:
    project = _project(tmp_path)
    _venv_with(project, _same_python_script())
    result = _dry_run(project, "serve")
    assert "recreating" not in result.stdout and "-m venv" not in result.stdout, result.stdout
    assert (project / ".venv" / ".installed-serve").exists()


def test_a_missing_python_never_deletes_a_working_venv(tmp_path: Path) -> None:
    """Without $(PYTHON) there is nothing to compare with: the .venv is left alone."""
    project = _project(tmp_path)
    _venv_with(project, _same_python_script())
    result = subprocess.run(
        ["make", "-n", "serve", "PYTHON=/nonexistent/python3"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "MAKEFLAGS": ""},
    )
    assert "recreating" not in result.stdout, result.stdout
    assert (project / ".venv" / ".installed-serve").exists()


class _XdistConfig:
    """What xdist's schedulers read of a pytest config: the --dist mode and the workers."""

    def __init__(self, dist: str) -> None:
        self._values = {"dist": dist, "tx": ["2*popen"], "loadscopereorder": True}

    def getvalue(self, name: str) -> object:
        return self._values[name]


def test_make_test_runs_the_benchmark_smoke_on_one_worker() -> None:
    """`make test`'s `-n auto` keeps the benchmark smoke tests together (their ~17 s
    session fixture then runs once) and schedules every other test on its own."""
    from tests import conftest

    scheduler = conftest.pytest_xdist_make_scheduler(_XdistConfig("load"), None)
    smoke = [
        "tests/test_benchmarks_smoke.py::test_build_scaling_measures_the_build_and_its_floor",
        "tests/test_benchmarks_smoke.py::test_serve_watch_is_measured",
    ]
    others = ["tests/test_golden.py::test_output_matches", "tests/test_serve.py::test_x[a]"]
    scopes = {scheduler._split_scope(nodeid) for nodeid in smoke}  # type: ignore[attr-defined]
    assert len(scopes) == 1
    assert {scheduler._split_scope(nodeid) for nodeid in others} == set(others)  # type: ignore[attr-defined]
    assert scopes.isdisjoint(others)
    # An explicit other --dist mode is xdist's own.
    assert conftest.pytest_xdist_make_scheduler(_XdistConfig("loadfile"), None) is None


def test_the_suite_still_starts_without_xdist() -> None:
    """The scheduler hook above is xdist's: pytest without the plugin (`-p no:xdist`, a
    bare environment) must still collect the suite, not stop on an unknown hook."""
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-q",
         "--collect-only", "tests/test_cli.py"],
        cwd=REPO, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stdout[-2000:] + completed.stderr[-2000:]


@pytest.mark.parametrize("target", ["serve", "build", "check", "test"])
def test_site_points_every_target_at_a_site_beside_the_project(tmp_path: Path, target: str) -> None:
    """`make serve SITE=../docs-site`: a team keeps its site beside this project (or this
    project as a submodule of its docs) and never edits site_data/, the sample."""
    project = _project(tmp_path)
    _venv_with(project, _same_python_script())

    def site_arguments(*args: str) -> list[str]:
        result = _dry_run(project, target, *args)
        assert result.returncode == 0, result.stderr
        return [line for line in result.stdout.splitlines() if "-m content_builder" in line]

    default = site_arguments()
    chosen = site_arguments("SITE=../docs site")
    assert default and all('--site "site_data"' in line for line in default), default
    assert chosen and all('--site "../docs site"' in line for line in chosen), chosen


def test_make_init_writes_beside_the_docs_tree_unless_site_is_given(tmp_path: Path) -> None:
    """`make init DOCS=...` never writes into site_data/ (the sample): SITE's default is not
    passed, only a SITE given on the command line."""
    project = _project(tmp_path)
    _venv_with(project, _same_python_script())

    def init_lines(*args: str) -> list[str]:
        result = _dry_run(project, "init", *args)
        assert result.returncode == 0, result.stderr
        return [line for line in result.stdout.splitlines() if "-m content_builder init" in line]

    (alone,) = init_lines("DOCS=../product/docs")
    assert alone.endswith('init --docs "../product/docs"'), alone
    (chosen,) = init_lines("DOCS=../product/docs", "SITE=../agents site")
    assert chosen.endswith('--docs "../product/docs" --site "../agents site"'), chosen
    missing = _dry_run(project, "init")
    assert missing.returncode != 0 and "DOCS=path/to/your/docs is required" in missing.stderr
