"""The search index's fast paths agree with the plain definitions they stand for.

`Tokenizer` (used by the build) does per-distinct-word work once and whole-text work in
C; `words`, `compounds`, `fold` and `stem` (which the agent client also uses) are the
definitions. Any text must give the same words, compounds, counts and word order both
ways; and the per-entry terms must give the same keywords after a trip through pickle,
as the build cache stores them.
"""

from __future__ import annotations

import pickle
import re
from collections import Counter

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agent_contract import search_terms
from agent_contract.search_terms import Tokenizer, acronym_terms, compounds, stem, words
from content_builder.render import indexes

# Characters that exercise every rule: joiners, edge punctuation, ASCII and other
# whitespace, accents and combining marks, characters that fold to several or to ASCII
# punctuation (fullwidth solidus -> "/", diaeresis -> " "), casefold-only letters,
# letters with no fold.
_TRICKY = (
    "aeiouxyzAEXZ0123456789-./,;:!?()[]{}<>\"'`*_#@&%+= \t\n\r\x0b\x0c\x1c\x1f\x85\xa0"
    "\u2028\u3000éÉèüÖçñßİ\u0131ﬁ\u210cΣ\u03c3ς\uff0f¨\u0301\u0308\u2019“”øŁ½²①ǅ🙂\ud83d"
)
_WORDS = ["mcp", "model", "context", "protocol", "api", "llms", "agents", "deploying",
          "token-based", "llms.txt", "sha-256", "on-site", "https://x.example/a-b", "the",
          "of", "Café-Bar", "naïve/ø-x", "e.g.", "1.5", "a-n", "them-selves", "ones", "a.m.",
          "content", "delivery", "network", "CDN", "a", "42", "7", "instead", "Model-Context",
          "search engine optimization", "model context protocol"]  # fmt: skip
_TEXT = st.lists(
    st.one_of(st.sampled_from(_WORDS), st.text(alphabet=_TRICKY, max_size=12)), max_size=12
).map(" ".join)
_URL = re.compile(r"https?://\S+")


def _reference(texts: list[str], drop: re.Pattern[str] | None) -> tuple[list[str], set[str]]:
    kept = [drop.sub(" ", text) if drop else text for text in texts]
    in_order = [word for text in kept for word in words(text)]
    return in_order, set().union(*map(compounds, kept))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups=st.lists(st.lists(_TEXT, max_size=4), min_size=1, max_size=4), drop=st.booleans())
def test_the_tokenizer_finds_what_words_and_compounds_define(
    groups: list[list[str]], drop: bool
) -> None:
    tokenizer = Tokenizer(drop=_URL if drop else None)  # one tokenizer: its memos carry over
    for texts in groups:
        in_order, joined = _reference(texts, _URL if drop else None)
        expected = dict(Counter(in_order))
        for compound in joined:
            expected.setdefault(compound, 1)
        with_stems = dict(expected)
        for word, count in expected.items():
            if stem(word) != word:
                with_stems[stem(word)] = with_stems.get(stem(word), 0) + count
        for counted in (False, True):
            found = tokenizer.scan(texts, counted=counted)
            assert set(found.words) == set(in_order) | (joined if counted else set())
            assert found.compounds == joined
            assert tokenizer.ordered(found) == in_order + sorted(joined)
            assert tokenizer.stems(found.words) == {stem(word) for word in found.words}
            counts = tokenizer.counts(found)
            assert counts == expected
            tokenizer.add_stem_counts(counts)
            assert counts == with_stems


# Phrase words with noise between them ("the", "a", "42": dropped words do not break a
# phrase), compounds that look like stop words ("a.m." -> "am": they do), forms that are
# not the phrase's words ("models").
_PHRASE_TEXT = st.lists(
    st.sampled_from(["model", "context", "protocol", "the", "a", "42", "a.m.", "models"]),
    max_size=6,
).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(
    groups=st.lists(st.lists(st.one_of(_PHRASE_TEXT, _TEXT), max_size=2), min_size=3, max_size=3)
)
@example(groups=[["Model the"], ["a context", "42 protocol"], []])
@example(groups=[["model a.m."], ["context protocol"], []])
@example(groups=[["models context"], ["protocol"], ["content delivery network"]])
def test_the_tokenizer_finds_acronym_phrases_as_acronym_terms_does(
    groups: list[list[str]],
) -> None:
    tokenizer = Tokenizer()
    found = [tokenizer.scan(texts) for texts in groups]
    in_order = [word for group in found for word in tokenizer.ordered(group)]
    every_word = set(in_order)
    assert tokenizer.acronym_terms(every_word, found) == acronym_terms(every_word, in_order)


def _phrase_pattern(phrase: tuple[str, ...]) -> re.Pattern[str]:
    """What the tokenizer looked phrases up with before issue 22: a regex over the term
    text, the noise tokens (one character, two digits, a stop or generic word) an
    alternation between each two words."""
    noise_words = search_terms.STOP_WORDS | search_terms.GENERIC_WORDS
    noise = (
        "(?:[0-9a-z]|[0-9][0-9]|"
        + "|".join(sorted(noise_words, key=lambda word: (-len(word), word)))
        + ")(?![0-9a-z])"
    )
    return re.compile(
        " " + phrase[0] + "".join(f"(?: +{noise})* +{word}" for word in phrase[1:]) + "(?![0-9a-z])"
    )


_PHRASES = [tuple(words) for words in search_terms.ACRONYMS.values()] + [
    ("model", "the", "context"),  # a phrase word that is noise itself
    ("a", "model"),
    ("model",),
]
_OTHER_TOKENS = ["the", "of", "a", "7", "42", "404", "x", "models", "an", "1a", "d00d0001"]
_TERM_TOKENS = st.sampled_from(
    [*sorted({word for phrase in _PHRASES for word in phrase}), *_OTHER_TOKENS]
)


@settings(max_examples=500, deadline=None)
@given(tokens=st.lists(_TERM_TOKENS, max_size=14), phrase=st.sampled_from(_PHRASES),
       spaces=st.sampled_from([" ", "  "]))  # fmt: skip
@example(tokens=["model", "the", "a", "context", "42", "protocol"], phrase=_PHRASES[0], spaces=" ")
@example(tokens=["model", "the", "context"], phrase=("model", "the", "context"), spaces=" ")
def test_a_phrase_is_found_in_term_text_as_the_regex_found_it(
    tokens: list[str], phrase: tuple[str, ...], spaces: str
) -> None:
    text = " " + spaces.join(tokens) + " "
    expected = _phrase_pattern(phrase).search(text) is not None
    assert search_terms.phrase_in_term_text(text, phrase) == expected


@given(text=st.text(alphabet=_TRICKY, max_size=40))
def test_the_tokenizers_fold_keeps_the_words_of_fold(text: str) -> None:
    folded = Tokenizer().fold(text)
    assert folded.isascii()
    assert words(folded, folded=True) == words(text)
    assert compounds(folded, folded=True) == compounds(text)


def test_entry_terms_give_the_same_keywords_after_a_pickle_round_trip() -> None:
    """The build cache stores each entry's terms pickled and the next build ranks them
    against fresh ones: the same keywords either way, and equal terms are one object in
    the pickle (what keeps it small and quick to load)."""
    tokenizer = Tokenizer(drop=_URL)
    entries = [
        indexes._entry_terms(
            [f"Deploying agents {n}"],
            ["The MCP manifest", "llms.txt and SHA-256"],
            [f"Agents deploy the model context protocol server {n} times. " * (n + 1)],
            tokenizer,
        )
        for n in range(40)
    ]
    data = pickle.dumps(entries, protocol=pickle.HIGHEST_PROTOCOL)
    loaded = pickle.loads(data)
    assert loaded == entries
    for fixed_bytes in (0, indexes.SEARCH_INDEX_BYTES - 40 * 60):  # the body reached, or not
        assert indexes._keywords(loaded, fixed_bytes) == indexes._keywords(entries, fixed_bytes)
    assert data.count(b"deploying") == 1
    assert len(data) < 40 * 400
