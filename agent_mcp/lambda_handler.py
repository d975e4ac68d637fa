"""AWS Lambda entry point (function URL, payload format 2.0) for the MCP endpoint.

The build's files are packaged beside this package under `site/`; the handler serves them
through the same `handle_http` as `serve`. The function URL is public (auth NONE: origin
access control would require `x-amz-content-sha256` on every POST, which MCP clients never
send), so it answers only requests carrying the secret origin header CloudFront adds.
"""

from __future__ import annotations

import base64
import hmac
import json
import os
from pathlib import Path
from typing import Any

from agent_mcp.http import MCP_PATH, handle_http
from agent_mcp.sources import DirectoryFiles

ORIGIN_HEADER = "x-origin-verify"
SECRET_ENV = "MCP_ORIGIN_SECRET"
SITE_DIR = Path(os.environ.get("MCP_SITE_DIR", Path(__file__).resolve().parents[1] / "site"))
SOURCE = DirectoryFiles(SITE_DIR)


def _json(status: int, error: str, message: str) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"content-type": "application/json"},
        "body": json.dumps({"error": error, "message": message}) + "\n",
        "isBase64Encoded": False,
    }


def handler(event: dict[str, Any], context: object = None) -> dict[str, Any]:
    headers = {name.lower(): value for name, value in (event.get("headers") or {}).items()}
    secret = os.environ.get(SECRET_ENV, "")
    # Constant-time: the comparison must not leak how much of a guess was right.
    if not secret or not hmac.compare_digest(
        headers.get(ORIGIN_HEADER, "").encode(), secret.encode()
    ):
        return _json(403, "forbidden", "requests reach this function through the CDN only")
    headers.pop(ORIGIN_HEADER)
    path = event.get("rawPath") or "/"
    if path != MCP_PATH:
        return _json(404, "not_found", f"the MCP endpoint is {MCP_PATH}")
    method = event.get("requestContext", {}).get("http", {}).get("method", "GET")
    body = event.get("body") or ""
    raw = base64.b64decode(body) if event.get("isBase64Encoded") else body.encode("utf-8")
    status, response_headers, payload = handle_http(method, path, headers, raw, SOURCE)
    combined: dict[str, str] = {}
    for name, value in response_headers:
        combined[name.lower()] = value
    return {
        "statusCode": status,
        "headers": combined,
        "body": payload.decode("utf-8"),
        "isBase64Encoded": False,
    }
