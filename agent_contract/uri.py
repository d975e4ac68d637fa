"""Absolute http(s) URLs as RFC 3986 writes them, checked, never rewritten.

Every URL the API publishes is one an author wrote (site.yaml, canonical_url, endpoints,
knowledge sources) or one built from the base URL and an id. It is published as written
("nothing an author wrote is changed silently"), so it must already be a URI: the
grammar of RFC 3986 (Appendix A) for `http` and `https`, transcribed below with these
extra rules (docs/security.md):

- a host is required: a DNS name (labels of letters, digits, `-` and `_`, dot-separated,
  63 characters each at most), an IPv4 address or a bracketed IPv6 address;
- no user information (`https://www.site.example@evil.example/` reads as the host
  `evil.example` to every client);
- nothing RFC 3986 forbids unencoded: no whitespace, no control character, no
  non-ASCII character (percent-encode it, or write an IDN host as `xn--...`), none of
  `<>"{}|\\^` and backtick, and `%` only as `%XX`.

Why not a library: pydantic's `HttpUrl` (the WHATWG parser) repairs what it reads (it
drops tabs and newlines, encodes spaces and `<`, keeps user information), so what it
accepts is not what gets published; `rfc3986` on PyPI was last released in January 2022.
The grammar is small; every repetition is possessive or atomic, so matching is linear in
the URL's length (tests/test_hostile_content.py times a long hostile one).
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata

_UNRESERVED = r"A-Za-z0-9\-._~"
_SUB_DELIMS = r"!$&'()*+,;="
_PCT_ENCODED = r"%[0-9A-Fa-f]{2}"
#: What a path may hold as it is besides letters, digits and `-._~` (RFC 3986: `/` and
#: pchar's sub-delims, `:` and `@`): `urllib.parse.quote(path, safe=PATH_SAFE)` encodes
#: only what a URL's path may not hold (a space, `?`, `#`, `%`, non-ASCII).
PATH_SAFE = "/!$&'()*+,;=:@"
# pchar = unreserved / pct-encoded / sub-delims / ":" / "@"; a run of them, possessive
# (`*+`, Python 3.11): each character is read one way only, so a URL that fails to match
# fails in linear time (a nested `(?:[...]+|...)*` backtracked exponentially).
_PCHARS = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}:@]|{_PCT_ENCODED})*+"
# query = fragment = *( pchar / "/" / "?" )
_QUERY = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}:@/?]|{_PCT_ENCODED})*+"
_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"

_URI = re.compile(
    r"(?P<scheme>[Hh][Tt][Tt][Pp][Ss]?)://"
    rf"(?P<host>(?>{_LABEL}(?:\.{_LABEL})*+)|\[(?P<ipv6>[0-9A-Fa-f:.]++)\])"
    r"(?::(?P<port>[0-9]{1,5}))?"
    rf"(?P<path>(?:/{_PCHARS})*+)"  # path-abempty: each segment starts with "/"
    rf"(?:\?{_QUERY})?"
    rf"(?:#{_QUERY})?"
)
#: Characters RFC 3986 allows anywhere in a URI (reserved, unreserved and "%").
_URI_CHARACTERS = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=%"
)
_NUMERIC_HOST = re.compile(r"[0-9.]+")


def url_problem(value: str) -> str | None:
    """What keeps `value` from being an absolute http(s) URL as above, or None."""
    match = _URI.fullmatch(value)
    if match is not None:
        return _host_problem(match)
    for position, character in enumerate(value):
        if character not in _URI_CHARACTERS:
            return f"{_describe(character)} at position {position + 1} is not allowed in a URL"
    if not re.match(r"[Hh][Tt][Tt][Pp][Ss]?://", value):
        return "expected an absolute http:// or https:// URL"
    authority = re.split(r"[/?#]", value.split("://", 1)[1], maxsplit=1)[0]
    if "@" in authority:
        return (
            "a user name before the host (user@host) is not allowed: readers take what "
            "follows the @ for the host"
        )
    if not authority:
        return "expected a host after the ://"
    if re.search(r"[\[\]]", value.split("://", 1)[1][len(authority) :]):
        return "[ and ] are only allowed around an IPv6 address (percent-encode them)"
    if re.search(r"%(?![0-9A-Fa-f]{2})", value):
        return "a % must start a percent-encoded byte (%XX)"
    return (
        "not a URL as RFC 3986 writes it: expected a host name (or IP address), an "
        "optional port, then a path, query and fragment"
    )


def _host_problem(match: re.Match[str]) -> str | None:
    port = match.group("port")
    if port is not None and int(port) > 65535:
        return f"port {port} is out of range"
    if match.group("ipv6") is not None:
        try:
            ipaddress.IPv6Address(match.group("ipv6"))
        except ValueError:
            return f"{match.group('host')} is not an IPv6 address"
        return None
    host = match.group("host")
    if len(host) > 253:
        return "the host name is longer than 253 characters"
    if _NUMERIC_HOST.fullmatch(host):
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            return f"{host} is not an IPv4 address"
    return None


_NAMES = {"\n": "a newline", "\r": "a carriage return", "\t": "a tab"}


def _describe(character: str) -> str:
    if character.isspace() or unicodedata.category(character).startswith("C"):
        name = _NAMES.get(character) or unicodedata.name(character, "a control character")
        return f"U+{ord(character):04X} ({name.lower()})"
    if not character.isascii():
        return f"the non-ASCII character {character!r} (percent-encode it; a host as xn--...)"
    return f"the character {character!r} (percent-encode it)"
