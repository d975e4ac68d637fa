"""The one query procedure over the sharded search index (search_shards.py is its format,
and its docstring the procedure in words): the project's client, MCP server and search
evaluation run it; the build, which only writes the index, does not import it (a build's
start-up is most of a small site's build, issue 22).

With the refinements those readers use: stop words dropped, each word also looked up by
its stem and word family, and a word's `more` postings read only when they could change
the page of results asked for.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from agent_contract import search_terms
from agent_contract.search_shards import (
    MORE_POSTINGS_BUDGET,
    TERM_MAP_PATH,
    coordination,
    idf,
    shard_for,
)

#: path -> body; raises LookupError (MissingFile, KeyError, ...) when there is no such file.
Fetch = Callable[[str], bytes]


class MissingFile(LookupError):
    """What a fetch raises for a file the deployment does not have (HTTP 404)."""


class SearchFormatError(ValueError):
    """A file of the sharded index is not what this format says."""


@dataclass(frozen=True)
class Hit:
    key: str
    id: str
    title: str
    url: str  # the human-facing page (canonical_url)
    api_url: str  # the JSON document
    description: str
    score: float
    matched: tuple[str, ...]  # the query words the entry holds, in query order


@dataclass(frozen=True)
class Results:
    hits: list[Hit]
    offset: int
    #: Whether more hits follow this page (ask again with offset + len(hits)).
    more: bool
    #: Entries matching at least one word, as far as the postings read tell (a lower
    #: bound when `more` postings were left unread).
    matched: int
    files: list[str] = field(default_factory=list)  # paths read, in order
    #: False when MORE_POSTINGS_BUDGET stopped the reading of `more` shards that could
    #: still have changed the page.
    exact: bool = True


def query_words(query: str) -> list[str]:
    """The query's words as the index holds them: folded, stop words dropped, compounds
    ("sha-256" -> "sha256") added, each once, in order."""
    folded = search_terms.fold(query)
    found = search_terms.words(folded, folded=True)
    found += sorted(search_terms.compounds(folded, folded=True))
    return list(dict.fromkeys(found))


def word_variants(word: str, synonyms: Synonyms | None = None) -> list[str]:
    """The terms a query word is looked up as: itself, its stem, its word family, and the
    same of the other words of its synonym group."""
    forms = [word]
    group = synonyms.get(search_terms.stem(word)) if synonyms else None
    if group is not None:
        forms += group
    return list(
        dict.fromkeys(
            variant
            for form in forms
            for variant in (form, search_terms.stem(form), search_terms.family(form))
        )
    )


#: A query word's stem -> the words of its synonym group (`synonym_groups`).
Synonyms = dict[str, tuple[str, ...]]


def synonym_groups(groups: Iterable[Iterable[str]]) -> Synonyms:
    """The term map's `synonyms` as `word_variants` reads them: each word's stem (so that
    "route" finds the group that says "routes") -> its group."""
    found: Synonyms = {}
    for group in groups:
        words = tuple(group)
        for word in words:
            found.setdefault(search_terms.stem(word), words)
    return found


@dataclass
class _Term:
    df: int
    groups: list[list[Any]]  # [weight, key, key, ...], read so far
    more: list[list[Any]]  # [weight, shard, count] of the postings not read yet


class _Reader:
    """The files of one query, each read once."""

    def __init__(self, fetch: Fetch) -> None:
        self._fetch = fetch
        self.files: list[str] = []
        self._json: dict[str, Any] = {}

    def json(self, path: str) -> Any:
        if path not in self._json:
            self.files.append(path)
            try:
                self._json[path] = json.loads(self._fetch(path))
            except ValueError as error:
                raise SearchFormatError(f"{path}: not JSON ({error})") from None
        return self._json[path]

    def forget(self, path: str) -> None:
        self._json.pop(path, None)


def _path(url_or_path: str) -> str:
    """A URL's path (the term map's templates are absolute URLs)."""
    if "://" in url_or_path:
        rest = url_or_path.split("://", 1)[1]
        return "/" + rest.split("/", 1)[1] if "/" in rest else "/"
    return url_or_path


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SearchFormatError(f"{where}: expected a JSON object")
    return value


class _Index:
    """The term map, and the terms looked up in its shards."""

    def __init__(self, reader: _Reader) -> None:
        self.reader = reader
        self._load()

    def _load(self) -> None:
        terms = _object(self.reader.json(TERM_MAP_PATH), TERM_MAP_PATH)
        try:
            self.entries = int(terms["entries"])
            self.prefix_length = int(terms["prefix_length"])
            self.shard_path = _path(str(terms["shard_url"]))
            self.entries_path = _path(str(terms["entries_url"]))
            shards = [(str(first), str(name)) for first, name in terms["shards"]]
            groups = terms.get("synonyms", [])
            if not isinstance(groups, list) or not all(
                isinstance(group, list) and all(isinstance(word, str) for word in group)
                for group in groups
            ):
                raise ValueError("synonyms is not a list of lists of words")
        except (KeyError, TypeError, ValueError) as error:
            raise SearchFormatError(f"{TERM_MAP_PATH}: {error!r}") from None
        self.synonyms = synonym_groups(groups)
        self.firsts = [first for first, _ in shards]
        self.names = [name for _, name in shards]

    def shard(self, name: str) -> dict[str, Any]:
        path = self.shard_path.replace("{shard}", name)
        shard = _object(self.reader.json(path), path)
        return _object(shard.get("terms", {}), path)

    def term(self, term: str) -> _Term | None:
        if not self.names:
            return None
        name = self.names[shard_for(term, self.firsts)]
        try:
            found = self.shard(name).get(term)
        except LookupError:
            # Replaced by a publish since the term map was read: read it again, once.
            self.reader.forget(TERM_MAP_PATH)
            self._load()
            found = self.shard(self.names[shard_for(term, self.firsts)]).get(term)
        if found is None:
            return None
        try:
            groups = [list(group) for group in found["postings"]]
            more = [[int(w), str(name), int(count)] for w, name, count in found.get("more", [])]
            if any(not group or isinstance(group[0], bool) for group in groups):
                raise ValueError("a group without its weight")
            if any(w < 0 or count < 0 for w, _, count in more):
                raise ValueError("a negative weight or count in `more`")
            for group in groups:
                group[0] = int(group[0])
            return _Term(int(found["df"]), groups, more)
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise SearchFormatError(f"shard {name}: term {term!r}: {error!r}") from None

    def more(self, term: str, posting: _Term) -> None:
        """Read the next weight's postings of a term."""
        name = posting.more.pop(0)[1]
        found = self.shard(str(name)).get(term)
        try:
            groups = [[int(group[0]), *map(str, group[1:])] for group in found["postings"]]
        except (KeyError, TypeError, ValueError, IndexError) as error:
            raise SearchFormatError(f"shard {name} does not continue {term!r}: {error!r}") from None
        posting.groups += groups

    def entry_file(self, key: str) -> dict[str, Any]:
        path = self.entries_path.replace("{prefix}", key[: self.prefix_length])
        return _object(_object(self.reader.json(path), path).get("entries", {}), path)


def query(fetch: Fetch, text: str, limit: int | None = 10, offset: int = 0) -> Results:
    """The entries best matching `text`, `limit` of them (None: every match) from
    `offset`, best first: the procedure of this module's docstring.

    A word's postings past its shard's (lower weights) are read only while some entry
    could still enter the page asked for: the "no random access" top-k algorithm (Fagin
    et al., NRA), each word's unread postings bounded by its idf times their weight,
    the highest weight read first (`MORE_POSTINGS_BUDGET` may stop the reading)."""
    reader = _Reader(fetch)
    index = _Index(reader)
    words: list[tuple[str, list[tuple[str, _Term, float]]]] = []
    for word in query_words(text):
        found = []
        for term in word_variants(word, index.synonyms):
            posting = index.term(term)
            if posting is not None:
                found.append((term, posting, idf(posting.df, index.entries)))
        if found:
            words.append((word, found))
    wanted = None if limit is None else offset + limit
    budget = MORE_POSTINGS_BUDGET if wanted is not None else None
    exact = True
    while True:
        scores = _scores(words)
        ranked = sorted(
            scores.items(), key=lambda item: (-item[1].total, -len(item[1].held), item[0])
        )
        # Highest weight first, then idf * weight: under the budget, every word's title
        # postings are read before any word's prose. By idf * weight alone, a large
        # site's budget went on a rarer word's prose before a common word's titles, and
        # an entry titled with every word never got its coordination (docs/decisions.md,
        # "A real MCP client and 10,000 entries in session 27").
        unread = [
            ((_next_weight(posting), weight * _next_weight(posting)), word_index, term_index)
            for word_index, (_, found) in enumerate(words)
            for term_index, (_, posting, weight) in enumerate(found)
            if posting.more
        ]
        if not unread or not _may_change(ranked, words, wanted):
            break
        _, word_index, term_index = max(unread)
        term, posting, _ = words[word_index][1][term_index]
        if budget is not None:
            budget -= int(posting.more[0][2])
            if budget < 0:
                exact = False
                break
        index.more(term, posting)
    page = ranked[offset:] if wanted is None else ranked[offset:wanted]
    hits = []
    for key, scored in page:
        meta = index.entry_file(str(key)).get(key)
        if not isinstance(meta, dict) or not {"id", "title", "url", "api_url"} <= set(meta):
            raise SearchFormatError(f"entry key {key} is in no entry file, or incomplete")
        hits.append(
            Hit(
                key,
                str(meta["id"]),
                str(meta["title"]),
                str(meta["url"]),
                str(meta["api_url"]),
                str(meta.get("description", "")),
                round(scored.total, 4),
                tuple(word for word, _ in words if word in scored.held),
            )
        )
    more = wanted is not None and (
        len(ranked) > wanted or any(p.more for _, found in words for _, p, _ in found)
    )
    return Results(hits, offset, more, len(ranked), reader.files, exact)


def _next_weight(posting: _Term) -> int:
    """The weight of a term's next unread postings (all of them are at most that)."""
    return int(posting.more[0][0]) if posting.more else 0


_Words = list[tuple[str, list[tuple[str, _Term, float]]]]


@dataclass
class _Scored:
    total: float  # `raw` times the entry's coordination factor: what ranks it
    held: dict[str, float]  # word -> its best variant's idf * weight
    seen: set[tuple[int, int]]  # (word, variant) whose postings read hold the entry
    raw: float = 0.0  # the sum of `held`


def _scores(words: _Words) -> dict[str, _Scored]:
    """Per entry key: the sum over words of its best variant's idf * weight, per word,
    times its coordination factor."""
    found_by_key: dict[str, _Scored] = {}
    for word_index, (word, found) in enumerate(words):
        for term_index, (_, posting, weight) in enumerate(found):
            for group in posting.groups:
                score = weight * int(group[0])
                for key in group[1:]:
                    scored = found_by_key.get(key)
                    if scored is None:
                        scored = found_by_key[key] = _Scored(0.0, {}, set())
                    scored.seen.add((word_index, term_index))
                    if scored.held.get(word, 0.0) < score:
                        scored.held[word] = score
    for scored in found_by_key.values():
        scored.raw = sum(scored.held.values())
        scored.total = scored.raw * coordination(len(scored.held), len(words))
    return found_by_key


def _may_change(ranked: list[tuple[str, _Scored]], words: _Words, wanted: int | None) -> bool:
    """Whether unread postings could change the first `wanted` results (None: all of
    them, so yes while any are unread). An entry's sum can grow to at most, per word, its
    best variant whose unread postings may hold it (a variant's read postings that hold
    the entry gave its weight there already), and its coordination factor to that of
    the words it holds or may yet hold."""
    if wanted is None:
        return True
    bounds = [[weight * _next_weight(p) for _, p, weight in found] for _, found in words]
    best = [max(bound, default=0.0) for bound in bounds]
    gain = sum(best)
    if len(ranked) < wanted:
        return gain > 0
    threshold = ranked[wanted - 1][1].total
    if gain * coordination(sum(1 for b in best if b > 0), len(words)) > threshold:
        return True  # an entry no postings read hold could enter the page

    def most(scored: _Scored) -> float:
        possible = 0.0
        may_hold = 0
        for word_index, (word, _) in enumerate(words):
            unread = max(
                (b for t, b in enumerate(bounds[word_index]) if (word_index, t) not in scored.seen),
                default=0.0,
            )
            best_here = max(scored.held.get(word, 0.0), unread)
            possible += best_here
            may_hold += best_here > 0
        return possible * coordination(may_hold, len(words))

    # The page's order: no entry of it may pass the one above it (NRA alone settles which
    # entries are on the page, not their order).
    if any(most(ranked[i][1]) > ranked[i - 1][1].total for i in range(1, wanted)):
        return True
    for scored in sorted((scored for _, scored in ranked[wanted:]), key=lambda s: -s.raw):
        if scored.raw + gain <= threshold:
            return False  # and the entries after it: sorted by raw, coordination <= 1
        if most(scored) > threshold:
            return True
    return False
