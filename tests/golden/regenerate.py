"""The byte-identity guard's expectation: one fixed site, built, one sha256 per file.

A speed-up must never change the output; a deliberate format change does, and then the
expectation is regenerated in a commit of its own, with the reason in its message:

    python -m tests.golden.regenerate          # rebuild expected.sha256 from tests/golden/site
    python -m tests.golden.regenerate --site   # also rewrite the site (benchmarks/sitegen.py)

The site is committed rather than generated on each run: sitegen copies site.yaml and
architecture.yaml from site_data/, which the site owner edits at will.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SITE = HERE / "site"
EXPECTED = HERE / "expected.sha256"
BASE_URL = "https://agents.golden.test"
N, SEED = 6, 11

# Non-ASCII text in a salient place: the folding path of the search index is covered too.
_UNICODE_FAQ = """\
id: q09999-cafe-resume
question: Does the Café's résumé page reach agents, and how is Ærø spelled for them?
keywords:
  - Café
  - naïve client
answer: >-
  Yes. Accented words are folded for the search index (Café becomes cafe, résumé becomes
  resume), so a naïve client that types plain ASCII still finds this entry. Straße, Ærø
  and ﬁle ligatures are folded too.
"""


def build_digest(site: Path) -> str:
    """The expectation's text: `sha256  path` lines (sha256sum's format), sorted by path."""
    from content_builder.build import build

    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "site_data"
        shutil.copytree(site, copy)
        out = Path(scratch) / "dist"
        build(copy, out, BASE_URL, frozen=True)
        lines = [
            f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.relative_to(out).as_posix()}"
            for path in sorted(out.rglob("*"))
            if path.is_file()
        ]
    return "\n".join(lines) + "\n"


def regenerate_site() -> None:
    from benchmarks.sitegen import generate, refresh_lock

    generate(SITE, N, SEED)
    (SITE / "faq" / "q09999-cafe-resume.yaml").write_text(_UNICODE_FAQ, encoding="utf-8")
    refresh_lock(SITE)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--site", action="store_true", help="regenerate the site first")
    args = parser.parse_args(argv)
    if args.site:
        regenerate_site()
    EXPECTED.write_text(build_digest(SITE), encoding="utf-8")
    print(f"wrote {EXPECTED}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
