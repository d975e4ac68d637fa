"""Author text written into Markdown and plain text, unable to forge their structure.

llms.txt, llms-full.txt and the Markdown twins are read by agents that split them on
their headings (`## Documents`, `## {title}`) and follow their links. Author text is
written into them as it is, except where it would be read as structure rather than
text; there it is escaped the Markdown way (a backslash before the character that
would start the structure), which renders as the same text (issue 24, docs/security.md):

- a one-line field written as a paragraph (a description, a headline) that starts like
  a block: a heading `#`, a setext underline or thematic break, a fence, a quote `>`, a
  list item, an HTML block `<`;
- a line of a multi-line field (a body, an answer) outside a code fence that starts a
  heading (`#`, or a `===`/`---` underline) or an HTML block that a blank line does not
  end (`<!--`, `<script`, ...), at any depth of quotes and list items (`- # x` is a
  heading too; an indented code line starting with `#` is escaped as well, which shows
  its backslash: the price of not parsing Markdown here); a fence the field opens and
  does not close is closed after it, so it cannot swallow the headings that follow.
  Lists, quotes, emphasis, links and closed fences are the author's Markdown, kept;
- a link's text ends with no backslash that would escape its `]`, and a link's URL has
  no character that ends it (`(`, `)`, `<`, `>`, a space), percent-encoded if present.

Line breaks cannot reach a one-line field (text_rules.require_one_line refuses them when
the file is read), and every URL is an RFC 3986 URL (agent_contract/uri.py).
"""

from __future__ import annotations

import re

#: What makes a line (after up to three spaces) start a block: group 1 is the character
#: to escape. An ordered list item's `.` or `)` is escaped rather than its digits.
_BLOCK_START = re.compile(
    r" {0,3}(?:"
    r"(#)(?:#{0,5})(?=[ \t]|$)"  # ATX heading
    r"|([=\-*_])[=\-*_ \t]*$"  # setext underline, thematic break
    r"|(`)``+|(~)~~+"  # fence
    r"|(>)|(<)"  # block quote, HTML block
    r"|([-+*])(?=[ \t]|$)"  # bullet list item
    r"|\d{1,9}([.)])(?=[ \t]|$)"  # ordered list item
    r")"
)
#: In a multi-line field, only what forges a heading or hides what follows, wherever
#: the line's containers (quotes `>`, list items, their indentation) put it: `- # x` and
#: `> # x` are headings too, and so is `    # x` under a list item.
_UNDERLINE = re.compile(r" {0,3}([=-])[=-]*[ \t]*$")
_CONTAINERS = re.compile(r"(?:[ \t]*(?:>|(?:[-+*]|\d{1,9}[.)])(?=[ \t]|$)))*[ \t]*")
_HEADING_START = re.compile(
    r"(#)(?:#{0,5})(?=[ \t]|$)"  # ATX heading
    r"|([=-])(?:[=-]*)[ \t]*$"  # setext underline (a paragraph's last line becomes a heading)
    r"|(<)(?:!|\?|(?:script|pre|style|textarea)(?=[\s>]|$))",  # HTML blocks past blank lines
    re.IGNORECASE,
)
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)$")
_URL_ENDS = re.compile(r"[()<> ]")
_BACKTICKS = re.compile(r"`+")


def _escaped(line: str, match: re.Match[str] | None) -> str:
    if match is None:
        return line
    at = next(match.start(group) for group in range(1, match.re.groups + 1) if match.group(group))
    return line[:at] + "\\" + line[at:]


def one_line(text: str) -> str:
    """Whitespace runs, newlines among them, as one space: a title or a link's text
    stays on its line (a newline there would start a new block)."""
    return " ".join(text.split())


def paragraph(text: str) -> str:
    """A one-line field written where a line starts: text, never a block's start."""
    return _escaped(text, _BLOCK_START.match(text))


#: A heading a Markdown page's section holds below its own (markdown_page.py): `###`
#: and deeper, not indented past three spaces, so at the top level of the section.
_DEEPER_HEADING = re.compile(r" {0,3}(#{3,6})(?=[ \t]|$)")


#: What a line's containers and indentation are made of, and what must come first after
#: them for the line to matter to `block` (a fence, a heading, an underline, an HTML
#: block): every other line is kept as it is without the four matches below, which are
#: most of the cost of a build's bodies (most lines are prose). A line of these
#: characters alone ("---", "1.") may be an underline: it is looked at.
_INERT = " \t>+*-0123456789.)"
_MAY_START = frozenset("#=<`~")


def block(text: str, deeper: int | None = None) -> str:
    """A multi-line field written as a block of lines: the author's Markdown, less
    headings (and HTML blocks) it would forge outside its own code fences; a fence
    left open is closed after it.

    `deeper` (a Markdown page's section body): its `###`-and-deeper headings are kept,
    each moved down `deeper` levels (at most to `######`), so that they stay below the
    heading the section is written under; `#` and `##` are escaped as in any body, and
    a `---` after a blank line, a thematic break that cannot underline, is kept."""
    if not text:
        return text
    lines = text.split("\n")
    fence: str | None = None  # the open fence's characters, while inside one
    # A Markdown page's code that the line scan cannot see (a fence inside a list item
    # or a quote): the lines CommonMark reads as code, found only when a line would
    # change, so most bodies are never parsed twice.
    code: frozenset[int] | None = None
    for index, line in enumerate(lines):
        first = line.lstrip(_INERT)[:1]
        if first not in _MAY_START and (first or not line.strip(" \t")):
            continue  # no fence, heading, underline or HTML block can start it
        opened = _FENCE.match(line)
        if fence is not None:
            if _closes(opened, fence):
                fence = None
            continue
        if opened and not (opened.group(1)[0] == "`" and "`" in opened.group(2)):
            fence = opened.group(1)
            continue
        if deeper is not None:
            if code is None:
                code = _code_lines(text) if _NESTED_FENCE.search(text) else frozenset()
            if index in code:
                continue
            kept = _DEEPER_HEADING.match(line)
            if kept is not None:
                level = min(6, len(kept.group(1)) + deeper)
                lines[index] = "#" * level + line[kept.end() :]
                continue
        underline = _UNDERLINE.match(line)  # before containers: `-` alone is one too
        if (
            underline is not None
            and deeper is not None
            and (index == 0 or not lines[index - 1].strip())
        ):
            # After a blank line `---` is a thematic break, `===` text: neither can
            # underline a heading (a Markdown page's rules between its paragraphs).
            continue
        if underline is None:
            start = _CONTAINERS.match(line).end()  # type: ignore[union-attr]  # always matches
            underline = _HEADING_START.match(line, start)
        lines[index] = _escaped(line, underline)
    if fence is not None:
        lines.append(fence)  # what follows the field is not code
    return "\n".join(lines)


#: A fence the line scan does not follow: behind a list item's or a quote's marker, or
#: indented past three spaces (inside a list item).
_NESTED_FENCE = re.compile(r"^(?=[ \t>*+\-\d.)]*(?:```|~~~))(?! {0,3}(?:```|~~~))", re.MULTILINE)


def _code_lines(text: str) -> frozenset[int]:
    """The lines of `text` inside a fence or indented code, as CommonMark reads it (the
    twin's readers do): 0-based."""
    from content_builder.markdown_page import parser  # only Markdown pages need it

    return frozenset(
        line
        for token in parser(blocks_only=True).parse(text)
        if token.type in ("fence", "code_block") and token.map
        for line in range(*token.map)
    )


def code_fence(code: str) -> str:
    """A fence longer than any run of backticks in `code`: nothing in it closes it."""
    longest = max((len(run) for run in _BACKTICKS.findall(code)), default=0)
    return "`" * max(3, longest + 1)


def _closes(line: re.Match[str] | None, fence: str) -> bool:
    """Whether a fence line closes `fence`: the same character, at least as many, and
    no info string."""
    return (
        line is not None
        and line.group(1)[0] == fence[0]
        and len(line.group(1)) >= len(fence)
        and not line.group(2).strip()
    )


def link_text(text: str) -> str:
    """A link's text (brackets already replaced): no trailing backslash escaping its `]`."""
    trailing = len(text) - len(text.rstrip("\\"))
    return text + "\\" if trailing % 2 else text


def link_url(url: str) -> str:
    """A link's URL: nothing in it ends the link. RFC 3986 URLs hold no `<`, `>` or space
    (agent_contract/uri.py) and the API's own have no parentheses either, so this
    changes nothing a build publishes today; it keeps it that way."""
    return _URL_ENDS.sub(lambda match: f"%{ord(match.group()):02X}", url)
