"""A small agent client for any deployment of the API (standard library HTTP only).

    from agent_client.client import AgentClient

    client = AgentClient("https://agents.parlance.example")
    for hit in client.search("how do agents find documents", limit=3):
        print(hit.score, hit.title, hit.api_url)  # through the sharded search index
    guide = client.get_document("developer-guide")
    client.is_fresh(guide)   # conditional GET: one 304 when nothing changed
    state = client.sync(SyncState()).state  # every entry; later syncs fetch what changed

Every GET is conditional once a URL has been fetched: the client keeps the ETag and
body and sends If-None-Match, so re-reading an unchanged file costs a 304.
"""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel

from agent_contract import paths, search_query, search_terms
from agent_contract.hashing import content_hash
from agent_contract.models import (
    ChangeFeed,
    ContentDocument,
    ContentIndex,
    DiscoveryDocument,
    FAQEntry,
    SearchEntry,
    SearchIndex,
)

M = TypeVar("M", bound=BaseModel)
USER_AGENT = "agent-access-client/1.0"
_DISCOVERY_LINK = re.compile(r"\]\((\S+/\.well-known/(?!mcp\.json)[a-z0-9-]+\.json)\)")


class ClientError(Exception):
    def __init__(self, url: str, status: int | None, message: str) -> None:
        super().__init__(f"{url}: {message}")
        self.url = url
        self.status = status


@dataclass(frozen=True)
class Fetched:
    url: str
    status: int  # 200, or 304 when the cached copy was confirmed
    headers: dict[str, list[str]]  # lower-case names; every value, duplicates kept
    body: bytes

    def header(self, name: str) -> str | None:
        values = self.headers.get(name.lower())
        return values[0] if values else None


@dataclass(frozen=True)
class SearchHit:
    entry: SearchEntry
    score: int  # distinct query words matched
    title_matches: int
    matched: tuple[str, ...]

    @property
    def id(self) -> str:
        return self.entry.id

    @property
    def title(self) -> str:
        return self.entry.title

    @property
    def api_url(self) -> str:
        return self.entry.api_url


def query_words(query: str) -> list[str]:
    """The spec's rule (lowercase, split on non-alphanumerics), folded, stop words dropped."""
    return list(dict.fromkeys(search_terms.words(query)))


@dataclass(frozen=True)
class _Prepared:
    entry: SearchEntry
    keywords: frozenset[str]
    keyword_families: frozenset[str]
    title_families: frozenset[str]


class RankedIndex:
    """A search index with each entry's keyword families worked out once, so that a
    query costs one pass of set look-ups (the families do not depend on the query)."""

    def __init__(self, index: SearchIndex) -> None:
        self.index = index
        self._entries = [
            _Prepared(
                entry,
                frozenset(entry.keywords),
                frozenset(search_terms.family(keyword) for keyword in entry.keywords),
                frozenset(search_terms.family(w) for w in search_terms.words(entry.title)),
            )
            for entry in index.entries
        ]

    def rank(self, query: str) -> list[SearchHit]:
        words = query_words(query)
        families = {word: search_terms.family(word) for word in words}
        hits = []
        for position, prepared in enumerate(self._entries):
            keywords, keyword_families = prepared.keywords, prepared.keyword_families
            matched = tuple(w for w in words if w in keywords or families[w] in keyword_families)
            if matched:
                in_title = sum(families[w] in prepared.title_families for w in matched)
                hits.append((position, SearchHit(prepared.entry, len(matched), in_title, matched)))
        hits.sort(key=lambda pair: (-pair[1].score, -pair[1].title_matches, pair[0]))
        return [hit for _, hit in hits]


def rank(index: SearchIndex | RankedIndex, query: str) -> list[SearchHit]:
    """Entries matching at least one query word, best first.

    A word matches an entry when it is one of the entry's keywords or shares its word
    family (stem) with one: "caches" finds "cache", "deploying" finds "deploy".
    Ranked by distinct words matched, then words matched in the title, then index order.
    """
    ranked = index if isinstance(index, RankedIndex) else RankedIndex(index)
    return ranked.rank(query)


@dataclass(frozen=True)
class SyncedEntry:
    """One document or FAQ entry as the client holds it: its JSON, as served."""

    api_url: str
    updated_at: str
    content_hash: str
    body: bytes


@dataclass
class SyncState:
    """What a client holds after a sync; `generation` None means nothing yet.

    `feed_etag` is the ETag of the change feed the state was made from: a client that
    keeps its state between runs (another process, another day) asks for the feed with
    it, and a 304 then says the state is current without downloading the feed (about
    150 bytes per entry: megabytes for a large site)."""

    generation: int | None = None
    entries: dict[str, SyncedEntry] = field(default_factory=dict)
    feed_etag: str | None = None


@dataclass(frozen=True)
class SyncResult:
    state: SyncState
    fetched: list[str]  # ids whose JSON was downloaded
    removed: list[str]  # ids dropped
    started_over: bool  # the held generation was unknown, too old or ahead of the feed


#: A whole answer must come within this many request timeouts: `timeout` bounds each
#: read, and a server sending a byte before each one expires never ended (session 27).
ANSWER_TIMEOUTS = 3
#: The most an answer may hold: the largest published file is the client-side search
#: index, 9.4 MB at 10,000 entries; an answer was read whole into memory (2 GB in 10 s).
MAX_ANSWER_BYTES = 64 << 20


def read_within(response: Any, deadline: float) -> bytes:
    """The body of `response`, read as it comes; TimeoutError past `deadline`, ValueError
    past MAX_ANSWER_BYTES."""
    body = bytearray()
    while chunk := response.read1(65536):
        body += chunk
        if len(body) > MAX_ANSWER_BYTES:
            raise ValueError(f"the answer is too large (over {MAX_ANSWER_BYTES:,} bytes)")
        if time.monotonic() > deadline:
            raise TimeoutError("the answer did not end in time")
    return bytes(body)


@dataclass
class AgentClient:
    base_url: str
    timeout: float = 10.0
    discovery_path: str | None = None  # found through llms.txt when not given
    requests: dict[int, int] = field(default_factory=dict)  # status -> count, for the curious
    _cache: dict[str, tuple[str, Fetched]] = field(default_factory=dict, repr=False)
    # url -> (ETag, parsed value): an unchanged file (a 304, or the same ETag) is not
    # parsed and validated again; at 10,000 entries the search index takes seconds to.
    _parsed: dict[str, tuple[str, Any]] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.base_url = self.base_url.rstrip("/")

    # --- HTTP ------------------------------------------------------------------------

    def request(
        self, url: str, method: str = "GET", headers: dict[str, str] | None = None
    ) -> Fetched:
        """One HTTP request, any status; nothing cached."""
        request = urllib.request.Request(url, method=method, headers={"User-Agent": USER_AGENT})
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        deadline = time.monotonic() + ANSWER_TIMEOUTS * self.timeout
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                status, raw_headers = response.status, response.headers
                body = read_within(response, deadline)
        except urllib.error.HTTPError as error:
            status, raw_headers, body = error.code, error.headers, read_within(error, deadline)
        except (urllib.error.URLError, OSError) as error:
            raise ClientError(url, None, f"cannot connect ({error})") from error
        except ValueError as error:  # past MAX_ANSWER_BYTES
            raise ClientError(url, None, str(error)) from error
        collected: dict[str, list[str]] = {}
        for name, value in raw_headers.items():
            collected.setdefault(name.lower(), []).append(value)
        with self._lock:
            self.requests[status] = self.requests.get(status, 0) + 1
        return Fetched(url, status, collected, body)

    def fetch(self, url: str) -> Fetched:
        """GET `url`, conditionally when a copy is cached; raises unless 200 or 304."""
        with self._lock:
            cached = self._cache.get(url)
        headers = {"If-None-Match": cached[0]} if cached else {}
        response = self.request(url, headers=headers)
        if response.status == 304 and cached:
            return Fetched(url, 304, response.headers, cached[1].body)
        return self._kept(url, response)

    def _kept(self, url: str, response: Fetched) -> Fetched:
        """A 200 answer, cached by its ETag for the next conditional GET; raises otherwise."""
        if response.status != 200:
            raise ClientError(url, response.status, f"HTTP {response.status}")
        tag = response.header("ETag")
        if tag:
            with self._lock:
                self._cache[url] = (tag, response)
        return response

    def get_json(self, url: str) -> Any:
        try:
            return json.loads(self.fetch(url).body)
        except (ValueError, RecursionError) as error:  # RecursionError: nested too deep
            raise ClientError(url, 200, f"not JSON ({error})") from error

    def _parse_once(self, url: str, key: str, parse: Any, response: Fetched | None = None) -> Any:
        """`parse(body)` of the file at `url` (fetched now unless `response` is given),
        reused while its ETag stays the same."""
        response = response or self.fetch(url)
        tag = response.header("ETag")
        with self._lock:
            cached = self._parsed.get(f"{key} {url}")
        if cached and tag is not None and cached[0] == tag:
            return cached[1]
        value = parse(response.body, url)
        if tag is not None:
            with self._lock:
                self._parsed[f"{key} {url}"] = (tag, value)
        return value

    @staticmethod
    def _json(body: bytes, url: str) -> Any:
        try:
            return json.loads(body)
        except (ValueError, RecursionError) as error:  # RecursionError: nested too deep
            raise ClientError(url, 200, f"not JSON ({error})") from error

    def get_model(self, url: str, model: type[M]) -> M:
        """The file as a validated model; the same object while its ETag is unchanged
        (treat it as read-only)."""
        return self._parse_once(
            url, model.__name__, lambda body, at: model.model_validate(self._json(body, at))
        )

    def url(self, path: str) -> str:
        return self.base_url + path

    # --- the API ---------------------------------------------------------------------

    def find_discovery_path(self) -> str:
        """The discovery document's path, read from llms.txt (its name carries the brand)."""
        if self.discovery_path:
            return self.discovery_path
        text = self.fetch(self.url(paths.LLMS_TXT)).body.decode("utf-8")
        match = _DISCOVERY_LINK.search(text)
        if not match:
            raise ClientError(self.url(paths.LLMS_TXT), 200, "links no discovery document")
        self.discovery_path = urlsplit(match.group(1)).path
        return self.discovery_path

    def discover(self) -> DiscoveryDocument:
        return self.get_model(self.url(self.find_discovery_path()), DiscoveryDocument)

    def index(self) -> ContentIndex:
        return self.get_model(self.url(paths.CONTENT_INDEX), ContentIndex)

    def search_index(self) -> SearchIndex:
        return self.ranked_index().index

    def ranked_index(self) -> RankedIndex:
        """The search index, parsed and prepared for ranking once per ETag."""
        return self._parse_once(
            self.url(paths.SEARCH_INDEX),
            RankedIndex.__name__,
            lambda body, at: RankedIndex(SearchIndex.model_validate(self._json(body, at))),
        )

    def search(self, query: str, limit: int | None = 10, offset: int = 0) -> list[search_query.Hit]:
        """The best `limit` entries for `query` from `offset` (None: every match), through
        the sharded search index: the term map, a shard per query word and the entry files
        of the hits, each a conditional GET (agent_contract/search_shards.py)."""
        return self.search_page(query, limit, offset).hits

    def search_page(
        self, query: str, limit: int | None = 10, offset: int = 0
    ) -> search_query.Results:
        """`search`, with whether more hits follow and the files read."""
        return search_query.query(self._fetch_path, query, limit, offset)

    def _fetch_path(self, path: str) -> bytes:
        try:
            return self.fetch(self.url(path)).body
        except ClientError as error:
            if error.status == 404:
                # A shard replaced by a publish: the query reads the term map again.
                raise search_query.MissingFile(path) from error
            raise

    def keyword_search(self, query: str, limit: int | None = None) -> list[SearchHit]:
        """The spec's search: search-index.json downloaded whole (parsed once per ETag),
        its `keywords` matched (`rank`)."""
        hits = self.ranked_index().rank(query)
        return hits[:limit] if limit is not None else hits

    def get_document(self, document_id: str) -> ContentDocument:
        return self.get_model(self.url(paths.document(document_id)), ContentDocument)

    def get_faq(self, faq_id: str) -> FAQEntry:
        return self.get_model(self.url(paths.faq(faq_id)), FAQEntry)

    def is_fresh(self, document: ContentDocument) -> bool:
        """True when `document` is still what the API serves (spec rule 3: `updated_at`
        and `metadata.content_hash` both unchanged).

        Costs two conditional GETs, the content index and the document, each a 304 when
        nothing changed; a document gone from the index is not fresh.
        """
        entry = next((e for e in self.index().documents if e.id == document.id), None)
        if entry is None or entry.updated_at != document.updated_at:
            return False
        current = self.get_document(document.id)
        return (current.updated_at, current.metadata.content_hash) == (
            document.updated_at,
            document.metadata.content_hash,
        )

    # --- incremental sync (docs/sync.md) ------------------------------------------------

    def sync(self, state: SyncState) -> SyncResult:
        """Bring `state` to the feed's generation, downloading only what changed.

        1. GET /api/v1/changes.json (conditional: a 304 when nothing was published).
        2. Held generation None, older than `oldest_generation` (its removals are no
           longer listed) or newer than the feed (another deployment, or a rollback):
           start over from an empty state. The same generation is NOT taken as "nothing
           changed": two content branches merged cleanly, or `serve --watch` rebuilding
           from an unchanged lock, publish new content under one generation number, so
           the per-entry hashes (already downloaded with the feed) decide.
        3. Drop the ids the feed lists as removed after the held generation, and any held
           id the feed no longer has (the two agree on a consistent deployment).
        4. GET every entry whose content_hash differs from the held one, or that is new,
           and check the body against the feed's hash: a mismatch means a publish is in
           progress, and the sync fails rather than store a mix (retry later).
        The state passed in is not modified; the result carries the new one.
        """
        url = self.url(paths.CHANGES)
        response = self._fetch_unless(
            url, state.feed_etag if state.generation is not None else None
        )
        if response is None:  # a 304 for the very feed `state` was made from: it is current
            return SyncResult(state, [], [], False)
        feed = self._parse_once(
            url, ChangeFeed.__name__,
            lambda body, at: ChangeFeed.model_validate(self._json(body, at)), response,
        )  # fmt: skip
        held = state.generation
        started_over = held is None or not (feed.oldest_generation <= held <= feed.generation)
        entries = {} if started_over else dict(state.entries)
        listed = {entry.id for entry in feed.entries}
        removed = {
            entry_id
            for group in feed.removed
            if held is not None and group.generation > held
            for entry_id in group.ids
        }
        removed |= set(entries) - listed
        gone = sorted(entry_id for entry_id in removed if entries.pop(entry_id, None))
        fetched: list[str] = []
        for entry in feed.entries:
            mine = entries.get(entry.id)
            if mine and (mine.content_hash, mine.api_url) == (entry.content_hash, entry.api_url):
                if mine.updated_at != entry.updated_at:  # a version-only edit: same content
                    entries[entry.id] = SyncedEntry(
                        mine.api_url, entry.updated_at, mine.content_hash, mine.body
                    )
                continue
            body = self.fetch(entry.api_url).body
            if content_hash(self._json(body, entry.api_url)) != entry.content_hash:
                raise ClientError(
                    entry.api_url, 200, "content_hash differs from the change feed's: a "
                    "publish is in progress; sync again later",
                )  # fmt: skip
            entries[entry.id] = SyncedEntry(
                entry.api_url, entry.updated_at, entry.content_hash, body
            )
            fetched.append(entry.id)
        state = SyncState(feed.generation, entries, response.header("ETag"))
        return SyncResult(state, fetched, gone, started_over)

    def _fetch_unless(self, url: str, etag: str | None) -> Fetched | None:
        """`fetch(url)`; None when `etag` is given and the server answers it with a 304.
        Asked with `etag` only when this client's own copy is not that version (then
        `fetch`'s conditional GET already answers for it)."""
        with self._lock:
            cached = self._cache.get(url)
        if etag is None or (cached is not None and cached[0] == etag):
            return self.fetch(url)
        response = self.request(url, headers={"If-None-Match": etag})
        return None if response.status == 304 else self._kept(url, response)
