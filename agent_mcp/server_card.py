"""The live server's MCP Server Card (SEP-2127) and the MCP Catalog that names it.

A Server Card says who the server is and where to connect before a client connects:
identity (a reverse-DNS `name`, `version`, `title`, `description`), the site, and the
streamable-HTTP remote with the protocol versions it speaks; it lists no tools (the
extension leaves those to tools/list). Built from the published files alone: the
manifest's serverInfo and the discovery document (name, website, and the MCP endpoint
it names, else its base URL + /mcp), so `serve` and the Lambda answer the same card for
the same files. Answered at every path of agent_contract.mcp_endpoint.SERVER_CARD_PATHS
with GET or HEAD, an ETag (304 on If-None-Match), CORS and a one-hour Cache-Control
(the extension's "Discovery" page asks for both).

What is settled and what is not (the card's shape is an experimental extension's draft,
its schema URL versioned v2) is in docs/decisions.md ("MCP answers sized for agents, the
Lambda reading the bucket, the server card", issue 25).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from mcp_types.version import SUPPORTED_PROTOCOL_VERSIONS

from agent_contract import paths
from agent_contract.mcp_endpoint import (
    MCP_CATALOG_PATH,
    MCP_PATH,
    SERVER_CARD_MEDIA,
    SERVER_CARD_PATH,
)
from agent_mcp.catalog import Catalog

SCHEMA = "https://static.modelcontextprotocol.io/schemas/v2/server-card.schema.json"
#: The extension's schema caps `title` and `description` at 100 characters.
TEXT_LIMIT = 100
HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Cache-Control": "public, max-age=3600",
    "X-Content-Type-Options": "nosniff",
}
Response = tuple[int, list[tuple[str, str]], bytes]


def _cut(text: str, limit: int = TEXT_LIMIT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _discovery(catalog: Catalog) -> dict[str, Any]:
    value = json.loads(catalog.source.read(paths.discovery(catalog.scheme)))
    return value if isinstance(value, dict) else {}


def endpoint_url(discovery: Mapping[str, Any]) -> str:
    """The MCP endpoint the discovery document names, else its base URL + /mcp."""
    mcp = discovery.get("protocols", {}).get("mcp", {})
    if isinstance(mcp, dict) and isinstance(mcp.get("endpoint"), str):
        return mcp["endpoint"]
    parts = urlsplit(str(discovery.get("interfaces", {}).get("discovery", "")))
    return f"{parts.scheme}://{parts.netloc}{MCP_PATH}"


def card(catalog: Catalog) -> dict[str, Any]:
    discovery = _discovery(catalog)
    endpoint = endpoint_url(discovery)
    host = urlsplit(endpoint).hostname or "localhost"
    site = str(discovery.get("name") or catalog.server_name)
    value: dict[str, Any] = {
        "$schema": SCHEMA,
        # reverse-DNS namespace / server: the schema's ^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$
        "name": ".".join(reversed(host.split("."))) + "/" + catalog.server_name,
        "version": catalog.server_version,
        "title": _cut(f"{site} content"),
        "description": _cut(f"Read-only search and reading of {site}'s documents and FAQ."),
        "remotes": [
            {
                "type": "streamable-http",
                "url": endpoint,
                "supportedProtocolVersions": list(SUPPORTED_PROTOCOL_VERSIONS),
            }
        ],
    }
    if isinstance(discovery.get("website"), str):
        value["websiteUrl"] = discovery["website"]
    return value


def mcp_catalog(catalog: Catalog) -> dict[str, Any]:
    """The MCP Catalog (/.well-known/mcp/catalog.json): one entry, this server's card."""
    server = card(catalog)
    endpoint = server["remotes"][0]["url"]
    host = urlsplit(endpoint).hostname or "localhost"
    return {
        "specVersion": "draft",
        "entries": [
            {
                "identifier": f"urn:air:{host}:{catalog.server_name}",
                "displayName": server["title"],
                "type": SERVER_CARD_MEDIA,
                "url": endpoint.removesuffix(MCP_PATH) + SERVER_CARD_PATH,
            }
        ],
    }


def answer(catalog: Catalog, method: str, path: str, headers: Mapping[str, str]) -> Response:
    """GET/HEAD of a card path: 200 (or 304 on a matching If-None-Match); OPTIONS: 204
    with CORS; anything else 405."""
    method = method.upper()
    if method == "OPTIONS":
        return 204, [*HEADERS.items(), ("Access-Control-Allow-Methods", "GET, HEAD")], b""
    if method not in ("GET", "HEAD"):
        body = b'{"error":"method_not_allowed","message":"GET or HEAD"}\n'
        return 405, [("Allow", "GET, HEAD"), ("Content-Type", "application/json")], body
    value = mcp_catalog(catalog) if path == MCP_CATALOG_PATH else card(catalog)
    body = (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    media = "application/json" if path == MCP_CATALOG_PATH else SERVER_CARD_MEDIA
    etag = '"' + hashlib.sha256(body).hexdigest() + '"'
    response = [*HEADERS.items(), ("Content-Type", media), ("ETag", etag)]
    wanted = next((v for k, v in headers.items() if k.lower() == "if-none-match"), None)
    if wanted is not None and etag in [tag.strip() for tag in wanted.split(",")]:
        return 304, response, b""
    return 200, response, b"" if method == "HEAD" else body
