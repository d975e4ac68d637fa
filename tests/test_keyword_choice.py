"""The search keywords chosen incrementally (render/indexes.py `_keyword_json`) are the
keywords a full recomputation (`_keywords`) chooses, byte for byte, after any sequence of
edits, additions, removals and reverts, whatever they do to the share, the number of
entries or the common terms; and the state that makes it incremental is kept by the
build cache by the cache's rules (saved only by a build that succeeded, bounded per site
folder, ignored when damaged)."""

from __future__ import annotations

import pickle
import shutil
from collections import Counter
from itertools import chain
from pathlib import Path

import pydantic_core
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from content_builder import cache as build_cache
from content_builder.render import indexes
from content_builder.render.indexes import Identity, KeywordChoice, _EntryTerms
from tests.conftest import run_cli, tree_digest

#: Few terms, so that most are held by many entries, cross the common limit as entries
#: come and go, and tie on their counts (alphabetical order decides); lengths 2 to 10, so
#: that the budget keeps some and skips others.
_VOCABULARY = (
    "ai", "api", "mcp", "cdn", "docs", "agent", "cache", "index", "search", "deploy",
    "pricing", "webhooks", "terraform", "kubernetes",
)  # fmt: skip


@st.composite
def _entry_terms(draw: st.DrawFn) -> _EntryTerms:
    """Disjoint groups drawn from the vocabulary, as `_entry_terms` makes them; or words
    of the entry's own, so that it changes the number of entries but no other's counts."""
    terms = draw(st.permutations(_VOCABULARY))
    if draw(st.integers(0, 3)) == 0:
        own = draw(st.integers(0, 10**9))
        terms = [f"{term}{own}" for term in terms]
    cuts = sorted(draw(st.lists(st.integers(0, len(terms)), min_size=5, max_size=5)))
    title, salient, stems, body, inflections, code = (
        tuple(terms[start:end]) for start, end in zip([0, *cuts], [*cuts, len(terms)], strict=True)
    )
    counts = tuple(draw(st.lists(st.integers(1, 4), min_size=len(body), max_size=len(body))))
    # The code group last (words found only in code: issue 23), in the entry's own order.
    return _EntryTerms(title, salient, stems, body, counts, inflections, code)


class _Site:
    """A site's entries as the build sees them, and the build cache's records (every
    identity's terms, as the cache keeps records of edited and removed entries)."""

    def __init__(self) -> None:
        self.entries: list[tuple[Identity, _EntryTerms]] = []
        self.records: dict[Identity, _EntryTerms] = {}
        self.made = 0

    def new(self, terms: _EntryTerms) -> tuple[Identity, _EntryTerms]:
        self.made += 1
        identity = f"faq/q{self.made}.yaml\0{self.made:064x}"
        self.records[identity] = terms
        return identity, terms


_OPERATIONS = st.sampled_from(["edit", "add", "remove", "revert", "forget", "none"])


def _fixed_bytes(entries: list[_EntryTerms], share: int, extra: int) -> int:
    """The fixed bytes that give each entry `share` bytes (plus a remainder `extra`)."""
    titles = sum(map(indexes.keyword_cost, chain.from_iterable(e.title for e in entries)))
    return indexes.SEARCH_INDEX_BYTES - titles - share * len(entries) - extra


def _operate(data: st.DataObject, site: _Site, operation: str) -> None:
    count = len(site.entries)
    if operation == "edit" and count:
        at = data.draw(st.integers(0, count - 1))
        site.entries[at] = site.new(data.draw(_entry_terms()))
    elif operation == "add":
        at = data.draw(st.integers(0, count))
        site.entries.insert(at, site.new(data.draw(_entry_terms())))
    elif operation == "remove" and count:
        del site.entries[data.draw(st.integers(0, count - 1))]
    elif operation == "revert" and count:  # an edit undone: an identity seen before
        at = data.draw(st.integers(0, count - 1))
        known = sorted(set(site.records) - {identity for identity, _ in site.entries})
        if known:
            identity = data.draw(st.sampled_from(known))
            site.entries[at] = (identity, site.records[identity])
    elif operation == "forget" and site.records:  # the cache lost a record
        del site.records[data.draw(st.sampled_from(sorted(site.records)))]


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_the_incremental_choice_is_the_full_choice_after_any_edits(data: st.DataObject) -> None:
    site = _Site()
    site.entries = [site.new(t) for t in data.draw(st.lists(_entry_terms(), max_size=8))]
    previous: KeywordChoice | None = None
    for _ in range(data.draw(st.integers(1, 8))):
        # One build after one to four operations (a pull brings many changes at once).
        for operation in data.draw(st.lists(_OPERATIONS, min_size=1, max_size=4)):
            _operate(data, site, operation)
        identities = [identity for identity, _ in site.entries]
        terms = [entry for _, entry in site.entries]
        # A binding share (small, often changing), or one past every entry's cap.
        share = data.draw(st.one_of(st.integers(-5, 70), st.just(2_000)))
        fixed = _fixed_bytes(terms, share, data.draw(st.integers(0, max(len(terms) - 1, 0))))

        choice = indexes._keyword_json(terms, identities, fixed, previous, site.records.get)

        expected = [pydantic_core.to_json(kept) for kept in indexes._keywords(terms, fixed)]
        assert choice.chosen == expected
        assert choice.frequency == Counter(
            chain.from_iterable(chain.from_iterable(map(indexes._ALL_GROUPS, terms)))
        )
        assert choice.identities == identities
        previous = choice


def _counting_choices(monkeypatch: pytest.MonkeyPatch) -> list[_EntryTerms]:
    chosen: list[_EntryTerms] = []
    real = indexes._choose

    def counting(entry: _EntryTerms, room: int, ranking: indexes._Ranking):  # type: ignore[no-untyped-def]
        chosen.append(entry)
        return real(entry, room, ranking)

    monkeypatch.setattr(indexes, "_choose", counting)
    return chosen


def _unique_terms(n: int, words: int) -> _EntryTerms:
    """An entry of its own words only (no other entry's counts move when it changes)."""
    own = [f"w{n}x{k}" for k in range(words)]
    return _EntryTerms(
        (f"t{n}",), tuple(own[:3]), tuple(own[3:5]), tuple(own[5:]), (1,) * (words - 5), ()
    )


def test_an_edit_chooses_again_only_where_a_count_it_read_moved(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The point of it: one entry edited, with words of its own, is chosen again alone;
    an edit that moves a shared word's count chooses again the entries that ranked it,
    not the others; a share that moves chooses everything again."""
    site = _Site()
    shared = _EntryTerms(("shared",), ("common", "rare"), (), (), (), ())
    site.entries = [site.new(_unique_terms(n, 12)) for n in range(200)]
    site.entries[:10] = [site.new(shared) for _ in range(10)]
    terms = [entry for _, entry in site.entries]
    fixed = _fixed_bytes(terms, 40, 100)
    first = indexes._keyword_json(terms, [i for i, _ in site.entries], fixed, None, dict().get)
    chosen = _counting_choices(monkeypatch)

    site.entries[100] = site.new(_unique_terms(1_000, 12))  # an edit: only its own words
    terms = [entry for _, entry in site.entries]
    identities = [identity for identity, _ in site.entries]
    second = indexes._keyword_json(terms, identities, fixed, first, site.records.get)
    assert chosen == [terms[100]]
    assert second.chosen == [pydantic_core.to_json(k) for k in indexes._keywords(terms, fixed)]

    chosen.clear()  # "rare" held by one more entry: the ten that ranked it again
    site.entries[150] = site.new(_EntryTerms(("other",), ("rare",), (), (), (), ()))
    terms = [entry for _, entry in site.entries]
    identities = [identity for identity, _ in site.entries]
    third = indexes._keyword_json(terms, identities, fixed, second, site.records.get)
    assert chosen == [shared] * 10 + [terms[150]]
    assert third.chosen == [pydantic_core.to_json(k) for k in indexes._keywords(terms, fixed)]

    chosen.clear()
    fourth = indexes._keyword_json(terms, identities, fixed, third, site.records.get)
    assert fourth is third and not chosen  # nothing changed: nothing to store again

    fourth = indexes._keyword_json(terms, identities, fixed - len(terms), third, dict().get)
    assert len(chosen) == len(terms)  # one byte more for each entry


def _ordered(site: _Site, share: int, previous: KeywordChoice | None) -> KeywordChoice:
    terms = [entry for _, entry in site.entries]
    fixed = _fixed_bytes(terms, share, 0)
    identities = [identity for identity, _ in site.entries]
    choice = indexes._keyword_json(terms, identities, fixed, previous, site.records.get)
    assert choice.chosen == [pydantic_core.to_json(k) for k in indexes._keywords(terms, fixed)]
    return choice


def _titled(word: str) -> _EntryTerms:
    return _EntryTerms((word,), (), (), (), (), ())


def _zeta_10_alpha_11() -> tuple[_Site, indexes.KeywordChoice]:
    """zeta held by 10 entries, alpha by 11, the first entry holding both with room for
    one keyword: (10, zeta) ranks first."""
    site = _Site()
    both = site.new(_EntryTerms((), ("alpha", "zeta"), (), (), (), ()))
    site.entries = [both, *(site.new(_titled("zeta")) for _ in range(9))]
    site.entries += [site.new(_titled("alpha")) for _ in range(10)]
    first = _ordered(site, indexes.keyword_cost("alpha"), None)
    assert first.chosen[0] == b'["zeta"]'
    return site, first


def test_a_count_that_comes_to_tie_another_changes_places_by_name() -> None:
    """zeta held by 10 entries, alpha by 11: (10, zeta) ranks first; one entry more
    holding zeta, and (11, alpha) ranks before (11, zeta). Room for one keyword."""
    site, first = _zeta_10_alpha_11()
    site.entries[1] = site.new(_titled("other"))  # zeta 9, then 11 with two more
    site.entries += [site.new(_titled("zeta")), site.new(_titled("zeta"))]
    second = _ordered(site, indexes.keyword_cost("alpha"), first)
    assert second.chosen[0] == b'["alpha"]'


def test_two_counts_that_pass_each_other_change_places() -> None:
    """zeta 10 -> 12 and alpha 11 -> 9 in one build: neither new count lies in the
    other's span, yet (10, zeta) < (11, alpha) became (12, zeta) > (9, alpha)."""
    site, first = _zeta_10_alpha_11()
    site.entries[-2:] = [site.new(_titled("zeta")), site.new(_titled("zeta"))]
    second = _ordered(site, indexes.keyword_cost("alpha"), first)
    assert second.chosen[0] == b'["alpha"]'


def test_the_number_of_entries_alone_changes_a_choice_that_ranked_the_body() -> None:
    """A removed entry whose words no other entry holds moves no count, but it moves the
    common limit: a body word held by 2 of 3 entries is common, by 2 of 4 it is not."""
    site = _Site()
    body = _EntryTerms((), (), (), ("common",), (1,), ())  # ranks the body, and it is spent
    site.entries = [
        site.new(body),
        site.new(_EntryTerms(("common",), (), (), (), (), ())),
        site.new(_EntryTerms(("own",), (), (), (), (), ())),
        site.new(_EntryTerms(("mine",), (), (), (), (), ())),
    ]
    terms = [entry for _, entry in site.entries]
    fixed = _fixed_bytes(terms, indexes.keyword_cost("common"), 0)
    first = indexes._keyword_json(terms, [i for i, _ in site.entries], fixed, None, dict().get)
    assert first.chosen[0] == b'["common"]' and first.reached[0] == 3

    del site.entries[3]
    terms = [entry for _, entry in site.entries]
    fixed = _fixed_bytes(terms, indexes.keyword_cost("common"), 0)
    second = indexes._keyword_json(
        terms, [i for i, _ in site.entries], fixed, first, site.records.get
    )
    assert second.chosen == [pydantic_core.to_json(k) for k in indexes._keywords(terms, fixed)]
    assert second.chosen[0] == b"[]"


def test_a_departed_entry_whose_terms_the_cache_lost_means_a_full_choice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    site = _Site()
    site.entries = [site.new(_unique_terms(n, 8)) for n in range(20)]
    terms = [entry for _, entry in site.entries]
    first = indexes._keyword_json(terms, [i for i, _ in site.entries], 0, None, dict().get)
    chosen = _counting_choices(monkeypatch)
    site.entries[3] = site.new(_unique_terms(99, 8))
    terms = [entry for _, entry in site.entries]
    indexes._keyword_json(terms, [i for i, _ in site.entries], 0, first, dict().get)
    assert len(chosen) == len(terms)


# The state in the build cache, by the cache's rules.


def test_put_latest_is_kept_only_by_a_save(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(build_cache.CACHE_ENV, str(tmp_path / "cache"))
    cache = build_cache.EntryCache.open(tmp_path / "site", b"settings")
    assert cache.get_latest("choice") is None
    cache.put_latest("choice", [1, 2])
    # A build that fails never saves: the next one does not see what it put.
    assert build_cache.EntryCache.open(tmp_path / "site", b"settings").get_latest("choice") is None
    cache.save()
    reopened = build_cache.EntryCache.open(tmp_path / "site", b"settings")
    assert reopened.get_latest("choice") == [1, 2]
    assert build_cache.EntryCache.open(tmp_path / "site", b"other").get_latest("choice") is None


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage"])
def test_a_damaged_latest_file_is_ignored(
    damage: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(build_cache.CACHE_ENV, str(tmp_path / "cache"))
    cache = build_cache.EntryCache.open(tmp_path / "site", b"settings")
    cache.put_latest("choice", ["a value long enough to damage"] * 20)
    cache.save()
    [side] = (tmp_path / "cache").glob("*.latest")
    data = side.read_bytes()
    if damage == "truncate":
        side.write_bytes(data[:-30])
    elif damage == "flip":
        middle = len(data) - 200
        side.write_bytes(data[:middle] + bytes([data[middle] ^ 1]) + data[middle + 1 :])
    else:
        side.write_bytes(data[: data.index(b"\n", len(build_cache._MAGIC)) + 1] + pickle.dumps({}))
    assert build_cache.EntryCache.open(tmp_path / "site", b"settings").get_latest("choice") is None


def test_latest_files_are_pruned_with_their_cache_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "cache"
    monkeypatch.setenv(build_cache.CACHE_ENV, str(folder))
    for number in range(4):  # four settings of one site folder: two files kept
        cache = build_cache.EntryCache.open(tmp_path / "site", f"settings {number}".encode())
        cache.put(f"key {number}", "field", number)
        cache.put_latest("choice", number)
        cache.save()
    records = sorted(folder.glob("build-*.pickle"))
    sides = sorted(folder.glob("build-*.pickle.latest"))
    assert len(records) == build_cache.KEEP_PER_SITE
    assert sides == [path.with_name(path.name + ".latest") for path in records]


def test_builds_after_edits_keep_a_choice_and_publish_what_a_cold_build_does(
    site_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the pipeline: the choice is kept beside the cache, the next build after
    an edit reuses it (chooses again fewer than all entries), and the search index is
    byte for byte a cold build's after edits, a removal and the edit undone."""
    cache_dir = tmp_path / "cache"
    monkeypatch.setenv(build_cache.CACHE_ENV, str(cache_dir))
    out = tmp_path / "out"
    assert run_cli("build", "--site", site_copy, "--out", out).code == 0
    assert list(cache_dir.glob("build-*.pickle.latest"))
    faq = site_copy / "faq" / "q01-difference.yaml"
    original = faq.read_text()
    chosen = _counting_choices(monkeypatch)
    for step in ("edit", "undo"):
        faq.write_text(original.replace("sitemap", "site map") if step == "edit" else original)
        chosen.clear()
        assert run_cli("build", "--site", site_copy, "--out", out).code == 0
        warm, chosen_again = tree_digest(out), len(chosen)
        twin = tmp_path / "cold" / step
        shutil.copytree(site_copy, twin)
        with monkeypatch.context() as patch:
            patch.setenv(build_cache.CACHE_ENV, "off")
            assert run_cli("build", "--site", twin, "--out", twin.parent / "out").code == 0
        assert warm == tree_digest(twin.parent / "out")
        assert 1 <= chosen_again < 12, step  # the spec site has 12 entries


def test_an_entrys_terms_read_nothing_of_its_lock_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """The choice is kept by the entry's cache key alone (indexes.Identity): the same
    file dated by another lock entry (updated_at, content_version) has the same terms."""
    from content_builder.loader import LOCK_FILE, load_site
    from content_builder.lock import LockEntry, read_lock
    from content_builder.render.entries import build_catalog
    from tests.conftest import SPEC_SITE

    monkeypatch.setenv(build_cache.CACHE_ENV, "off")
    site = load_site(SPEC_SITE)
    lock = read_lock(SPEC_SITE / LOCK_FILE, "lock")
    other = {
        entry_id: LockEntry(entry.source_hash, "9.8.7", "2031-02-03T04:05:06Z")
        for entry_id, entry in lock.items()
    }
    first = build_catalog(site, lock)
    second = build_catalog(load_site(SPEC_SITE), other)
    assert first.entries[0].json != second.entries[0].json  # the lock entry was read
    assert [entry.terms for entry in first.entries] == [entry.terms for entry in second.entries]
    assert {type(entry.terms) for entry in first.entries} == {_EntryTerms}
