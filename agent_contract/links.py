"""Finding the links into the API in any text: one definition for the build's checks,
`verify` and the tests.

A link "into the API" is a URL on the base URL's origin whose path is in the API's own
namespace (/api/..., /.well-known/..., /errors/..., /llms.txt, /llms-full.txt). Other
paths on the same origin are the website's human pages (when the API shares the
website's host), which the build cannot and need not check.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import lru_cache
from urllib.parse import urlsplit

from agent_contract import paths

# Braces are allowed so that a template such as .../faq/{faq_id}.json is read whole.
# Schemes and hosts are case-insensitive (RFC 3986 3.1, 3.2.2): `HTTPS://HOST/...` is a
# link like any other; an IPv6 literal host keeps its brackets (`http://[::1]:8000/`).
_URL_CHARS = r"[^\s\"'<>()\[\]\\`|]"
URL = re.compile(rf"https?://(?:\[[0-9A-Fa-f:.]+\]{_URL_CHARS}*|{_URL_CHARS}+)", re.IGNORECASE)
_TRAILING = ".,;:!?*"
_TEMPLATE_PART = re.compile(r"\\\{[a-z_]+\\\}")

#: Paths under these prefixes, and these files, are the API's own.
API_PREFIXES = (paths.API_PREFIX + "/", "/.well-known/", "/errors/", "/llms/")
API_ROOT_FILES = frozenset({paths.LLMS_TXT, paths.LLMS_FULL_TXT, paths.SITEMAP, paths.ROBOTS_TXT})
#: URLs that name a prefix, not a file: the origin itself and `api_base`.
NON_FILE_PATHS = frozenset({"", "/", paths.API_PREFIX, paths.API_PREFIX + "/"})


def urls(text: str) -> list[str]:
    """Every http(s) URL in `text`, without the punctuation that ends a sentence: the
    matches of `URL.finditer(text)`, found faster."""
    found = _LOWERCASE_SCHEME_URL.findall(text)
    # A case-insensitive regex has no literal prefix for the engine to skip ahead with (it
    # would try every position of an 86 MB llms-full.txt), and the case-sensitive one
    # misses `HTTPS://`. When each `://` in the text is inside exactly one of its matches,
    # every `://` follows a lower-case `http` or `https`, so the two regexes agree.
    if len(found) != text.count("://"):
        found = list(_urls_around_separators(text))
    return [url.rstrip(_TRAILING) for url in found]


_LOWERCASE_SCHEME_URL = re.compile(URL.pattern)


def _urls_around_separators(text: str) -> Iterator[str]:
    """`URL.finditer(text)`'s matches: each holds `://` right after its scheme, so the
    URL regex is run only where a plain `find` sees one, at the `https` or `http` that
    would end there (matching there, it is the leftmost match holding that `://`)."""
    find = text.find
    match_at = URL.match
    position = 0
    while (found := find("://", position)) >= 0:
        match = match_at(text, found - 5) if found >= 5 else None
        if match is None and found >= 4:
            match = match_at(text, found - 4)
        if match is None:
            position = found + 1
            continue
        yield match.group(0)
        position = match.end()


@lru_cache(maxsize=16)
def _origin(base_url: str) -> tuple[str, str]:
    split = urlsplit(base_url)
    return split.scheme, split.netloc.lower()


# Memoized: a build checks the same few thousand URLs hundreds of thousands of times,
# more than urlsplit's own small cache holds (N = 10,000: ~40,000 distinct URLs, 440,000
# look-ups). The base URL's origin is split once (`_origin`), not on every miss.
@lru_cache(maxsize=1 << 16)
def api_path(url: str, base_url: str) -> str | None:
    """The path of `url` when it points into the API at `base_url`, else None."""
    scheme, netloc = _origin(base_url)
    origin = f"{scheme}://{netloc}"
    if url[: len(origin)].lower() != origin and _splits_as_written(url):
        return None  # another origin (most misses: the website's own pages), unsplit
    if url[len(origin) : len(origin) + 1] == "/" and url.startswith(origin):
        if _splits_as_written(url):  # the path is what follows the origin, to ? or #
            path = url[len(origin) :].split("?", 1)[0].split("#", 1)[0]
        else:
            path = urlsplit(url).path
    else:
        target = urlsplit(url)
        if (target.scheme, target.netloc.lower()) != _origin(base_url):
            return None
        path = target.path
    # `{base_url}//api/...` is still meant for the API, but names no published file (the
    # CDN looks the doubled path up as written): returned as is, so it fails to resolve.
    meant = "/" + path.lstrip("/") if path.startswith("//") else path
    if meant in NON_FILE_PATHS or meant in API_ROOT_FILES or meant.startswith(API_PREFIXES):
        return path
    return None


def url_path(url: str) -> str:
    """`urlsplit(url).path`, read off a plain `scheme://host/path` without splitting it (the
    build takes the path of every URL the discovery document lists: 20,000 at 10k)."""
    start = url.find("://")
    if start > 0 and url[:start].isalpha() and _splits_as_written(url):
        rest = url[start + 3 :]
        ends = [at for at in (rest.find(mark) for mark in "/?#") if at >= 0]
        if not ends or rest[min(ends)] != "/":
            return ""
        return rest[min(ends) :].split("?", 1)[0].split("#", 1)[0]
    return urlsplit(url).path


def _splits_as_written(url: str) -> bool:
    """Whether `urlsplit(url)` reads `url` as written: no character it strips or drops,
    and nothing it validates (a bracketed host, a non-ASCII one) that could raise."""
    return url.isascii() and url[:1] > " " and not any(character in url for character in "[]\t\r\n")


def api_paths(text: str, base_url: str) -> set[str]:
    """The paths of every link into the API found in `text` (templates included)."""
    return {path for url in urls(text) if (path := api_path(url, base_url)) is not None}


def template_pattern(template: str) -> re.Pattern[str]:
    """A regex matching the paths a template such as /api/v1/faq/{faq_id}.json stands for."""
    return re.compile(_TEMPLATE_PART.sub("[^/]+", re.escape(template)))


def resolves(path: str, published: Iterable[str]) -> bool:
    """Whether a linked path names a published file (or, for a template, at least one)."""
    if path in NON_FILE_PATHS:
        return True
    if "{" in path:
        pattern = template_pattern(path)
        return any(pattern.fullmatch(candidate) for candidate in published)
    return path in published
