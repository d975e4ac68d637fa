"""AWS Lambda entry point (function URL, payload format 2.0) for the MCP endpoint.

The function packages no content: it reads the published files from the bucket named by
MCP_BUCKET on demand (agent_mcp.s3: GetObject, revalidated with If-None-Match, a
bounded cache), so it serves any site size and a publish is seen without a redeploy
(tests without AWS point MCP_SITE_DIR at a folder instead). It serves them through the
same `handle_http` as `serve`: /mcp and the server card's paths. The function URL is
public (auth NONE: origin access control would require `x-amz-content-sha256` on every
POST, which MCP clients never send), so it answers only requests carrying the secret
origin header CloudFront adds.

The handler answers every event and never raises: an exception is a 502 from the function
URL with no reason given to the client. In order: 400 for what is not an event at all,
403 until the origin secret is proven (whatever else is wrong: a caller without it learns
nothing more), then 400 for a malformed field, 404 for another path, 413 for a body over
MCP_MAX_BODY (decided from the declared length or the delivered body's size, before the
body is decoded), 503 while the bucket holds no published site (or cannot be read), and
the MCP endpoint's own answers (405 for a method but POST...).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent_contract import paths
from agent_contract.mcp_endpoint import (
    BUCKET_ENV,
    MCP_MAX_BODY,
    MCP_PATH,
    ORIGIN_SECRET_ENV,
    ORIGIN_VERIFY_HEADER,
    PACKAGED_SITE_FOLDER,
    SERVER_CARD_PATHS,
)
from agent_mcp.http import declared_length, handle_http, too_large
from agent_mcp.s3 import S3Files, Snapshot
from agent_mcp.sources import DirectoryFiles, FileSource, MissingFile, SourceError

ORIGIN_HEADER = ORIGIN_VERIFY_HEADER
SECRET_ENV = ORIGIN_SECRET_ENV
#: The paths this function answers: the MCP endpoint and the server card's.
PATHS = (MCP_PATH, *SERVER_CARD_PATHS)
#: The files whose change makes a new catalog (the tools and the entries it parses once).
GENERATION_FILES = (paths.MCP_MANIFEST, paths.CONTENT_INDEX)
SITE_DIR = Path(
    os.environ.get("MCP_SITE_DIR", Path(__file__).resolve().parents[1] / PACKAGED_SITE_FOLDER)
)


class BucketSource:
    """The published files in the bucket named by BUCKET_ENV, as one Snapshot per
    generation: each invocation revalidates GENERATION_FILES (two conditional GETs,
    304s while nothing was published) and gets a new Snapshot, so a new server, only
    after a publish changed one of them. Every other read is revalidated as it is made."""

    def __init__(self, files: S3Files) -> None:
        self.files = files
        self._snapshot: Snapshot | None = None

    def current(self) -> Snapshot:
        for path in GENERATION_FILES:
            self.files.read(path)
        generation = tuple(self.files.etag(path) for path in GENERATION_FILES)
        if self._snapshot is None or self._snapshot.generation != generation:
            self._snapshot = Snapshot(self.files, generation)
        return self._snapshot


_BUCKET: BucketSource | None = None
_DIRECTORY: DirectoryFiles | None = None


def source() -> FileSource:
    """Where this invocation reads: the bucket (deployed), else MCP_SITE_DIR (tests)."""
    global _BUCKET, _DIRECTORY
    bucket = os.environ.get(BUCKET_ENV)
    if bucket:
        if _BUCKET is None or _BUCKET.files.bucket != bucket:
            _BUCKET = BucketSource(S3Files(bucket))
        try:
            return _BUCKET.current()
        except MissingFile as missing:
            # The stack creates the function before its first publish fills the bucket
            # (and a publish can fail): a state to name, not a bug to log as one.
            raise Refused(
                503,
                "not_published",
                f"the site is not published yet ({missing}): publish it (`pulumi up`), "
                "then ask again",
            ) from None
        except SourceError as failed:  # S3 failing (throttled, down): logged, answered
            log.warning("cannot read the bucket: %s", failed)
            raise Refused(
                503, "unavailable", "the published files cannot be read; try again"
            ) from None
    if _DIRECTORY is None:
        _DIRECTORY = DirectoryFiles(SITE_DIR)
    return _DIRECTORY


#: The longest base64 text that can decode to at most MCP_MAX_BODY bytes (4 characters
#: per 3 bytes, padded): anything longer is refused without decoding it.
MAX_BASE64_BODY = 4 * -(-MCP_MAX_BODY // 3)

log = logging.getLogger(__name__)


class Refused(Exception):
    """An event answered with an error before it reaches the MCP endpoint."""

    def __init__(self, status: int, error: str, message: str) -> None:
        super().__init__(message)
        self.status, self.error, self.message = status, error, message


def _json(status: int, error: str, message: str) -> dict[str, Any]:
    body = json.dumps({"error": error, "message": message}) + "\n"
    return {
        "statusCode": status,
        "headers": {"content-type": "application/json", "content-length": str(len(body))},
        "body": body,
        "isBase64Encoded": False,
    }


def _malformed(what: str) -> Refused:
    return Refused(400, "bad_request", f"malformed function URL event: {what}")


def _field(container: Any, key: str) -> Any:
    return container.get(key) if isinstance(container, Mapping) else None


def _authenticated_headers(event: Mapping[str, Any]) -> dict[str, str]:
    """The request's headers, names lowercased, once the origin secret is proven; the
    secret header itself removed (it is not the client's)."""
    raw = event.get("headers")
    headers = (
        {name.lower(): value for name, value in raw.items() if isinstance(name, str)}
        if isinstance(raw, Mapping)
        else {}
    )
    secret = os.environ.get(SECRET_ENV, "")
    presented = headers.pop(ORIGIN_HEADER, None)
    # Constant-time: the comparison must not leak how much of a guess was right. Bytes
    # (compare_digest takes str only when ASCII); a value that is not text is no secret.
    if (
        not secret
        or not isinstance(presented, str)
        or not hmac.compare_digest(presented.encode("utf-8", "replace"), secret.encode())
    ):
        raise Refused(403, "forbidden", "requests reach this function through the CDN only")
    if not all(isinstance(value, str) for value in headers.values()):
        raise _malformed("a header value is not a string")
    return headers


def _body(event: Mapping[str, Any], headers: Mapping[str, str]) -> bytes:
    """The request body, refused by its size before it is decoded."""
    if "content-length" in headers:
        declared = declared_length(headers)
        if declared is None:
            raise _malformed("content-length is not one decimal number")
        if declared > MCP_MAX_BODY:
            raise Refused(413, "too_large", "")
    body = event.get("body")
    encoded = event.get("isBase64Encoded", False)
    if body is None:
        body = ""
    if not isinstance(body, str):
        raise _malformed("body is not a string")
    if not isinstance(encoded, bool):
        raise _malformed("isBase64Encoded is not a boolean")
    if encoded:
        if len(body) > MAX_BASE64_BODY:
            raise Refused(413, "too_large", "")
        try:
            raw = base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError):
            raise _malformed("body is not valid base64") from None
    else:
        # A character is at least one UTF-8 byte: a longer string is refused unencoded.
        if len(body) > MCP_MAX_BODY:
            raise Refused(413, "too_large", "")
        try:
            raw = body.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate, which no HTTP body can carry
            raise _malformed("body is not valid text") from None
    if len(raw) > MCP_MAX_BODY:
        raise Refused(413, "too_large", "")
    return raw


def _answer(event: Any) -> dict[str, Any]:
    if not isinstance(event, Mapping):
        raise _malformed("not a JSON object")
    headers = _authenticated_headers(event)
    path = event.get("rawPath")
    if not isinstance(path, str):
        raise _malformed("rawPath is not a string")
    if path not in PATHS:
        raise Refused(404, "not_found", f"the MCP endpoint is {MCP_PATH}")
    method = _field(_field(event.get("requestContext"), "http"), "method")
    if not isinstance(method, str):
        raise _malformed("requestContext.http.method is not a string")
    raw = _body(event, headers)
    status, response_headers, payload = handle_http(method, path, headers, raw, source())
    combined: dict[str, str] = {}
    for name, value in response_headers:
        combined[name.lower()] = value
    try:
        text, encoded = payload.decode("utf-8"), False
    except UnicodeDecodeError:  # not expected of the SDK; carried intact if it happens
        text, encoded = base64.b64encode(payload).decode("ascii"), True
    return {
        "statusCode": int(status),  # the SDK's HTTPStatus: a plain int in the response
        "headers": combined,
        "body": text,
        "isBase64Encoded": encoded,
    }


def handler(event: Any, context: object = None) -> dict[str, Any]:
    try:
        return _answer(event)
    except Refused as refused:
        if refused.status == 413:
            status, headers, body = too_large()
            return {
                "statusCode": status,
                "headers": {name.lower(): value for name, value in headers},
                "body": body.decode("utf-8"),
                "isBase64Encoded": False,
            }
        return _json(refused.status, refused.error, refused.message)
    except Exception:  # a bug: logged with its traceback (CloudWatch), answered 500
        log.exception("the MCP handler failed on an event")
        return _json(500, "internal_error", "the MCP server failed; the error is logged")
