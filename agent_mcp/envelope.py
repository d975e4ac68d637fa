"""The JSON-RPC envelope of one message a client sent, checked before the SDK reads it.

The SDK reads `{"jsonrpc": "2.0", "id": null, "method": "ping"}` as a notification (its
model drops an id it cannot take), so a request with an id that is null, a float, a
boolean, an array or an object was never answered: the client waited forever. JSON-RPC
2.0 (sections 4, 5, 5.1) answers an invalid Request with -32600 and a null id, and text
that is no JSON with -32700; MCP's base protocol says a request's id is a string or an
integer, never null, and its params an object. Both transports (agent_mcp.stdio,
agent_mcp.http) ask `refusal` for each raw message first: a message it refuses is
answered here and never reaches the SDK; a valid request, a notification and a response
pass untouched. Sources: docs/decisions.md, "Every JSON-RPC request answered".
"""

from __future__ import annotations

from typing import Any, Final

import pydantic_core
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError

#: The largest integer id answered: I-JSON's interoperable range (RFC 7493, 2.2), what
#: a JavaScript client can hold exactly. A larger one would be echoed back digit for
#: digit (10^400 is valid JSON); JSON lets a receiver limit numbers (RFC 8259, 9).
MAX_INTEGER_ID: Final = 2**53 - 1
#: The longest string id answered, in characters: far above a UUID (36) or any counter
#: a client keeps, far below the 1 MiB body that would otherwise be echoed back whole.
MAX_STRING_ID: Final = 256
_ID_RULE: Final = (
    f"the id is a string of at most {MAX_STRING_ID} characters or an integer of at most "
    "2^53 - 1 in magnitude"
)


def refusal(text: str | bytes) -> JSONRPCError | None:
    """The error answering one raw message, or None when it may go to the SDK."""
    return read_message(text)[1]


def read_message(text: str | bytes) -> tuple[Any, JSONRPCError | None]:
    """One raw message parsed, and the error answering it (None: it may go to the SDK,
    and the parsed message is what it holds)."""
    try:
        message = pydantic_core.from_json(text)  # the parser the SDK itself uses
    except ValueError:  # not JSON, too deep, a number out of range, not UTF-8
        return None, _error(PARSE_ERROR, "Parse error", None)
    return message, envelope_refusal(message)


def envelope_refusal(message: Any) -> JSONRPCError | None:
    """The -32600 answering a parsed message that is no single valid JSON-RPC message."""
    if isinstance(message, list):
        # MCP has had no batches since 2025-06-18, and the SDK reads none (docs/decisions.md).
        return _invalid("a batch (an array) is not accepted: send one message", None)
    if not isinstance(message, dict):
        return _invalid("a message is a JSON object", None)
    if "method" not in message and ("result" in message or "error" in message):
        return None  # a response: never answered (JSON-RPC 2.0, section 5); the SDK's
    request_id = message.get("id")
    if "id" in message and not usable_id(request_id):
        return _invalid(_ID_RULE, None)
    answered = request_id if "id" in message else None
    if message.get("jsonrpc") != "2.0":
        return _invalid('"jsonrpc" is "2.0"', answered)
    if not isinstance(message.get("method"), str):
        return _invalid('"method" is a string', answered)
    # null is taken as absent, as the SDK does: a lax client's params stays answered.
    if message.get("params") is not None and not isinstance(message["params"], dict):
        return _invalid('"params" is an object', answered)
    return None


def usable_id(value: Any) -> bool:
    """Whether `value` is an id this server answers with (echoes back)."""
    if isinstance(value, bool):  # a bool is an int to Python, not to JSON
        return False
    if isinstance(value, int):
        return -MAX_INTEGER_ID <= value <= MAX_INTEGER_ID
    return isinstance(value, str) and len(value) <= MAX_STRING_ID


def _invalid(reason: str, request_id: str | int | None) -> JSONRPCError:
    return _error(INVALID_REQUEST, f"Invalid Request: {reason}", request_id)


def _error(code: int, message: str, request_id: str | int | None) -> JSONRPCError:
    # A fixed message, never the input: the answer stays small whatever was sent.
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))
