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
