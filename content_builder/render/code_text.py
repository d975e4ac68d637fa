"""A body's prose, its headings and its code, apart: the search index weighs them apart.

A section's `body` is CommonMark (the contract with the Markdown loader: fenced code
blocks and inline code spans stay as written). Words inside code (fences, code spans,
raw HTML) are identifiers, flags, paths and hashes far more often than the words people
search with: the index takes them last (render/indexes.py). An indented block is read
as Markdown again (see `split`).
Headings inside a body (a page's `###` under its `##`) say what the section is about:
the index takes them with the salient words.

A body with neither a backtick, a `~~~` fence, a `#` heading nor an indented line can
hold no code and no heading: it is prose as it is, without a parse (most bodies of a
YAML site, and all of the sample's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

# What may start code or a heading in CommonMark: a backtick (fence or span), a tilde
# fence, raw HTML, an ATX heading, a line indented by four spaces or a tab (an indented
# code block). Anything else is prose for certain.
_AT_LINE_START = re.compile(r"^(?: {0,3}#| {4}|\t)", re.MULTILINE)


def _may_hold_code(body: str) -> bool:
    # Substring tests first (C speed, every body of every build); the line-start
    # pattern only for a body with a `#`, a tab or four spaces somewhere.
    if "`" in body or "~~~" in body or "<" in body:
        return True
    if "#" in body or "\t" in body or "    " in body:
        return _AT_LINE_START.search(body) is not None
    return False


@dataclass
class Parts:
    """A body's text by what it is: prose, headings inside it, code."""

    prose: list[str] = field(default_factory=list)
    headings: list[str] = field(default_factory=list)
    code: list[str] = field(default_factory=list)


#: How deep indented blocks are read as Markdown (`split`); deeper, they are code.
_NESTED = 8


def split(body: str, depth: int = 0) -> Parts:
    """The body's prose, headings and code (see the module's docstring)."""
    if not _may_hold_code(body):
        return Parts(prose=[body])
    parts = Parts()
    heading = False
    for token in _parser().parse(body):
        kind = token.type
        if kind == "code_block" and depth < _NESTED:
            # An indented block is, in a docs tree, far more often the body of an
            # admonition or a content tab (`!!! note`, `=== "Windows"`: mkdocs indents
            # them by four spaces) than code: read as Markdown again, dedented (its
            # fences stay code). The loader degrades those to text; this holds if it
            # leaves one indented.
            inner = split(token.content, depth + 1)
            parts.prose += inner.prose
            parts.headings += inner.headings
            parts.code += inner.code
        elif kind in ("fence", "code_block", "html_block"):
            parts.code.append(token.content)
        elif kind == "heading_open":
            heading = True
        elif kind == "heading_close":
            heading = False
        elif kind == "inline":
            label = None if heading else _label(token)
            if label is not None:
                if label:
                    parts.headings.append(label)
            else:
                _inline(token, parts.headings if heading else parts.prose, parts.code)
    return parts


# A content tab's or an admonition's first line, as mkdocs-material writes it:
# `=== "Windows"`, `??? note "Title"`, `!!!+ tip`. Its title names what follows.
_TAB_OR_ADMONITION = re.compile(r'(?:===|\?\?\?\+?|!!!\+?)(?:[ \t]+[\w-]+)*(?:[ \t]+"(.*)")?[ \t]*')


def _label(token: Token) -> str | None:
    """What a paragraph that only labels what follows says, as a heading ("" for a bare
    `!!! tip`, which says nothing), or None for prose: a tab's or an admonition's first
    line, or a paragraph that is all bold (`**Windows**`, the usual pseudo-heading)."""
    found = _TAB_OR_ADMONITION.fullmatch(token.content)
    if found:
        return found.group(1) or ""
    children = [c for c in token.children or () if c.type != "text" or c.content]
    if [c.type for c in children] == ["strong_open", "text", "strong_close"]:
        return children[1].content
    return None


def _inline(token: Token, prose: list[str], code: list[str]) -> None:
    words: list[str] = []
    for child in token.children or ():
        kind = child.type
        if kind == "text":
            words.append(child.content)
        elif kind == "image":
            words.append(child.content)  # the alt text
        elif kind in ("code_inline", "html_inline"):
            code.append(child.content)
            words.append(" ")  # the span separates the words around it
        elif kind in ("softbreak", "hardbreak"):
            words.append("\n")
    if words:
        prose.append("".join(words))


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    # Imported on first use: a body that may hold code is the only reader, and a build
    # of a YAML site with none never pays for the import.
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark")
