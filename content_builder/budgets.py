"""Size budgets (issue 14): what agents' fetch tools can read in one piece.

The tools cut at 5,000 characters (the reference `mcp-server-fetch`), about 20,000
(Claude API web_fetch) and about 100,000 (Claude Code); AFDocs-style checks pass a file
under 50,000. So llms.txt and its parts stay under 50,000 characters at any site size
(llms.py nests them), and each entry's own files (its Markdown mirror, a FAQ entry's
JSON) under 100,000, or the build fails naming the entry: an entry written for this API
can be split. A page of a Markdown docs tree is published as it is written (issue 23: a
tree is never rewritten to be published; a changelog or an API reference page often runs
past 100,000 characters), with a warning naming it: agents see its size in the content
index and llms.txt (`size`, estimated tokens) and can read its sections in the JSON
document. llms-full.txt stays what the spec defines; the report says which windows it
is past.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_contract import paths
from agent_contract.artifacts import Artifact
from agent_contract.endpoints import ENDPOINT
from content_builder.errors import Problem, SiteDataError
from content_builder.render.llms import LLMS_TXT_BUDGET
from content_builder.site_files import MARKDOWN_SUFFIXES

ENTRY_BUDGET = 100_000
#: The windows of the fetch tools named above, smallest first.
AGENT_WINDOWS = ((5_000, "mcp-server-fetch"), (20_000, "web_fetch"), (100_000, "Claude Code"))
#: sitemaps.org protocol: at most 50,000 URLs in one sitemap.
SITEMAP_URLS = 50_000


@dataclass(frozen=True)
class Budget:
    applies: str  # which files, for the report
    limit: int

    def over(self, artifact: Artifact) -> int | None:
        size = len(artifact.body.decode("utf-8"))
        return size if size >= self.limit else None


def _entry_budgeted(path: str) -> bool:
    return path.endswith(".md") or ENDPOINT["faq"].matches(path, "")


def _llms_budgeted(path: str) -> bool:
    return path == paths.LLMS_TXT or ENDPOINT["llms_part"].matches(path, "")


def _characters(body: bytes) -> int:
    # ASCII is one character a byte: counted without a decoded copy.
    return len(body) if body.isascii() else len(body.decode("utf-8"))


def check_budgets(artifacts: list[Artifact]) -> list[Problem]:
    """Raise SiteDataError for a file over its budget; return the warnings (a Markdown
    docs page over the entry budget)."""
    problems: list[Problem] = []
    warnings: list[Problem] = []
    smallest = min(LLMS_TXT_BUDGET, ENTRY_BUDGET)
    for artifact in artifacts:
        # A UTF-8 body holds at most as many characters as bytes: a body smaller than
        # every budget is within them without being decoded (40,000 decodes at 10k).
        if artifact.size < smallest and artifact.path != paths.SITEMAP:
            continue
        # Only a budgeted file's characters are counted (not llms-full.txt's or the
        # indexes', tens of MB at 10,000 entries).
        budgeted = _llms_budgeted(artifact.path) or _entry_budgeted(artifact.path)
        size = _characters(artifact.body) if budgeted else 0
        where = f"{artifact.source} ({artifact.path})" if artifact.source else artifact.path
        if _llms_budgeted(artifact.path) and size >= LLMS_TXT_BUDGET:
            problems.append(
                Problem(where, None, f"{size:,} characters, over the llms.txt budget of "
                        f"{LLMS_TXT_BUDGET:,}")
            )  # fmt: skip
        elif _entry_budgeted(artifact.path) and size >= ENTRY_BUDGET:
            entry = artifact.path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
            if artifact.source is not None and artifact.source.endswith(MARKDOWN_SUFFIXES):
                warnings.append(
                    Problem(where, None, f"page {entry!r} renders {size:,} characters, past "
                            f"the {ENTRY_BUDGET:,} agents' fetch tools read in one piece; "
                            "published whole (agents can read its sections in the JSON "
                            "document); split the page to serve them better")
                )  # fmt: skip
                continue
            problems.append(
                Problem(where, None, f"entry {entry!r} renders {size:,} characters, over the "
                        f"budget of {ENTRY_BUDGET:,} agents' fetch tools read in one piece; "
                        "split it into smaller documents or FAQ entries")
            )  # fmt: skip
        elif artifact.path == paths.SITEMAP:
            urls = artifact.body.count(b"<url>")
            if urls > SITEMAP_URLS:
                problems.append(
                    Problem(artifact.path, None, f"{urls:,} URLs, over the sitemap "
                            f"protocol's {SITEMAP_URLS:,}")
                )  # fmt: skip
    if problems:
        raise SiteDataError(problems)
    return warnings


def budget_report(artifacts: list[Artifact]) -> list[str]:
    """One line per budget, with the largest file under it, and llms-full.txt's windows."""
    by_path = {artifact.path: artifact for artifact in artifacts}
    lines = []
    for label, limit, test in (
        ("llms.txt and its parts", LLMS_TXT_BUDGET, _llms_budgeted),
        ("Markdown mirrors and FAQ files", ENTRY_BUDGET, _entry_budgeted),
    ):
        sized = [(len(a.body.decode("utf-8")), a.path) for a in artifacts if test(a.path)]
        if sized:
            size, path = max(sized)
            lines.append(
                f"budget: {label}: {len(sized)} files, largest {path} at {size:,} of "
                f"{limit:,} characters"
            )
    full = by_path.get(paths.LLMS_FULL_TXT)
    if full is not None:
        size = len(full.body.decode("utf-8"))
        past = [f"{name} ({limit:,})" for limit, name in AGENT_WINDOWS if size > limit]
        verdict = "past " + ", ".join(past) if past else "within every agent window"
        lines.append(
            f"budget: llms-full.txt is {size:,} characters: {verdict}; agents should read "
            "llms.txt, its parts and the Markdown mirrors instead"
            if past
            else f"budget: llms-full.txt is {size:,} characters: {verdict}"
        )
    return lines
