"""Tokenization for the client-side search index.

A naive client lowercases the query, splits it on non-alphanumerics and looks for
exact matches in `keywords`. So the index carries, for every word of an entry, the
Unicode-folded surface form and a simple stem ("agents" -> "agent", "deploying" ->
"deploy"), and leaves out stop words, which would match every entry.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

_SPLIT = re.compile(r"[^0-9a-z]+")

STOP_WORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing done down during
    each either etc every few for from further get gets got had has have having he her
    here hers herself him himself his how i if in into is it its itself just let like may
    me might more most much must my myself no nor not now of off on once one only or other
    our ours ourselves out over own per same shall she should so some such than that the
    their theirs them themselves then there these they this those through to too under
    until up upon us very via was we were what when where whether which while who whom
    whose why will with within without would yes yet you your yours yourself yourselves
    """.split()  # noqa: SIM905 - a word list reads best as text
)

#: Words so general that, in a keyword index, they only make long documents win ties
#: ("what comes back", "how to make"): left out of `keywords`, like stop words.
GENERIC_WORDS = frozenset(
    """
    back came come comes coming even ever instead kind lot lots make makes making made
    never often really still take takes taking taken thing things want wants way ways well
    """.split()  # noqa: SIM905 - a word list reads best as text
)


def fold(text: str) -> str:
    """Lowercase and strip accents: "Café" -> "cafe", "ﬁle" -> "file"."""
    if text.isascii():
        return text.lower()  # the common case, and the hot path of every build
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _is_term(token: str) -> bool:
    if token in STOP_WORDS or token in GENERIC_WORDS:
        return False
    if token.isdigit():
        return len(token) >= 3  # "404", "2024" carry meaning; "1" and "42" are noise
    return len(token) >= 2


def words(text: str, folded: bool = False) -> list[str]:
    """Folded tokens split on non-alphanumerics, in order, stop words and noise dropped."""
    return [token for token in _SPLIT.split(text if folded else fold(text)) if _is_term(token)]


_JOINERS = re.compile(r"[-./]")
_EDGE_PUNCTUATION = ".,;:!?()[]{}<>\"'`*"


def compounds(text: str, folded: bool = False) -> set[str]:
    """Hyphenated and dotted words written as one: "SHA-256" -> "sha256", "on-site" ->
    "onsite", "llms.txt" -> "llmstxt", since people type them both ways."""
    found = (_compound(token) for token in (text if folded else fold(text)).split())
    return {joined for joined in found if joined is not None}


def _compound(token: str) -> str | None:
    """One folded, whitespace-free token written as one word, when it is a compound."""
    token = token.strip(_EDGE_PUNCTUATION)
    if not _JOINERS.search(token):
        return None
    parts = _JOINERS.split(token)
    joined = "".join(parts)
    if (
        all(part.isascii() and part.isalnum() for part in parts)
        and len(joined) <= 24
        and not joined.isdigit()
    ):
        return joined
    return None


# Every compound holds a joiner between two letters or digits: texts without one are skipped.
_INNER_JOINER = re.compile(r"[0-9A-Za-z][-./][0-9A-Za-z]")
# _SPLIT as a translation, for ASCII text: str.translate + str.split beat a regex split 2x.
_NON_TERM_TO_SPACE = str.maketrans({chr(c): " " for c in range(128) if _SPLIT.match(chr(c))})


def _tokens_around(text: str, pattern: re.Pattern[str]) -> list[str]:
    """The whitespace-separated tokens of `text` that hold a match of `pattern`."""
    found: dict[int, str] = {}
    for match in pattern.finditer(text):
        start = match.start()
        while start > 0 and not text[start - 1].isspace():
            start -= 1
        if start in found:
            continue
        end = match.end()
        while end < len(text) and not text[end].isspace():
            end += 1
        found[start] = text[start:end]
    return list(found.values())


@dataclass
class Tokens:
    """What a tokenizer found in a group of texts: each text's raw tokens (in order,
    noise included), and the group's distinct terms and compounds."""

    tokens: list[list[str]]
    words: set[str]
    compounds: set[str]


class Tokenizer:
    """`words` and `compounds` of many texts, with the per-word work done once per word.

    A site's vocabulary is small and its word count is not: at 10,000 entries the index
    sees about 13 million tokens but only tens of thousands of distinct ones. Splitting,
    lowercasing and de-duplicating stay whole-text operations (in C); folding a non-ASCII
    token, deciding whether a token is a term and stemming are done once per distinct
    token. Every rule works within one whitespace-separated token, so the results are
    exactly those of `words(fold(text))`, `compounds(text)` and `stem(word)`. `drop`
    removes spans (such as URLs) that never cross whitespace.
    """

    def __init__(self, drop: re.Pattern[str] | None = None) -> None:
        self._drop = drop
        self._folded: dict[str, str] = {}
        self._seen: set[str] = set()
        self._noise: set[str] = set()
        self._stems: dict[str, str] = {}

    def _fold(self, text: str) -> str:
        if text.isascii():
            return text.lower()
        cache = self._folded
        folded = []
        for token in text.split():
            found = cache.get(token)
            if found is None:
                found = cache[token] = fold(token)
            folded.append(found)
        return " ".join(folded)

    def scan(self, texts: list[str]) -> Tokens:
        tokens_found: list[list[str]] = []
        words_found: set[str] = set()
        compounds_found: set[str] = set()
        for text in texts:
            folded = self._fold(self._drop.sub(" ", text) if self._drop else text)
            if folded.isascii():
                tokens = folded.translate(_NON_TERM_TO_SPACE).split()
            else:
                tokens = _SPLIT.split(folded)
            tokens_found.append(tokens)
            distinct = set(tokens)
            for token in distinct - self._seen:
                self._seen.add(token)
                if not _is_term(token):
                    self._noise.add(token)
            words_found |= distinct - self._noise
            for candidate in _tokens_around(folded, _INNER_JOINER):
                if (joined := _compound(candidate)) is not None:
                    compounds_found.add(joined)
        return Tokens(tokens_found, words_found, compounds_found)

    def ordered(self, found: Tokens) -> list[str]:
        """The group's words in order, then its compounds sorted (what `acronym_terms`
        reads phrases from)."""
        noise = self._noise
        words_in_order = [
            token for tokens in found.tokens for token in tokens if token not in noise
        ]
        return words_in_order + sorted(found.compounds)

    def counts(self, found: Tokens) -> dict[str, int]:
        """How often each of the group's words occurs, and each compound once."""
        counted: Counter[str] = Counter()
        for tokens in found.tokens:
            counted.update(tokens)  # a list: counted in C
        for token in self._noise.intersection(counted):
            del counted[token]
        result = dict(counted)
        for joined in found.compounds:
            result.setdefault(joined, 1)
        return result

    def stem(self, word: str) -> str:
        """`stem(word)`, remembered."""
        found = self._stems.get(word)
        if found is None:
            found = self._stems[word] = stem(word)
        return found

    def add_stem_counts(self, counts: dict[str, int]) -> None:
        """Count each word's occurrences for its stem too ("deploying" -> "deploy")."""
        known = self._stems
        for word in counts.keys() - known.keys():
            known[word] = stem(word)
        for word, count in [(w, c) for w, c in counts.items() if known[w] != w]:
            base = known[word]
            counts[base] = counts.get(base, 0) + count


# After dropping -ing/-ed, these endings had a silent "e": creat(ing) -> create.
_RESTORE_E = ("at", "bl", "iz", "v")
# Derivational suffixes: (suffix, replacement, shortest stem kept).
_DERIVATIONS = (("ation", "ate", 3), ("tion", "t", 3), ("ment", "", 5), ("ly", "", 4))


@lru_cache(maxsize=65536)  # a site's vocabulary is small; its word count is not
def stem(word: str) -> str:
    """A small suffix stripper, so that plural, verb and noun forms share one stem.

    Deliberately simple (no dictionary): the stem only has to come out the same for
    the forms a query and the content use ("deploying", "deployed", "deployment" ->
    "deploy"), and it is published next to the surface form, never instead of it.
    """
    if len(word) <= 3 or word.isdigit():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)]
            if base[-1] == base[-2] and base[-1] not in "lsz":
                return base[:-1]  # mapping -> map
            return base + "e" if base.endswith(_RESTORE_E) else base
    for suffix, replacement, shortest in _DERIVATIONS:
        if word.endswith(suffix) and len(word) - len(suffix) >= shortest:
            return word[: -len(suffix)] + replacement
    return word


def family(word: str) -> str:
    """A key shared by a word's forms, for matching (never published): the stem without a
    final silent "e", so that "cache" and "caches" ("cach") meet, as do "create" and
    "creating"."""
    base = stem(word)
    return base[:-1] if len(base) > 4 and base.endswith("e") else base


_VOWELS = "aeiou"


@lru_cache(maxsize=65536)
def inflections(base: str) -> frozenset[str]:
    """Regular plural and verb forms of a base word: "deploy" -> deploys, deploying, deployed.

    Published for the salient words of an entry, so that a naive client whose query
    says "deploying" finds a page that says "deploy". No dictionary: a wrong form
    ("mapped" vs "maped") only costs a few bytes, a missing one costs a match.
    """
    if len(base) < 3 or base.isdigit():
        return frozenset()
    forms: set[str] = set()
    consonant_y = base.endswith("y") and base[-2] not in _VOWELS
    if base.endswith(("s", "x", "z", "ch", "sh")):
        forms.add(base + "es")
    elif consonant_y:
        forms.add(base[:-1] + "ies")
    else:
        forms.add(base + "s")
    if base.endswith("e") and not base.endswith("ee"):
        forms |= {base[:-1] + "ing", base + "d"}
    elif consonant_y:
        forms |= {base + "ing", base[:-1] + "ied"}
    else:
        forms |= {base + "ing", base + "ed"}
    return frozenset(forms)


#: Acronyms agents type, with their expansions. An entry holding either gets both.
ACRONYMS: dict[str, tuple[str, ...]] = {
    "ai": ("artificial", "intelligence"),
    "api": ("application", "programming", "interface"),
    "cdn": ("content", "delivery", "network"),
    "cors": ("cross", "origin", "resource", "sharing"),
    "faq": ("frequently", "asked", "questions"),
    "llm": ("large", "language", "model"),
    "mcp": ("model", "context", "protocol"),
    "seo": ("search", "engine", "optimization"),
}


def acronym_terms(found: set[str], text_words: list[str] | Callable[[], list[str]]) -> set[str]:
    """The acronyms whose expansion appears as a phrase, and the expansions of the acronyms
    that appear (plural acronyms such as "llms" count). `found` holds every word of
    `text_words` (which may be given as a function, called only when a phrase is possible)."""
    extra: set[str] = set()
    joined: str | None = None
    for acronym, expansion in ACRONYMS.items():
        if acronym in found or acronym + "s" in found:
            extra |= set(expansion)
        # The phrase test only where every word of it is there (`found` holds them all).
        if all(word in found for word in expansion):
            if joined is None:
                in_order = text_words() if callable(text_words) else text_words
                joined = " " + " ".join(in_order) + " "
            if " " + " ".join(expansion) + " " in joined:
                extra |= {acronym, acronym + "s"}
    return extra
