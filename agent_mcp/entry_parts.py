"""A long entry's JSON cut into parts, each the same model (issue 25; session 26).

`get_content_document` and `get_faq` answer an entry's published JSON, which the server
sends twice (a text block and structuredContent): a docs page of 30-100 KB (the build
publishes one past its entry budget whole) made an answer of 60,000-200,000+ characters.
Cut here into parts whose JSON is at most a budget of characters each, every part a valid
object of the published model (agent_contract.models ContentDocument / FAQEntry), with
only the long text cut, so an agent or a client validating against the model reads a
part as it reads the whole:

- a page document (content.sections): its sections, grouped greedily into parts
  (paging.group); a section too long for a part alone is cut into pieces of its body
  (paging.TextParts: at a blank line, else a line, else a word, else a character; never
  inside a fenced block where it can help), each piece keeping the section's title, the
  code_example (if any) on the last piece, after the body as the Markdown twin shows it;
- an FAQ entry: its answer, cut the same way.

Every other field is in every part, as published. The pieces join back into each body
(and the answer) exactly. A document without sections (a feature's capabilities) is not
cut: it is small by nature and has no long text to cut at.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent_mcp import paging
from agent_mcp.paging import compact

#: The least room a piece of text gets, whatever the entry's other fields take: an entry
#: whose other fields alone exceed the budget still cuts (its parts are then larger than
#: the budget, the best there is) and the cutting ends.
MIN_ROOM = 1_000
#: The most characters of a section's title a note quotes.
TITLE_CHARS = 80


@dataclass(frozen=True)
class Piece:
    """Characters [start, end) of one long text: section `section`'s body (0-based), or
    the FAQ answer's (section -1); `length` is the whole text's."""

    section: int
    start: int
    end: int
    length: int

    @property
    def whole(self) -> bool:
        return self.start == 0 and self.end == self.length


@dataclass(frozen=True)
class EntryParts:
    """An entry (parsed JSON) and its parts: part k+1 holds pieces[bounds[k][0]:bounds[k][1]]."""

    entry: dict[str, Any]
    pieces: tuple[Piece, ...]
    bounds: tuple[tuple[int, int], ...]

    @property
    def count(self) -> int:
        return len(self.bounds)

    @property
    def sections(self) -> list[dict[str, Any]] | None:
        """The document's sections, or None for an FAQ entry."""
        return _sections(self.entry)

    def part(self, number: int) -> dict[str, Any]:
        """Part `number` (1-based, checked by the caller): the entry with its pieces."""
        start, end = self.bounds[number - 1]
        pieces = self.pieces[start:end]
        sections = self.sections
        if sections is None:
            (piece,) = pieces
            return {**self.entry, "answer": self.entry["answer"][piece.start : piece.end]}
        cut = [_section_piece(sections[piece.section], piece) for piece in pieces]
        return {**self.entry, "content": {**self.entry["content"], "sections": cut}}

    def holds(self, number: int) -> str:
        """What part `number` holds, in words: which sections (and which characters of a
        cut one's body), or which characters of the answer."""
        start, end = self.bounds[number - 1]
        if start == end:
            return "no sections"
        first, last = self.pieces[start], self.pieces[end - 1]
        sections = self.sections
        if sections is None:
            return (
                f"characters {first.start + 1:,} to {first.end:,} of its answer's {first.length:,}"
            )
        total = len(sections)
        span = (
            f"section {first.section + 1} of {total}"
            if first.section == last.section
            else f"sections {first.section + 1} to {last.section + 1} of {total}"
        )
        notes = [
            f"section {piece.section + 1} ({_title(sections[piece.section])}) is cut: "
            f"characters {piece.start + 1:,} to {piece.end:,} of its body's {piece.length:,}"
            for piece in dict.fromkeys((first, last))
            if not piece.whole
        ]
        return span + (f"; {'; '.join(notes)}" if notes else "")


def cut(entry: dict[str, Any], budget: int) -> EntryParts | None:
    """`entry` in parts whose compact JSON is at most `budget` characters each (unless
    its fields other than the long text alone are larger), or None if it has no long text
    to cut (neither an FAQ answer nor a document's sections)."""
    sections = _sections(entry)
    if sections is None:
        answer = entry.get("answer")
        if not isinstance(answer, str):
            return None
        room = budget - len(compact({**entry, "answer": ""}))
        pieces = tuple(Piece(-1, a, b, len(answer)) for a, b in _cut_text(answer, room))
        return EntryParts(entry, pieces, tuple((n, n + 1) for n in range(len(pieces))))
    skeleton = {**entry, "content": {**entry["content"], "sections": []}}
    room = budget - len(compact(skeleton))
    pieces: list[Piece] = []
    sizes: list[int] = []
    for index, section in enumerate(sections):
        body = section.get("body")
        # Each section in the list costs its JSON and a comma.
        if len(compact(section)) + 1 <= room or not isinstance(body, str):
            length = len(body) if isinstance(body, str) else 0
            pieces.append(Piece(index, 0, length, length))
            sizes.append(len(compact(section)) + 1)
            continue
        # The section less its body (title, code_example) is in every piece's size, so
        # any piece fits a part alone; the code_example goes with the last piece only.
        around = len(compact({**section, "body": ""})) + 1
        for start, end in _cut_text(body, room - around):
            pieces.append(Piece(index, start, end, len(body)))
            sizes.append(around + len(compact(body[start:end])) - 2)
    return EntryParts(entry, tuple(pieces), paging.group(sizes, room))


def _sections(entry: dict[str, Any]) -> list[dict[str, Any]] | None:
    content = entry.get("content")
    if not isinstance(content, dict):
        return None
    sections = content.get("sections")
    if not isinstance(sections, list) or not all(isinstance(s, dict) for s in sections):
        return None
    return sections


def _title(section: dict[str, Any]) -> str:
    # Cut short: the note stays small whatever an author titled a section.
    title = str(section.get("title", ""))
    return compact(title if len(title) <= TITLE_CHARS else title[: TITLE_CHARS - 1] + "…")


def _section_piece(section: dict[str, Any], piece: Piece) -> dict[str, Any]:
    if piece.whole:
        return section
    cut = {**section, "body": section["body"][piece.start : piece.end]}
    if piece.end < piece.length:
        # The code example follows the body (the Markdown twin shows it so): on the last
        # piece only. Absent, as the build publishes a section without one.
        cut.pop("code_example", None)
    return cut


def _cut_text(text: str, room: int) -> list[tuple[int, int]]:
    """`text` cut by paging.TextParts into pieces whose JSON string (escaped, quotes
    excluded) is at most `room` characters: TextParts counts characters, and escaping
    makes a piece longer (a newline is two), so the budget shrinks until every piece
    fits."""
    room = max(room, MIN_ROOM)
    budget = room
    while True:
        parts = paging.TextParts.of(text, budget, budget // 2)
        bounds = [parts.bounds(number) for number in range(1, parts.count + 1)]
        longest = max(len(compact(text[start:end])) - 2 for start, end in bounds)
        if longest <= room:
            return bounds
        # Escaping at most multiplies a character by six (\\u001f): this ends.
        budget = max(1, budget * room // longest)
