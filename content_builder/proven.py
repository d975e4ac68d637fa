"""What the last build that passed every check proved, so that the next proves only what
changed.

The cross-checks (validate.py) ask that every link in every published file name a
published file, and that the discovery document and the OpenAPI description cover every
published path. Both are functions of bytes the build can name exactly:

- An entry's links (in its JSON file, its Markdown mirror, its pieces of the aggregates,
  and the ones its author wrote) depend only on its cache key (its file's name and bytes,
  under the settings and code the cache is keyed by) and its lock entry; any other file's
  links depend only on its bytes (its sha256).
- Whether a link resolves depends only on the set of published paths.

So when a build publishes every path the last build that passed published (and maybe
more), the links of an entry with the same identity, or of a file with the same sha256,
resolve again; when it publishes exactly those paths, coverage by the same discovery and
OpenAPI bytes holds again. A build proves the rest and records what it proved beside the
build cache (`EntryCache.put_latest`), written only by a build that passed every check.
At 10,000 entries after one FAQ edit or addition this is the link check of one entry,
one llms.txt part and the aggregates' own text instead of about a million links (~1 s of
a 5 s build). Without the cache (AGENT_ACCESS_CACHE_DIR=off) nothing is recorded and
everything is checked.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agent_contract.artifacts import Artifact
from content_builder.cache import EntryCache

NAME = "proven"  # its name among the values kept beside the build cache


@dataclass(frozen=True)
class Proven:
    published: frozenset[str]  # the build's published paths
    entries: frozenset[str]  # entry_identity of every entry, whose links all resolved
    files: frozenset[str]  # sha256 of every other file, whose links all resolved
    coverage: tuple[str, str]  # sha256 of the discovery document and the OpenAPI description

    def links_hold(self, published: frozenset[str]) -> bool:
        """A link that named a published path still does when no path was taken away
        (`links.resolves` asks for membership, or for a template, one member)."""
        return published.issuperset(self.published)

    def coverage_holds(self, published: frozenset[str], coverage: tuple[str, str]) -> bool:
        """The same discovery and OpenAPI bytes cover the same paths, and only those: a
        path added is one they may not cover."""
        return coverage == self.coverage and published == self.published


def entry_identity(cache_key: str, stamp: tuple[str, str]) -> str:
    """An entry's identity: the key its rendered pieces are cached by (which ends in the
    64 hex digits of its bytes' SHA-256) and their lock stamp (a timestamp and a version,
    whose patterns hold no NUL), joined by NUL: no two differ and join alike."""
    return "\0".join((cache_key, *stamp))


def recalled(cache: EntryCache, published: frozenset[str]) -> Proven | None:
    """What the last build that passed proved, if its links still hold (no path gone)."""
    found = cache.get_latest(NAME)
    return found if isinstance(found, Proven) and found.links_hold(published) else None


def settled(proven: Proven | None, identities: Sequence[str | None]) -> list[bool]:
    """Per entry, whether its links are proven (an entry without a cache key never is)."""
    if proven is None:
        return [False] * len(identities)
    known = proven.entries
    return [identity is not None and identity in known for identity in identities]


def record(
    cache: EntryCache,
    published: frozenset[str],
    identities: Sequence[str | None],
    other_files: Iterable[Artifact],
    coverage: tuple[str, str],
) -> None:
    """What this build proved, for the next: called only once every check has passed."""
    if not cache.enabled or None in identities:
        return  # the cache off, or an entry without a key: nothing to keep it or name it by
    proof = Proven(
        published,
        frozenset(identities),  # type: ignore[arg-type]
        frozenset(artifact.sha256 for artifact in other_files),
        coverage,
    )
    if cache.get_latest(NAME) != proof:  # the same proof again: nothing to write
        cache.put_latest(NAME, proof)
