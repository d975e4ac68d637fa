"""The tokens authors write ({base_url}, ...) and the links they write with them.

Each string of a YAML file is substituted before its model is validated, and each link
written with a token or a URL is checked (docs/site-data-format.md, Tokens): a link into
the API must be written {base_url}/..., never a local server or a literal base URL.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agent_contract import links, paths
from content_builder.errors import Problem
from content_builder.loaded import display_path
from content_builder.source import SiteSource
from content_builder.yaml_io import with_lines

BASE_URL_TOKEN = "{base_url}"
#: Every token an author may write; a rename is then one line of site.yaml.
TOKENS = ("{base_url}", "{discovery_url}", "{brand}", "{name}", "{website}", "{contact}")
# Hyphens too: `{base-url}` is a misspelt token, not text.
_BRACED = re.compile(r"\{([A-Za-z_][A-Za-z0-9_-]*)\}")
# A token that should start a URL path: `{base_url}api/v1` lost its slash.
_GLUED = re.compile(r"\{(base_url|website)\}(?=[A-Za-z0-9_.~-])")
# ... and `{base_url}//api/v1` has one too many (the CDN looks `//api/...` up as written).
_DOUBLED = re.compile(r"\{(base_url|website)\}//")


@dataclass(frozen=True)
class Authoring:
    """What an author's strings are read with: the tokens they may write and the base URLs
    their links are checked against (docs/site-data-format.md, Tokens)."""

    tokens: dict[str, str]
    bases: tuple[str, ...]  # site.yaml's base URL and the one this build publishes at
    base_url: str  # site.yaml's

    def prepare(self, path: Path, raw: dict[str, Any]) -> Prepared:
        """The tokens substituted in a file's data, and the problems of its links."""
        checked: list[str] = []
        substituted = _substitute(raw, self.tokens, checked)
        found: list[Problem] = []
        if any(_has_link_problem(text, self.bases, self.base_url) for text in checked):
            found = [
                Problem(display_path(path), location or None, message)
                for location, text in located_strings(raw)
                for message in link_problems(text, set(self.bases), self.base_url)
            ]
            found = with_lines(found, path)
        return Prepared(substituted, found)


@dataclass(frozen=True)
class Prepared:
    """A file's YAML data with the tokens substituted, and the problems its links have
    (as `load_site` reports them, in order, before the file's model is validated)."""

    data: dict[str, Any]
    problems: list[Problem]


def token_values(config: SiteSource, base_url: str) -> dict[str, str]:
    """What each author token stands for (docs/site-data-format.md, Tokens)."""
    values = {
        "{base_url}": base_url,
        "{discovery_url}": base_url + paths.discovery(config.brand),
        "{brand}": config.brand,
        "{name}": config.name,
        "{website}": config.website.rstrip("/"),
        "{contact}": config.contact,
    }
    assert tuple(values) == TOKENS
    return values


def link_problems(text: str, literal_bases: set[str], base_url: str) -> Iterator[str]:
    """What is wrong with the links written in one authored string (before substitution)."""
    for match in _BRACED.finditer(text):
        token = match.group(0)
        if token in TOKENS:
            continue
        import difflib  # only for a token that is not one: not at every build's start-up

        close = difflib.get_close_matches(token, TOKENS, n=1, cutoff=0.75)
        glued_to_path = text[match.end() : match.end() + 1] == "/"
        if close or glued_to_path:
            advice = f"did you mean {close[0]}?" if close else "tokens are " + ", ".join(TOKENS)
            yield f"unknown token {token}: {advice}"
    for match in _GLUED.finditer(text):
        found = _snippet(text, match)
        yield f"write {match.group(0)}/ with a slash before the path (found {found})"
    for match in _DOUBLED.finditer(text):
        found = _snippet(text, match)
        yield f"write {{{match.group(1)}}}/ with one slash before the path (found {found})"
    if "://" not in text:  # no URL (links.urls finds none without it)
        return
    bases = tuple(sorted(literal_bases))
    for url in links.urls(text):
        message = _url_problem(url, bases, base_url)
        if message is not None:
            yield message


def _has_link_problem(text: str, bases: tuple[str, ...], base_url: str) -> bool:
    """`any(link_problems(text, set(bases), base_url))`, at a fraction of the cost: most
    strings hold no token and no URL, most tokens are known and most URLs repeat."""
    if "{" in text and _SUSPECT_TOKEN.search(text):
        return any(True for _ in link_problems(text, set(bases), base_url))
    if "://" in text:
        return any(_url_problem(url, bases, base_url) is not None for url in links.urls(text))
    return False


# What `_BRACED`, `_GLUED` or `_DOUBLED` would report, in one scan: an unknown token (it
# is a problem only when close to a known one or glued to a path: link_problems decides),
# a token glued to a path, a doubled slash.
_KNOWN_NAMES = "|".join(re.escape(token[1:-1]) for token in TOKENS)
_SUSPECT_TOKEN = re.compile(
    rf"\{{(?!(?:{_KNOWN_NAMES})\}})[A-Za-z_][A-Za-z0-9_-]*\}}"
    r"|\{(?:base_url|website)\}(?:[A-Za-z0-9_.~-]|//)"
)


# Memoized: the same URLs are written in many files (N = 10,000: ~270,000 authored strings).
@lru_cache(maxsize=1 << 16)
def _url_problem(url: str, literal_bases: tuple[str, ...], base_url: str) -> str | None:
    """What is wrong with one URL written in site data (`literal_bases` sorted), if anything."""
    parts = urlsplit(url)
    try:
        host = parts.hostname
    except ValueError:
        return None
    if _is_local(host):
        return (
            f"link to a local server ({url}); write {BASE_URL_TOKEN}/... so that it "
            "points at each deployment"
        )
    if host == _hostname(base_url) and parts.scheme == "http":
        return f"link to the API over http ({url}); write {BASE_URL_TOKEN}/... (HTTPS only)"
    if any(links.api_path(url, base) not in (None, *links.NON_FILE_PATHS)
           for base in literal_bases):  # fmt: skip
        # A literal base URL would only be right for one deployment (and its lock hash
        # would differ between deployments): links into the API are written {base_url}.
        base = next(b for b in literal_bases if links.api_path(url, b) is not None)
        return (
            f"write {BASE_URL_TOKEN} instead of the literal {base} in links into the API "
            f"(found {url})"
        )
    return None


@lru_cache(maxsize=16)
def _hostname(url: str) -> str | None:
    return urlsplit(url).hostname


def _is_local(host: str | None) -> bool:
    """A host that only exists on the author's machine (`make serve` prints one of them):
    localhost names, any loopback address (127.0.0.0/8, ::1) and the unspecified one."""
    if not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):  # RFC 6761 6.3
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def _snippet(text: str, match: re.Match[str]) -> str:
    end = match.end()
    while end < len(text) and not text[end].isspace() and end - match.end() < 30:
        end += 1
    return text[match.start() : end]


def located_strings(value: Any, location: str = "") -> Iterator[tuple[str, str]]:
    """Every string in nested data, with its dotted location (`sections[2].body`)."""
    if isinstance(value, str):
        yield location, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from located_strings(item, f"{location}.{key}" if location else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from located_strings(item, f"{location}[{index}]")


def located_strings_containing(value: Any, needle: str) -> list[tuple[str, str]]:
    """`located_strings(value)` less the strings without `needle`, in the same order;
    a location is only spelt out for a string that has it (most have not)."""
    found: list[tuple[str, str]] = []
    if isinstance(value, str):
        if needle in value:
            found.append(("", value))
    elif isinstance(value, dict | list):
        _collect_containing(value, "", needle, found)
    return found


def _collect_containing(
    value: dict[Any, Any] | list[Any], location: str, needle: str, found: list[tuple[str, str]]
) -> None:
    in_list = isinstance(value, list)
    prefix = f"{location}." if location else ""
    for key, item in enumerate(value) if in_list else value.items():  # type: ignore[union-attr]
        if isinstance(item, str):
            if needle not in item:
                continue
        elif not isinstance(item, dict | list):
            continue
        child = f"{location}[{key}]" if in_list else f"{prefix}{key}"
        if isinstance(item, str):
            found.append((child, item))
        else:
            _collect_containing(item, child, needle, found)


def _substitute(value: Any, tokens: dict[str, str], checked: list[str] | None = None) -> Any:
    """`value` with the tokens substituted; `checked` gets each string (as written) that
    may hold a link problem: a token or a URL (`_has_link_problem`)."""
    if isinstance(value, str):
        if "{" in value:
            if checked is not None:
                checked.append(value)
            return _substituted(value, tokens)
        if checked is not None and "://" in value:
            checked.append(value)
        return value
    if isinstance(value, dict | list):
        return _substitute_in(value, tokens, checked)
    return value


def _substituted(text: str, tokens: dict[str, str]) -> str:
    for token, replacement in tokens.items():
        text = text.replace(token, replacement)
        if "{" not in text:  # no token left for the rest to replace
            break
    return text


def _substitute_in(
    value: dict[Any, Any] | list[Any], tokens: dict[str, str], checked: list[str] | None
) -> dict[Any, Any] | list[Any]:
    """A copy of a mapping or list, substituted (`_substitute`), with a call per
    container rather than per value: site data is mostly text."""
    is_dict = isinstance(value, dict)
    items: list[Any] = list(value.values()) if is_dict else list(value)  # type: ignore[union-attr]
    for index, item in enumerate(items):
        if type(item) is str:
            if "{" in item:
                if checked is not None:
                    checked.append(item)
                items[index] = _substituted(item, tokens)
            elif checked is not None and "://" in item:
                checked.append(item)
        elif isinstance(item, dict | list):
            items[index] = _substitute_in(item, tokens, checked)
        elif isinstance(item, str):  # a subclass (YamlDate): as `_substitute` treats it
            items[index] = _substitute(item, tokens, checked)
    return dict(zip(value, items, strict=True)) if is_dict else items
