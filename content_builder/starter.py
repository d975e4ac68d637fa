"""`init --docs DIR`: a starter site.yaml for an existing Markdown tree, and what it holds.

Guesses come from what the tree's own tool already says (mkdocs.yml's site_name,
site_description, site_url, repo_url), else from the folder's name; what nothing says
(the API's base_url above all) is a placeholder on a reserved `.invalid` host (RFC 2606)
with a TODO, so the starter builds and serves at once and nothing guessed goes unmarked.
The survey loads the new site as a build would and lists its pages, its nav groups and
the links that do not resolve.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from agent_contract.uri import url_problem
from content_builder.errors import Problem, SiteDataError
from content_builder.loaded import display_path
from content_builder.loader import SITE_FILE, load_site
from content_builder.markdown_includes import OUTSIDE_HINT
from content_builder.markdown_tree import DEFAULT_GROUP, mkdocs_config
from content_builder.site_files import MARKDOWN_SUFFIXES

PLACEHOLDER_WEBSITE = "https://www.example.invalid"
PLACEHOLDER_BASE_URL = "https://agents.example.invalid"
#: Written while the survey looks, kept only when some link does not resolve.
_WARN_LINE = "broken_links: warn"
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Starter:
    site_dir: Path
    site_yaml: str


@dataclass(frozen=True)
class Survey:
    pages: int
    groups: list[tuple[str, int]]  # llms.txt section -> pages, in order
    broken_links: list[Problem]
    problems: list[Problem]  # what stops a build, links aside
    #: `{! file !}` lines naming files outside the tree: kept until include_root is set.
    outside_includes: list[Problem] = field(default_factory=list)


def starter(docs: Path, site_dir: Path | None = None) -> Starter:
    """The starter site.yaml for the tree `docs`; the site folder defaults to the tree's
    parent (site.yaml beside the tree, as mkdocs.yml is)."""
    if not docs.is_dir():
        raise SiteDataError.single(str(docs), None, "not a folder (--docs names the docs tree)")
    if not any(name.endswith(MARKDOWN_SUFFIXES) for _, _, names in os.walk(docs) for name in names):
        raise SiteDataError.single(str(docs), None, "holds no Markdown page (.md, .mdx)")
    site_dir = site_dir if site_dir is not None else docs.resolve().parent
    problems: list[Problem] = []
    found = mkdocs_config(docs.resolve(), problems, display_path)
    if problems:
        raise SiteDataError(problems)
    settings = found[1] if found else {}
    name = _one_line(settings.get("site_name")) or docs.resolve().parent.name or "Docs"
    description = _one_line(settings.get("site_description"))
    website = _url(settings.get("site_url"))
    contact = _url(settings.get("repo_url"))
    source = "mkdocs.yml" if found else "the folder's name"
    lines = [
        "# Starter site.yaml written by `agent-access init` (docs/site-data-format.md).",
        f"# Guessed from {source}; check every value, and each TODO before publishing.",
        f"name: {_quoted(name)}",
        f"description: {_quoted(description or f'The {name} documentation.')}"
        + ("" if description else "  # TODO: one sentence of what it is"),
        f"website: {_quoted(website or PLACEHOLDER_WEBSITE)}"
        + ("" if website else "  # TODO: the human site (canonical URLs start here)"),
        "# TODO: the origin agents read the API from (your CloudFront or custom domain);",
        "# `serve` and `--base-url` override it.",
        f"base_url: {_quoted(PLACEHOLDER_BASE_URL)}",
        f"contact: {_quoted(contact or PLACEHOLDER_WEBSITE + '/contact')}"
        + ("" if contact else "  # TODO: an e-mail address or a URL agents' users can reach"),
        f"docs_dir: {_quoted(_relative(docs, site_dir))}",
    ]
    return Starter(site_dir, "\n".join(lines) + "\n")


def write(start: Starter) -> tuple[Path, Survey]:
    """Write site.yaml (never over an existing one) and survey the site it makes."""
    path = start.site_dir / SITE_FILE
    if os.path.lexists(path):
        raise SiteDataError.single(
            display_path(path), None, "already exists: init never overwrites a site.yaml"
        )
    start.site_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(start.site_yaml + _WARN_LINE + "\n", encoding="utf-8")
    result = survey(start.site_dir)
    if result.broken_links:
        note = f"  # TODO: {len(result.broken_links)} links do not resolve (init listed them)"
        path.write_text(start.site_yaml + _WARN_LINE + note + "\n", encoding="utf-8")
    else:
        path.write_text(start.site_yaml, encoding="utf-8")
    return path, result


def survey(site_dir: Path) -> Survey:
    """What a build of the site would find: pages, nav groups, unresolved links."""
    try:
        site = load_site(site_dir)
    except SiteDataError as error:
        return Survey(0, [], [], error.problems)
    pages = [d for d in site.documents if d.file.endswith(MARKDOWN_SUFFIXES)]
    per_group = Counter(site.groups.get(d.id, DEFAULT_GROUP) for d in pages)
    order = [DEFAULT_GROUP, *(g for g in site.group_order if g != DEFAULT_GROUP)]
    groups = [(group, per_group[group]) for group in order if per_group[group]]
    outside: list[Problem] = []
    others: list[Problem] = []
    for warning in site.warnings:  # one pass: `not in outside` was quadratic (10,000: 6 s)
        (outside if warning.message.endswith(f"({OUTSIDE_HINT})") else others).append(warning)
    return Survey(len(pages), groups, others, [], outside)


def report(path: Path, result: Survey) -> list[str]:
    lines = [f"wrote {display_path(path)}"]
    if result.problems:
        lines.append("the site does not build yet; fix these first:")
        lines += [f"  {problem}" for problem in result.problems]
        return lines
    lines.append(f"pages: {result.pages}")
    lines.append("nav groups: " + ", ".join(f"{g} ({n})" for g, n in result.groups))
    lines.append(f"links that do not resolve: {len(result.broken_links)}")
    lines += [f"  {problem}" for problem in result.broken_links]
    if result.outside_includes:
        lines.append(
            f"includes of files outside the docs tree, kept as written: "
            f"{len(result.outside_includes)} (set include_root in site.yaml to the folder "
            "holding them, such as the repository's root, to include them)"
        )
        lines += [f"  {problem}" for problem in result.outside_includes]
    site = display_path(path.parent)
    lines.append(f"next: make serve SITE={site}  (then make build SITE={site})")
    return lines


def _relative(docs: Path, site_dir: Path) -> str:
    return Path(os.path.relpath(docs.resolve(), site_dir.resolve())).as_posix()


def _one_line(value: object) -> str:
    return _SPACES.sub(" ", value).strip() if isinstance(value, str) else ""


def _url(value: object) -> str:
    text = _one_line(value).rstrip("/")
    return text if text and url_problem(text) is None else ""


def _quoted(value: str) -> str:
    # A JSON string is a YAML double-quoted scalar: any text, written safely.
    return json.dumps(value, ensure_ascii=False)
