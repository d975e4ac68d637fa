"""The two aggregates too large for one tool answer, cut into pieces an agent can read.

At 10,000 entries the content index is about 10 M characters and llms-full.txt 86 M: as
one tool answer either fills (or overflows) any context window. The live tools
`get_content_index` and `get_full_content` take a `page` / `part` argument instead, and
their descriptions say how large the whole is and how many pieces it has.

- Content index pages: the index's entries, in its order, grouped greedily so that each
  page's entries serialize to at most PAGE_CHARS characters (an entry larger than that
  alone gets a page of its own: entries are whole). Computed once, from the index the
  catalog parses anyway.
- llms-full.txt parts: part k covers the bytes from one cut to the next, where the cut
  before part k is the last entry heading (a line starting "## ") in the WINDOW bytes
  before (k - 1) * PART_BYTES, else the last line start there, else that offset itself
  (moved back to the start of a UTF-8 character). So a part is at most PART_BYTES +
  WINDOW bytes (and a UTF-8 text holds no more characters than bytes), the parts join
  back into the file exactly, and part k is computed from one ranged read of its own
  bytes and the window before them: an 86 MB file is never read whole for one part.
  Author text cannot start a line with "## " (content_builder/render/escape.py), so a
  heading cut falls between entries.

A site whose whole index or llms-full.txt fits in one piece gets the published file
verbatim, as before: paging changes nothing for a small site.

One entry's text (`fetch`) can be as large too: a docs page past the build's entry budget
is published whole (a 500,000-character changelog). `TextParts` cuts such a text, held
in memory already, into parts of at most a budget of characters each, greedily: each cut
is at the last "## " heading in the window before the budget, else the last blank line,
else the last line start, else after the last space, else at the budget; so a part is
whole sections where the page has them, and the parts join back into the text exactly.
A heading or a blank line inside a fenced code block is not a cut (a `## ` comment in a
shell example would split the block across parts): the fences are found by CommonMark's
rule for them, by hand, because the MCP function's layer carries only the SDK and
pydantic (Makefile `mcp-layer`), not markdown-it-py. A fence inside a list item or a
quote is indented, and so are the lines it holds, which a cut at a line's first column
never matches.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: The most characters of entries one content index page holds.
PAGE_CHARS = 25_000
#: The nominal size of an llms-full.txt part, and the window before each nominal cut in
#: which a heading or a line start is looked for: a part is at most their sum in bytes,
#: 39,000, so that a part and its note stay within catalog.FETCH_CHARS, under the 50,000
#: characters past which Claude Code keeps a tool result out of the conversation (they
#: were 60,000 and 15,000: parts of up to 75,000; docs/decisions.md, session 27). The
#: window stays 15,000, so a cut still falls at an entry's heading where entries are
#: shorter than that.
PART_BYTES = 24_000
WINDOW = 15_000
HEADING = b"\n## "

#: Reads bytes [start, end) of one file.
RangeReader = Callable[[int, int], bytes]


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class IndexPages:
    """The content index's entries in pages: `bounds[k]` is page k+1's [start, end)."""

    bounds: tuple[tuple[int, int], ...]
    total_chars: int

    @property
    def count(self) -> int:
        return len(self.bounds)

    @classmethod
    def of(cls, entries: list[dict[str, Any]], total_chars: int) -> IndexPages:
        # Each entry's size counts the comma between entries.
        return cls(group([len(compact(entry)) + 1 for entry in entries], PAGE_CHARS), total_chars)

    def page(self, index: dict[str, Any], number: int) -> dict[str, Any]:
        """Page `number` (1-based, checked by the caller): the index's own fields, its
        entries on this page, and where the page is."""
        start, end = self.bounds[number - 1]
        documents = index["documents"]
        answer = {key: value for key, value in index.items() if key != "documents"}
        answer.update(page=number, pages=self.count, first=start + 1, last=end)
        if number < self.count:
            answer["next_page"] = number + 1
        answer["documents"] = documents[start:end]
        return answer


def group(sizes: list[int], budget: int) -> tuple[tuple[int, int], ...]:
    """Items of these sizes, in order, grouped greedily into runs of at most `budget` in
    all: each run's [start, end). An item larger than the budget alone gets a run of its
    own (items are whole); no items is one empty run."""
    bounds: list[tuple[int, int]] = []
    start, used = 0, 0
    for index, size in enumerate(sizes):
        if index > start and used + size > budget:
            bounds.append((start, index))
            start, used = index, 0
        used += size
    bounds.append((start, len(sizes)))
    return tuple(bounds)


def part_count(size: int) -> int:
    # A file within one part's bound is one part, whole (as the published file).
    return 1 if size <= PART_BYTES + WINDOW else -(-size // PART_BYTES)


def _cut(window: bytes, offset: int) -> int:
    """Where to cut at nominal byte `offset`, given the WINDOW bytes before it (`window`
    ends at `offset`): after the last heading's newline, else after the last newline,
    else at the window's last character start."""
    base = offset - len(window)
    heading = window.rfind(HEADING)
    if heading >= 0:
        return base + heading + 1
    newline = window.rfind(b"\n")
    if newline >= 0:
        return base + newline + 1
    # No line in the window (15,000 bytes of one line): cut where a character starts.
    cut = len(window) - 1
    while cut > 0 and (window[cut] & 0xC0) == 0x80:
        cut -= 1
    return base + cut


def part_bounds(number: int, size: int, read: RangeReader) -> tuple[int, int, bytes]:
    """Part `number` (1-based) of a file of `size` bytes: its [start, end) and its bytes,
    from one ranged read of the window before it and the part itself."""
    count = part_count(size)
    nominal_start = (number - 1) * PART_BYTES
    nominal_end = min(number * PART_BYTES, size)
    read_from = max(0, nominal_start - WINDOW)
    raw = read(read_from, nominal_end)
    start = 0 if number == 1 else _cut(raw[: nominal_start - read_from], nominal_start)
    if number == count:
        end = size
    else:
        window_start = max(nominal_end - WINDOW, read_from)
        end = _cut(raw[window_start - read_from : nominal_end - read_from], nominal_end)
        end = max(end, start)
    return start, end, raw[start - read_from : end - read_from]


#: Where a text's cut is looked for, best first: a "## " heading's line, a block after a
#: blank line (both outside fenced code), any line, a word. Each is (separator, where the
#: cut falls after its start, whether a cut inside a fence is refused).
TEXT_CUTS = (("\n## ", 1, True), ("\n\n", 2, True), ("\n", 1, False), (" ", 1, False))
#: A fence's line (CommonMark 0.31, 4.5): up to three spaces, then three or more
#: backticks or tildes; a backtick fence's info string holds no backtick.
_FENCE = re.compile(r"^ {0,3}(?:(`{3,})[^`\n]*|(~{3,})[^\n]*)$", re.MULTILINE)


def fenced_spans(text: str) -> tuple[int, ...]:
    """Where fenced code blocks start and end, flat: (start, end, start, end, ...), each
    start a fence line's first character, each end just past its closing fence's line (or
    the text's end: an unclosed fence runs to the end). A closing fence is the opening's
    character, at least as many, and nothing after it but spaces."""
    spans: list[int] = []
    opening: str | None = None
    for line in _FENCE.finditer(text):
        marker = line[1] or line[2]
        if opening is None:
            opening = marker
            spans.append(line.start())
        elif (
            marker[0] == opening[0]
            and len(marker) >= len(opening)
            and not line[0].strip(" ").strip(marker[0])
        ):
            opening = None
            spans.append(line.end())
    if opening is not None:
        spans.append(len(text))
    return tuple(spans)


def _in_fence(spans: tuple[int, ...], position: int) -> bool:
    """Whether a cut at `position` falls inside a fenced block: after its opening line's
    start, before its closing line's end."""
    after = bisect.bisect_right(spans, position)
    # An odd count of bounds at or before it: inside, unless it is the fence line's start.
    return after % 2 == 1 and spans[after - 1] != position


@dataclass(frozen=True)
class TextParts:
    """A text cut into parts of at most `budget` characters: `starts[k]` is where part
    k+1 starts (part k+1 ends where part k+2 starts, the last at the text's end)."""

    starts: tuple[int, ...]
    size: int

    @property
    def count(self) -> int:
        return len(self.starts)

    @classmethod
    def of(cls, text: str, budget: int, window: int) -> TextParts:
        """Cut greedily: each part is as long as the budget allows, ending at the best
        cut in the `window` characters before the budget (TEXT_CUTS), so a part is never
        shorter than budget - window characters unless it is the last."""
        spans = fenced_spans(text) if len(text) > budget else ()
        starts = [0]
        start = 0
        while len(text) - start > budget:
            limit = start + budget
            low = max(start + 1, limit - window)
            start = next(
                (
                    cut
                    for separator, after, outside in TEXT_CUTS
                    if (cut := _last_cut(text, separator, after, low, limit, spans, outside))
                ),
                limit,  # one word across the whole window: cut at the budget
            )
            starts.append(start)
        return cls(tuple(starts), len(text))

    def bounds(self, number: int) -> tuple[int, int]:
        """Part `number`'s [start, end) (1-based, checked by the caller)."""
        end = self.starts[number] if number < self.count else self.size
        return self.starts[number - 1], end


def _last_cut(
    text: str,
    separator: str,
    after: int,
    low: int,
    limit: int,
    spans: tuple[int, ...],
    outside: bool,
) -> int | None:
    """The last cut (an occurrence of `separator`, plus `after`) in [low, limit], and if
    `outside`, not inside a fenced block; None if there is none."""
    # The separator's start in [low - after, limit - after], all of it before `end`.
    end = limit - after + len(separator)
    while (found := text.rfind(separator, low - after, end)) >= 0:
        cut = found + after
        if not (outside and _in_fence(spans, cut)):
            return cut
        end = found + len(separator) - 1
    return None
