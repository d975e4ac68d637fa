"""The sharded search index: its format (search_query.py: the one query procedure over it).

`search-index.json` is one file, so every query downloads every entry's keywords, and a
large site's entries must share a byte budget. Beside it (Pagefind's idea, in plain
JSON for a GET-only agent): a small **term map**, **shards** of postings and compact
**entry files**.

1. GET /api/v1/search/terms.json. Its `shards` is a sorted list of `[first_term, name]`:
   the shard holding a term is the last one whose first term is <= the term.
2. For each query word (lowercased, split on anything but a-z and 0-9), GET that shard
   (`shard_url` with `{shard}` replaced by its name). A word of one of the term map's
   `synonyms` groups (declared by the site's owner) is looked up as each word of its
   group too, and an entry counts the best of them, as one word. `terms[word]` is
   `{"df": entries holding the word, "postings": [[weight, key, key, ...], ...], "more":
   [[weight, name, count], ...]}`: groups of entry keys by weight, highest weight first;
   `more`, when present, names the shards holding the rest, highest weights first: per
   shard, the highest weight of the word's postings there and how many of its keys it
   holds (`terms[word].postings` there: one or more groups; a shard may hold other words'
   postings too).
3. Score each entry: the sum over the words it holds of weight * idf, idf =
   ln(1 + (entries - df + 0.5) / (df + 0.5)), times (the query words it holds / the
   query words found in the index) ** COORDINATION; best first.
4. For each hit, GET the entry file `entries_url` with `{prefix}` replaced by the first
   `prefix_length` characters of its key: `entries[key]` is {id, title, url, api_url,
   description}.

Shards are named by their content (a new version is a new name, cached for a year);
the term map and entry files keep their names and are short-lived. A shard that answers
404 was replaced by a publish since the term map was read: read the term map again.

Every entry keeps every term (its title, description, keywords, headings and prose, with
stems and regular inflections): there is no keyword budget per entry. `search_query.query`
is the procedure with the refinements the project's client and MCP server use: stop words
dropped, each word also looked up by its stem and word family, and a word's `more`
postings read only when they could change the page of results asked for.
"""

from __future__ import annotations

import hashlib
import math
from bisect import bisect_right
from collections.abc import Iterable

from agent_contract import paths

#: The format of the sharded index (the term map's `version`).
FORMAT_VERSION = "1"

TERM_MAP_PATH = paths.SEARCH_TERMS

#: Weight of a term by where the entry has it (BM25F's field weights): its title says
#: most, then what its author chose to say about it (description, keywords, headings),
#: then the forms derived from those, then its prose (`body_weight`).
TITLE_WEIGHT = 10
SALIENT_WEIGHT = 8  # description, authored keywords, headings
STEM_WEIGHT = 6  # stems of those words, acronyms both ways
INFLECTION_WEIGHT = 4  # regular forms of those stems the entry does not use itself
#: Prose: BM25's term-frequency saturation with length normalisation, k1 and b as
#: Robertson and Zaragoza recommend (b lowered: a long page is often long because it
#: covers more, not because it repeats), scaled so that a word repeated in a short page
#: nears SALIENT_WEIGHT, rounded to an integer of at least 1. The length is against a
#: fixed reference, not the site's average: a weight then depends on its own entry
#: alone, so an edit rewrites only the shards of that entry's terms.
BODY_K1 = 1.2
BODY_B = 0.5
BODY_REFERENCE_LENGTH = 400  # words of prose
BODY_TOP = SALIENT_WEIGHT
#: Coordination: an entry's sum is multiplied by (its query words / the query's words
#: the index holds) ** COORDINATION, so that an entry answering every word of a question
#: beats one that holds a single rare word many times (Lucene's classic `coord`,
#: sharpened: measured in docs/decisions.md, issue 25's recall). Written in PROCEDURE.
COORDINATION = 2

#: A term's postings kept in its shard, best first; the rest in its `more` shards (a
#: large weight's group alone, small ones together), each read only when it could change
#: a page of results (a common word's idf is near 0).
HEAD_POSTINGS = 32

#: The most a query reads of `more` shards, in postings (a key and its quotes and comma
#: each): past it, the page is answered from what was read (`Results.exact` False). The
#: common words of a large site have tens of thousands of postings per weight; their idf
#: is small, so they rarely change the first results, and never the words' own shards.
MORE_POSTINGS_BUDGET = 16_000

#: Entry keys: the first hex digits of sha256(id), at least this many, more when two
#: entries of the site would share one.
SHORTEST_KEY = 6
#: Entries per entry file the prefix length aims at (at most; 16 prefixes per digit).
ENTRIES_PER_FILE = 8


#: The procedure in one paragraph: the term map's `procedure`, and the discovery document's.
PROCEDURE = (
    "Lowercase the query and split it on anything but a-z and 0-9. For each word, GET "
    "shard_url with {shard} = the name of the last shard whose first word is <= the word; "
    "its terms[word].postings are groups [weight, key, key, ...], highest weight first. "
    "A word in one of the term map's synonyms groups (or a regular form of one: a plural, "
    "-ing, -ed) is also looked up as each other word of its group; per key, the word "
    "counts once, with its best. "
    "Score each key: the sum over words of weight * ln(1 + (entries - df + 0.5) / (df + "
    f"0.5)), times (words it holds / words found) ** {COORDINATION}. For the best keys, "
    "GET entries_url with {prefix} = the key's first prefix_length characters: "
    "entries[key] has id, title, url, api_url and description. "
    "A word's `more` lists [weight, shard, count] holding the rest of its postings. A shard "
    "answering 404 was replaced: read the term map again."
)


def curl_example(base_url: str) -> str:
    """A worked example with curl and jq, for llms.txt and the README: one word's best
    entry."""
    return "\n".join(
        [
            f"BASE={base_url}",
            "WORD=cache",
            f'curl -s "$BASE{paths.SEARCH_TERMS}" > terms.json',
            "SHARD=$(jq -r --arg w \"$WORD\" '[.shards[] | select(.[0] <= $w)] | last | .[1]' "
            "terms.json)",
            'curl -s "$BASE/api/v1/search/shards/$SHARD.json" > shard.json',
            "jq -c --arg w \"$WORD\" '.terms[$w].postings[0]' shard.json   # [weight, key, ...]",
            "KEY=$(jq -r --arg w \"$WORD\" '.terms[$w].postings[0][1]' shard.json)",
            "P=$(jq .prefix_length terms.json)",
            'curl -s "$BASE/api/v1/search/entries/${KEY:0:$P}.json" | jq --arg k "$KEY" '
            "'.entries[$k]'",
        ]
    )


def entry_key(entry_id: str, length: int) -> str:
    return hashlib.sha256(entry_id.encode("utf-8")).hexdigest()[:length]


def key_length(entry_ids: Iterable[str]) -> int:
    """The shortest key length >= SHORTEST_KEY at which every entry's key is its own."""
    return _unique_length([hashlib.sha256(i.encode("utf-8")).hexdigest() for i in entry_ids])


def entry_keys(entry_ids: Iterable[str]) -> list[str]:
    """Every entry's key at `key_length`, in order (each id hashed once, not twice)."""
    digests = [hashlib.sha256(i.encode("utf-8")).hexdigest() for i in entry_ids]
    length = _unique_length(digests)
    return [digest[:length] for digest in digests]


def _unique_length(digests: list[str]) -> int:
    length = SHORTEST_KEY
    while len({digest[:length] for digest in digests}) < len(digests):
        length += 1
    return length


def prefix_length(entries: int) -> int:
    """Hex digits of an entry key that name its entry file: at most ENTRIES_PER_FILE
    entries per file on average (16 files at one digit, 256 at two, ...)."""
    length = 1
    while entries > ENTRIES_PER_FILE * 16**length:
        length += 1
    return length


def body_weight(count: int, length: int) -> int:
    """The weight of a word `count` times in an entry's prose of `length` words."""
    norm = BODY_K1 * (1 - BODY_B + BODY_B * length / BODY_REFERENCE_LENGTH)
    return max(1, round(BODY_TOP * count / (count + norm)))


def body_weights(counts: Iterable[int], length: int) -> bytes:
    """`body_weight` of each count, one byte each, in a prose of `length` words: worked out
    once per distinct count (most of an entry's words occur once or twice; 160 calls per
    entry were 10% of rendering one)."""
    counts = tuple(counts)
    weight = {count: body_weight(count, length) for count in set(counts)}
    return bytes(map(weight.__getitem__, counts))


def coordination(held: int, words: int) -> float:
    """The factor of an entry holding `held` of the query's `words` (those the index
    holds)."""
    return (held / words) ** COORDINATION if words else 0.0


def idf(df: int, entries: int) -> float:
    """BM25's idf: always positive, near 0 for a word nearly every entry holds."""
    return math.log(1 + (entries - df + 0.5) / (df + 0.5))


def shard_for(term: str, firsts: list[str]) -> int:
    """The index of the shard holding `term`: the last whose first term is <= it."""
    return max(bisect_right(firsts, term) - 1, 0)
