"""One Markdown page -> the fields of a content document (docs/site-data-format.md, Markdown).

The page is parsed with markdown-it-py (CommonMark, GFM tables and strikethrough; front
matter found by mdit-py-plugins). What it becomes:

- sections at the top-level `#`/`##` headings (the first `#` is the title); deeper
  headings stay inside their section's body as written; text before the first section
  heading is the opening section, titled with the page's title;
- each section's `body` is CommonMark Markdown: the author's lines, fenced code kept as a
  fence with its info string, byte for byte (`code_example` is not used);
- what docs tools add to Markdown degrades to readable text before parsing: admonitions
  (`!!! note`, `??? tip`, `::: tip`, `:::note[Title]`), content tabs (`=== "Tab"`), code
  groups; HTML blocks and inline tags lose their tags and keep their words (comments,
  `<script>` and `<style>` are dropped whole); snippet includes (`--8<--`) are replaced by
  the file they name when it is inside the tree;
- in prose only (never in code spans or fences): links rewritten (`Links.resolve`), the
  site's tokens replaced, `{{word}` written `{word}`, a near miss of a token an error.

Problems name the page and the line the author wrote.
"""

from __future__ import annotations

import difflib
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from content_builder.markdown_includes import include_name, variants_name
from content_builder.site_files import MARKDOWN_SUFFIXES
from content_builder.text_rules import FORBIDDEN, describe

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

_PARSERS: dict[tuple[bool, bool], Any] = {}


def parser(blocks_only: bool = False, mdx: bool = False) -> MarkdownIt:
    """The parser, made on first use: a site without Markdown pages (and every command
    that does not build) never imports markdown-it. `blocks_only`: without the inline
    rules (a third of the parse), which only the description needs. `mdx`: without
    indented code, which MDX does not have (an indented `<details>` in a list is a
    component there, not code)."""
    found = _PARSERS.get((blocks_only, mdx))
    if found is None:
        from markdown_it import MarkdownIt
        from mdit_py_plugins.front_matter import front_matter_plugin

        found = (
            MarkdownIt("commonmark", {"html": True})
            .enable(["table", "strikethrough"])
            .use(front_matter_plugin)
        )
        if blocks_only:
            found.core.ruler.disable("inline")
        if mdx:
            found.block.ruler.disable("code")
        _PARSERS[(blocks_only, mdx)] = found
    return found  # type: ignore[no-any-return]


# --- front matter ---------------------------------------------------------------------


def split_front_matter(text: str) -> tuple[str | None, int]:
    """The front matter's YAML (None when the page has none) and the line the body
    starts at (0-based). The block is the one the front matter plugin finds: `---` on
    the first line, up to the next `---` (or `...`)."""
    if not text.startswith("---"):
        return None, 0
    state_tokens = parser().parse(_first_block(text))
    if state_tokens and state_tokens[0].type == "front_matter" and state_tokens[0].map:
        return state_tokens[0].content, state_tokens[0].map[1]
    return None, 0


def split_toml_front_matter(text: str) -> tuple[str | None, int]:
    """Hugo's TOML front matter, as split_front_matter: `+++` alone on the first line, up
    to the next line that is `+++` alone (the TOML, None when there is none), and the line
    the body starts at (0-based)."""
    if not text.startswith("+++"):
        return None, 0
    lines = text.split("\n")
    if lines[0].rstrip() != "+++":
        return None, 0
    for number in range(1, len(lines)):
        if lines[number].rstrip() == "+++":
            return "\n".join(lines[1:number]), number + 1
    return None, 0


def _first_block(text: str) -> str:
    # Only the front matter is wanted: the text up to the second `---`/`...` line is
    # enough for the plugin to find it (the whole page is parsed once, later).
    lines = text.split("\n")
    for index in range(1, len(lines)):
        if lines[index].rstrip() in ("---", "..."):
            return "\n".join(lines[: index + 1]) + "\n"
    return text


# --- what the page's text becomes -----------------------------------------------------


@dataclass
class Lines:
    """The page's body lines as transformed so far, each with the line of the page it
    came from (1-based; a snippet's lines carry the line that included them)."""

    text: list[str]
    origin: list[int]
    #: The lines that are a degraded container's title (`**Note**`): not a description.
    markers: set[int] = field(default_factory=set)

    #: Characters of text included from other files (snippets, partials) so far.
    included: int = 0

    def add(self, line: str, origin: int) -> None:
        self.text.append(line)
        self.origin.append(origin)


#: The most text a page may be, its own and what it includes from other files (snippets
#: and MDX partials, all levels): the bound of one site file (site_files.MAX_FILE_BYTES).
#: Included text is parsed as the page's own: one file included 100 times made a page
#: hundreds of MB to parse (session 23's review: 21 s and 1.1 GB), and at the 4 Mi
#: characters included that allowed, a page of headings took 44 s and 1.5 GB (session 27).
MAX_INCLUDED_CHARS = 1 << 20


def _room_for(
    out: Lines, size: int, name: str, origin: int, problems: list[tuple[int, str]]
) -> bool:
    """Whether `size` more characters may still be included (then counted); else a
    problem naming the file."""
    if out.included + size <= MAX_INCLUDED_CHARS:
        out.included += size
        return True
    problems.append(
        (origin, f"{name!r}: the page includes more than {MAX_INCLUDED_CHARS:,} characters "
                 "with its own text (the limit of one site file); include less")
    )  # fmt: skip
    return False


@dataclass
class Converted:
    """A page's fields: its title and description as found, its sections, problems."""

    title: str | None  # the first `# ` heading's text, if any
    description: str | None  # the first paragraph as one line of plain text, if any
    sections: list[tuple[str | None, str]]  # (title, or None for the opening; body)
    problems: list[tuple[int, str]] = field(default_factory=list)  # (line, message)
    snippets: list[str] = field(default_factory=list)  # the files included
    warnings: list[tuple[int, str]] = field(default_factory=list)  # (line, message)


#: The callbacks a page needs from its tree.
#: (dest, its line) -> (new dest, problem); the line names a warning (broken_links: warn).
Resolve = Callable[[str, int | None], tuple[str | None, str | None]]
#: Marks a snippet name as relative to the page that includes it (an MDX import): a NUL,
#: which no file name holds.
PAGE_RELATIVE = "\0"
#: Marks a snippet name as a `{! file !}` / `{* file *}` include's (markdown_includes.py):
#: a SOH, which no file name holds. Its reader answers (key, None, warning) for a file
#: not included: the line is then kept as written.
INCLUDED = "\x01"
ReadSnippet = Callable[[str], tuple[str | None, str | None, str | None]]  # (name, text, problem)


@dataclass(frozen=True)
class Context:
    resolve_link: Resolve  # a link's destination -> (its published URL or None to keep, problem)
    resolve_image: Callable[[str], str | None]  # an image's source -> absolute URL or None
    read_snippet: ReadSnippet  # a snippet's name -> (its key, its text, or a problem)
    tokens: dict[str, str]  # "{base_url}" -> value
    #: The include lines mkdocs.yml configures: "include" (`{! file !}`), "variants"
    #: (`{* file *}`); other trees have none, and such lines are text.
    includes: frozenset[str] = frozenset()


def convert(
    text: str, body_start: int, context: Context, mdx: bool = False, lead: str = ""
) -> Converted:
    """The page's fields from its text (universal newlines) and the line its body starts;
    `mdx` for an .mdx page (no indented code); `lead`: Markdown the page's front matter
    stands for (a VitePress home page's hero), read before its body, as of its last
    front matter line."""
    lines = Lines([], [])
    problems: list[tuple[int, str]] = []
    snippets: list[str] = []
    for line in [*lead.split("\n"), ""] if lead else ():
        lines.add(line, max(body_start, 1))
    for number, line in enumerate(text.split("\n")[body_start:], body_start + 1):
        lines.add(line, number)
    lines.included = len(text)  # the page's own text counts against the bound too
    context = replace(context, read_snippet=read_once(context.read_snippet))
    warnings: list[tuple[int, str]] = []
    if context.includes:
        lines = _expand_includes(lines, context, problems, warnings, snippets)
    lines = _expand_snippets(lines, context, problems, snippets, depth=0)
    lines = _expand_partials(lines, context, problems, snippets)
    lines = _degrade_containers(lines)
    # Block structure only: the inline rules (a third of the parse) run on the one
    # paragraph that becomes the description (`_plain`), nowhere else.
    env: dict[str, Any] = {}  # the page's link reference definitions, for its description
    tokens = parser(blocks_only=True, mdx=mdx).parse("\n".join(lines.text) + "\n", env)
    converted = _sections(lines, tokens, context, problems, env.get("references", {}))
    # One line per problem: a line naming one missing file 1,000 times is one error.
    converted.problems = list(dict.fromkeys(problems + converted.problems))
    converted.snippets = list(dict.fromkeys(snippets))
    converted.warnings = list(dict.fromkeys(warnings))
    return converted


def read_once(read: ReadSnippet) -> ReadSnippet:
    """`read`, each name read once for the page: a block of 500,000 one-letter names
    opened, read and checked one file 500,000 times (59 s)."""
    seen: dict[str, tuple[str | None, str | None, str | None]] = {}

    def read_snippet(name: str) -> tuple[str | None, str | None, str | None]:
        if name not in seen:
            seen[name] = read(name)
        return seen[name]

    return read_snippet


def forbidden_lines(text: str) -> list[tuple[int, str]]:
    """Control characters, bidirectional overrides, tag characters (text_rules.py), by line."""
    if FORBIDDEN.search(text) is None:  # one scan in C: nearly every page
        return []
    found = []
    for number, line in enumerate(text.split("\n"), 1):
        match = FORBIDDEN.search(line)
        if match is not None:
            found.append(
                (
                    number,
                    f"holds {describe(match.group())}: control characters, bidirectional "
                    "overrides and invisible tag characters are not allowed in site data "
                    "(they reach llms.txt and the Markdown twins as they are)",
                )
            )
    return found


# --- fences, tracked by the line passes before parsing --------------------------------

_FENCE_OPEN = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")


class _Fences:
    """Whether a line is inside a fenced code block, line by line (CommonMark's rule:
    closed by the same character, at least as many, nothing after)."""

    def __init__(self) -> None:
        self.open: str | None = None

    def inside(self, line: str) -> bool:
        """True for a fence line or a line inside one."""
        match = _FENCE_OPEN.match(line)
        if self.open is not None:
            if (
                match
                and match.group(2)[0] == self.open[0]
                and len(match.group(2)) >= len(self.open)
                and not match.group(3).strip()
            ):
                self.open = None
            return True
        if match and not (match.group(2)[0] == "`" and "`" in match.group(3)):
            self.open = match.group(2)
            return True
        return False


# --- snippets (pymdownx.snippets) -----------------------------------------------------

_SNIPPET_LINE = re.compile(r"^(\s*)-{1,}8<-{1,}\s+([\"'])([^\"']+)\2\s*$")
_SNIPPET_BLOCK = re.compile(r"^(\s*)-{1,}8<-{1,}\s*$")
_MAX_SNIPPET_DEPTH = 4


def _expand_snippets(
    lines: Lines,
    context: Context,
    problems: list[tuple[int, str]],
    snippets: list[str],
    depth: int,
) -> Lines:
    if not any("8<" in line for line in lines.text):
        return lines
    out = Lines([], [], included=lines.included)
    fences = _Fences()
    index = 0
    while index < len(lines.text):
        line, origin = lines.text[index], lines.origin[index]
        index += 1
        if fences.inside(line):
            out.add(line, origin)
            continue
        single = _SNIPPET_LINE.match(line)
        names: list[str] = []
        indent = ""
        if single:
            indent, names = single.group(1), [single.group(3).strip()]
        elif _SNIPPET_BLOCK.match(line):
            indent = _SNIPPET_BLOCK.match(line).group(1)  # type: ignore[union-attr]
            end = index
            while end < len(lines.text) and not _SNIPPET_BLOCK.match(lines.text[end]):
                end += 1
            if end == len(lines.text):  # not a block: text
                out.add(line, origin)
                continue
            names = [n.strip() for n in lines.text[index:end] if n.strip()]
            index = end + 1
        else:
            out.add(line, origin)
            continue
        for name in names:
            if name.startswith(";"):  # pymdownx: a name commented out
                continue
            key, included, problem = context.read_snippet(name)
            if problem is not None or included is None or key is None:
                problems.append((origin, problem or f"snippet {name!r} cannot be read"))
                continue
            if depth >= _MAX_SNIPPET_DEPTH:
                problems.append((origin, f"snippet {name!r}: snippets nested too deeply"))
                continue
            if not _room_for(out, len(included), name, origin, problems):
                break
            snippets.append(key)
            inner = Lines([], [])
            for part in included.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
                inner.add(indent + part if part else part, origin)
            inner = _expand_snippets(inner, context, problems, snippets, depth + 1)
            if inner.included and not _room_for(out, inner.included, name, origin, problems):
                break  # what the snippet's own snippets included counts too
            for part, at in zip(inner.text, inner.origin, strict=True):
                out.add(part, at)
    return out


# --- includes by name (mdx_include, markdown-include, markdown-include-variants) --------


def _expand_includes(
    lines: Lines,
    context: Context,
    problems: list[tuple[int, str]],
    warnings: list[tuple[int, str]],
    snippets: list[str],
) -> Lines:
    """`{! file !}` lines (inside fences too: they are read before Markdown, and FastAPI
    writes them in its fences) become the file's text, indented as the line was;
    `{* file hl[..] *}` a ```python fence of it (the file named, not its variants, whole:
    the variants' own "full file preview"). Not recursive. A file not included is a
    warning and its line stays (markdown_includes.py)."""
    if not any("{!" in line or "{*" in line for line in lines.text):
        return lines
    out = Lines([], [], lines.markers, lines.included)
    fences = _Fences()
    for line, origin in zip(lines.text, lines.origin, strict=True):
        inside = fences.inside(line)
        found = include_name(line) if "include" in context.includes else None
        variant = None
        if found is None and not inside and "variants" in context.includes:
            variant = variants_name(line)
        if found is None and variant is None:
            out.add(line, origin)
            continue
        indent, name = found if found is not None else ("", variant or "")
        key, text, problem = context.read_snippet(INCLUDED + name)
        if key is None or text is None:
            if key is None:  # refused outright: a hidden file
                problems.append((origin, problem or f"include {name!r} cannot be read"))
            else:
                warnings.append((origin, problem or f"include {name!r} not included"))
            out.add(line, origin)
            continue
        if out.included + len(text) > MAX_INCLUDED_CHARS:
            warnings.append((origin, f"include {name!r}: the page would include more than "
                                     f"{MAX_INCLUDED_CHARS:,} characters with its own text "
                                     "(the limit of one site file): kept as written"))  # fmt: skip
            out.add(line, origin)
            continue
        out.included += len(text)
        snippets.append(key)
        body = text.replace("\r\n", "\n").replace("\r", "\n").removesuffix("\n").split("\n")
        if variant is not None:
            body = ["```python", *body, "```"]
        for part in body:
            out.add(indent + part if part else part, origin)
    return out


# --- MDX partials (Docusaurus) ----------------------------------------------------------

#: `import Name from './_partial.mdx';`: an MDX file imported as a component.
_PARTIAL_IMPORT = re.compile(
    r"^import\s+([A-Z][\w$]*)\s+from\s+['\"](\.{1,2}/[^'\"]+\.mdx?)['\"];?\s*$"
)


def _expand_partials(
    lines: Lines, context: Context, problems: list[tuple[int, str]], snippets: list[str]
) -> Lines:
    """`<Name />` alone on its line, where Name is an imported .md/.mdx file, becomes
    that file's text, as MDX renders it (its props are not evaluated). Read as snippets
    are (inside the tree only), so the build cache follows the file."""
    if not any(line.startswith("import") for line in lines.text):
        return lines
    imported: dict[str, str] = {}
    fences = _Fences()
    for line in lines.text:
        if not fences.inside(line):
            match = _PARTIAL_IMPORT.match(line)
            if match:
                imported[match.group(1)] = match.group(2)
    if not imported:
        return lines
    usage = re.compile(r"^(\s*)<(" + "|".join(map(re.escape, imported)) + r")\b[^<>]*/>\s*$")
    out = Lines([], [], lines.markers, lines.included)
    fences = _Fences()
    for line, origin in zip(lines.text, lines.origin, strict=True):
        used = None if fences.inside(line) else usage.match(line)
        if used is None:
            out.add(line, origin)
            continue
        name = imported[used.group(2)]
        key, included, problem = context.read_snippet(PAGE_RELATIVE + name)
        if problem is not None or included is None or key is None:
            problems.append((origin, problem or f"partial {name!r} cannot be read"))
            continue
        if not _room_for(out, len(included), name, origin, problems):
            break
        snippets.append(key)
        text = included.replace("\r\n", "\n").replace("\r", "\n")
        front, start = split_front_matter(text)
        body = text.split("\n")[start:] if front is not None else text.split("\n")
        for part in ["", *_rebased(body, posixpath.dirname(name)), ""]:
            out.add(part, origin)
    return out


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def _rebased(lines: list[str], folder: str) -> list[str]:
    """A partial's lines, its links to files (`.md`/`.mdx` pages, images) made to start
    from the page that uses it: MDX compiles the partial as a file of its own, so they
    start from its folder. A link to a URL (`./installation`) is the browser's, from the
    page's URL, and stays."""
    if not folder:
        return lines

    def moved(dest: str, image: bool) -> str:
        path = dest.partition("#")[0]
        if (
            not path
            or path.startswith(("/", "<", "{"))
            or _SCHEME.match(path)
            or not (image or path.lower().endswith(MARKDOWN_SUFFIXES))
        ):
            return dest
        return posixpath.normpath(posixpath.join(folder, dest))

    def link(match: re.Match[str]) -> str:
        new = moved(match.group(3), image=bool(match.group(1)))
        return match.group(0)[: match.start(3) - match.start()] + new

    fences = _Fences()
    out = []
    for line in lines:
        if not fences.inside(line):
            reference = _REFERENCE.match(line)
            if reference:
                new = moved(reference.group(2), image=False)
                line = line[: reference.start(2)] + new + line[reference.end(2) :]
            elif "](" in line:
                line = _INLINE_LINK.sub(link, line)
        out.append(line)
    return out


# --- admonitions, tabs, containers ----------------------------------------------------

#: Python-Markdown's admonition and pymdownx.details: the space after the marker is
#: optional (`!!!note`).
_ADMONITION = re.compile(r"^(\s*)(?:!!!|\?\?\?\+?)\s*([\w-]+)((?:\s+[\w-]+)*)(?:\s+\"(.*)\")?\s*$")
_TAB = re.compile(r"^(\s*)===!?\+?\s+\"(.*)\"\s*$")
_COLON_OPEN = re.compile(r"^(\s*)(:{3,})\s*([\w-]+)(?:\[(.*)\])?\s*(?:\{.*\})?\s*(.*?)\s*$")
_COLON_CLOSE = re.compile(r"^(\s*)(:{3,})\s*$")
#: mkdocstrings' `::: package.module.Object`: documentation generated from code at the
#: docs tool's build, which the tree does not hold; YAML options may follow, indented.
_AUTODOC = re.compile(r"^(\s*):::\s+([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)\s*$")
#: A Hugo shortcode whose arguments run over the lines below (`{{< img` then `src=...`).
_SHORTCODE_START = re.compile(r"^\s*\{\{[<%]\s*[\w./-]+(?:\s[^{}]*)?$")
#: A definition's first line (def_list: Python-Markdown, PHP Markdown Extra, Hugo):
#: `:   text`, its body indented 4 below it.
_DEFINITION = re.compile(r"^( {0,3}):[ \t]+(\S.*)$")
#: A GitHub-style alert's first line (`> [!NOTE]`: GitHub, VitePress; Hugo and Obsidian
#: also take a title after it, `> [!NOTE] Modules`). The title is taken greedily and
#: stripped after: a lazy one before trailing spaces is quadratic.
_ALERT = re.compile(
    r"^(\s*(?:>[ \t]?)+)\[!(note|tip|important|warning|caution)\][+-]?(?:[ \t]+(.*))?$", re.I
)
#: pymdownx.blocks (`/// tip | Title`, `//// tab | Python 3.10+`), closed by a line of as
#: many slashes; YAML options may follow the header, indented. The title is taken whole
#: and stripped in code: a lazy title before `\s*$` backtracked quadratically on a run of
#: spaces (a 100 KB header line: 45 s).
_BLOCK_OPEN = re.compile(r"^(\s*)(/{3,})\s*([\w-]+)\s*(?:\|(.*))?$")
_BLOCK_CLOSE = re.compile(r"^\s*(/{3,})\s*$")
#: Blocks that only wrap their content: no title of their own to show.
_WRAPPING_BLOCKS = frozenset({"html", "caption", "figure-caption", "define", "definition"})
#: Blocks whose title is all they show (a tab's label, a details' summary).
_TITLED_BLOCKS = frozenset({"tab", "details", "admonition"})
_MDX_CODE_BLOCK = "mdx-code-block"
#: A tag left open at the end of its line (`<a` then `  href={...}>` below): JSX.
_OPEN_TAG_START = re.compile(r"^\s*<[A-Za-z][\w.:-]*(?:\s[^<>]*)?$")  # linear: one way to match
#: An MDX ESM statement's first line (MDX: it runs to the next blank line): an import
#: (`import X from '...'`, `import {`, `import * as`, `import '...'`) or an export.
_MDX_ESM_START = re.compile(
    r"^(?:import\s+(?:\{|\*|['\"]|[\w$]+\s*(?:,.*)?\bfrom\s+['\"]|[\w$]+\s*,\s*\{)"
    r"|export\s+(?:const|default|function|let|var|class|async|\{))"
)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _degrade_containers(lines: Lines) -> Lines:
    """Admonitions and tabs (an indented body under a marker line) lose their marker
    for a bold title and their indentation; `:::` containers lose their marker lines.
    Fenced code is left as it is, but for the indentation its container gave it."""
    text = lines.text
    if not any(
        (
            "!!!" in t
            or "???" in t
            or "===" in t
            or ":::" in t
            or "///" in t
            or t.startswith(("import", "export"))
            or "{/*" in t
            or "mdx-code-block" in t
            or "{{" in t
            or "[!" in t
            or t[:4].lstrip().startswith(":")
        )
        for t in text
    ):
        return lines
    out = Lines([], [])
    fences = _Fences()
    # Indented bodies being dedented: (marker indentation, columns removed).
    bodies: list[tuple[int, int]] = []
    mdx_block: str | None = None  # the fence of an open ```mdx-code-block
    skipping: str | None = None  # "esm" or "comment" while dropping an MDX statement
    blocks: list[int] = []  # the slashes of each open pymdownx block
    options_under: int | None = None  # a block header's indentation, while its options run

    def closes_mdx_block(line: str) -> bool:
        fence = _FENCE_OPEN.match(line)
        return bool(
            mdx_block is not None
            and fence
            and fence.group(2)[0] == mdx_block[0]
            and len(fence.group(2)) >= len(mdx_block)
            and not fence.group(3).strip()
        )

    for line, origin in zip(text, lines.origin, strict=True):
        if skipping == "esm":
            if line.strip() and not closes_mdx_block(line):
                continue  # an MDX import/export runs to the next blank line
            skipping = None
        elif skipping == "comment":
            if "*/}" in line:
                skipping = None
            continue
        elif skipping == "shortcode":
            if not line.strip() or ">}}" in line or "%}}" in line:
                skipping = None  # ends at its `>}}` (or, never closed, at its paragraph)
            continue
        elif skipping == "tag":
            if not line.strip():  # a tag never closed: only its own paragraph is lost
                skipping = None
            elif line.rstrip().endswith(">"):
                skipping = None
                continue
            else:
                continue
        while bodies and line.strip() and _indent(line) <= bodies[-1][0]:
            bodies.pop()
            fences.open = None  # a fence cannot outlive the body that held it
        shifted = line
        for _, columns in reversed(bodies):
            shifted = shifted[min(columns, _indent(shifted)) :] if shifted.strip() else ""
        if fences.open is None:
            fence = _FENCE_OPEN.match(shifted)
            if mdx_block is None and fence and fence.group(3).strip() == _MDX_CODE_BLOCK:
                # Docusaurus renders an mdx-code-block's content as MDX, not as code:
                # its lines are the page's (imports dropped, components degraded).
                mdx_block = fence.group(2)
                continue
            if closes_mdx_block(shifted):
                mdx_block = None
                continue
        if fences.inside(shifted):
            out.add(shifted, origin)
            continue
        if options_under is not None:
            if shifted.strip() and _indent(shifted) > options_under:
                continue  # a block's YAML options: the docs tool's settings, not text
            options_under = None
        autodoc = _AUTODOC.match(shifted)
        if autodoc:  # the object's name is what the page says of it: kept, as code
            pad = autodoc.group(1)
            options_under = len(pad)
            if out.text and out.text[-1].strip():
                out.add("", origin)
            out.markers.add(len(out.text))
            out.add(f"{pad}`{autodoc.group(2)}`", origin)
            out.add("", origin)
            continue
        block = _BLOCK_OPEN.match(shifted)
        if block:
            blocks.append(len(block.group(2)))
            options_under = len(block.group(1))
            title = (block.group(4) or "").strip()
            _add_heading(out, block.group(1), _block_heading(block.group(3), title), origin)
            continue
        closed = _BLOCK_CLOSE.match(shifted)
        if closed and len(closed.group(1)) in blocks:
            del blocks[blocks.index(len(closed.group(1))) :]
            out.add("", origin)
            continue
        if shifted.lstrip().startswith("{/*") and "*/}" not in shifted:
            skipping = "comment"  # an MDX comment over several lines: dropped whole
            continue
        if "{{" in shifted and _SHORTCODE_START.match(shifted):
            skipping = "shortcode"  # a Hugo template call over several lines: dropped
            continue
        if _OPEN_TAG_START.match(shifted):
            skipping = "tag"  # a JSX tag whose attributes run over lines: dropped
            continue
        definition = _DEFINITION.match(shifted) if shifted[:4].lstrip()[:1] == ":" else None
        if definition:  # its text a paragraph, its body unindented (not code)
            out.add(definition.group(1) + definition.group(2), origin)
            bodies.append((_indent(line), 4))
            continue
        alert = _ALERT.match(shifted) if "[!" in shifted else None
        if alert:  # the quote's title, as GitHub shows it
            out.markers.add(len(out.text))
            kind, title = alert.group(2).capitalize(), (alert.group(3) or "").strip()
            heading = f"{kind}: {title}" if title else kind
            out.add(f"{alert.group(1)}**{_bold_safe(heading)}**", origin)
            continue
        admonition = _ADMONITION.match(shifted)
        tab = None if admonition else _TAB.match(shifted)
        if admonition or tab:
            match = admonition or tab
            assert match is not None
            pad = match.group(1)
            if admonition:
                kind = admonition.group(2).capitalize()
                title = admonition.group(4)
                heading = kind if not title else f"{kind}: {title}"
            else:
                heading = tab.group(2)  # type: ignore[union-attr]
            _add_heading(out, pad, heading.strip() and heading, origin)
            bodies.append((_indent(line), 4))
            continue
        if (
            not bodies
            and _MDX_ESM_START.match(shifted)
            and (not out.text or not out.text[-1].strip())
        ):
            # MDX's import/export: code for the docs tool, not text for readers. MDX
            # reads a statement, a block of its own, to the next blank line
            # (`export const X = () => (`); one right under `<script setup>` is Vue's.
            skipping = "esm"
            continue
        opened = _COLON_OPEN.match(shifted)
        if opened:
            pad, kind, bracket, rest = (
                opened.group(1),
                opened.group(3),
                opened.group(4),
                opened.group(5),
            )
            title = (bracket or rest or "").strip()
            if kind == "code-group":
                heading = ""
            elif kind == "details":
                heading = title or "Details"
            else:
                heading = f"{kind.capitalize()}: {title}" if title else kind.capitalize()
            _add_heading(out, pad, heading, origin)
            continue
        if _COLON_CLOSE.match(shifted):
            out.add("", origin)
            continue
        out.add(shifted, origin)
    return out


def _block_heading(kind: str, title: str | None) -> str:
    """What a pymdownx block shows above its content, as the bold line it becomes."""
    kind, title = kind.lower(), (title or "").strip()
    if kind in _WRAPPING_BLOCKS:
        return ""
    if kind in _TITLED_BLOCKS:
        return title or kind.capitalize()
    return f"{kind.capitalize()}: {title}" if title else kind.capitalize()


def _add_heading(out: Lines, pad: str, heading: str, origin: int) -> None:
    """A container's title as a bold paragraph of its own (none when empty)."""
    if out.text and out.text[-1].strip():
        out.add("", origin)
    if heading:
        out.markers.add(len(out.text))
        out.add(f"{pad}**{_bold_safe(heading)}**", origin)
        out.add("", origin)


def _bold_safe(text: str) -> str:
    return text.replace("*", "\\*").strip()


# --- sections ---------------------------------------------------------------------------

_ATTR_LIST = re.compile(r"\{\s*[#.:][^{}]*\}\s*")  # `## Title { #anchor }`, at the end


def _without_attr_list(text: str) -> str:
    """`text` without a trailing attribute list. Found from the last `{`, not by a regex
    searched from every position: `\\s*\\{...$` tried at each of a long run of spaces is
    quadratic (a crafted 40,000-space heading took 2.3 s)."""
    start = text.rfind("{")
    if start < 0 or not _ATTR_LIST.fullmatch(text, start):
        return text
    return text[:start].rstrip()


_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_JSX_COMMENT = re.compile(r"\{/\*.*?\*/\}")
_FRAGMENT = re.compile(r"</?>")  # JSX's fragment, `<>...</>`
_JSX_STRING = re.compile(r"\{\s*(['\"])([^'\"{}]*)\1\s*\}")
_DROPPED_ELEMENT = re.compile(r"<(script|style)\b[^>]*>.*?</\1\s*>", re.DOTALL | re.IGNORECASE)
# A tag, its attribute values quoted or not (`v-if="i < n"` holds a `<`); the
# alternatives exclude each other, so a tag that does not close fails in linear time.
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9:._-]*(?:\s(?:[^<>\"']|\"[^\"]*\"|'[^']*')*)?/?>")


def _tag_dropped(match: re.Match[str]) -> str:
    """A tag's replacement in prose: nothing, unless it opens a link's destination
    (`[l]( <my page.md>)`: CommonMark's form for one holding a space), kept as written."""
    text, at = match.string, match.start() - 1
    while at >= 0 and text[at] in " \t":  # linear: each run of blanks precedes one tag
        at -= 1
    return match.group(0) if text[at - 1 : at + 1] == "](" else ""


#: Vue's interpolation in an HTML block (VitePress): data the page does not hold.
_MUSTACHE = re.compile(r"\{\{.*?\}\}")
_WORD = re.compile(r"[^\W_]")  # a letter or digit
_CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)")
# The destination only when the link closes as CommonMark closes it (an optional title,
# then `)`): `[l](a a)` and `[i](<x>.png>)` are text, not links, and stay as written.
_INLINE_LINK = re.compile(
    r"(!?)\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*(<[^<>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"
    r"(?=\s*(?:\"[^\"]*\"|'[^']*'|\([^()]*\))?\s*\))"
)
#: The end of a link whose text began on an earlier line (`validation input](x.md)`):
#: no `[` before its `](` on this line.
_CONTINUED_LINK = re.compile(r"^[^\[\]]*\]\(\s*(<[^<>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)")
#: A link reference definition; `[^1]: text` is a footnote (GFM, Python-Markdown,
#: markdown-it-footnote), its text no destination.
_REFERENCE = re.compile(r"^(\s{0,3}\[(?!\^)[^\]]+\]:\s*)(<[^<>\n]*>|\S+)")
#: attr_list's attributes on a link or image (`[x](y){.internal-link target=_blank}`,
#: `![](z){: style="..."}`): the docs tool's HTML attributes, not words.
_LINK_ATTRS = re.compile(r"([)\]])\{:?[ \t]*(?:[.#][\w-]|[\w-]+=)[^{}\n]*\}")
#: attr_list's attributes ending a paragraph's line (`_Martin_ { .mdx-heart }`): only the
#: class and id forms, which prose does not write. Matched from the line's last `{`
#: (`_without_trailing_attrs`): searched from every position it is quadratic on spaces.
_TRAILING_ATTRS = re.compile(r"\{:?[ \t]*[.#][\w-][^{}\n]*\}[ \t]*")
#: attr_list's attributes alone on a line, for the block above (`{ .annotate }`,
#: `{#some-id}`): no words.
_BLOCK_ATTRS = re.compile(r"[ \t]*\{:?[ \t]*(?:[.#][\w-]|[\w-]+=)[^{}\n]*\}[ \t]*")
#: An icon of mkdocs-material's emoji extension (`:material-help:`,
#: `:fontawesome-brands-github:`): a picture, no words. An emoji (`:tada:`) stays.
_ICON = re.compile(r":(?:material|fontawesome|octicons|simple)-[a-z0-9-]+:[ \t]?")
#: Hugo's `ref`/`relref` shortcodes: the page a link leads to (`[x]({{< ref "y.md" >}})`).
_HUGO_REF = re.compile(r"\{\{[<%]\s*(?:rel)?ref\s+\"([^\"{}]*)\"\s*[%>]\}\}")
#: A Hugo shortcode (`{{< name args >}}`, `{{% name %}}`, `{{< /name >}}`): a template call
#: whose output the tree does not hold. `{{</* name */>}}`, written to show one, is text.
#: Each part has one way to match (no two runs of spaces side by side): linear time.
_SHORTCODE = re.compile(
    r"\{\{<\s*(?:/\s*)?[\w./-]+(?:\s[^{}<>]*)?>\}\}"
    r"|\{\{%\s*(?:/\s*)?[\w./-]+(?:\s[^{}%]*)?%\}\}"
)
_BRACED = re.compile(r"\{\{?([A-Za-z_][A-Za-z0-9_-]*)\}\}?")


def _sections(
    lines: Lines,
    tokens: list[Token],
    context: Context,
    problems: list[tuple[int, str]],
    references: dict[str, Any],
) -> Converted:
    count = len(lines.text)
    protected = [False] * count  # fenced or indented code: written as it is
    dropped = [False] * count
    degraded: dict[int, str] = {}  # an HTML block's first line -> its words
    boundaries: list[tuple[int, int, str]] = []  # (first line, line after, title)
    title: str | None = None
    description: str | None = None
    # A paragraph above the title's heading is a banner (logos, badges, "Documentation:
    # <url>"): the description only when no paragraph follows the title.
    before_title: str | None = None
    for index, token in enumerate(tokens):
        if token.map is None:
            continue
        start, end = token.map
        if token.type in ("fence", "code_block"):
            for line in range(start, min(end, count)):
                protected[line] = True
        elif token.type == "html_block":
            words = _html_words(token.content)
            for line in range(start, min(end, count)):
                dropped[line] = True
            if words:
                degraded[start] = " " * _indent(lines.text[start]) + words
        elif token.type == "heading_open" and token.level == 0 and token.tag in ("h1", "h2"):
            inline = tokens[index + 1]
            heading = _heading_text(inline, context, lines.origin[start], problems)
            if token.tag == "h1" and title is None and not boundaries:
                title = heading
                boundaries.append((start, end, ""))  # the title line: not a section
                before_title, description = description, None
                continue
            boundaries.append((start, end, heading))
        elif token.type == "inline":
            opening = tokens[index - 1] if index else None
            if (
                description is None
                and opening is not None
                and opening.type == "paragraph_open"
                and opening.level == 0
                and start not in lines.markers
            ):
                text = _plain(token, context, references)
                # A paragraph of template expressions alone (`{{ version }}.`) says nothing.
                description = text if _WORD.search(_MUSTACHE.sub("", text)) else None

    def body(start: int, stop: int) -> str:
        return _body(lines, start, stop, protected, dropped, degraded, context, problems)

    starts = [start for start, _, _ in boundaries] + [count]
    opening = [body(0, starts[0])]
    sections: list[tuple[str | None, str]] = []
    for position, (_, end, heading) in enumerate(boundaries):
        text = body(end, starts[position + 1])
        if heading == "" and position == 0 and title is not None:
            opening.append(text)  # between the title and the first section
        else:
            sections.append((heading or "Untitled section", text))
    first = "\n\n".join(part for part in opening if part.strip())
    if first:
        sections.insert(0, (None, first))
    return Converted(title, description or before_title, sections)


def _heading_text(
    inline: Token, context: Context, origin: int, problems: list[tuple[int, str]]
) -> str:
    # As any prose line: tags, links and tokens outside code spans only.
    text = _prose_line(_without_attr_list(inline.content), origin, context, problems)
    return " ".join(text.split())


_DESCRIPTION_SOURCE = 2_000


def _plain(inline: Token, context: Context, references: dict[str, Any]) -> str:
    """A paragraph's text without its Markdown: words of text and code spans (a link by
    reference, `[text][ref]`, is its text when the page defines `ref`)."""
    parts = []
    # The description is a few hundred characters: its paragraph's start is enough, and
    # markdown-it's inline rules are quadratic on some hostile paragraphs (`[a](` * n).
    head = _outside_code(inline.content[:_DESCRIPTION_SOURCE], _without_markup)
    env = {"references": references}
    children = parser().parseInline(head, env)[0].children if head else []
    for child in children or ():
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    text = " ".join("".join(parts).split())
    return _substitute_tokens(text, context.tokens)


def _without_markup(head: str) -> str:
    """attr_list's attributes, of a link or of the paragraph, Hugo's shortcodes and
    mkdocs-material's icons: no words."""
    if "{" in head:
        lines = head.split("\n")
        kept = (_without_trailing_attrs(s) for s in lines if not _BLOCK_ATTRS.fullmatch(s))
        head = _LINK_ATTRS.sub(r"\1", "\n".join(kept))
    return _ICON.sub("", _without_shortcodes(head) if "{{" in head else head)


def _outside_code(text: str, change: Callable[[str], str]) -> str:
    """`change` applied to `text` but its code spans, kept as written: each is held aside
    as a NUL-delimited placeholder (a page cannot hold NUL: forbidden_lines) while
    `change` runs. A body's prose lines and a description both: `:material-help:` in
    code is what the page shows."""
    if "`" not in text:
        return change(text)
    spans: list[str] = []

    def hold(match: re.Match[str]) -> str:
        spans.append(match.group(0))
        return f"\0{len(spans) - 1}\0"

    done = change(_CODE_SPAN.sub(hold, text))
    return _HELD.sub(lambda match: spans[int(match.group(1))], done)


#: A tab's opening tag (Docusaurus' `<TabItem value="npm" label="npm">`): its label is
#: what the reader sees above the tab's content, so it stays, bold.
_TAB_ITEM = re.compile(
    r"<TabItem\b(?=[^<>]*\b(?:label|value)=)"
    r"(?:(?=[^<>]*\blabel=(?:\"([^\"<>]*)\"|'([^'<>]*)'))|(?=[^<>]*\bvalue=(?:\"([^\"<>]*)\"|'([^'<>]*)')))"
    r"[^<>]*>"
)


def _tab_label(match: re.Match[str]) -> str:
    label = next((group for group in match.groups() if group), "")
    return f" **{_bold_safe(label)}** " if label.strip() else " "


def _html_words(html: str) -> str:
    html = _DROPPED_ELEMENT.sub(" ", _COMMENT.sub(" ", html))
    if "<TabItem" in html:
        html = _TAB_ITEM.sub(_tab_label, html)
    html = re.sub(r"<!--.*", " ", html, flags=re.DOTALL)  # a comment left open
    return " ".join(_MUSTACHE.sub(" ", _TAG.sub(" ", html)).split())


def _body(
    lines: Lines,
    start: int,
    stop: int,
    protected: list[bool],
    dropped: list[bool],
    degraded: dict[int, str],
    context: Context,
    problems: list[tuple[int, str]],
) -> str:
    out: list[str] = []

    def prose(line: str) -> None:
        # Blank lines collapsed where dropped blocks left runs of them (never in code).
        if not line.strip() and out and not out[-1].strip():
            return
        out.append(line)

    link_open = False  # a `[` of the paragraph not yet closed: a link's text wraps
    for index in range(start, stop):
        text = lines.text[index]
        if protected[index]:
            out.append(text)
        elif index in degraded:
            for line in ("", degraded[index], ""):
                prose(line)
        elif dropped[index]:
            continue
        else:
            prose(_prose_line(text, lines.origin[index], context, problems, link_open))
            link_open = _leaves_link_open(text, link_open)
            continue
        link_open = False
    return "\n".join(out).strip("\n")


_BRACKET = re.compile(r"\\.|[\[\]]")


def _leaves_link_open(line: str, open_before: bool) -> bool:
    """Whether a `[` is still open at the end of `line` (`open_before`: one was at its
    start); a blank line ends the paragraph, and any link text with it."""
    if not line.strip():
        return False
    if "[" not in line and "]" not in line:
        return open_before
    if "`" in line:  # a code span's brackets are literal (`a[i]`, "the `]` key")
        line = _CODE_SPAN.sub("", line)
    depth = int(open_before)
    for bracket in _BRACKET.findall(line):
        if bracket == "[":
            depth += 1
        elif bracket == "]":
            depth = max(depth - 1, 0)
    return depth > 0


_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}\s")


def _prose_line(
    line: str,
    origin: int,
    context: Context,
    problems: list[tuple[int, str]],
    link_open: bool = False,  # an earlier line of the paragraph left a `[` open
) -> str:
    if "{" in line and _HEADING_LINE.match(line):
        # A deeper heading's id (`### Title {#custom-id}`, Docusaurus and attr_list):
        # an anchor for the docs tool's HTML, not words of the title.
        line = _without_attr_list(line)
    if "{" in line and _BLOCK_ATTRS.fullmatch(line):
        return ""
    reference = _REFERENCE.match(line)
    if reference:
        dest = reference.group(2)
        new = _rewritten(dest, origin, context, problems, image=False)
        return line[: reference.start(2)] + new + line[reference.end(2) :]
    # Code spans are kept as written, everything around them is prose (`_outside_code`),
    # so a link whose text is code (`[`Client`](../api.md)`) is still one link.
    return _outside_code(line, lambda text: _prose(text, context, origin, problems, link_open))


_HELD = re.compile("\0(\\d+)\0")


def _prose(
    text: str,
    context: Context,
    origin: int,
    problems: list[tuple[int, str]],
    link_open: bool = False,
) -> str:
    if "{{" in text:
        text = _without_shortcodes(text)
    if "<" in text:
        if "<TabItem" in text:
            text = _TAB_ITEM.sub(_tab_label, text)
        text = _FRAGMENT.sub("", _TAG.sub(_tag_dropped, _COMMENT.sub("", text)))
    if ":" in text and "-" in text:
        text = _ICON.sub("", text)
    if "{/*" in text:  # an MDX comment
        text = _JSX_COMMENT.sub("", text)
    if "{'" in text or '{"' in text:  # MDX's string expression `{'text'}`: its text
        text = _JSX_STRING.sub(lambda match: match.group(2), text)
    if "](" in text:

        def link(match: re.Match[str]) -> str:
            dest = match.group(3)
            new = _rewritten(dest, origin, context, problems, image=bool(match.group(1)))
            return match.group(0)[: match.start(3) - match.start()] + new

        # The end of a link whose text began on an earlier line: only while a `[` is
        # open, or interval notation (`(0, 10](x)`) would be taken for one.
        continued = _CONTINUED_LINK.match(text) if link_open else None
        if continued:  # its destination is group 1, as an inline link's is group 3
            new = _rewritten(continued.group(1), origin, context, problems, image=False)
            text = text[: continued.start(1)] + new + text[continued.end(1) :]
        text = _INLINE_LINK.sub(link, text)
    if "{" in text:
        if "){" in text or "]{" in text:
            text = _LINK_ATTRS.sub(r"\1", text)
        text = _without_trailing_attrs(text)
        text = _tokens_in_prose(text, context.tokens, origin, problems)
    return text


def _without_trailing_attrs(text: str) -> str:
    """`text` without attr_list's class or id attributes at its end, after a space."""
    start = text.rfind("{")
    if start < 1 or text[start - 1] not in " \t" or not _TRAILING_ATTRS.fullmatch(text, start):
        return text
    return text[:start].rstrip(" \t")


def _without_shortcodes(text: str) -> str:
    """Hugo: a link's `ref` is its destination; any other shortcode is dropped."""
    return _SHORTCODE.sub("", _HUGO_REF.sub(lambda match: match.group(1), text))


def _rewritten(
    dest: str, origin: int, context: Context, problems: list[tuple[int, str]], image: bool
) -> str:
    bare = dest[1:-1] if dest.startswith("<") and dest.endswith(">") else dest
    if image:
        found = context.resolve_image(bare)
        return dest if found is None else found
    new, problem = context.resolve_link(bare, origin)
    if problem is not None:
        problems.append((origin, problem))
    return dest if new is None else new


def _tokens_in_prose(
    text: str, tokens: dict[str, str], origin: int, problems: list[tuple[int, str]]
) -> str:
    def replace(match: re.Match[str]) -> str:
        whole = match.group(0)
        name = "{" + match.group(1) + "}"
        if whole.startswith("{{"):  # `{{word}` (or `{{word}}`): the braces as written, once
            return name
        if whole.endswith("}}"):
            whole, tail = whole[:-1], "}"
        else:
            tail = ""
        if name in tokens:
            return tokens[name] + tail
        close = difflib.get_close_matches(name, tokens, n=1, cutoff=0.75)
        if close:
            problems.append(
                (origin, f"unknown token {name}: did you mean {close[0]}? (write {{{name} for the "
                 "text itself)")
            )  # fmt: skip
        return whole + tail

    return _BRACED.sub(replace, text)


def _substitute_tokens(text: str, tokens: dict[str, str]) -> str:
    for token, value in tokens.items():
        text = text.replace(token, value)
    return text
