"""The byte-identity guard: a fixed site builds to exactly the committed bytes.

When a change is *meant* to alter the output (a format change), regenerate the
expectation with `python -m tests.golden.regenerate` in a commit of its own.
"""

from __future__ import annotations

from tests.golden.regenerate import EXPECTED, SITE, build_digest


def _table(text: str) -> dict[str, str]:
    return {path: digest for digest, path in (line.split("  ", 1) for line in text.splitlines())}


def test_fixed_site_builds_to_the_committed_bytes() -> None:
    expected, actual = _table(EXPECTED.read_text(encoding="utf-8")), _table(build_digest(SITE))
    assert sorted(actual) == sorted(expected), "the set of published files changed"
    changed = sorted(path for path in expected if actual[path] != expected[path])
    assert not changed, (
        f"bytes changed for {changed}; if deliberate, run `python -m tests.golden.regenerate` "
        "and commit the expectation on its own"
    )
