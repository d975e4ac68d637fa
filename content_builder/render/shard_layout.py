"""The sharded index's shards laid out from its terms' postings, and laid out again after
an edit with only the shards whose terms changed made anew (render/shards.py decides
which terms changed; agent_contract/search_shards.py is the format).

Two sequences of items are cut into files by one content-defined rule (FastCDC's idea,
Xia et al., USENIX ATC 2016: a minimum size, then a cut where an item's hash says so, a
maximum size), so that an edit moves no boundary but near the items it changed:

- *heads*: every term, in order, with its `df`, its first HEAD_POSTINGS postings and its
  `more`; the term map lists these shards;
- *tails*: the rest of each term's postings, one item per weight, in order of (term,
  highest weight first); a term's `more` names the tail shards holding its items, with the
  highest weight and the number of keys of each. A large item is a shard of its own (as
  every item was before), small ones share one: at 100 entries most were under 200 bytes.

A layout is laid out again from the previous one and the terms whose postings changed:
the items of unchanged terms keep their sizes and hashes, so the cut is redone over the
sizes alone, and a shard whose items are those of an old shard, none changed, is that
shard (its name and bytes). The full build is the same function from an empty layout,
so both ways give the same bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pydantic_core

from agent_contract import search_shards

#: A group of postings: [weight, key, key, ...], keys sorted.
Group = list[Any]
#: A tail item: (term, -weight), so that tuple order is the items' order.
TailItem = tuple[str, int]

#: Heads: a shard is cut before a term whose hash is 0 modulo the spread (TERMS_PER_SHARD,
#: doubled while the term map would list more than MAX_SHARDS shards) once it holds
#: HEAD_MIN_BYTES, and always before it would pass HEAD_MAX_BYTES.
TERMS_PER_SHARD = 8
MAX_SHARDS = 2048
HEAD_MIN_BYTES = 1_000
HEAD_MAX_BYTES = 16_000
#: Tails: the same rule over (term, weight) items. An item of TAIL_MAX_BYTES or more is a
#: shard of its own (the postings of one weight are never split).
TAIL_SPREAD = 4
TAIL_MIN_BYTES = 3_000
TAIL_MAX_BYTES = 16_000


def spread_for(terms: int) -> int:
    spread = TERMS_PER_SHARD
    while terms > MAX_SHARDS * spread:
        spread *= 2
    return spread


@dataclass(frozen=True)
class Chunk:
    """One shard file: the items it holds, in order, and its bytes' sha256."""

    items: tuple[Any, ...]
    sha256: str

    @property
    def name(self) -> str:
        return self.sha256[:16]


@dataclass(frozen=True)
class Layout:
    """The shards of a sharded index, with what laying them out again needs: per term
    (df, head entry size, hash), per tail item (size, keys, hash). No bodies: those are
    the files' (render/shards.py keeps them in the build cache)."""

    spread: int
    terms: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    tails: dict[TailItem, tuple[int, int, int]] = field(default_factory=dict)
    heads: tuple[Chunk, ...] = ()
    tail_chunks: tuple[Chunk, ...] = ()

    @property
    def chunks(self) -> tuple[Chunk, ...]:
        return self.tail_chunks + self.heads


@dataclass(frozen=True)
class Change:
    """A term's postings before and after (empty: it had none, or has none now)."""

    old: Sequence[Group]
    new: list[Group]


#: The parsed body of an old shard, by name (raises LookupError when it is not kept).
OldShard = Callable[[str], dict[str, Any]]


@dataclass
class Laid:
    layout: Layout
    bodies: dict[str, bytes]  # sha256 -> body of each shard made anew (the rest: the old)


def lay_out(old: Layout, changes: dict[str, Change], old_shard: OldShard) -> Laid:
    """The layout after `changes`, from `old` (every change, from an empty layout: the
    full build). `old_shard` reads a shard of `old` for the unchanged items a new shard
    holds."""
    terms = dict(old.terms)
    tails = dict(old.tails)
    made: dict[str, bytes] = {}
    changed_items: dict[TailItem, bytes] = {}  # a changed tail item's group, as JSON
    heads: dict[str, dict[str, Any]] = {}  # a changed term's head entry (`more` later)
    for term, change in changes.items():
        old_df = _df(change.old)
        old_tail = _tail(change.old, old_df)
        for group in old_tail:
            del tails[(term, -group[0])]
        if not change.new:
            terms.pop(term, None)
            continue
        df = _df(change.new)
        before = {group[0]: group for group in old_tail}
        for group in _tail(change.new, df):
            item = (term, -group[0])
            body = compact_json(group)
            tails[item] = (_tail_cost(term, body), len(group) - 1, _hash(f"{term}\0{group[0]}"))
            if df != old_df or before.get(group[0]) != group:
                changed_items[item] = body
        heads[term] = {"df": df, "postings": _head(change.new, df)}
        terms[term] = (df, 0, _hash(term))  # its size once its `more` is known
    # Tails first: a term's head names its tail shards.
    old_tail_home: dict[TailItem, str] | None = None
    tail_chunks = []
    old_tails = {chunk.items: chunk for chunk in old.tail_chunks}
    for items in _cut(sorted(tails), tails, TAIL_MIN_BYTES, TAIL_MAX_BYTES, TAIL_SPREAD):
        kept = old_tails.get(items)
        if kept is not None and not any(item in changed_items for item in items):
            tail_chunks.append(kept)
            continue
        if old_tail_home is None:
            old_tail_home = {item: c.name for c in old.tail_chunks for item in c.items}
        body = _tail_body(items, terms, changed_items, old_tail_home, old_shard)
        chunk = Chunk(items, _sha256(body))
        made[chunk.sha256] = body
        tail_chunks.append(chunk)
    more = _more(tail_chunks, tails)
    old_more = _more(old.tail_chunks, old.tails)
    entries: dict[str, bytes] = {}  # a head entry made anew: `"term":{...}`
    old_heads = {chunk.items: chunk for chunk in old.heads}
    old_head_home = {term: chunk.name for chunk in old.heads for term in chunk.items}
    for term in set(heads) | {t for t in more.keys() | old_more.keys() if t in terms}:
        if term not in heads and more.get(term) == old_more.get(term):
            continue
        entry = heads.get(term)
        if entry is None:  # unchanged postings, its `more` renamed
            entry = dict(old_shard(old_head_home[term])["terms"][term])
            entry.pop("more", None)
        if term in more:
            entry["more"] = more[term]
        entries[term] = fragment = _dumps_term(term, entry)
        df, _, hashed = terms[term]
        terms[term] = (df, len(fragment) + 1, hashed)
    head_chunks = []
    spread = old.spread
    for items in _cut(sorted(terms), terms, HEAD_MIN_BYTES, HEAD_MAX_BYTES, spread, size=1):
        kept = old_heads.get(items)
        if kept is not None and not any(term in entries for term in items):
            head_chunks.append(kept)
            continue
        parts = []
        for term in items:
            fragment = entries.get(term)
            if fragment is None:
                fragment = _dumps_term(term, old_shard(old_head_home[term])["terms"][term])
            parts.append(fragment)
        body = b'{"terms":{' + b",".join(parts) + b"}}\n"
        chunk = Chunk(items, _sha256(body))
        made[chunk.sha256] = body
        head_chunks.append(chunk)
    layout = Layout(spread, terms, tails, tuple(head_chunks), tuple(tail_chunks))
    return Laid(layout, made)


def _cut(
    items: list[Any],
    info: dict[Any, tuple[int, ...]],
    minimum: int,
    maximum: int,
    spread: int,
    size: int = 0,
) -> Iterable[tuple[Any, ...]]:
    """The items cut into runs: before an item whose hash is 0 modulo `spread` once the
    run holds `minimum` bytes, before one that would take it past `maximum`, and around
    an item of `minimum` bytes or more (a reader that wants a small item does not read a
    large one with it). `size` is where an item's size is in its `info` (its hash is
    last)."""
    current: list[Any] = []
    held = 0
    for item in items:
        found = info[item]
        cost = found[size]
        if current and (
            held + cost > maximum
            or cost >= minimum
            or (held >= minimum and (len(current) == 1 or found[-1] % spread == 0))
        ):
            yield tuple(current)
            current, held = [], 0
        current.append(item)
        held += cost
    if current:
        yield tuple(current)


def _tail_body(
    items: tuple[TailItem, ...],
    terms: dict[str, tuple[int, int, int]],
    changed: dict[TailItem, bytes],
    old_home: dict[TailItem, str],
    old_shard: OldShard,
) -> bytes:
    parts = []
    start = 0
    while start < len(items):
        term = items[start][0]
        end = start
        while end < len(items) and items[end][0] == term:
            end += 1
        groups = []
        for item in items[start:end]:
            body = changed.get(item)
            if body is None:  # unchanged: as the old shard holding it has it
                old = old_shard(old_home[item])["terms"][term]["postings"]
                body = compact_json(next(g for g in old if g[0] == -item[1]))
            groups.append(body)
        parts.append(
            _dumps_str(term)
            + b':{"df":'
            + str(terms[term][0]).encode()
            + b',"postings":['
            + b",".join(groups)
            + b"]}"
        )
        start = end
    return b'{"terms":{' + b",".join(parts) + b"}}\n"


def _more(
    chunks: Iterable[Chunk], tails: dict[TailItem, tuple[int, int, int]]
) -> dict[str, list[list[Any]]]:
    """Per term with a tail: [highest weight, shard, keys] of each shard holding it."""
    more: dict[str, list[list[Any]]] = {}
    for chunk in chunks:
        name = chunk.name
        for term, weight in chunk.items:
            held = more.setdefault(term, [])
            count = tails[(term, weight)][1]
            if held and held[-1][1] == name:
                held[-1][2] += count
            else:
                held.append([-weight, name, count])
    return more


def _tail_cost(term: str, group: bytes) -> int:
    return len(group) + len(term) + 24  # its group, and its share of the term's wrapping


def _df(groups: Sequence[Group]) -> int:
    """How many keys the groups hold."""
    return sum(map(len, groups)) - len(groups)


def _head(groups: list[Group], df: int) -> list[Group]:
    """The first HEAD_POSTINGS postings, in their groups (`df`: how many they hold)."""
    if df <= search_shards.HEAD_POSTINGS:
        return groups  # most terms of a site: no tail
    head: list[Group] = []
    room = search_shards.HEAD_POSTINGS
    for group in groups:
        if room <= 0:
            break
        head.append(group[: room + 1])
        room -= len(group) - 1
    return head


def _tail(groups: Sequence[Group], df: int) -> list[Group]:
    """The postings after the head, in their groups (`df`: how many they hold)."""
    if df <= search_shards.HEAD_POSTINGS:
        return []
    tail: list[Group] = []
    skip = search_shards.HEAD_POSTINGS
    for group in groups:
        keys = group[1:]
        if skip >= len(keys):
            skip -= len(keys)
            continue
        tail.append([group[0], *keys[skip:]])
        skip = 0
    return tail


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:4], "big")


def _sha256(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def compact_json(value: Any) -> bytes:
    """The index's files' JSON: UTF-8, no spaces (the shards' and the entry files'): the
    bytes of `json.dumps(value, ensure_ascii=False, separators=(",", ":"))` for the strings,
    ints and lists of them the index holds (tests/test_search_shards.py), from pydantic's
    serializer in Rust: ~0.4 us a call against json's ~2.5 (its encoder builds its
    C encoder anew at every call), and a 100-entry site makes ~2,400 (issue 22)."""
    return pydantic_core.to_json(value)


def _dumps_str(text: str) -> bytes:
    return pydantic_core.to_json(text)


def _dumps_term(term: str, entry: dict[str, Any]) -> bytes:
    """`"term":{...}`, as json.dumps writes it inside the shard's `terms`."""
    return compact_json({term: entry})[1:-1]  # one encoder call, not two
