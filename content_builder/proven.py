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

So when a build publishes exactly the paths of the last build that passed, the links of an
entry with the same identity, or of a file with the same sha256, resolve again, and
coverage by the same discovery and OpenAPI bytes holds again. A build proves the rest and
records what it proved, in a note beside the build cache (cache.py), written only by a
build that passed every check. At 10,000 entries after one FAQ edit this is the link check
of one entry and one llms.txt part instead of about a million links (~1 s of a 5 s build).
Without the cache (AGENT_ACCESS_CACHE_DIR=off) nothing is recorded and everything is checked.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agent_contract.artifacts import Artifact
from content_builder.cache import EntryCache

NOTE = "proven"


@dataclass(frozen=True)
class Proven:
    published: bytes  # published_digest of the build's files
    entries: frozenset[str]  # entry_identity of every entry, whose links all resolved
    files: frozenset[str]  # sha256 of every other file, whose links all resolved
    coverage: tuple[str, str]  # sha256 of the discovery document and the OpenAPI description

    def still(self, published: bytes) -> Proven | None:
        """What still holds for a build that publishes the paths digested as `published`."""
        return self if published == self.published else None


def published_digest(artifacts: Iterable[Artifact]) -> bytes:
    """The published paths, in the build's order (a deterministic function of the site: a
    reordering only costs a full check)."""
    digest = hashlib.sha256()
    for artifact in artifacts:
        digest.update(artifact.path.encode() + b"\n")
    return digest.digest()


def entry_identity(cache_key: str, stamp: tuple[str, str]) -> str:
    """An entry's identity: the key its rendered pieces are cached by (which ends in the
    64 hex digits of its bytes' SHA-256) and their lock stamp (a timestamp and a version,
    whose patterns hold no NUL), joined by NUL: no two differ and join alike."""
    return "\0".join((cache_key, *stamp))


def recalled(cache: EntryCache, published: bytes) -> Proven | None:
    """What the last build that passed proved, if it published the same paths."""
    found = cache.read_note(NOTE)
    return found.still(published) if isinstance(found, Proven) else None


def settled(proven: Proven | None, identities: Sequence[str | None]) -> list[bool]:
    """Per entry, whether its links are proven (an entry without a cache key never is)."""
    if proven is None:
        return [False] * len(identities)
    known = proven.entries
    return [identity is not None and identity in known for identity in identities]


def record(
    cache: EntryCache,
    published: bytes,
    identities: Sequence[str | None],
    other_files: Iterable[Artifact],
    coverage: tuple[str, str],
) -> None:
    """What this build proved, for the next: called only once every check has passed."""
    if None in identities:
        return  # an entry without a cache key (the cache off): nothing to name it by
    cache.write_note(
        NOTE,
        Proven(
            published,
            frozenset(identities),  # type: ignore[arg-type]
            frozenset(artifact.sha256 for artifact in other_files),
            coverage,
        ),
    )
