"""`cli` dispatch: every subcommand runs its own handler, and none can fall through."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from agent_access import cli
from tests.conftest import TEST_BASE_URL, run_cli

#: The least each subcommand needs to parse.
ARGUMENTS = {
    "build": [],
    "check": [],
    "serve": [],
    "verify": ["https://agents.example.test"],
    "mcp": [],
    "search-eval": [],
    "init": ["--docs", "docs"],
}


def test_every_subcommand_has_a_handler_and_every_handler_a_subcommand() -> None:
    assert sorted(ARGUMENTS) == sorted(cli.HANDLERS)


@pytest.mark.parametrize("command", sorted(ARGUMENTS))
def test_each_subcommand_dispatches_to_its_own_handler(
    command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    called: list[str] = []

    def recorder(name: str):
        def handler(args: argparse.Namespace) -> int:
            called.append(name)
            assert args.command == name
            return 7

        return handler

    monkeypatch.setattr(cli, "HANDLERS", {name: recorder(name) for name in cli.HANDLERS})
    assert cli.main([command, *ARGUMENTS[command]]) == 7
    assert called == [command]


def test_a_subcommand_without_a_handler_fails_instead_of_running_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    handlers = dict(cli.HANDLERS)
    del handlers["search-eval"]
    monkeypatch.setattr(cli, "HANDLERS", handlers)
    with pytest.raises(AssertionError, match="search-eval"):
        cli.main(["search-eval"])


def test_the_command_line_imports_no_other_party_before_a_subcommand_needs_it() -> None:
    """`python -m content_builder build` (timed start-up included by issue 11's edit
    target) does not import the agent client or the local edge: ~0.1 s of start-up that
    a build never uses."""
    import subprocess
    import sys

    from tests.conftest import REPO

    probe = (
        "import sys, agent_access.cli, content_builder.build; "
        "print(sorted(m for m in sys.modules if m.startswith(('agent_client', 'agent_edge'))))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert completed.stdout.strip() == "[]", completed.stdout


def test_build_lists_what_changed_and_every_file_only_when_asked(
    site_copy: Path, tmp_path: Path
) -> None:
    """A build's report names the files it wrote or removed; the unchanged ones only with
    --verbose (40,000 lines after one edit of a 10,000-entry site otherwise)."""
    out = tmp_path / "dist"
    args = ["build", "--site", site_copy, "--out", out, "--base-url", TEST_BASE_URL]
    first = run_cli(*args)
    assert first.code == 0
    published = sorted(path for path in out.rglob("*") if path.is_file())
    new_rows = [line for line in first.out.splitlines() if line.endswith("  new")]
    assert len(new_rows) == len(published) - 1, "every file of a first build (manifest aside)"
    again = run_cli(*args)
    assert again.code == 0
    assert not [line for line in again.out.splitlines() if line.endswith("  unchanged")]
    assert f"{len(new_rows)} files, 0 changed" in again.out
    verbose = run_cli(*args, "--verbose")
    unchanged = [line for line in verbose.out.splitlines() if line.endswith("  unchanged")]
    assert len(unchanged) == len(new_rows), "--verbose lists every file"


# --- `--site` on every command (issue 23): a team keeps its site beside this project ---


def _site_with_a_bad_website(tmp_path: Path) -> Path:
    """A copy of the fixture site, elsewhere, whose site.yaml only that copy has wrong."""
    import shutil

    from tests.conftest import SPEC_SITE

    site = tmp_path / "our-docs-site"
    shutil.copytree(SPEC_SITE, site)
    config = site / "site.yaml"
    text = config.read_text(encoding="utf-8")
    assert "\nwebsite: " in text
    config.write_text(
        "".join(
            "website: not-a-url\n" if line.startswith("website: ") else line
            for line in text.splitlines(keepends=True)
        ),
        encoding="utf-8",
    )
    return site


# `init --site` names the folder to write a new site.yaml in (tests/test_init.py).
@pytest.mark.parametrize("command", sorted(set(ARGUMENTS) - {"init"}))
def test_every_subcommand_reads_the_site_named_by_site(command: str, tmp_path: Path) -> None:
    """Each command reads the folder `--site` names, not site_data/: the copy's own
    error (site_data/ and the fixture are valid) comes back, naming its file and field."""
    site = _site_with_a_bad_website(tmp_path)
    result = run_cli(command, *ARGUMENTS[command], "--site", site)
    assert result.code == 1, (result.out, result.err)
    (line,) = [line for line in result.err.splitlines() if "field 'website'" in line]
    assert "our-docs-site" in line and "site.yaml" in line, line
    assert "Traceback" not in result.err


def test_verify_site_probes_the_mcp_server_again_before_each_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Right after a first deploy the MCP function may not answer yet: the files the
    deployment serves name it, a build without it never matches them, so --retry-for
    asks again before each attempt instead of failing for its whole time."""
    import shutil

    from agent_client import verify as verify_module
    from tests.conftest import SPEC_SITE, running_server

    site = tmp_path / "our-docs-site"
    shutil.copytree(SPEC_SITE, site)
    probe = verify_module.live_mcp_endpoint
    answers: list[str | None] = []

    def not_yet_then_live(base_url: str, timeout: float = 10.0) -> str | None:
        answers.append(None if not answers else probe(base_url, timeout))
        return answers[-1]

    monkeypatch.setattr(verify_module, "live_mcp_endpoint", not_yet_then_live)
    monkeypatch.setattr(verify_module, "RETRY_INTERVAL", 0.0)
    with running_server(site, name_mcp=True) as server:
        result = run_cli("verify", server.base_url, "--site", site, "--retry-for", "5")
    assert result.code == 0, result.out
    assert answers == [None, f"{server.base_url}/mcp"], answers
    assert f"a live MCP server answers at {server.base_url}/mcp" in result.out


def test_verify_site_compares_the_deployment_with_a_build_of_that_site(tmp_path: Path) -> None:
    import shutil

    from tests.conftest import SPEC_SITE, running_server

    site = tmp_path / "our-docs-site"
    shutil.copytree(SPEC_SITE, site)
    with running_server(site, name_mcp=True) as server:
        good = run_cli("verify", server.base_url, "--site", site)
        assert good.code == 0, good.out
        assert ", 0 failed" in good.out
        # It answers MCP at /mcp, so the build it is compared with names that server.
        assert f"a live MCP server answers at {server.base_url}/mcp" in good.out
        # The deployment no longer matches the site once the site changes.
        import yaml

        faq = next((site / "faq").glob("*.yaml"))
        data = yaml.safe_load(faq.read_text(encoding="utf-8"))
        data["answer"] += " Changed since the deployment."
        faq.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        run_cli("build", "--site", site, "--out", tmp_path / "dist")  # the lock moves on
        stale = run_cli("verify", server.base_url, "--site", site)
    assert stale.code == 1
    assert f"/api/v1/faq/{faq.stem}.json" in stale.out


# --- the process's end (docs/decisions.md "Session 26: a one-shot command ends without
# the interpreter's teardown") ---------------------------------------------------------

#: Runs the front door as the console script does, with an exit handler that says whether
#: the interpreter's teardown ran; `{before}` runs first.
_PROBE = (
    "import atexit, sys\n"
    "{before}\n"
    "atexit.register(lambda: print('teardown ran', file=sys.stderr))\n"
    "sys.argv = ['agent-access', *sys.argv[1:]]\n"
    "from agent_access.cli import run\n"
    "run()\n"
)


def _run_as_process(*args: str | Path, before: str = "") -> tuple[int, str, str]:
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    # Buffered output, as a shell's pipe has it (this machine sets PYTHONUNBUFFERED).
    env = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    completed = subprocess.run(
        [sys.executable, "-c", _PROBE.format(before=before), *map(str, args)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return completed.returncode, completed.stdout, completed.stderr


def test_a_build_run_as_a_process_writes_its_whole_report_and_skips_the_teardown(
    tmp_path: Path,
) -> None:
    """The report reaches a pipe whole (a hard exit that dropped buffered output would cut
    it: it is larger than the pipe's buffer with --verbose), the exit code is the build's,
    and the teardown (~30 ms of a small site's build) is skipped."""
    from tests.conftest import SPEC_SITE

    out = tmp_path / "dist"
    code, stdout, stderr = _run_as_process(
        "build", "--site", SPEC_SITE, "--out", out, "--base-url", TEST_BASE_URL, "--verbose"
    )
    assert code == 0, stderr
    published = [path for path in out.rglob("*") if path.is_file()]
    rows = [line for line in stdout.splitlines() if line.endswith(("  new", "  unchanged"))]
    assert len(rows) == len(published) - 1, "one row per file (the manifest aside)"
    assert stdout.rstrip().splitlines()[-1].startswith("wrote "), stdout[-300:]
    assert "teardown ran" not in stderr


def test_a_failing_command_run_as_a_process_says_why_and_exits_1(tmp_path: Path) -> None:
    code, _, stderr = _run_as_process("check", "--site", _site_with_a_bad_website(tmp_path))
    assert code == 1
    assert "site.yaml" in stderr and "website" in stderr, stderr
    assert "teardown ran" not in stderr


def test_a_process_that_started_the_pool_keeps_the_interpreters_teardown(
    tmp_path: Path,
) -> None:
    """multiprocessing's exit handlers (a pool's, its queue's semaphore) run as usual: the
    fast end is only for a process that never imported it."""
    from tests.conftest import SPEC_SITE

    code, _, stderr = _run_as_process(
        "build", "--site", SPEC_SITE, "--out", tmp_path / "dist", before="import multiprocessing"
    )
    assert code == 0, stderr
    assert "teardown ran" in stderr


def test_a_build_with_stdout_closed_still_builds_and_exits_0(tmp_path: Path) -> None:
    """`agent-access build ... >&-` (cron, a daemon's job): Python sets sys.stdout to None
    and `print` writes nothing; the end must not then fail on the missing stream (exit 1
    and a traceback, session 26's hard exit before this test)."""
    import os
    import subprocess
    import sys

    from tests.conftest import REPO, SPEC_SITE

    out = tmp_path / "dist"
    env = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    command = [sys.executable, "-c", _PROBE.format(before=""), "build", "--site", str(SPEC_SITE)]
    completed = subprocess.run(
        ["sh", "-c", 'exec "$@" >&-', "sh", *command, "--out", str(out)],
        cwd=REPO,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    assert "Traceback" not in completed.stderr, completed.stderr
    assert "teardown ran" not in completed.stderr
    assert (out / "llms.txt").is_file()


def test_a_build_run_under_a_profiler_ends_as_python_does(tmp_path: Path) -> None:
    """`python -m cProfile -m content_builder build` prints its table at the interpreter's
    exit: a hard exit would drop it (and coverage's data, a debugger's session)."""
    import os
    import subprocess
    import sys

    from tests.conftest import REPO, SPEC_SITE

    env = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    completed = subprocess.run(
        [sys.executable, "-m", "cProfile", "-s", "tottime", "-m", "content_builder", "build",
         "--site", str(SPEC_SITE), "--out", str(tmp_path / "dist")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    assert "function calls" in completed.stdout and "Ordered by: internal time" in completed.stdout
