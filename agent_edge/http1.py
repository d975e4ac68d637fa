"""An HTTP/1.1 request head read from a connection, lean enough for a keep-alive loop.

`http.server` parses each request's header block with the `email` package
(`http.client.parse_headers`): a general MIME parser, about two thirds of the local edge's
work per request (docs/decisions.md, "The local edge reads its requests itself"). This
reads the same bytes with one `readline` and one regular expression per line.

What it keeps from `http.server` (and so from what `serve` answered before): the request
line's rules and messages (400 for a bad syntax or version, 505 for HTTP/2 and later,
HTTP/0.9's bare `GET /path`), 414 past 65,536 bytes of request line, 431 past 65,536
bytes of one header line or more than 100 lines in the header block, a bare LF accepted
as a line end (RFC 9112 2.2), field names kept as sent.

What it refuses where `http.server` guessed (RFC 9112 and RFC 9110 name each as
invalid):
- a field line that is not `name ":" value` (no colon, whitespace before the colon, a
  name that is not a token): 400, where the email parser silently took that line and
  every line after it as a body and dropped those headers;
- obsolete line folding (a line that starts with a space or a tab): 400 (RFC 9112 5.2
  lets a server reject it; the email parser joined it to the previous value);
- control characters in a value (NUL, a bare CR, ...): 400 (RFC 9110 5.5);
- an HTTP/1.1 request with no Host, or any request with two (RFC 9112 3.2: "MUST");
- a Content-Length that is not one decimal number (RFC 9110 8.6, RFC 9112 6.3), or one
  of more than 18 significant digits: 400, where `serve` raised on `int()` (a traceback
  and a dropped connection) or, for a negative one, waited for the client to hang up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import BinaryIO

#: `http.server`'s limit for the request line (then 414) and `http.client`'s for one
#: header line (then 431).
MAX_LINE = 65_536
#: `http.client._MAXHEADERS`: the header block's lines, the blank one that ends it
#: included, may number at most this many (then 431).
MAX_HEADER_LINES = 100

#: `name: value` (RFC 9110 5.1 token, 5.5 field-value; RFC 9112 5 allows whitespace
#: around the value, which is not part of it); the line ends in CRLF or a bare LF.
_TOKEN = rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
#: Greedy, so linear in the line's length whatever it holds; the value's trailing
#: whitespace is stripped after the match.
_FIELD_LINE = re.compile(rb"(" + _TOKEN + rb"):[ \t]*([\t\x20-\x7e\x80-\xff]*)\r?\n")
_DIGITS = re.compile(r"[0-9]+")
#: Significant digits a Content-Length may have (so below 2**63, a signed 64-bit size): more
#: cannot be a body anyone sends, and past 4,300 int() itself refuses the string.
MAX_LENGTH_DIGITS = 18


class BadRequest(Exception):
    """A request the server answers with `status` and closes the connection after."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class RequestLine:
    command: str
    target: str  # as sent
    version: str  # "HTTP/0.9" for a bare `GET /path`
    #: Whether the version lets the connection stay open (HTTP/1.1 and later minors).
    persistent: bool


def parse_request_line(text: str) -> RequestLine | None:
    """The request line (its line end already removed), by `http.server`'s rules and with
    its messages; None for a blank line, which `http.server` answers by closing."""
    words = text.split()
    if not words:
        return None
    version = "HTTP/0.9"
    persistent = False
    if len(words) >= 3:  # enough to determine the protocol version
        version = words[-1]
        if version == "HTTP/1.1":  # nearly every request: the checks below, already known
            persistent = True
        else:
            number = _version_number(version)
            if number is None:
                raise BadRequest(400, f"Bad request version ({version!r})")
            if number >= (2, 0):
                raise BadRequest(505, f"Invalid HTTP version ({version.split('/', 1)[1]})")
            persistent = number >= (1, 1)
    if not 2 <= len(words) <= 3:
        raise BadRequest(400, f"Bad request syntax ({text!r})")
    command, target = words[0], words[1]
    if len(words) == 2 and command != "GET":
        raise BadRequest(400, f"Bad HTTP/0.9 request type ({command!r})")
    return RequestLine(command, target, version, persistent and len(words) == 3)


def _version_number(version: str) -> tuple[int, int] | None:
    # RFC 2145 3.1, as http.server reads it: one dot, two decimal numbers of at most ten
    # digits each, leading zeros ignored.
    if not version.startswith("HTTP/"):
        return None
    parts = version[5:].split(".")
    # ASCII digits only: str.isdigit() also takes "\xb2" (superscript two), which int()
    # refuses; http.server's int() sits in a try and answers that 400 too.
    if len(parts) != 2 or not all(p.isascii() and p.isdigit() and len(p) <= 10 for p in parts):
        return None
    return int(parts[0]), int(parts[1])


#: The fields the server itself acts on, gathered while the block is read (lowercased).
FRAMING = frozenset({"host", "content-length", "transfer-encoding", "connection", "expect"})


@dataclass(frozen=True)
class Fields:
    #: In the order sent, names as sent.
    items: list[tuple[str, str]]
    #: The values of each FRAMING field present, by lowercased name.
    framing: dict[str, list[str]]


def read_fields(rfile: BinaryIO) -> Fields | None:
    """The header block; None when the connection ends before the blank line that closes
    it (a cut request: nothing to answer)."""
    items: list[tuple[str, str]] = []
    framing: dict[str, list[str]] = {}
    lines = 0
    match = _FIELD_LINE.fullmatch
    while True:
        line = rfile.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise BadRequest(431, "Line too long")
        lines += 1
        if lines > MAX_HEADER_LINES:
            raise BadRequest(431, "Too many headers")
        if line == b"\r\n" or line == b"\n":
            return Fields(items, framing)
        if not line.endswith(b"\n"):
            return None
        found = match(line)
        if found is None:
            raise BadRequest(400, _why_not_a_field(line))
        raw_name, raw_value = found.groups()
        name = raw_name.decode("ascii")
        value = raw_value.rstrip(b" \t").decode("latin-1")
        items.append((name, value))
        lowered = name.lower()
        if lowered in FRAMING:
            framing.setdefault(lowered, []).append(value)


def _why_not_a_field(line: bytes) -> str:
    if line[:1] in (b" ", b"\t"):
        return "Bad header: obsolete line folding is not accepted (RFC 9112 5.2)"
    name, colon, _ = line.partition(b":")
    if not colon:
        return "Bad header: a field line without a colon"
    if not name or name != name.rstrip(b" \t"):
        return "Bad header: whitespace or nothing before the colon"
    if re.fullmatch(_TOKEN, name) is None:
        return "Bad header: the field name is not a token"
    return "Bad header: a control character in a field value"


def check_host(line: RequestLine, fields: Fields) -> None:
    # RFC 9112 3.2: "A server MUST respond with a 400 (Bad Request) status code to any
    # HTTP/1.1 request message that lacks a Host header field and to any request message
    # that contains more than one Host header field line".
    hosts = len(fields.framing.get("host", ()))
    if hosts > 1 or (hosts == 0 and line.persistent):
        raise BadRequest(400, "Bad request: exactly one Host header is required")


def content_length(fields: Fields) -> int:
    """The body's length in bytes (0 when the request declares none)."""
    declared = fields.framing.get("content-length")
    if not declared:
        return 0
    # RFC 9110 8.6: one non-negative decimal number; repeated lines must agree. Anything
    # else cannot say where this request ends and the next one starts.
    if any(_DIGITS.fullmatch(v) is None for v in declared) or len(set(declared)) > 1:
        raise BadRequest(400, "Bad request: Content-Length is not one decimal number")
    # RFC 9110 8.6: "a recipient MUST anticipate potentially large decimal numerals and
    # prevent parsing errors due to integer conversion overflows".
    if len(declared[0].lstrip("0")) > MAX_LENGTH_DIGITS:
        raise BadRequest(400, "Bad request: Content-Length is too large")
    return int(declared[0])


def options(fields: Fields, name: str) -> set[str]:
    """A list-valued field's members, lowercased (RFC 9110 5.6.1: comma-separated, and
    possibly over several lines), e.g. the Connection header's `close`."""
    return {
        member.strip().lower()
        for value in fields.framing.get(name, ())
        for member in value.split(",")
        if member.strip()
    }
