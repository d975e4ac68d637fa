"""The fast paths of the load and link checks give what the plain ones give.

`links.urls` must find exactly `URL.finditer`'s matches, and the YAML fast constructor
exactly the data (or the error) of PyYAML's own constructors: a build's output and its
error messages must not depend on which path ran.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agent_contract import links, models
from agent_contract.artifacts import text_body
from content_builder import tokens, yaml_io
from content_builder.render.llms import joined_text_body


def finditer_urls(text: str) -> list[str]:
    return [match.group(0).rstrip(links._TRAILING) for match in links.URL.finditer(text)]


URL_PIECES = st.sampled_from(
    ["http", "https", "HTTPS", "hTtP", "http\u017f", "://", ":/", "/", "a.example", " ", "[", "]",
     "::1", "(", ".", ",", "{x}", '"', "\u017f", "s", "\\", "?u=", "\n", "é", "x"]
)  # fmt: skip


@settings(max_examples=1000, deadline=None, database=None)
@given(st.lists(URL_PIECES, max_size=16).map("".join))
def test_urls_are_the_regex_matches(text: str) -> None:
    assert links.urls(text) == finditer_urls(text)


@pytest.mark.parametrize(
    "text",
    [
        "see https://a.example/x. and HTTP://B.example/y, done",  # mixed case: the slow scan
        "https://a.example/?next=https://b.example/z",  # two :// in one match
        "mcp://resource and http://[::1]:8000/api/v1/x.json)",
        "",
    ],
)
def test_urls_on_both_scans(text: str) -> None:
    assert links.urls(text) == finditer_urls(text)


def constructors_only(text: str) -> Any:
    """What PyYAML's own constructors make of `text` (the path before the fast one), once
    every alias is refused (issue 24), with or without the `&` and `*` the fast one needs."""
    yaml_io.refuse_aliases(text)
    return yaml.load(text, Loader=yaml_io._StrictLoader)


def fast(text: str) -> Any:
    data = yaml_io._load(text)
    return data.value if isinstance(data, yaml_io._Plain) else data


def outcome(load: Any, text: str) -> tuple[str, Any]:
    try:
        data = load(text)
    except yaml.YAMLError as error:
        return "error", str(error)
    except RecursionError:
        return "error", "recursion"
    except (ValueError, KeyError, IndexError, TypeError) as error:
        return "error", repr(error)  # a converter's failure (read_yaml_mapping reports it)
    return "data", typed(data)


def typed(value: Any, inside: frozenset[int] = frozenset()) -> Any:
    """`value` with the type of every part spelt out (a YamlDate is not just text)."""
    if id(value) in inside:
        return "recursive"
    inside |= {id(value)}
    if isinstance(value, dict):
        return ("dict", [(typed(k, inside), typed(v, inside)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [typed(item, inside) for item in value])
    return (type(value).__name__, repr(value))


TRICKY = [
    "a: 1\nb: yes\nc: 0o17\nd: 1:20\ne: .inf\nf: ~\ng: 0x1F\nh: 2025-01-01\ni: '2025-01-01'",
    "a: !!str 12\nb: !!int '7'\nc: !!float '1'\nd: !!null ''\ne: !!bool 'on'",
    "a: &x [1, 2]\nb: *x",
    "a: &x {k: v}\nb: *x",
    "a: &x [*x]",
    "<<: {a: 1}\nb: 2",
    "a: {<<: [{x: 1}, {y: 2}], z: 3}",
    "= : v\na: b",
    "a: 1\na: 2",
    "1: x",
    "? [a]\n: x",
    "a: !!set {x, y}",
    "a: !!binary aGVsbG8=",
    "a: !!omap [{x: 1}]",
    "a: !foo bar",
    "a: 2025-02-30",
    "[1, 2]",
    "just text",
    "",
    "a:\n\t- x",
    "a: " + "[" * 50 + "]" * 50,
    "a: " + "{b: " * 1200 + "c" + "}" * 1200,
    "a: !!float x\n1: b",  # a converter that fails before a key the constructors refuse
    "a: !!bool maybe\na: 1",
    "a: !!int ''\n<<: {}",
]


@pytest.mark.parametrize("text", TRICKY)
def test_fast_construction_matches_the_constructors(text: str) -> None:
    assert outcome(fast, text) == outcome(constructors_only, text)


values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
    | st.sampled_from(["yes", "2020-01-01", "1:20", "0o7", "~", "<<", "=", "{base_url}/x"]),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text() | st.sampled_from(["<<", "="]), children, max_size=4),
    max_leaves=20,
)  # fmt: skip


@settings(max_examples=500, deadline=None, database=None)
@given(values, st.booleans())
def test_random_yaml_builds_the_same_data(value: Any, flow: bool) -> None:
    text = yaml.safe_dump({"root": value}, allow_unicode=True, default_flow_style=flow)
    # Unquote what the dumper quoted, so that plain scalars get retyped as authors see them.
    for text_variant in (text, text.replace("'", "")):
        assert outcome(fast, text_variant) == outcome(constructors_only, text_variant)


LINK_PIECES = st.sampled_from(
    ["{base_url}", "{website}", "{brand}", "{name}", "{base-url}", "{bse_url}", "{names}",
     "{discovery_url}", "{", "}", "/", "//", "api/v1/x.json", "https://", "http://", "HTTP://",
     "agents.example.com", "localhost", "127.0.0.1", "[::1]", ":8000", "www.example.org",
     " ", ".", "a", "_", "~"]
)  # fmt: skip
BASES = ("https://agents.example.com", "https://agents.example.org")


@settings(max_examples=1500, deadline=None, database=None)
@given(st.lists(LINK_PIECES, max_size=10).map("".join))
def test_the_quick_link_check_agrees_with_link_problems(text: str) -> None:
    for base_url in BASES:
        expected = any(True for _ in tokens.link_problems(text, set(BASES), base_url))
        assert tokens._has_link_problem(text, BASES, base_url) is expected


def api_path_by_split(url: str, base_url: str) -> str | type[ValueError] | None:
    """`links.api_path` without its shortcut for other origins (the plain definition)."""
    try:
        target = urlsplit(url)
    except ValueError:
        return ValueError
    if (target.scheme, target.netloc.lower()) != links._origin(base_url):
        return None
    path = target.path
    meant = "/" + path.lstrip("/") if path.startswith("//") else path
    if (
        meant in links.NON_FILE_PATHS
        or meant in links.API_ROOT_FILES
        or meant.startswith(links.API_PREFIXES)
    ):
        return path
    return None


URL_PARTS = st.sampled_from(
    ["https://", "http://", "HTTPS://", "https:/", "Agents.Example.com", "agents.example.com",
     "agents.example.comx", ":8000", "/api/v1/x.json", "//api/v1/", "/llms.txt", "/docs/x",
     "?q=1", "#f", " ", "\t", "\n", "[::1]", "[1.2.3]", "é", "\x00", "", "/", ".", "?", "#",
     "/api/v1/content/a.json", "@", "%2F", "]", "a]b"]
)  # fmt: skip


@settings(max_examples=1500, deadline=None, database=None)
@given(st.lists(URL_PARTS, max_size=6).map("".join))
@example("https://agents.example.com/api/v1/x.json#f")  # the own-origin slice: to ? or #
@example("https://agents.example.com/api/v1/x.json?q=1#f")
@example("https://agents.example.com/llms.txt#f?q=1")
@example("http://agents.example.com:8000/api/v1/x.json?q=1")
def test_api_path_shortcut_agrees_with_urlsplit(url: str) -> None:
    for base_url in ("https://agents.example.com", "http://Agents.Example.com:8000"):
        expected = api_path_by_split(url, base_url)
        try:
            found: str | type[ValueError] | None = links.api_path(url, base_url)
        except ValueError:
            found = ValueError
        assert found == expected


@settings(max_examples=1500, deadline=None, database=None)
@given(st.lists(URL_PARTS, max_size=6).map("".join))
@example("https://agents.example.com/api/v1/x.json?q=1#f")
@example("https://agents.example.com?q=/x")
@example("https://agents.example.com#/x")
@example("https://agents.example.com")
@example("mailto://a/b")
@example("https://a]b.example/x")  # urlsplit refuses a lone "]" in the host
def test_url_path_agrees_with_urlsplit(url: str) -> None:
    try:
        expected: str | type[ValueError] = urlsplit(url).path
    except ValueError:
        expected = ValueError
    try:
        found: str | type[ValueError] = links.url_path(url)
    except ValueError:
        found = ValueError
    assert found == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(["a", "\n", "é", "\u2028", "😀", "\r", " "]))))
@example([])
@example(["\n\n", "\n"])
def test_llms_full_txt_joined_as_bytes_is_text_body_of_the_text(blocks: list[str]) -> None:
    encoded = [block.encode("utf-8") for block in blocks]
    assert joined_text_body(encoded) == text_body("\n\n".join(blocks))


def _absolute_by_urlsplit(value: str) -> bool:
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc)


@settings(max_examples=2000, deadline=None)
@given(
    st.one_of(
        st.text(),
        st.builds(
            lambda scheme, host, rest: scheme + host + rest,
            st.sampled_from(["http://", "https://", "HTTP://", " https://", "https:/", "ftp://"]),
            st.text(alphabet=st.sampled_from(list("ab.:@[]%/?#\t\n\r \x00é\x7f-_1"))),
            st.text(alphabet=st.sampled_from(list("/?#x\t\n é[]"))),
        ),
    )
)
@example("https://[::1/x")
@example("https://\t/x")
@example("https:///x")
@example("https://a.example/\n")
def test_a_url_the_model_accepts_urlsplit_reads_as_written(value: str) -> None:
    # RFC 3986 only (agent_contract/uri.py, issue 24): whatever passes is an absolute
    # http(s) URL that urlsplit reads without repairing anything (it drops tabs and
    # newlines, WHATWG-style), with a host and no user information.
    try:
        models._require_absolute_url(value)
    except ValueError:
        return
    assert _absolute_by_urlsplit(value), value
    parts = urlsplit(value)
    written = re.split(r"[/?#]", value.split("://", 1)[1], maxsplit=1)[0]
    assert parts.netloc == written and parts.hostname, value
    assert "@" not in parts.netloc and value.isascii() and value.isprintable(), value
    assert not any(character.isspace() for character in value), value


def test_a_build_s_urls_are_accepted() -> None:
    for url in ("https://agents.example.com/api/v1/faq/q1.json", "http://127.0.0.1:8000/llms.txt"):
        assert models._require_absolute_url(url) == url
