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
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: The most characters of entries one content index page holds.
PAGE_CHARS = 25_000
#: The nominal size of an llms-full.txt part, and the window before each nominal cut in
#: which a heading or a line start is looked for: a part is at most their sum in bytes.
PART_BYTES = 60_000
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
        bounds: list[tuple[int, int]] = []
        start, used = 0, 0
        for index, entry in enumerate(entries):
            size = len(compact(entry)) + 1  # the comma between entries
            if index > start and used + size > PAGE_CHARS:
                bounds.append((start, index))
                start, used = index, 0
            used += size
        bounds.append((start, len(entries)))
        return cls(tuple(bounds), total_chars)

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


def part_count(size: int) -> int:
    return max(1, -(-size // PART_BYTES))


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
