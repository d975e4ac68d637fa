"""Search that fits real docs (issue 23, item 8): code and not-words never crowd out prose.

The failure reported: on a real docs site an installation page lost "windows" to
`ghcrioastralshuv` and `xxxxxxxx` from its code blocks. Reproduced on a generated site
where the per-entry keyword budget bites (the page's candidate terms are several times
its budget) and "windows" is a word other pages use too (a lower idf than a one-page
identifier's).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent_contract import paths, search_terms
from agent_contract.models import SearchIndex
from content_builder.build import plan
from content_builder.render import code_text, indexes
from content_builder.search_eval import evaluate, naive_rank, project_rank, site_search_quality
from tests import sites
from tests.conftest import TEST_BASE_URL


@pytest.fixture(scope="module")
def install_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("install") / "site"
    sites.make_site(root, sites.Shape(documents=40, faqs=40))
    sites.add_installation_page(root)
    sites.mention_windows(root)
    sites.write_questions(root, sites.INSTALL_QUESTIONS)
    sites.refresh_lock(root)
    return root


@pytest.fixture(scope="module")
def index(install_site: Path) -> SearchIndex:
    files = {a.path: a.body for a in plan(install_site, TEST_BASE_URL).artifacts}
    return SearchIndex.model_validate_json(files[paths.SEARCH_INDEX])


def _keywords(index: SearchIndex, entry_id: str) -> set[str]:
    (entry,) = [e for e in index.entries if e.id == entry_id]
    return set(entry.keywords)


def test_the_budget_bites_on_the_page(index: SearchIndex) -> None:
    """Guards the reproduction: a page whose every term fits would prove nothing."""
    found = search_terms.Tokenizer().scan([sites.INSTALL_PROSE, sites.INSTALL_CODE])
    kept = _keywords(index, "installation")
    spent = sum(map(indexes.keyword_cost, kept))
    assert spent > indexes.KEYWORD_BYTES_PER_ENTRY - 20, "the budget is spent"
    assert len((found.words | found.compounds) - kept) > 10, "and words were left out"
    windows = [e.id for e in index.entries if "windows" in e.keywords]
    assert len(windows) > 5, "windows is a word several pages use"


def test_every_prose_word_of_the_page_is_kept(index: SearchIndex) -> None:
    kept = _keywords(index, "installation")
    prose = search_terms.Tokenizer().scan([sites.INSTALL_PROSE]).words
    assert "windows" in prose
    assert prose <= kept, sorted(prose - kept)


def test_hashes_placeholders_and_paths_are_not_keywords(index: SearchIndex) -> None:
    kept = _keywords(index, "installation")
    for not_a_word in ("ghcrioastralshuv", "xxxxxxxx", "agvsbg8gd29ybgqgdghpcybpcybiyxnlnjq"):
        assert not_a_word not in kept
    assert not any(re.fullmatch(r"[0-9a-f]{16,}", keyword) for keyword in kept), kept


def test_the_owners_questions_find_the_page(install_site: Path, index: SearchIndex) -> None:
    """The questions file has only a `questions` set; both clients answer them."""
    questions = [search_eval_question for search_eval_question in _questions(install_site)]
    for ranker in (naive_rank, project_rank):
        scores = evaluate(index, questions, ranker)
        assert scores.recall_at_3 >= 0.9, scores.misses


def _questions(site: Path) -> list:
    from content_builder.search_eval import QUESTIONS_FILE, load_questions

    return load_questions(site / QUESTIONS_FILE)


def test_check_measures_a_questions_only_file(install_site: Path) -> None:
    from content_builder.loader import load_site

    body = {a.path: a.body for a in plan(install_site).artifacts}[paths.SEARCH_INDEX]
    quality = site_search_quality(load_site(install_site), body)
    assert not quality.problems
    assert any(line.startswith("search: questions: 10 questions") for line in quality.lines)


# --- what is a word, and what is code --------------------------------------------------


@pytest.mark.parametrize(
    "token",
    ["xxxxxxxx", "zzz", "oooo", "3f2a9c1", "deadbeef0", "a1b2c3", "agvsbg8gd29ybgq",
     "bcdfghkl", "abstractasynccontextmanagerfactory", "x" * 25, "www"],
)  # fmt: skip
def test_not_words(token: str) -> None:
    assert not search_terms.is_word(token)
    assert token not in search_terms.words(token)


@pytest.mark.parametrize(
    "token",
    ["windows", "i18n", "k8s", "utf8mb4", "sha256", "x86", "ipv6", "deadbeef", "strncpy",
     "internationalization", "404", "2024", "rhythms", "latchstring", "llms", "https", "mp4",
     "e2e", "ieee", "aaa", "pendingdeprecationwarning", "responseheaderspolicycorsconfig",
     "classsetup", "calllist", "threadinghttpserver", "xmlrpclib", "libxxx"],
)  # fmt: skip
def test_words(token: str) -> None:
    assert search_terms.is_word(token)


def test_a_compound_of_many_parts_is_a_path_not_a_word() -> None:
    assert search_terms.compounds("SHA-256 llms.txt content.lock.json") == {
        "sha256", "llmstxt", "contentlockjson"
    }  # fmt: skip
    assert search_terms.compounds("ghcr.io/astral-sh/uv X-Content-Type-Options") == set()


def test_code_is_told_from_prose_in_a_commonmark_body() -> None:
    body = (
        "Run `uv sync --frozen` to install.\n\n### On Windows\n\nUse PowerShell.\n\n"
        "~~~sh\nexport UV_INDEX=x\n~~~\n\n    indented_code()\n\nThe end <b>bold</b>."
    )
    parts = code_text.split(body)
    assert parts.headings == ["On Windows"]
    assert "uv sync --frozen" in parts.code and "export UV_INDEX=x\n" in parts.code
    assert "indented_code()" in " ".join(parts.prose), "an indented block is read as Markdown"
    prose = " ".join(parts.prose)
    assert "Run" in prose and "install" in prose and "PowerShell" in prose and "end" in prose
    assert "sync" not in prose and "UV_INDEX" not in prose


def test_an_admonition_or_tab_left_indented_keeps_its_prose_and_its_code_apart() -> None:
    """mkdocs indents a tab's or an admonition's body by four spaces, which CommonMark
    reads as an indented code block: its prose stays prose, its fences code."""
    body = (
        '=== "Windows"\n\n    Use the installer from PowerShell:\n\n'
        '    ```console\n    $ powershell -ExecutionPolicy ByPass -c "irm x | iex"\n    ```\n\n'
        "!!! tip\n\n    Check the checksum first.\n"
    )
    parts = code_text.split(body)
    prose = " ".join(parts.prose)
    assert parts.headings == ["Windows"], "a tab's title names what follows"
    assert "PowerShell" in prose and "checksum" in prose
    assert "ExecutionPolicy" not in prose and "tip" not in prose
    assert any("ExecutionPolicy" in code for code in parts.code)


@pytest.mark.parametrize(
    ("body", "heading"),
    [
        ('=== "macOS and Linux"\n\n    Use `curl`.', "macOS and Linux"),
        ('??? note "Before you upgrade"\n\n    Read `this`.', "Before you upgrade"),
        ('!!!+ warning "Proxies"\n\n    Set `HTTPS_PROXY`.', "Proxies"),
        ("**Windows**\n\nRun `setup.exe`.", "Windows"),
    ],
)
def test_a_label_paragraph_is_a_heading(body: str, heading: str) -> None:
    parts = code_text.split(body)
    assert parts.headings == [heading]
    assert heading not in " ".join(parts.prose)


def test_bold_inside_a_sentence_stays_prose() -> None:
    parts = code_text.split("Use **only** the `uv` binary.")
    assert parts.headings == [] and "only" in " ".join(parts.prose)


def test_a_body_without_code_is_prose_as_written() -> None:
    body = "Plain text: a * b, [brackets] and under_scores stay.\nSecond line."
    assert code_text.split(body).prose == [body]


def test_code_elsewhere_does_not_make_a_prose_word_common() -> None:
    """A word in another page's code counts in no site-wide frequency: with two pages,
    counting it would make "sandbox" common (in more than half of the entries) and drop
    it from the page whose prose says it."""
    tokenizer = indexes.search_tokenizer()

    def terms(body: str, code: list[str]) -> indexes._EntryTerms:
        return indexes._entry_terms(["A page"], [], [body], tokenizer, code)

    prose = terms("Run it in the sandbox.", [])
    plain = terms("Nothing here.", [])
    coded = terms("Nothing here.", ["sandbox --enable\n"])
    assert "sandbox" in coded.code
    assert indexes._keywords([prose, coded], 0)[0] == indexes._keywords([prose, plain], 0)[0]
    assert "sandbox" in indexes._keywords([prose, coded], 0)[0]
