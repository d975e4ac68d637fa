"""Properties of the builder on hostile site data (issue 24), on generated input.

Whatever a file holds (alias bombs, deep nesting, huge scalars, odd tags, titles full
of control characters, line breaks and Markdown, URLs of any shape), the in-memory
build (`content_builder.build.plan`) ends within a few seconds, either with the site's
files or with a `SiteDataError` naming the file; what it publishes holds no control
character, and author text adds no heading and no llms.txt section. The example counts
are modest: each example is a whole build of a small site.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from llms_txt import parse_llms_file
from markdown_it import MarkdownIt

from agent_contract.uri import url_problem
from content_builder.build import Plan, plan
from content_builder.errors import SiteDataError
from content_builder.text_rules import FORBIDDEN
from tests.conftest import SPEC_SITE
from tests.test_hostile_content import SECRET, within
from tests.test_markdown_source import _site

FAQ = "faq/q03-protection.yaml"
PAGE = "content/compatibility.yaml"
SECONDS = 10  # per example: a build of this site takes ~0.1 s; the old code hung for good

SETTINGS = settings(
    max_examples=int(os.environ.get("HOSTILE_EXAMPLES", "50")),
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile") / "site_data"
    shutil.copytree(SPEC_SITE, root)
    return root


@pytest.fixture(scope="module")
def baseline(site: Path) -> dict[str, Any]:
    return _shape(plan(site))


def _texts(result: Plan) -> dict[str, str]:
    return {
        artifact.path: artifact.body.decode("utf-8")
        for artifact in result.artifacts
        if artifact.path.endswith((".txt", ".md", ".xml"))
    }


_COMMONMARK = MarkdownIt("commonmark")


def _headings(text: str) -> list[tuple[str, str]]:
    """The headings a CommonMark reader finds: (level, text)."""
    tokens = _COMMONMARK.parse(text)
    return [
        (token.tag, tokens[index + 1].content)
        for index, token in enumerate(tokens)
        if token.type == "heading_open"
    ]


def _shape(result: Plan) -> dict[str, Any]:
    """What author text must not change: the llms.txt sections and how many headings
    each Markdown or text file has (a title is a heading's text, not a new heading)."""
    texts = _texts(result)
    return {
        "sections": list(parse_llms_file(texts["/llms.txt"]).sections),
        "headings": {
            path: len(_headings(text)) for path, text in texts.items() if not path.endswith(".xml")
        },
    }


@pytest.fixture
def restored(site: Path) -> Iterator[None]:
    yield
    for name in (FAQ, PAGE):
        (site / name).write_bytes((SPEC_SITE / name).read_bytes())


def built(site: Path) -> Plan | SiteDataError:
    with within(SECONDS):
        try:
            return plan(site)
        except SiteDataError as error:
            return error


def assert_names(error: SiteDataError, file: str, field: str | None = None) -> None:
    assert error.problems
    for problem in error.problems:
        assert file in problem.file, str(error)  # "<file> (<published path>)" too
        if field is not None:
            assert problem.field == field, str(error)
        assert not FORBIDDEN.search(str(problem)), repr(str(problem))


# --- hostile YAML ------------------------------------------------------------------


def alias_bomb(levels: int, width: int) -> str:
    lines = ["id: q03-protection", "answer: Yes.", "a0: &a0 [" + ", ".join(["x"] * width) + "]"]
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * width) + "]")
    return "\n".join([*lines, f"question: *a{levels - 1}"]) + "\n"


def nested(depth: int, mapping: bool) -> str:
    opened, closed = ("{a: ", "}") if mapping else ("[", "]")
    return f"id: q03-protection\nanswer: Yes.\nquestion: {opened * depth}x{closed * depth}\n"


def huge(size: int) -> str:
    return f'id: q03-protection\nquestion: Big?\nanswer: "{"x" * size}"\n'


ODD_TAGS = [
    "!!python/object/apply:os.system ['true']",
    "!!python/name:os.system",
    "!!binary aGk=",
    "!!set {a, b}",
    "!foo bar",
    "!!omap [{a: 1}]",
    "!!timestamp 2025-02-30",
    "!!float x",
    "!!int 0x",
    "!<tag:yaml.org,2002:str> x",
    "!!str",
    "!!null ''",
]

hostile_yaml = st.one_of(
    st.builds(alias_bomb, st.integers(1, 12), st.integers(1, 12)),
    st.builds(nested, st.integers(1, 3000), st.booleans()),
    st.builds(huge, st.sampled_from([10, 10**4, 2 * 10**5, 2 * 10**6])),
    st.sampled_from(ODD_TAGS).map(
        lambda tag: f"id: q03-protection\nanswer: Yes.\nquestion: {tag}\n"
    ),
)


@SETTINGS
@given(text=hostile_yaml)
def test_hostile_yaml_builds_or_fails_naming_the_file(
    site: Path, restored: None, text: str
) -> None:
    (site / FAQ).write_text(text, encoding="utf-8")
    result = built(site)
    event(type(result).__name__)
    if isinstance(result, SiteDataError):
        assert_names(result, FAQ)


# --- titles and text ----------------------------------------------------------------

HOSTILE_CHARACTERS = list(
    "ab #[]()<>!`*-_=\\:/|~>.1\n\t\r\x1b\x00\x07\x7f\x85\x9b\u202a\u202e\u2066\u2069\u2028"
)
#: Half the draws only Markdown's punctuation (published, so its output is checked),
#: half with control characters and line breaks too (mostly refused).
hostile_text = st.text(
    alphabet=st.sampled_from(list("ab #[]()<>!`*-_=\\:/|~>.1 ")), min_size=1, max_size=24
) | st.text(alphabet=st.sampled_from(HOSTILE_CHARACTERS), min_size=1, max_size=24)
markdown_lines = st.sampled_from(
    ["## Interfaces", "# Title", "```", "~~~", "===", "---", "> q", "- [x](https://e.example)",
     "<!--", "1. one", "<script>", "    # code", ""]
)  # fmt: skip
hostile_body = st.lists(hostile_text | markdown_lines, min_size=1, max_size=6).map("\n".join)


def _write(site: Path, file: str, changes: dict[tuple[Any, ...], str]) -> None:
    data = yaml.safe_load((SPEC_SITE / file).read_text("utf-8"))
    for location, value in changes.items():
        holder = data
        for key in location[:-1]:
            holder = holder[key]
        holder[location[-1]] = value
    (site / file).write_text(yaml.safe_dump(data, allow_unicode=False), encoding="utf-8")


@SETTINGS
@given(
    question=hostile_text | markdown_lines,
    answer=hostile_body,
    title=hostile_text | markdown_lines,
    body=hostile_body,
)
def test_author_text_publishes_no_control_character_and_forges_nothing(
    site: Path,
    restored: None,
    baseline: dict[str, Any],
    question: str,
    answer: str,
    title: str,
    body: str,
) -> None:
    _write(site, FAQ, {("question",): question, ("answer",): answer})
    _write(
        site,
        PAGE,
        {("title",): title, ("description",): title, ("content", "sections", 0, "body"): body},
    )
    result = built(site)
    if isinstance(result, SiteDataError):
        event("refused")
        for problem in result.problems:
            assert FAQ in problem.file or PAGE in problem.file, str(result)
            assert not FORBIDDEN.search(str(problem)), repr(str(problem))
        return
    event("published")
    for path, text in _texts(result).items():
        assert not FORBIDDEN.search(text), path
    assert _shape(result) == baseline


# --- URLs ---------------------------------------------------------------------------

URL_PIECES = st.sampled_from(
    ["https://", "http://", "javascript:", "x.example", "u@", ":8080", "/a", "/", "?q=1",
     "#f", " ", "\n", "\t", "(", ")", "]", "[", "<", ">", '"', "%", "%41", "é", "\u202e",
     "\x1b", "{", "}", "|", "\\", "..", "[::1]", "1.2.3.4", "999.1.1.1"]
)  # fmt: skip
urls = st.one_of(
    st.lists(URL_PIECES, min_size=1, max_size=10).map("".join),
    st.lists(URL_PIECES, max_size=6).map(lambda pieces: "https://x.example/" + "".join(pieces)),
)


@SETTINGS
@given(url=urls)
def test_a_canonical_url_is_published_as_written_or_refused(
    site: Path, restored: None, url: str
) -> None:
    _write(site, PAGE, {("canonical_url",): url})
    result = built(site)
    if isinstance(result, SiteDataError):
        event("refused")
        assert_names(result, PAGE, "canonical_url")
        return
    event("published")
    assert url_problem(url) is None
    (document,) = [a for a in result.artifacts if a.path == "/api/v1/content/compatibility.json"]
    assert yaml.safe_load(document.body)["canonical_url"] == url


# --- nothing from outside the tree --------------------------------------------------


@SETTINGS
@given(
    kind=st.sampled_from(["link-to-file", "link-to-folder", "fifo", "dangling-link"]),
    name=st.sampled_from(["q09-x.yaml", "q01-difference.yaml", ".#q03.yaml", "z.yml"]),
)
def test_nothing_outside_the_tree_is_read(
    site: Path, tmp_path_factory: pytest.TempPathFactory, kind: str, name: str
) -> None:

    outside = tmp_path_factory.mktemp("outside")
    secret = outside / "secret.yaml"
    secret.write_text(
        f"id: q09-x\nquestion: What is the secret?\nanswer: {SECRET}.\n", encoding="utf-8"
    )
    target = site / "faq" / name
    original = target.read_bytes() if target.exists() else None
    target.unlink(missing_ok=True)
    try:
        if kind == "link-to-file":
            target.symlink_to(secret)
        elif kind == "link-to-folder":
            target.symlink_to(outside)
        elif kind == "fifo":
            os.mkfifo(target)
        else:
            target.symlink_to(outside / "missing.yaml")
        result = built(site)
        assert isinstance(result, SiteDataError)
        assert any(problem.file.endswith(name) for problem in result.problems), str(result)
        assert SECRET not in str(result)
    finally:
        target.unlink()
        if original is not None:
            target.write_bytes(original)


# --- link destinations in Markdown pages (session 27) --------------------------------

_DESTINATION_PIECES = [
    *"ab/.-_%0A2F",
    " ",
    "(",
    ")",
    "#",
    "?",
    "`",
    "[",
    "]",
    "\\",
    "%0A",
    "%20",
    "../",
    "x.md",
    "x.png",
    "\u2028",
    "\u00e9",
    "{base_url}",
]  # fmt: skip  (no `<`: a tag in prose is dropped, as documented; `<dest>`: hostile_content)
_COMMONMARK = MarkdownIt("commonmark")


@SETTINGS
@given(
    destination=st.lists(st.sampled_from(_DESTINATION_PIECES), min_size=1, max_size=12).map(
        "".join
    ),
    image=st.booleans(),
)
def test_a_link_destination_changes_nothing_around_it(
    tmp_path_factory: pytest.TempPathFactory, destination: str, image: bool
) -> None:
    """Whatever a link's destination holds: the text around the link and the page's
    headings stay as written, and a URL the build writes for it holds no whitespace or
    control character (`%0A` was decoded into a line break, `<x y.md>` dropped)."""
    folder = tmp_path_factory.mktemp("link")
    mark = "!" if image else ""
    pages = {"page.md": f"# Page\n\nText {mark}[l]({destination}) end.\n", "x.md": "# X\n\nx\n",
             "x.png": "p"}  # fmt: skip
    site = _site(folder, pages, "broken_links: warn\n")
    try:
        with within(SECONDS):
            result = plan(site)
    except SiteDataError as error:
        assert all("page.md" in problem.file for problem in error.problems), error.problems
        return
    files = {artifact.path: artifact.body for artifact in result.artifacts}
    (section,) = json.loads(files["/api/v1/content/page.json"])["content"]["sections"]
    assert section["body"].startswith("Text ") and section["body"].endswith(" end."), section
    # One line stays one line (`%0A` was decoded into a line break), and a destination
    # is never emptied (`<x y.md>` was dropped as a tag: `[l]()`).
    assert "\n" not in section["body"], section
    assert "]()" not in section["body"] or "]()" in pages["page.md"], section
    tokens = _COMMONMARK.parse(files["/api/v1/content/page.md"].decode())
    assert [t.tag for t in tokens if t.type == "heading_open"] == ["h1", "h2"]
    written = [
        child.attrs.get("href") or child.attrs.get("src")
        for token in tokens
        for child in token.children or ()
        if child.type in ("link_open", "image")
    ]
    website = "https://www.python-httpx.org"  # the site's: URLs of files of the tree
    made = [str(url) for url in written if str(url).startswith(website)]
    assert not any(re.search(r"[ \x00-\x1f]", url) for url in made), made
