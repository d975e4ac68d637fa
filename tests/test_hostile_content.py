"""Hostile site data (issue 24): what an author or a contributor's pull request can put in
site_data/ must not hang the builder, read outside the site folder, or forge structure in
what it publishes. Each bad case ends in `error: <file>: ...` lines within seconds, and
nothing is written (the output and the lock stay as they were).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from content_builder.errors import SiteDataError
from content_builder.text_rules import FORBIDDEN, LINE_BREAK
from content_builder.yaml_io import read_yaml_mapping
from tests.conftest import plan_errors, run_cli, tree_digest
from tests.test_bad_input import (
    FAQ,
    LOCK,
    PAGE,
    Built,
    assert_untouched,
    parse_errors,
    same_file,
)


@pytest.fixture
def built_site(site_copy: Path, tmp_path: Path) -> Built:
    """A copy of the spec-shaped site built once, successfully, into tmp_path/dist."""
    dist = tmp_path / "dist"
    result = run_cli("build", "--site", site_copy, "--out", dist)
    assert result.code == 0, result.err
    return Built(site_copy, dist, tree_digest(dist), (site_copy / LOCK).read_bytes())


class TookTooLong(Exception):
    """A case ran past its time bound: the old code hung there."""


@contextlib.contextmanager
def within(seconds: float) -> Iterator[None]:
    """Fail (rather than hang the suite) when the block runs longer than `seconds`.

    SIGALRM interrupts a Python loop and a blocking open() or read() alike; the test
    runs in the main thread of its process (pytest and pytest-xdist's workers)."""

    def expired(signum: int, frame: object) -> None:
        raise TookTooLong(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """Billion laughs in YAML: each level an anchored list of `width` aliases of the one
    before, so the last names width**levels strings in a few hundred bytes."""
    lines = ["id: q03-protection", "answer: Yes.", "a0: &a0 [" + ", ".join(["x"] * width) + "]"]
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * width) + "]")
    lines.append(f"question: *a{levels - 1}")
    return "\n".join(lines) + "\n"


def failed_build(built: Built, lock_replaced: bool = False) -> list[str]:
    """Build the edited copy again: it must fail, print only `error:` lines, write nothing
    (`lock_replaced`: the test replaced the lock itself, so only the output is compared)."""
    with within(20):
        result = run_cli("build", "--site", built.site, "--out", built.dist)
    assert result.code == 1, result.out
    assert "Traceback" not in result.err
    parse_errors(result.err)  # every line an `error:` line
    if lock_replaced:
        assert tree_digest(built.dist) == built.digest
    else:
        assert_untouched(built)
    return result.err.splitlines()


# --- 1. YAML aliases ----------------------------------------------------------------


def test_an_alias_bomb_is_one_error_within_a_second(built_site: Built) -> None:
    text = alias_bomb()
    assert len(text.encode()) < 600
    (built_site.site / FAQ).write_text(text, encoding="utf-8")
    started = time.perf_counter()
    with within(5), pytest.raises(SiteDataError) as raised:
        read_yaml_mapping(built_site.site / FAQ, FAQ)
    assert time.perf_counter() - started < 1.0
    (problem,) = raised.value.problems
    assert problem.file == FAQ
    assert "alias" in problem.message and "line 4" in problem.message
    (line,) = failed_build(built_site)
    (reported,) = parse_errors(line)
    assert same_file(reported.file, built_site.site / FAQ)
    assert "*a0" in reported.message


@pytest.mark.parametrize(
    "text",
    [
        "id: q03-protection\nquestion: &q How?\nanswer: *q\n",  # a scalar's alias
        "id: q03-protection\nquestion: How?\nanswer: Yes.\nkeywords: &k [a]\nx: *k\n",
        "id: q03-protection\nquestion: &q [*q]\nanswer: Yes.\n",  # recursive
        "base: &b {id: q03-protection}\n<<: *b\nquestion: How?\nanswer: Yes.\n",  # merge key
    ],
    ids=["scalar", "list", "recursive", "merge-key"],
)
def test_every_alias_is_refused_naming_its_line(built_site: Built, text: str) -> None:
    (built_site.site / FAQ).write_text(text, encoding="utf-8")
    lines = failed_build(built_site)
    assert len(lines) == 1
    (reported,) = parse_errors(lines[0])
    assert same_file(reported.file, built_site.site / FAQ)
    assert "alias" in reported.message and "(line " in reported.message


def test_an_anchor_without_alias_is_harmless(built_site: Built) -> None:
    path = built_site.site / FAQ
    path.write_text(
        path.read_text("utf-8").replace("question: ", "question: &q ", 1), encoding="utf-8"
    )
    result = run_cli("build", "--site", built_site.site, "--out", built_site.dist)
    assert result.code == 0, result.err


def test_deep_nesting_is_one_error(built_site: Built) -> None:
    depth = 100_000
    (built_site.site / FAQ).write_text(
        "id: q03-protection\nquestion: " + "[" * depth + "]" * depth + "\nanswer: Yes.\n",
        encoding="utf-8",
    )
    (line,) = failed_build(built_site)
    assert "nest" in line


# --- 4. only regular files inside the site folder are read ---------------------------

SECRET = "TOP-SECRET-OUTSIDE-THE-SITE"


def outside_file(built: Built) -> Path:
    """A valid FAQ entry outside the site folder, holding a secret."""
    # Beside the test's own folder (assert_untouched wants only dist and site_data in it).
    path = built.dist.parent.with_name(built.dist.parent.name + "-outside") / "q09-secret.yaml"
    path.parent.mkdir()
    path.write_text(
        f"id: q09-secret\nquestion: What is the secret?\nanswer: {SECRET}.\n", encoding="utf-8"
    )
    return path


def assert_refused(built: Built, name: str, fragment: str) -> None:
    lines = failed_build(built, lock_replaced=name == LOCK)
    problems = parse_errors("\n".join(lines))
    named = [p for p in problems if same_file(p.file, built.site / name)]
    assert named, lines
    assert fragment in named[0].message, named[0].message
    assert not any(SECRET in line for line in lines)


def test_a_symlinked_entry_is_refused(built_site: Built) -> None:
    (built_site.site / "faq/q09-secret.yaml").symlink_to(outside_file(built_site))
    assert_refused(built_site, "faq/q09-secret.yaml", "symbolic link")


def test_a_symlinked_folder_is_refused(built_site: Built) -> None:
    outside = outside_file(built_site).parent
    for entry in (built_site.site / "faq").iterdir():
        (outside / entry.name).write_bytes(entry.read_bytes())
        entry.unlink()
    (built_site.site / "faq").rmdir()
    (built_site.site / "faq").symlink_to(outside)
    assert_refused(built_site, "faq", "symbolic link")


@pytest.mark.parametrize("name", ["site.yaml", "architecture.yaml", "on-site-agent.yaml", LOCK])
def test_a_symlinked_site_file_is_refused(built_site: Built, name: str) -> None:
    path = built_site.site / name
    copy = outside_file(built_site).with_name(name)
    copy.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(copy)
    assert_refused(built_site, name, "symbolic link")


@pytest.mark.parametrize("name", ["faq/q09-pipe.yaml", "content/pipe.yaml", LOCK, "site.yaml"])
def test_a_fifo_is_refused_without_blocking(built_site: Built, name: str) -> None:
    path = built_site.site / name
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    assert_refused(built_site, name, "FIFO")


def test_files_the_build_does_not_read_are_left_alone(built_site: Built) -> None:
    # Only .yaml files of content/ and faq/ (and the site's own files) are read: a FIFO or
    # a link beside them with another name is not the build's business.
    os.mkfifo(built_site.site / "faq/notes.txt")
    (built_site.site / "README.md").symlink_to(outside_file(built_site))
    result = run_cli("build", "--site", built_site.site, "--out", built_site.dist)
    assert result.code == 0, result.err


def test_a_symlinked_site_folder_named_on_the_command_line_is_followed(
    built_site: Built,
) -> None:
    # The user chose that folder: only what is inside it must be regular.
    link = outside_file(built_site).with_name("linked")
    link.symlink_to(built_site.site)
    result = run_cli("check", "--site", link)
    assert result.code == 0, result.err


def test_every_file_of_the_site_is_checked() -> None:
    from content_builder import loader, search_eval

    assert search_eval.QUESTIONS_FILE in loader.SITE_FILES


def test_a_file_over_the_limit_is_refused_unparsed(built_site: Built) -> None:
    from content_builder.site_files import MAX_FILE_BYTES

    path = built_site.site / FAQ
    path.write_bytes(path.read_bytes() + b"#" * MAX_FILE_BYTES + b"\n")
    (line,) = failed_build(built_site)
    assert "over the limit of 1,048,576" in line


def test_a_device_is_refused_without_reading(tmp_path: Path) -> None:
    from content_builder.site_files import read_site_file

    with within(5), pytest.raises(SiteDataError) as raised:
        read_site_file("/dev/zero", "zero.yaml")
    assert "a device" in str(raised.value)


@pytest.mark.parametrize("name", ["q09-\x1b[2J\x1b[31mred.yaml", "q09-one\nerror: forged.yaml",
                                  "q09-\u202egnp.yaml"])  # fmt: skip
def test_a_file_name_with_control_characters_is_shown_escaped(built_site: Built, name: str) -> None:
    # A file name is author input too (a pull request adds it): printed as it is, an ESC
    # sequence reached the developer's terminal and a newline forged an `error:` line.
    (built_site.site / "faq" / name).write_text("id: 5\n", encoding="utf-8")
    lines = failed_build(built_site)
    assert len(lines) == len(parse_errors("\n".join(lines))) >= 1
    assert not any(FORBIDDEN.search(line) or LINE_BREAK.search(line) for line in lines), lines
    assert any("q09-" in line for line in lines), lines


# --- 2. URLs are URLs ------------------------------------------------------------------

BAD_URLS = {
    "newline": "https://agents.example\n",
    "injected-section": "https://x.example/a\n\n## Injected\n[x](javascript:alert(1))",
    "space-and-script": "https://x.example/a b<script>",
    "closing-link": "https://x.example/a)](javascript:alert(1))",
    "userinfo": "https://www.site.example@evil.example/",
    "javascript": "javascript:alert(1)",
    "tab": "https://x.example/\ta",
    "bidi": "https://x.example/a\u202eb",
    "non-ascii": "https://x.example/café",
    "bad-percent": "https://x.example/100%",
    "no-host": "https:///a",
    "port": "https://x.example:123456/",
}

GOOD_URLS = [
    "https://x.example",
    "https://x.example/",
    "http://127.0.0.1:8000/api/v1/content/site.json",
    "https://[2001:db8::1]:8443/a",
    "https://x.example/wiki/Foo_(bar)?q=a&b=c,d;e#top",
    "https://x.example/caf%C3%A9",
    "https://xn--mnchen-3ya.example/",
    "HTTPS://X.EXAMPLE/A",
]


@pytest.mark.parametrize("url", GOOD_URLS)
def test_urls_as_rfc_3986_writes_them_pass(url: str) -> None:
    from agent_contract.uri import url_problem

    assert url_problem(url) is None


@pytest.mark.parametrize("url", BAD_URLS.values(), ids=list(BAD_URLS))
def test_a_bad_canonical_url_is_one_error_naming_the_field(built_site: Built, url: str) -> None:
    data = yaml.safe_load((built_site.site / PAGE).read_text("utf-8"))
    data["canonical_url"] = url
    (built_site.site / PAGE).write_text(yaml.safe_dump(data, allow_unicode=True), "utf-8")
    (line,) = failed_build(built_site)
    (reported,) = parse_errors(line)
    assert same_file(reported.file, built_site.site / PAGE)
    assert reported.field == "canonical_url"
    assert "\n" not in line.rstrip("\n")


@pytest.mark.parametrize(
    "url",
    [BAD_URLS[name] for name in ("newline", "userinfo", "space-and-script", "closing-link")]
    + ["https://x.example/docs"],
)
def test_a_bad_base_url_is_one_error_naming_site_yaml(built_site: Built, url: str) -> None:
    data = yaml.safe_load((built_site.site / "site.yaml").read_text("utf-8"))
    data["base_url"] = url
    (built_site.site / "site.yaml").write_text(yaml.safe_dump(data, allow_unicode=True), "utf-8")
    (line,) = failed_build(built_site)
    (reported,) = parse_errors(line)
    assert same_file(reported.file, built_site.site / "site.yaml")
    assert reported.field == "base_url"


def test_a_base_url_with_a_path_says_why(built_site: Built) -> None:
    path = built_site.site / "site.yaml"
    data = yaml.safe_load(path.read_text("utf-8"))
    data["base_url"] = "https://x.example/docs"
    path.write_text(yaml.safe_dump(data), "utf-8")
    (line,) = failed_build(built_site)
    assert "origin" in line and "path" in line


@pytest.mark.parametrize(
    ("file", "field", "change"),
    [
        ("content/how-it-works.yaml", None, ("{base_url}/api/v1/", "{base_url}/api/v1/ x")),
        ("on-site-agent.yaml", None, ("content/site.json", "content/si te.json")),
        ("site.yaml", "website", ("website: https://", "website: https://u@")),
        ("site.yaml", "contact", ("contact: ", "contact: https://x.example/a b#")),
    ],
)
def test_every_url_field_is_checked(
    built_site: Built, file: str, field: str | None, change: tuple[str, str]
) -> None:
    path = built_site.site / file
    text = path.read_text("utf-8")
    assert change[0] in text
    path.write_text(text.replace(change[0], change[1], 1), "utf-8")
    lines = failed_build(built_site)
    reported = parse_errors("\n".join(lines))
    assert any(same_file(r.file, path) and field in (None, r.field) for r in reported), lines


# --- 3. one-line fields stay one line; no control characters anywhere ------------------

FORGED = "Legit\n## Interfaces\n- [Evil](https://evil.example/steal)"


def set_field(path: Path, location: tuple[str | int, ...], value: object) -> None:
    data = yaml.safe_load(path.read_text("utf-8"))
    holder = data
    for key in location[:-1]:
        holder = holder[key]
    holder[location[-1]] = value
    # Escaped (`"\x85"`): YAML folds a NEL written as it is into a space.
    path.write_text(yaml.safe_dump(data, allow_unicode=False, sort_keys=False), "utf-8")


ONE_LINE_FIELDS = [
    (PAGE, ("title",), "title"),
    (PAGE, ("description",), "description"),
    (PAGE, ("content", "headline"), "content.headline"),
    (PAGE, ("content", "sections", 0, "title"), "content.sections[0].title"),
    (PAGE, ("keywords", 0), "keywords[0]"),
    (FAQ, ("question",), "question"),
    ("content/how-it-works.yaml", ("content", "headline"), "content.headline"),
    ("site.yaml", ("name",), "name"),
    ("site.yaml", ("description",), "description"),
    ("site.yaml", ("about",), "about"),
]


@pytest.mark.parametrize(("file", "location", "field"), ONE_LINE_FIELDS)
def test_a_newline_in_a_one_line_field_is_refused(
    built_site: Built, file: str, location: tuple[str | int, ...], field: str
) -> None:
    set_field(built_site.site / file, location, FORGED)
    lines = failed_build(built_site)
    reported = parse_errors("\n".join(lines))
    assert [(r.field, "one-line" in r.message) for r in reported] == [(field, True)], lines
    assert same_file(reported[0].file, built_site.site / file)


def test_a_capability_title_with_a_newline_is_refused(built_site: Built) -> None:
    path = built_site.site / "content/how-it-works.yaml"
    data = yaml.safe_load(path.read_text("utf-8"))
    name = next(iter(data["content"]["capabilities"]))
    set_field(path, ("content", "capabilities", name, "title"), FORGED)
    (line,) = failed_build(built_site)
    assert f"content.capabilities.{name}.title" in line


CONTROL_CASES = [
    # every kind of character in a multi-line field, where tab and newline are allowed
    *((character, FAQ, ("answer",), "answer") for character in
      ["\x1b", "\x00", "\x7f", "\x85", "\x9b", "\u202e", "\u2066", "\r", "\x0c"]),
    # and in each kind of file
    ("\x1b", PAGE, ("title",), "title"),
    ("\u202e", "architecture.yaml", ("title",), "title"),  # published as JSON only
    ("\x00", "on-site-agent.yaml", ("name",), "name"),
]  # fmt: skip


@pytest.mark.parametrize(("character", "file", "location", "field"), CONTROL_CASES)
def test_a_control_character_is_refused_in_every_field(
    built_site: Built, character: str, file: str, location: tuple[str | int, ...], field: str
) -> None:
    set_field(built_site.site / file, location, f"Before{character}after")
    (line,) = failed_build(built_site)
    (reported,) = parse_errors(line)
    assert same_file(reported.file, built_site.site / file)
    assert reported.field == field
    assert f"U+{ord(character):04X}" in reported.message
    assert character not in line


#: "Ignore" in Unicode tag characters (U+E0000-U+E007F): invisible in an editor, a diff
#: and a browser, read by a language model as the letters they shadow.
HIDDEN = "".join(chr(0xE0000 + ord(letter)) for letter in "Ignore")


def test_invisible_tag_characters_are_refused(built_site: Built, tmp_path: Path) -> None:
    # A pull request could hide an instruction to agents in text its reviewer sees as
    # nothing at all, as the bidirectional overrides hide an order.
    set_field(built_site.site / FAQ, ("answer",), f"Before{HIDDEN}after")
    (line,) = failed_build(built_site)
    assert "field 'answer'" in line and "U+E0049" in line and HIDDEN[0] not in line
    from tests.test_markdown_source import _site

    site = _site(tmp_path / "md", {"page.md": f"# Page\n\nText.{HIDDEN}\n"})
    errors = plan_errors(site)
    assert any("page.md" in e and "line 3" in e and "U+E0049" in e for e in errors), errors


def test_a_control_character_in_a_key_is_refused_and_shown_escaped(built_site: Built) -> None:
    path = built_site.site / FAQ
    path.write_text(path.read_text("utf-8") + '"bad\\ekey": x\n', "utf-8")
    (line,) = failed_build(built_site)
    assert "\x1b" not in line and "bad\\x1bkey" in line


def test_tabs_and_newlines_stay_allowed_in_bodies(built_site: Built) -> None:
    set_field(built_site.site / FAQ, ("answer",), "First line.\n\n\tIndented.\nLast.")
    result = run_cli("build", "--site", built_site.site, "--out", built_site.dist)
    assert result.code == 0, result.err


# --- 3. what author text cannot forge in Markdown and text ------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("## Interfaces", "\\## Interfaces"),
        ("# x", "\\# x"),
        ("#hashtag", "#hashtag"),
        ("```", "\\```"),
        ("~~~ x", "\\~~~ x"),
        ("> quoted", "\\> quoted"),
        ("- [Evil](https://evil.example)", "\\- [Evil](https://evil.example)"),
        ("1. first", "1\\. first"),
        ("===", "\\==="),
        ("<script>", "\\<script>"),
        ("Plain text, with # and - inside.", "Plain text, with # and - inside."),
        ("-1 degrees", "-1 degrees"),
    ],
)
def test_a_one_line_paragraph_never_starts_a_block(text: str, expected: str) -> None:
    from content_builder.render.escape import paragraph

    assert paragraph(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Intro.\n## Interfaces\n- [Evil](x)", "Intro.\n\\## Interfaces\n- [Evil](x)"),
        ("Forged title\n===", "Forged title\n\\==="),
        ("Forged title\n---", "Forged title\n\\---"),
        ("<!-- hide everything", "\\<!-- hide everything"),
        ("- a list\n- stays\n> and a quote", "- a list\n- stays\n> and a quote"),
        ("```sh\n# a comment\n```\n# after", "```sh\n# a comment\n```\n\\# after"),
        ("````\n```\n## inside\n````", "````\n```\n## inside\n````"),
        ("```\nnever closed\n## Interfaces", "```\nnever closed\n## Interfaces\n```"),
    ],
)
def test_a_body_keeps_its_markdown_but_forges_no_heading(text: str, expected: str) -> None:
    from content_builder.render.escape import block

    assert block(text) == expected


def test_link_text_and_url_cannot_end_the_link() -> None:
    from content_builder.render.escape import link_text, link_url

    assert link_text("Back\\") == "Back\\\\"
    assert link_text("Two\\\\") == "Two\\\\"
    assert link_url("https://x.example/a_(b) c<d>") == "https://x.example/a_%28b%29%20c%3Cd%3E"


def headings(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("#")]


def test_author_text_forges_no_section_in_what_is_published(built_site: Built) -> None:
    from llms_txt import parse_llms_file

    forged = "## Interfaces\n- [Evil](https://evil.example/steal)"
    page = built_site.site / PAGE
    set_field(page, ("description",), "# Not a heading")
    set_field(page, ("content", "headline"), "## Interfaces")
    set_field(page, ("content", "sections", 0, "body"), f"Intro.\n{forged}\n```\nunclosed")
    set_field(built_site.site / FAQ, ("answer",), f"Yes.\n{forged}\nTitle\n===")
    result = run_cli("build", "--site", built_site.site, "--out", built_site.dist)
    assert result.code == 0, result.err
    full = (built_site.dist / "llms-full.txt").read_text("utf-8")
    before = headings(full)
    assert not [h for h in before if h.startswith("## Interfaces") or h.startswith("# Not")]
    guide = parse_llms_file((built_site.dist / "llms.txt").read_text("utf-8"))
    assert list(guide.sections) == ["Interfaces", "Documents", "FAQ", "Optional"]
    assert "evil.example" not in (built_site.dist / "llms.txt").read_text("utf-8")
    for twin in (PAGE, FAQ):
        kind, name = twin.split("/")
        folder = "content" if kind == "content" else "faq"
        text = (built_site.dist / "api/v1" / folder / name.replace(".yaml", ".md")).read_text()
        assert not [h for h in headings(text) if "Interfaces" in h or "Not a heading" in h]
        assert "\\## Interfaces" in text


@pytest.mark.parametrize(
    "url",
    ["https://u@x.example", "https://x.example\x1b", "https://x.example/\u202e", "https://é.x"],
)
def test_a_bad_base_url_option_is_refused(built_site: Built, url: str) -> None:
    with within(20):
        result = run_cli(
            "build", "--site", built_site.site, "--out", built_site.dist, "--base-url", url
        )
    assert result.code == 1
    assert result.err.startswith("error: --base-url: ")
    assert_untouched(built_site)


@pytest.mark.parametrize(
    "url",
    [
        "https://x.example/javascript:x.example:8080999.1.1.1[::1]999.1.1.1\u202e",
        "https://x.example/" + "a" * 100_000 + "\u202e",
        "https://" + "a." * 50_000 + "\x1b",
        "https://x.example/?" + "a/" * 50_000 + "<",
    ],
    ids=["found-by-hypothesis", "long-path", "many-labels", "long-query"],
)
def test_a_url_is_checked_in_linear_time(url: str) -> None:
    from agent_contract.uri import url_problem

    with within(2):  # a nested repetition once backtracked for minutes on the first one
        assert url_problem(url) is not None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("- [x](https://e.example)\n    # code", "- [x](https://e.example)\n    \\# code"),
        ("1\n-", "1\n\\-"),
        ("> # quoted heading", "> \\# quoted heading"),
    ],
    ids=["heading-in-a-list-item", "dash-underline", "heading-in-a-quote"],
)
def test_headings_found_by_the_properties_are_escaped(text: str, expected: str) -> None:
    from content_builder.render.escape import block

    assert block(text) == expected


# --- Markdown pages: what a page includes (session 27) ---------------------------------


def test_a_snippet_named_many_times_is_read_once(tmp_path: Path) -> None:
    # A 400 KB block of one-letter names: each was a file opened, read and checked
    # again (500,000 names: 59 s); a page reads each snippet once.
    from content_builder.build import plan
    from tests.test_markdown_source import _site

    block = "--8<--\n" + "x\n" * 200_000 + "--8<--\n"
    site = _site(tmp_path, {"page.md": "# Page\n\n" + block, "x": "a"})
    with within(10):
        plan(site)


def test_a_missing_snippet_named_many_times_is_one_error(tmp_path: Path) -> None:
    from tests.test_markdown_source import _site

    block = "--8<--\n" + "nope.md\n" * 1_000 + "--8<--\n"
    site = _site(tmp_path, {"page.md": "# Page\n\n" + block})
    with within(10):
        errors = plan_errors(site)
    assert len(errors) == 1 and "page.md" in errors[0] and "nope.md" in errors[0], errors[:3]


def test_a_page_with_what_it_includes_stays_under_the_file_limit(tmp_path: Path) -> None:
    # Included text is parsed as the page's own: 4 Mi characters of headings took 44 s
    # and 1.5 GB. A page's text with its snippets and partials is bounded as one file is.
    from content_builder.site_files import MAX_FILE_BYTES
    from tests.test_markdown_source import _site

    part = "# h\n" * (MAX_FILE_BYTES // 4 // 2)  # half the limit, in headings
    site = _site(tmp_path, {"page.md": "# Page\n\n" + '--8<-- "part.txt"\n' * 3, "part.txt": part})
    with within(15):
        errors = plan_errors(site)
    assert any("page.md" in e and "part.txt" in e and "1,048,576" in e for e in errors), errors


@pytest.mark.parametrize(
    ("name", "url_path"),
    [("a?b.md", "a%3Fb"), ("a#b.md", "a%23b"), ("my page.md", "my%20page"),
     ("100%.md", "100%25"), ("v@2+x.md", "v@2+x"), ("caf\u00e9.md", "caf%C3%A9"),
     ("guide/x y/index.md", "guide/x%20y/")],
)  # fmt: skip
def test_a_pages_url_from_its_file_name_is_percent_encoded(
    tmp_path: Path, name: str, url_path: str
) -> None:
    # A file name is not a URL: `a?b.md` was published at `.../a?b` (a query), and a
    # name with a space or a non-ASCII letter failed on a canonical_url nobody wrote.
    import json

    from content_builder.build import plan
    from tests.test_markdown_source import _site

    result = plan(_site(tmp_path, {name: "# Page\n\nText.\n"}))
    (page,) = (d.id for d in result.site.documents if d.id != "site")
    (document,) = (
        json.loads(artifact.body)
        for artifact in result.artifacts
        if artifact.path == f"/api/v1/content/{page}.json"
    )
    assert document["canonical_url"] == "https://www.python-httpx.org/" + url_path


@pytest.mark.parametrize(
    ("written", "published"),
    [
        ("[l](<my page.md>)", "[l](https://agents.python-httpx.example/api/v1/content/my-page.json)"),
        ("[l](  <my page.md>)", "[l](  https://agents.python-httpx.example/api/v1/content/my-page.json)"),
        ("[l](a a) <b>x</b>", "[l](a a) x"),  # not a link in CommonMark: as written
        ("![i](<my image.png>)", "![i](https://www.python-httpx.org/my%20image.png)"),
        ("![i](x%0A%0A%23%23%20Forged.png)", "![i](https://www.python-httpx.org/x%0A%0A%23%23%20Forged.png)"),
        ("[d](files/a%20b.zip)", "[d](https://www.python-httpx.org/files/a%20b.zip)"),
        ("![i](@site/a.png)", "![i](https://www.python-httpx.org/@site/a.png)"),  # RFC 3986 pchar
    ],
)  # fmt: skip
def test_a_rewritten_link_keeps_what_its_destination_says(
    tmp_path: Path, written: str, published: str
) -> None:
    # `<my page.md>` was taken for an HTML tag and dropped (`[l]()`), and a link to a file
    # was published decoded: `%0A` became a line break inside the link.
    import json

    from content_builder.build import plan
    from tests.test_markdown_source import _site

    pages = {"page.md": f"# Page\n\n{written}\n", "my page.md": "# Mine\n\nx\n"}
    result = plan(_site(tmp_path, pages))
    (artifact,) = (a for a in result.artifacts if a.path == "/api/v1/content/page.json")
    (section,) = json.loads(artifact.body)["content"]["sections"]
    assert section["body"] == published


def test_a_docs_dir_that_is_no_docs_tree_is_refused_in_bounded_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `docs_dir: /` walked the whole file system (over 60 s, every .md of the machine):
    # the walk stops at a bound, one error naming the folder.
    from content_builder import markdown_tree
    from tests.test_markdown_source import _site

    monkeypatch.setattr(markdown_tree, "MAX_TREE_ENTRIES", 50)
    site = _site(tmp_path, {f"d{n}/p.md": f"# P{n}\n\nx\n" for n in range(30)})
    errors = plan_errors(site)
    assert len(errors) == 1 and "more than 50" in errors[0] and "docs_dir" in errors[0], errors
    monkeypatch.setattr(markdown_tree, "MAX_TREE_ENTRIES", 60)
    from content_builder.build import plan

    plan(site)  # 30 folders and 30 pages: within the bound


def test_toml_front_matter_escapes_no_control_character(tmp_path: Path) -> None:
    # TOML's `\u001b` writes ESC into a value, as YAML's "\e" does: YAML front matter was
    # checked for control characters and bidi overrides, TOML's went to llms.txt raw.
    from tests.test_markdown_source import _site

    page = '+++\ntitle = "a\\u001b[31mb"\ndescription = "c\\u202ed"\n+++\n\nx\n'
    errors = plan_errors(_site(tmp_path, {"page.md": page}))
    assert any("page.md" in e and "title" in e and "U+001B" in e for e in errors), errors
    assert any("page.md" in e and "description" in e and "U+202E" in e for e in errors), errors


def test_a_deeply_nested_lock_is_one_error(built_site: Built) -> None:
    # json.loads recurses per level: 100,000 levels raised RecursionError, a traceback.
    (built_site.site / LOCK).write_text("[" * 100_000 + "]" * 100_000)
    (line,) = failed_build(built_site, lock_replaced=True)
    assert LOCK in line and "not valid JSON" in line, line


def test_a_deeply_nested_category_file_builds(tmp_path: Path) -> None:
    from content_builder.build import plan
    from tests.test_markdown_source import _site

    site = _site(tmp_path, {"guide/a.md": "# A\n\nx\n"})
    (tmp_path / "docusaurus.config.js").write_text("export default {};\n")
    (tmp_path / "docs/guide/_category_.json").write_text("[" * 100_000 + "]" * 100_000)
    plan(site)  # a category only labels and orders: unreadable, it is not used


@pytest.mark.parametrize("name", [".git/config", ".env", "docs/.secrets/key.txt"])
def test_a_snippet_of_a_hidden_file_is_refused(tmp_path: Path, name: str) -> None:
    # mkdocs.yml sits at the repository's root, so the snippets' tree is the whole
    # checkout: `--8<-- ".git/config"` published the token actions/checkout leaves there
    # by default (persist-credentials), `.env` its secrets. Pages in hidden folders are
    # never read; snippets from them are not either.
    from tests.test_markdown_source import _site

    site = _site(tmp_path, {"page.md": f'# Page\n\n--8<-- "{name}"\n'})
    (tmp_path / "mkdocs.yml").write_text("site_name: X\ndocs_dir: docs\n")
    secret = tmp_path / name
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text(f"token = {SECRET}\n")
    errors = plan_errors(site)
    assert any("page.md" in e and "line 3" in e and "hidden" in e for e in errors), errors
    assert not any(SECRET in e for e in errors)


def test_a_page_of_too_many_headings_is_one_error_within_seconds(tmp_path: Path) -> None:
    # 1 MiB of `# h` lines is 113,000 sections: 12 s of CPU and a 5 MB document before
    # the bound. A Markdown page and a YAML document are bounded alike (source.py).
    from content_builder.build import plan
    from content_builder.site_files import MAX_FILE_BYTES
    from content_builder.source import MAX_SECTIONS
    from tests.test_markdown_source import _site

    flood = "# Page\n\n" + "".join(f"# h{i}\n" for i in range(MAX_FILE_BYTES // 10))
    at_bound = "# Page\n\n" + "".join(f"## s{i}\n\nx\n\n" for i in range(MAX_SECTIONS - 1))
    site = _site(tmp_path, {"flood.md": flood, "big.md": at_bound})
    with within(8):
        errors = plan_errors(site)
    assert len(errors) == 1, errors[:3]
    assert "flood.md" in errors[0] and "content.sections" in errors[0], errors
    assert f"at most {MAX_SECTIONS}" in errors[0], errors
    (tmp_path / "docs" / "flood.md").unlink()
    assert plan(site).artifacts  # a page at the bound builds


def test_a_yaml_page_of_too_many_sections_is_one_error_naming_the_field(built_site: Built) -> None:
    from content_builder.source import MAX_SECTIONS

    data = yaml.safe_load((built_site.site / PAGE).read_text("utf-8"))
    data["content"]["sections"] = [{"title": f"s{i}", "body": "x"} for i in range(MAX_SECTIONS + 1)]
    (built_site.site / PAGE).write_text(yaml.safe_dump(data), "utf-8")
    (line,) = failed_build(built_site)
    (reported,) = parse_errors(line)
    assert same_file(reported.file, built_site.site / PAGE)
    assert reported.field == "content.sections" and f"at most {MAX_SECTIONS}" in line
