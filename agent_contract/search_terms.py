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
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import lru_cache
from itertools import filterfalse
from typing import Any

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


#: The longest token taken for a word: longer ones are concatenations (minified names,
#: encoded data). English words stop near 20 letters; an API's class names reach 30
#: ("ResponseHeadersPolicyCorsConfig" is 31) and are searched for by name.
LONGEST_WORD = 32

# Not a word (issue 23): any letter four times running ("xxxxxxxx", "oooo"), or a token
# that is one consonant three times or more ("xxx", "zzz"; "aaa", "ieee" and identifiers
# joined over a double letter, "classsetup", "calllist", are words); hex of 7+
# characters with a digit and a letter (hashes, short git hashes); four or more changes
# between letters and digits ("a1b2c", base64: "agvsbg8gd29ybgq"; "i18n", "k8s",
# "utf8mb4" have two or three); eight consonants running, y counted as a vowel (random
# letters; "threadinghttpserver" and "xmlrpclib" have seven). Each is looked for in a
# folded token (lowercase ASCII letters and digits).
_FOUR_LETTERS = re.compile(r"([a-z])\1\1\1")
_ONE_CONSONANT = re.compile(r"([b-df-hj-np-tv-z])\1{2,}")
_HEX = re.compile(r"(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,}")
_ALTERNATING = re.compile(r"(?:[a-z]+[0-9]+){2}[a-z]|(?:[0-9]+[a-z]+){2}[0-9]")
_NO_VOWEL = re.compile(r"[b-df-hj-np-tv-xz]{8,}")


def is_word(token: str) -> bool:
    """Whether a folded token can be a word someone searches for (see the patterns
    above): hashes, encoded data, placeholders and long concatenations are not. Digits
    alone are numbers ("404", "2024"), decided by `_is_term`, unless over-long."""
    if len(token) > LONGEST_WORD:
        return False
    if token.isdigit():
        return True
    return not (
        _FOUR_LETTERS.search(token)
        or _ONE_CONSONANT.fullmatch(token)
        or _HEX.fullmatch(token)
        or _ALTERNATING.search(token)
        or _NO_VOWEL.search(token)
    )


def _is_term(token: str) -> bool:
    if token in STOP_WORDS or token in GENERIC_WORDS:
        return False
    if token.isdigit():
        return 3 <= len(token) <= LONGEST_WORD  # "404", "2024" carry meaning; "42" is noise
    return len(token) >= 2 and is_word(token)


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
        len(parts) <= _MOST_COMPOUND_PARTS
        and len(joined) <= _LONGEST_COMPOUND
        and all(part.isascii() and part.isalnum() and is_word(part) for part in parts)
        and not joined.isdigit()
    ):
        return joined
    return None


#: A compound of more parts is a path or a host ("ghcr.io/astral-sh/uv" ->
#: "ghcrioastralshuv"), not a word people type as one: its parts are words of their own.
_MOST_COMPOUND_PARTS = 3
#: ... and a joined form longer than this is no word people type as one.
_LONGEST_COMPOUND = 24


# Every compound holds a joiner between two letters or digits: found by the joiner and
# the character after it, one pattern per joiner (a regex scan for a literal is 10x
# faster than one for a character class, let alone one starting with a lookbehind), the
# character before checked apart.
_JOINERS_BEFORE_ALNUM = tuple(
    (joiner, re.compile(re.escape(joiner) + r"(?=[0-9A-Za-z])")) for joiner in "-./"
)
_ASCII_ALNUM = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
# A character that `fold` may change other than by lowercasing (non-ASCII, not a space).
_NOT_ASCII = re.compile(r"[^\x00-\x7f\s]")
_NOT_ASCII_AT_ALL = re.compile(r"[^\x00-\x7f]")
_ASCII_BYTES = bytes(range(128))
_FEW_CHARACTERS = 8  # more distinct ones (a text in Greek, say): one regex scan instead
_NON_SPACE_RUN = re.compile(r"\S*")
_TOKEN = re.compile(r"\S+")
# _SPLIT as a translation, for ASCII text: str.translate + str.split beat a regex split 2x.
_NON_TERM_TO_SPACE = str.maketrans({chr(c): " " for c in range(128) if _SPLIT.match(chr(c))})


def _token_spans(text: str, positions: Iterable[int]) -> list[tuple[int, int]]:
    """The spans of the whitespace-separated tokens of `text` at `positions` (ascending,
    none of them whitespace), each token once, in order."""
    spans: list[tuple[int, int]] = []
    end = 0
    backwards = ""
    for at in positions:
        if at < end:
            continue  # in the token found last
        if not backwards:
            backwards = text[::-1]
        start = len(text) - _NON_SPACE_RUN.match(backwards, len(text) - at).end()
        end = _NON_SPACE_RUN.match(text, at).end()
        spans.append((start, end))
    return spans


def _joiner_positions(text: str) -> Iterator[list[int]]:
    """Per joiner in `text`, where it stands between two ASCII letters or digits."""
    for joiner, pattern in _JOINERS_BEFORE_ALNUM:
        if joiner in text:
            yield [
                at
                for at in map(_match_start, pattern.finditer(text))
                if at and text[at - 1] in _ASCII_ALNUM
            ]


def _match_start(match: re.Match[str]) -> int:
    return match.start()


def _not_ascii_positions(text: str) -> list[int]:
    """Where `text` has a character other than ASCII that is not whitespace. Such
    characters are few and far between in most texts: they are listed in C (UTF-8 less
    its ASCII bytes, 4x faster than a regex scan), then looked for one by one."""
    others = set(
        text.encode("utf-8", "surrogatepass")
        .translate(None, _ASCII_BYTES)
        .decode("utf-8", "surrogatepass")
    )
    if len(others) > _FEW_CHARACTERS:
        return [match.start() for match in _NOT_ASCII.finditer(text)]
    positions = []
    for char in others:
        if not char.isspace():
            at = text.find(char)
            while at >= 0:
                positions.append(at)
                at = text.find(char, at + 1)
    positions.sort()
    return positions


def _ascii_fold(token: str) -> str:
    """`fold(token)` for `Tokenizer.fold`: its whitespace-separated parts that are not
    ASCII replaced by their words (what `words` and `compounds` make of them)."""
    return " ".join(
        part if part.isascii() else " ".join(filter(None, _SPLIT.split(part)))
        for part in fold(token).split()
    )


class _Memo(dict[str, Any]):
    """A dict that computes a missing value once: `memo[key]` is `function(key)`, and
    `map(memo.__getitem__, keys)` stays in C for the keys already seen."""

    def __init__(self, function: Callable[[str], Any]) -> None:
        super().__init__()
        self._function = function

    def __missing__(self, key: str) -> Any:
        value = self[key] = self._function(key)
        return value


@dataclass
class Tokens:
    """What a tokenizer found in a group of texts: their raw tokens (in order, noise
    included), the group's distinct words and compounds and, when counted, how often
    each occurs (a compound once); `words` is then the keys of `counts`, compounds too."""

    text: str  # the term text: folded, anything but ASCII letters and digits a space
    tokens: list[str]
    words: AbstractSet[str]
    compounds: set[str]
    counts: dict[str, int] | None = None


class Tokenizer:
    """`words` and `compounds` of many texts, with the per-word work done once per word.

    A site's vocabulary is small and its word count is not: at 10,000 entries the index
    sees about 13 million tokens but only tens of thousands of distinct ones. Splitting,
    lowercasing, counting and de-duplicating stay whole-text operations (in C); folding a
    non-ASCII token, deciding whether a token is a term, finding a compound and stemming
    are done once per distinct token, in memos that last as long as the tokenizer. Every
    rule works within one whitespace-separated token, so the results are exactly those of
    `words(text)`, `compounds(text)` and `stem(word)`. `drop` removes spans (such as
    URLs) that never cross whitespace.

    Equal terms of different texts come out as one string object (the first one seen),
    which a pickle of many entries' terms then stores once.
    """

    def __init__(self, drop: re.Pattern[str] | None = None) -> None:
        self._drop = drop
        self._folded = _Memo(_ascii_fold)
        self._term = _Memo(self._new_token)  # token -> itself if a term, else ""
        self._noise: set[str] = set()
        self._compound = _Memo(self._new_compound)  # "" for a token that is none
        self._stems = _Memo(stem)
        self._other_stem: dict[str, str] = {}  # a term whose stem is another word -> stem

    def fold(self, text: str) -> str:
        """`text` folded, in ASCII: each whitespace-separated token as `fold` makes it,
        except that a folded token with characters other than ASCII (which split words
        and make no compound) has its words instead; any whitespace is a space. Words,
        their order and compounds are those of `fold(text)`."""
        if text.isascii():
            return text.lower()
        pieces = []
        done = 0
        for start, end in _token_spans(text, _not_ascii_positions(text)):
            pieces += (text[done:start].lower(), self._folded[text[start:end]])
            done = end
        pieces.append(text[done:].lower())
        folded = "".join(pieces)
        # What is left is whitespace other than ASCII's, which only separates tokens.
        return folded if folded.isascii() else _NOT_ASCII_AT_ALL.sub(" ", folded)

    def scan(self, texts: list[str], counted: bool = False) -> Tokens:
        """The group's tokens, words and compounds; with `counted`, their counts."""
        text = texts[0] if len(texts) == 1 else "\n".join(texts)
        if self._drop is not None:
            text = self._drop.sub(" ", text)
        folded = self.fold(text)
        term_text = folded.translate(_NON_TERM_TO_SPACE)
        tokens = term_text.split()
        term = self._term.__getitem__
        counts: dict[str, int] | None = None
        words: AbstractSet[str]
        if counted:
            raw = Counter(tokens)
            # Terms keyed by their one object; every noise token onto "", then dropped.
            counts = dict(zip(map(term, raw), raw.values(), strict=True))
            counts.pop("", None)
            words = counts.keys()
        else:
            words = set(map(term, set(tokens)))
            words.discard("")
        compounds: set[str] = set()
        for positions in _joiner_positions(folded):
            compounds.update(map(self._compound.__getitem__, _spans_text(folded, positions)))
        compounds.discard("")
        if counts is not None:
            for joined in compounds.difference(counts):
                counts[joined] = 1
        return Tokens(term_text, tokens, words, compounds, counts)

    def _new_token(self, token: str) -> str:
        if not _is_term(token):
            self._noise.add(token)
            return ""
        self._learn_stem(token)
        return token

    def _learn_stem(self, term: str) -> None:
        base = self._stems[term]
        if base != term:
            self._other_stem[term] = base

    def _new_compound(self, token: str) -> str:
        joined = _compound(token)
        if joined is None:
            return ""
        self._learn_stem(joined)
        return joined

    def ordered(self, found: Tokens) -> list[str]:
        """The group's words in order, then its compounds sorted (what `acronym_terms`
        reads phrases from)."""
        return [*filterfalse(self._noise.__contains__, found.tokens), *sorted(found.compounds)]

    def acronym_terms(self, found: AbstractSet[str], groups: Sequence[Tokens]) -> set[str]:
        """`acronym_terms(found, words)` where `words` is each group's `ordered` words, one
        group after another. The phrases are looked for in the groups' term texts and
        compounds (`phrase_in_term_text`), not in a list of every word."""
        if any(not _is_term(joined) for group in groups for joined in group.compounds):
            # A compound such as "a.m" -> "am" would pass for a stop word: the long way.
            return acronym_terms(found, lambda: [w for g in groups for w in self.ordered(g)])
        text: str | None = None

        def has_phrase(_: str, in_order: tuple[str, ...]) -> bool:
            nonlocal text
            if text is None:
                pieces = [part for g in groups for part in (g.text, *sorted(g.compounds))]
                text = " " + " ".join(pieces) + " "
            return phrase_in_term_text(text, in_order)

        return _acronym_terms(found, has_phrase)

    def counts(self, found: Tokens) -> dict[str, int]:
        """How often each of the group's words occurs, and each compound once: the
        counts `scan` made (not a copy) when it counted."""
        if found.counts is not None:
            return found.counts
        counted = dict(Counter(filterfalse(self._noise.__contains__, found.tokens)))
        for joined in found.compounds.difference(counted):
            counted[joined] = 1
        return counted

    def stem(self, word: str) -> str:
        """`stem(word)`, remembered."""
        return self._stems[word]

    def stems(self, words: Iterable[str]) -> set[str]:
        """`stem` of each word."""
        return set(map(self._stems.__getitem__, words))

    def add_stem_counts(self, counts: dict[str, int]) -> None:
        """Count each word's occurrences for its stem too ("deploying" -> "deploy"). The
        words are terms this tokenizer found."""
        other = self._other_stem
        for base, count in [(other[word], n) for word, n in counts.items() if word in other]:
            counts[base] = counts.get(base, 0) + count


def _spans_text(text: str, positions: Iterable[int]) -> Iterator[str]:
    return (text[start:end] for start, end in _token_spans(text, positions))


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


#: Words that `words` drops for what they are, not for their shape (`_is_term`).
_NOISE_WORDS = STOP_WORDS | GENERIC_WORDS


def is_phrase_noise(token: str) -> bool:
    """Whether a token of term text (ASCII letters and digits) is one that `words` drops
    and that does not break a phrase: one character, two digits, a stop or generic word.
    (A token dropped for its shape, a hash say, does break it.)"""
    return len(token) == 1 or (len(token) == 2 and token.isdigit()) or token in _NOISE_WORDS


def phrase_in_term_text(text: str, phrase: tuple[str, ...]) -> bool:
    """Whether the words of `phrase` follow one another in `text` (term text: tokens of
    ASCII letters and digits between spaces, a space first and last), with nothing but
    phrase noise between them. Each occurrence of the first word is found in C, then
    the tokens after it read one by one; the first match of each next word is the one
    to take (a later one could only follow noise the earlier one is part of). (A regex,
    the noise an alternation of 200 words repeated between each two words, took 4 ms to
    compile per acronym: ~2% of a small site's build.)"""
    first = " " + phrase[0] + " "
    at = text.find(first)
    while at >= 0:
        following = _TOKEN.finditer(text, at + len(first) - 1)
        for word in phrase[1:]:
            token = next(following, None)
            while token is not None and token[0] != word and is_phrase_noise(token[0]):
                token = next(following, None)
            if token is None or token[0] != word:
                break
        else:
            return True
        at = text.find(first, at + 1)
    return False


# Per acronym: its two forms, the words of its expansion, the expansion as a phrase of
# words (text, and the words in order).
_ACRONYM_FORMS = [
    (
        acronym,
        acronym + "s",
        frozenset(expansion),
        " " + " ".join(expansion) + " ",
        tuple(expansion),
    )
    for acronym, expansion in ACRONYMS.items()
]


def acronym_terms(found: set[str], text_words: list[str] | Callable[[], list[str]]) -> set[str]:
    """The acronyms whose expansion appears as a phrase, and the expansions of the acronyms
    that appear (plural acronyms such as "llms" count). `found` holds every word of
    `text_words` (which may be given as a function, called only when a phrase is possible)."""
    joined: str | None = None

    def has_phrase(phrase: str, _: tuple[str, ...]) -> bool:
        nonlocal joined
        if joined is None:
            in_order = text_words() if callable(text_words) else text_words
            joined = " " + " ".join(in_order) + " "
        return phrase in joined

    return _acronym_terms(found, has_phrase)


def _acronym_terms(
    found: AbstractSet[str], has_phrase: Callable[[str, tuple[str, ...]], bool]
) -> set[str]:
    extra: set[str] = set()
    for acronym, plural, expansion, phrase, in_order in _ACRONYM_FORMS:
        if acronym in found or plural in found:
            extra |= expansion
        # The phrase test only where every word of it is there (`found` holds them all).
        if expansion.issubset(found) and has_phrase(phrase, in_order):
            extra |= {acronym, plural}
    return extra
