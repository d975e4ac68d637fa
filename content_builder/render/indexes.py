"""The content index and the client-side search index: one entry per document and FAQ."""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, compress
from operator import attrgetter, itemgetter, mul, not_

import pydantic_core

from agent_contract import paths, search_shards, search_terms
from agent_contract.directives import estimated_tokens
from agent_contract.models import (
    ContentDocument,
    ContentIndex,
    ContentIndexEntry,
    EntrySize,
    FAQEntry,
    SearchEntry,
    SearchIndex,
)
from content_builder.loaded import LoadedDocument, LoadedFaq, Site
from content_builder.render import code_text
from content_builder.render.catalog import (
    TERMS_AT,
    Catalog,
    around,
    around_value,
    compact_item,
    searchable,
)
from content_builder.render.catalog import EntryTerms as _EntryTerms
from content_builder.render.documents import (
    document_code,
    document_headings,
    document_text,
    summarize,
)

_URL = re.compile(r"https?://\S+")


def faq_canonical_url(site: Site, faq_id: str, authored: str | None) -> str:
    return authored or f"{site.config.website.rstrip('/')}/faq#{faq_id}"


def entry_size(json_size: int, markdown_size: int) -> EntrySize:
    """An entry's sizes, the index's extension (agent_contract/models.py `EntrySize`)."""
    return EntrySize(
        json_bytes=json_size,
        json_tokens=estimated_tokens(json_size),
        markdown_bytes=markdown_size,
        markdown_tokens=estimated_tokens(markdown_size),
    )


def document_index_entry(
    site: Site, loaded: LoadedDocument, document: ContentDocument, size: EntrySize
) -> bytes:
    """The document's entry of index.json."""
    return compact_item(
        ContentIndexEntry(
            id=document.id,
            title=document.title,
            content_type=document.content_type,
            canonical_url=document.canonical_url,
            api_url=site.base_url + paths.document(document.id),
            description=loaded.source.description,
            updated_at=document.updated_at,
            size=size,
        )
    )


def faq_index_entry(
    site: Site, loaded: LoadedFaq, faq: FAQEntry, updated_at: str, size: EntrySize
) -> bytes:
    """The FAQ entry's entry of index.json."""
    return compact_item(
        ContentIndexEntry(
            id=faq.id,
            title=faq.question,
            content_type="faq",
            canonical_url=faq_canonical_url(site, faq.id, loaded.source.canonical_url),
            api_url=site.base_url + paths.faq(faq.id),
            description=summarize(faq.answer),
            updated_at=updated_at,
            size=size,
        )
    )


def content_index(site: Site, catalog: Catalog) -> bytes:
    """index.json, joined from the entries' pieces."""
    entries = catalog.entries
    head, tail = around(
        ContentIndex(version=site.config.api_version, total_documents=len(entries), documents=[]),
        "documents",
    )
    return head + b",".join(entry.index_entry for entry in entries) + tail + b"\n"


#: A body word found in more than this share of entries does not tell them apart, and
#: makes long documents win every tie: it is kept only where it is salient.
COMMON_BODY_SHARE = 0.5

#: CloudFront compresses only files of 1,000 to 10,000,000 bytes (docs/decisions.md): an
#: index above that reaches agents uncompressed. The whole index is kept under this,
#: with room for an entry whose title words alone exceed its share.
SEARCH_INDEX_BYTES = 9_500_000

#: The most one entry's keywords take in the published JSON, however small the site
#: (title words excepted): the smallest multiple of 200 bytes at which the owner's
#: `questions` set met the floors with the project client at least as good as the naive
#: one (held_out confirmed it); today's unpruned entries take about 2,400.
KEYWORD_BYTES_PER_ENTRY = 1_000


#: A keyword has at least two characters (search_terms drops shorter words).
SHORTEST_KEYWORD_COST = 5

#: What a keyword adds to compact JSON besides its characters: two quotes and a comma.
_KEYWORD_OVERHEAD = 3


def keyword_cost(term: str) -> int:
    """Bytes a keyword adds to compact JSON: the term, two quotes and a comma (ASCII)."""
    return len(term) + _KEYWORD_OVERHEAD


def with_words_of(words: dict[str, str], terms: _EntryTerms) -> _EntryTerms:
    """`terms` with each word the one string of it in `words` (a vocabulary the caller
    holds, which learns the words it did not know): terms rendered by a worker process
    (prime.py) arrive as new strings, chunk by chunk, which a pickle of many entries
    would store once per chunk, not once. A dict, not `sys.intern`: one C-level lookup
    per word, a third of intern's cost (a chunk of 100 entries has ~37,000 words, ~1,100
    distinct)."""

    def canonical(group: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(map(words.setdefault, group, group))

    # `_replace`: every other field (counts, body weights) kept as the worker made it.
    return terms._replace(
        title=canonical(terms.title),
        salient=canonical(terms.salient),
        stems=canonical(terms.stems),
        body=canonical(terms.body),
        inflections=canonical(terms.inflections),
        code=canonical(terms.code),
    )


#: The groups whose terms the site-wide frequency counts: the prose, not `code`.
_ALL_GROUPS = attrgetter("title", "salient", "stems", "body", "inflections")

#: Words `acronym_terms` looks for: acronyms, their plurals, their expansions.
_ACRONYM_WORDS = frozenset(
    word
    for acronym, expansion in search_terms.ACRONYMS.items()
    for word in (acronym, acronym + "s", *expansion)
)


def _entry_terms(
    title: list[str],
    salient: list[str],
    body: list[str],
    tokenizer: search_terms.Tokenizer,
    code: Sequence[str] = (),
) -> _EntryTerms:
    """An entry's candidate keywords by salience: title words; other salient words (title,
    description, authored keywords, headings); their stems, regular inflections and
    acronyms both ways; body words and stems with their counts; last, the words found
    only in code (identifiers, flags, paths: rarely what people search with, and rare
    across a site, so tf-idf would put them first)."""
    title_found = tokenizer.scan(title)
    salient_found = tokenizer.scan(salient)
    body_found = tokenizer.scan(body, counted=True)
    title_words = title_found.words | title_found.compounds
    salient_words = salient_found.words | salient_found.compounds | title_words
    stems = tokenizer.stems(salient_words)
    inflections: set[str] = set().union(*map(search_terms.inflections, stems))
    body_counts = tokenizer.counts(body_found)
    # acronym_terms asks only about _ACRONYM_WORDS: it is given those the entry holds.
    found = (body_counts.keys() & _ACRONYM_WORDS).union(
        *(_ACRONYM_WORDS & group for group in (salient_words, stems, inflections))
    )
    tokenizer.add_stem_counts(body_counts)
    stems |= tokenizer.acronym_terms(found, (title_found, salient_found, body_found))
    stems -= salient_words
    inflections = inflections.difference(body_counts)  # a loop over the inflections
    inflections -= salient_words
    inflections -= stems
    for term in body_counts.keys() & (salient_words | stems):  # a loop over the smaller
        del body_counts[term]
    code_words: list[str] = []
    if code:
        code_counts = tokenizer.counts(tokenizer.scan(list(code), counted=True))
        taken = salient_words | stems | inflections
        # Most used in the entry's code first, then alphabetical: reads nothing of the
        # site, so no other entry's change can move it (`_keyword_json`).
        code_words = [
            term
            for _, term in sorted((-count, term) for term, count in code_counts.items())
            if term not in taken and term not in body_counts
        ]
    length = sum(body_counts.values())
    # The tokenizer gives one object per distinct word, stems and inflections come from
    # memos: a pickle of many entries stores each term once (and loads it once).
    return _EntryTerms(
        title=tuple(title_words),
        salient=tuple(salient_words - title_words),
        stems=tuple(stems),
        body=tuple(body_counts),
        body_counts=tuple(body_counts.values()),
        inflections=tuple(inflections),
        code=tuple(code_words),
        body_weights=search_shards.body_weights(body_counts.values(), length),
    )


class _Ranking:
    """What ranks candidates against the whole site: how many entries hold each term,
    and (worked out when a body is first reached) each term's idf and the common terms."""

    def __init__(self, frequency: dict[str, int], total: int) -> None:
        self.frequency = frequency
        self.total = total
        self._negative_idf: dict[str, float] | None = None

    @classmethod
    def of(cls, entries: list[_EntryTerms]) -> _Ranking:
        return cls(_frequency(entries), len(entries))

    def by_idf(self, group: tuple[str, ...]) -> list[str]:
        """Most telling first (highest idf, then alphabetical). idf falls as the count
        rises, so this is the order of (count, term): C-level keys, no idf needed."""
        return sorted(sorted(group), key=self.frequency.__getitem__)

    def by_tf_idf(self, terms: tuple[str, ...], counts: tuple[int, ...]) -> list[str]:
        """Highest tf-idf first, then alphabetical; a common term is left out."""
        negative_idf = self._negative_idf
        if negative_idf is None:
            negative_idf = self._negative_idf = self._idf_unless_common()
        scored = sorted(
            zip(map(mul, map(negative_idf.__getitem__, terms), counts), terms, strict=True)
        )
        return list(map(itemgetter(1), scored[: bisect_left(scored, (math.inf,))]))

    def _idf_unless_common(self) -> dict[str, float]:
        """-idf of each term (the sort key's sign), +inf for a common term (which then
        sorts after every other: -idf * count is finite and negative)."""
        total = self.total
        limit = COMMON_BODY_SHARE * total
        return {
            term: -math.log((1 + total) / count) if count <= limit else math.inf
            for term, count in self.frequency.items()
        }


def _frequency(entries: list[_EntryTerms]) -> Counter[str]:
    """How many entries hold each term. The groups are disjoint: together, each term of
    an entry once. One count in C."""
    return Counter(chain.from_iterable(chain.from_iterable(map(_ALL_GROUPS, entries))))


def _ranked_groups(entry: _EntryTerms, ranking: _Ranking) -> Iterator[list[str]]:
    """The entry's candidates, most telling first, one group at a time (lazily: most
    entries of a large site have spent their budget before the body is reached)."""
    yield ranking.by_idf(entry.salient)
    yield ranking.by_idf(entry.stems)
    yield ranking.by_tf_idf(entry.body, entry.body_counts)
    yield ranking.by_idf(entry.inflections)
    yield list(entry.code)  # ranked when the entry's terms were made: by the entry alone


#: The groups `_ranked_groups` ranks by the site's counts, in its order: what an
#: entry's choice read of them (the code group, last, reads none).
_RANKED_GROUP_GETTERS = tuple(map(attrgetter, ("salient", "stems", "body", "inflections")))
#: How many groups are ranked once the body has been: from then on the choice depends
#: on the number of entries too (idf and the common limit).
_BODY_REACHED = 3


def _title_costs(entries: list[_EntryTerms]) -> list[int]:
    """keyword_cost summed over each title, in C."""
    return [sum(map(len, e.title)) + _KEYWORD_OVERHEAD * len(e.title) for e in entries]


def _share(fixed_bytes: int, title_costs: list[int]) -> int:
    return (SEARCH_INDEX_BYTES - fixed_bytes - sum(title_costs)) // max(len(title_costs), 1)


def _room(title_cost: int, share: int) -> int:
    return max(0, min(KEYWORD_BYTES_PER_ENTRY - title_cost, share))


def _choose(entry: _EntryTerms, room: int, ranking: _Ranking) -> tuple[list[str], int]:
    """The entry's keywords, sorted, and how many groups were ranked to choose them
    (what the choice read of the ranking: those groups' counts, and with the body the
    number of entries)."""
    kept = list(entry.title)  # the groups are disjoint: no term is kept twice
    reached = 0
    for group in _ranked_groups(entry, ranking):
        if room < SHORTEST_KEYWORD_COST:
            break  # nothing more fits: the rest is not even ranked
        reached += 1
        for term in group:
            cost = len(term) + _KEYWORD_OVERHEAD  # keyword_cost, inlined
            if cost <= room:
                kept.append(term)
                room -= cost
                if room < SHORTEST_KEYWORD_COST:
                    break
    kept.sort()
    return kept, reached


def _keywords(entries: list[_EntryTerms], fixed_bytes: int) -> list[list[str]]:
    """Each entry's keywords: its title words, then as many more as its byte budget
    holds, most telling first: salient words, then their other forms, then body words,
    each group ranked by tf-idf (a word in few entries tells more than a common one).

    The budget is the smaller of KEYWORD_BYTES_PER_ENTRY and an equal share of what
    SEARCH_INDEX_BYTES leaves after `fixed_bytes` (the index without keywords) and
    every title's words, so a large site's index stays under the limit."""
    ranking = _Ranking.of(entries)
    title_costs = _title_costs(entries)
    share = _share(fixed_bytes, title_costs)
    return [
        _choose(entry, _room(title_cost, share), ranking)[0]
        for entry, title_cost in zip(entries, title_costs, strict=True)
    ]


#: What identifies an entry's terms across builds: its build cache key (its file's name
#: and bytes; the whole cache is keyed by the settings and the code). The terms read
#: nothing of the lock entry (`document_search`, `faq_search`: title, description,
#: keywords, headings and text, none of updated_at or metadata), as the cache's
#: `source_hash` and `content_hash` records are keyed by the file alone; test_keyword_choice
#: checks that other lock entries give the same terms.
Identity = str


@dataclass(frozen=True)
class KeywordChoice:
    """The keywords the last build chose, and what each choice read, so that the next
    build chooses again only where something it read changed (`_keyword_json`). Kept by
    the build cache (`put_latest`): plain strings, bytes and ints."""

    identities: list[Identity]  # each entry's, in publication order
    chosen: list[bytes]  # each entry's keywords, as published (compact JSON)
    reached: bytes  # how many groups each choice ranked (`_choose`)
    title_costs: list[int]  # each entry's (`_title_costs`: of its terms, so of its identity)
    frequency: dict[str, int]  # how many entries hold each term
    share: int
    # the number of entries is len(identities)


def fresh_keyword_choice(
    entries: list[_EntryTerms], identities: list[Identity], fixed_bytes: int
) -> KeywordChoice:
    """The keywords `_keyword_json` chooses (the same bytes, always), without a previous
    choice to start from."""
    frequency = _frequency(entries)
    ranking = _Ranking(frequency, len(entries))
    title_costs = _title_costs(entries)
    share = _share(fixed_bytes, title_costs)
    chosen: list[bytes] = []
    reached = bytearray()
    for entry, title_cost in zip(entries, title_costs, strict=True):
        kept, groups = _choose(entry, _room(title_cost, share), ranking)
        chosen.append(pydantic_core.to_json(kept))
        reached.append(groups)
    return KeywordChoice(identities, chosen, bytes(reached), title_costs, dict(frequency), share)


def _keyword_json(
    entries: list[_EntryTerms],
    identities: list[Identity] | None,
    fixed_bytes: int,
    previous: KeywordChoice | None,
    terms_of: Callable[[Identity], _EntryTerms | None],
) -> KeywordChoice:
    """Each entry's keywords as `_keywords` chooses them (the same bytes, always), chosen
    again only where what the choice read changed since `previous`.

    An entry's choice reads its own terms (the same for the same identity), its room
    (its title's cost and the share), the counts of the terms in the groups it ranked
    and, once it ranked the body, the number of entries. So the counts are brought up
    to date by the entries that left and came (`terms_of` gives a departed identity's
    terms, from the build cache), and a kept choice whose room, groups' counts and (if
    it reached the body) number of entries are unchanged is reused as it is. Without a
    previous choice, or a departed entry's terms, everything is chosen afresh."""
    if (
        identities is None
        or previous is None
        or not previous.identities
        or len(set(identities)) != len(identities)
    ):
        return fresh_keyword_choice(entries, identities or [], fixed_bytes)
    position = dict(zip(previous.identities, range(len(previous.identities)), strict=True))
    matched = list(map(position.get, identities))
    new = [index for index, old in enumerate(matched) if old is None]
    staying = set(matched)
    came: Counter[str] = Counter()  # how many of the entries that came hold each term
    left: Counter[str] = Counter()  # and of those that left
    for old, identity in enumerate(previous.identities):
        if old not in staying:  # left (removed, or edited into a new identity)
            gone = terms_of(identity)
            if gone is None:
                return fresh_keyword_choice(entries, identities, fixed_bytes)
            left.update(chain.from_iterable(_ALL_GROUPS(gone)))
    for index in new:
        came.update(chain.from_iterable(_ALL_GROUPS(entries[index])))
    changed = [term for term in came.keys() | left.keys() if came[term] != left[term]]
    frequency = previous.frequency
    if changed:
        frequency = dict(frequency)  # the previous choice's is not ours to change
        for term in changed:
            count = frequency.get(term, 0) + came[term] - left[term]
            if count:
                frequency[term] = count
            else:
                del frequency[term]
    # A term that only entries which came hold (a new word, or one only the entry that
    # left held) is in no choice kept: the entries that stay hold it count - came times.
    held = {term for term in changed if frequency.get(term, 0) > came[term]}

    # The previous choice's values, placeholders (index 0) for the new entries.
    taken = [0 if old is None else old for old in matched]
    title_costs = list(map(previous.title_costs.__getitem__, taken))
    for index, cost in zip(new, _title_costs([entries[index] for index in new]), strict=True):
        title_costs[index] = cost
    share = _share(fixed_bytes, title_costs)
    chosen = list(map(previous.chosen.__getitem__, taken))
    reached = bytearray(map(previous.reached.__getitem__, taken))

    again = set(new)  # and those a change reached, found level by level in C:
    same_share = share == previous.share
    if not same_share:  # the room of each entry whose share was or is its smaller cap
        again.update(
            index
            for index, cost in enumerate(title_costs)
            if _room(cost, share) != _room(cost, previous.share)
        )
    if len(entries) != len(previous.identities):  # idf and the common limit
        again.update(index for index, groups in enumerate(reached) if groups >= _BODY_REACHED)
    if held:  # a count the entry's ranked groups read
        # The body's order reads every count (idf, the common limit); the other groups'
        # only the order of (count, term), which a term keeping its place does not move.
        moved = _moved_in_order(held, changed, previous.frequency, frequency)
        # A term common before and after is left out of every body either way (with the
        # same number of entries; with another, every body is ranked again anyway).
        limit = COMMON_BODY_SHARE * len(entries)
        in_bodies = {
            term
            for term in held
            if previous.frequency.get(term, 0) <= limit or frequency[term] <= limit
        }
        for level, group in enumerate(_RANKED_GROUP_GETTERS, start=1):
            read = in_bodies if level == _BODY_REACHED else moved
            if not read:
                continue
            ranked = [index for index, groups in enumerate(reached) if groups >= level]
            holds_none = map(read.isdisjoint, map(group, map(entries.__getitem__, ranked)))
            again.update(compress(ranked, map(not_, holds_none)))
    if not again and same_share and matched == list(range(len(previous.identities))):
        return previous  # nothing changed: nothing for the cache to write
    ranking = _Ranking(frequency, len(entries))
    for index in sorted(again):
        kept, reached[index] = _choose(entries[index], _room(title_costs[index], share), ranking)
        chosen[index] = pydantic_core.to_json(kept)
    return KeywordChoice(identities, chosen, bytes(reached), title_costs, frequency, share)


#: Past this many changed terms, every held one counts as moved (the check is pairwise).
_MOVED_CHECKED = 64


def _moved_in_order(
    held: set[str], changed: list[str], before: dict[str, int], after: dict[str, int]
) -> set[str]:
    """The held terms whose place in an order by (count, term) may have moved: those whose
    count, old or new, shares its span (old to new count, ends included) with another
    term's count or another changed term's span. A term no other count comes near keeps
    its place against every term, in every group (`_Ranking.by_idf`)."""
    if len(changed) > _MOVED_CHECKED:
        return held
    spans: dict[str, tuple[int, int]] = {}
    for term in changed:
        old, new = before.get(term, 0), after.get(term, 0)
        spans[term] = (min(old, new), max(old, new))
    occupied = Counter(after.values())  # terms by their count now (each held term once)
    counts = sorted(occupied)
    moved: set[str] = set()
    for term in held:
        low, high = spans[term]
        near = counts[bisect_left(counts, low) : bisect_right(counts, high)]
        if sum(map(occupied.__getitem__, near)) > 1 or any(
            other != term and other_low <= high and low <= other_high
            for other, (other_low, other_high) in spans.items()
        ):
            moved.add(term)
    return moved


def search_head(entry_id: str, title: str, description: str, api_url: str) -> tuple[bytes, bytes]:
    """The entry's compact JSON in search-index.json before and after its keywords."""
    return around_value(
        SearchEntry(id=entry_id, title=title, description=description, api_url=api_url,
                    keywords=[]),
        "keywords",
    )  # fmt: skip


def document_search(
    site: Site, loaded: LoadedDocument, document: ContentDocument, tokenizer: search_terms.Tokenizer
) -> tuple[tuple[bytes, bytes], _EntryTerms]:
    """The document's search entry around its keywords, and its candidate keywords."""
    head = search_head(document.id, document.title, loaded.source.description,
                       site.base_url + paths.document(document.id))  # fmt: skip
    salient = [loaded.source.description, *loaded.source.keywords]
    prose, headings, code = _split_bodies(document_text(document))
    code += document_code(document)
    terms = _entry_terms(
        [document.title],
        [*salient, *document_headings(document), *headings],
        prose,
        tokenizer,
        code,
    )
    return head, terms


def _split_bodies(texts: list[str]) -> tuple[list[str], list[str], list[str]]:
    """The prose, headings and code of a document's or an answer's texts (code_text.py)."""
    prose: list[str] = []
    headings: list[str] = []
    code: list[str] = []
    for text in texts:
        parts = code_text.split(text)
        prose += parts.prose
        headings += parts.headings
        code += parts.code
    return prose, headings, code


def faq_search(
    site: Site, loaded: LoadedFaq, faq: FAQEntry, tokenizer: search_terms.Tokenizer
) -> tuple[tuple[bytes, bytes], _EntryTerms]:
    """The FAQ entry's search entry around its keywords, and its candidate keywords."""
    head = search_head(faq.id, faq.question, summarize(faq.answer),
                       site.base_url + paths.faq(faq.id))  # fmt: skip
    prose, headings, code = _split_bodies([faq.answer])
    terms = _entry_terms(
        [faq.question], [*loaded.source.keywords, *headings], prose, tokenizer, code
    )
    return head, terms


def search_tokenizer() -> search_terms.Tokenizer:
    # URLs are links, not words: "https", "json" and the host would match every entry.
    return search_terms.Tokenizer(drop=_URL)


def search_index(site: Site, catalog: Catalog) -> bytes:
    """search-index.json: the entries' pieces around the keywords chosen for the whole
    site (each entry's share of the index's byte budget depends on every other entry).
    A document its front matter keeps out of search is in neither (`searchable`)."""
    site, catalog = searchable(site, catalog)
    entries = catalog.entries
    head, tail = around(SearchIndex(version=site.config.api_version, entries=[]), "entries")
    heads = list(map(attrgetter("search_head"), entries))
    previous = _previous_choice(site)
    choice = _keyword_json(
        list(map(attrgetter("terms"), entries)),
        _identities(site, catalog),
        _fixed_bytes(head, tail, heads),
        previous,
        lambda identity: _cached_terms(site, identity),
    )
    if choice is not previous and choice.identities:
        site.cache.put_latest(_CHOICE, choice)
    # before + keywords + after for each entry, joined with ",": in C.
    pieces = zip(map(itemgetter(0), heads), choice.chosen, map(itemgetter(1), heads), strict=True)
    return head + b",".join(map(b"".join, pieces)) + tail + b"\n"


def _fixed_bytes(head: bytes, tail: bytes, heads: list[tuple[bytes, bytes]]) -> int:
    """The bytes of search-index.json without its keywords."""
    empty_list = 2  # "[]"
    separators = max(len(heads) - 1, 0)
    return (
        len(head) + len(tail) + separators + 1  # the trailing newline
        + sum(map(len, chain.from_iterable(heads))) + empty_list * len(heads)
    )  # fmt: skip


#: The build cache's name for the last build's KeywordChoice (`put_latest`).
_CHOICE = "search keywords"


def _identities(site: Site, catalog: Catalog) -> list[Identity] | None:
    """Each entry's Identity, or None where an entry is not the loaded file of its id."""
    loaded = [*site.documents, *site.faqs]
    if len(loaded) != len(catalog.entries) or list(map(attrgetter("id"), loaded)) != list(
        map(attrgetter("id"), catalog.entries)
    ):
        return None
    return list(map(attrgetter("cache_key"), loaded))


def _previous_choice(site: Site) -> KeywordChoice | None:
    found = site.cache.get_latest(_CHOICE)
    return found if isinstance(found, KeywordChoice) else None


def _cached_terms(site: Site, identity: Identity) -> _EntryTerms | None:
    """The terms the build cache holds for an identity: those of its `rendered` record
    (render/entries.py), whatever lock entry it was dated by (Identity)."""
    found = site.cache.get(identity, "rendered")
    if found is None:
        return None
    return _EntryTerms._make(found[TERMS_AT]) if type(found) is tuple else None
