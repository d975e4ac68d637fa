"""`cli` dispatch: every subcommand runs its own handler, and none can fall through."""

from __future__ import annotations

import argparse

import pytest

from content_builder import cli

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
