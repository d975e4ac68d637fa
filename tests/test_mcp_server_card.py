"""The MCP server card (SEP-2127) where clients look for it, wherever the server runs.

Checked against the extension's own rules as its schema states them (the v2 schema URL,
a reverse-DNS `name` with exactly one slash, `description` and `title` of 1 to 100
characters, remotes of type streamable-http with an http(s) URL), on `serve` over real
HTTP and through the Lambda handler.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client

from agent_contract import paths
from agent_mcp import lambda_handler
from agent_mcp.sources import MemoryFiles
from benchmarks import sitegen
from content_builder.build import discovery_path, plan
from tests.conftest import SITE_DATA, TEST_BASE_URL, running_server
from tests.test_mcp_server import run

CARD_PATHS = ("/.well-known/mcp/server-card.json", "/mcp/server-card")
CARD_MEDIA = "application/mcp-server-card+json"
SCHEMA = "https://static.modelcontextprotocol.io/schemas/v2/server-card.schema.json"
NAME = re.compile(r"^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$")


def check_card(card: dict[str, Any], endpoint: str) -> None:
    assert card["$schema"] == SCHEMA
    assert set(card) <= {
        "$schema",
        "_meta",
        "description",
        "icons",
        "name",
        "remotes",
        "repository",
        "title",
        "version",
        "websiteUrl",
    }  # fmt: skip  (the schema's additionalProperties: false)
    assert NAME.match(card["name"]) and 3 <= len(card["name"]) <= 200
    assert 1 <= len(card["description"]) <= 100 and 1 <= len(card["title"]) <= 100
    assert card["version"]
    (remote,) = card["remotes"]
    assert remote == {
        "type": "streamable-http",
        "url": endpoint,
        "supportedProtocolVersions": remote["supportedProtocolVersions"],
    }
    assert {"2025-11-25", "2026-07-28"} <= set(remote["supportedProtocolVersions"])


def get(url: str, **headers: str) -> tuple[int, Any, bytes]:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


@pytest.fixture(scope="module")
def server() -> Iterator[Any]:
    with running_server(SITE_DATA) as running:
        yield running


def test_serve_answers_the_card_where_clients_look(server: Any) -> None:
    files = {path: a.body for path, a in server.edge.artifacts.items()}
    manifest = json.loads(files[paths.MCP_MANIFEST])
    endpoint = server.base_url + "/mcp"
    cards = []
    for path in CARD_PATHS:
        status, headers, body = get(server.base_url + path, Accept=CARD_MEDIA)
        assert status == 200, path
        assert headers["Content-Type"] == CARD_MEDIA
        assert headers.get_all("Access-Control-Allow-Origin") == ["*"]
        assert "max-age=" in headers["Cache-Control"]
        card = json.loads(body)
        check_card(card, endpoint)
        assert card["version"] == manifest["serverInfo"]["version"]
        assert card["name"].endswith("/" + manifest["serverInfo"]["name"])
        cards.append(body)
        again, _, empty = get(server.base_url + path, **{"If-None-Match": headers["ETag"]})
        assert again == 304 and empty == b""
    assert cards[0] == cards[1]
    # The MCP Catalog names the card beside the endpoint.
    status, headers, body = get(server.base_url + "/.well-known/mcp/catalog.json")
    assert status == 200 and headers["Content-Type"] == "application/json"
    (entry,) = json.loads(body)["entries"]
    assert entry["type"] == CARD_MEDIA and entry["url"] == endpoint + "/server-card"
    # A client that reads the card connects to what it names.
    (remote,) = json.loads(cards[0])["remotes"]

    async def connect() -> str:
        async with Client(remote["url"], mode="legacy") as client:
            return client.server_info.name  # type: ignore[union-attr]

    assert run(connect) == manifest["serverInfo"]["name"]


def test_the_discovery_document_names_the_card_beside_a_live_endpoint() -> None:
    endpoint = TEST_BASE_URL + "/mcp"
    for live, expected in ((endpoint, endpoint + "/server-card"), (None, None)):
        built = {
            a.path: a.body for a in plan(SITE_DATA, TEST_BASE_URL, mcp_endpoint=live).artifacts
        }
        mcp = json.loads(built[discovery_path(SITE_DATA)])["protocols"]["mcp"]
        assert mcp.get("endpoint") == live and mcp.get("server_card") == expected


def test_the_card_paths_refuse_writes(server: Any) -> None:
    for path in CARD_PATHS:
        request = urllib.request.Request(server.base_url + path, data=b"{}", method="POST")
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=10)
        assert caught.value.code == 405 and "GET" in caught.value.headers["Allow"]


SECRET = "card-origin-secret-0123456789abcdefghij"


@pytest.fixture
def deployed(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """The Lambda handler over files built as the Pulumi program builds them with the
    server on: the discovery document names https://<domain>/mcp."""
    site = sitegen.generate(tmp_path / "site_data", 3)
    endpoint = TEST_BASE_URL + "/mcp"
    files = {
        a.path: a.body for a in plan(site.root, TEST_BASE_URL, mcp_endpoint=endpoint).artifacts
    }
    memory = MemoryFiles(files)
    monkeypatch.setattr(lambda_handler, "source", lambda: memory)
    monkeypatch.setenv(lambda_handler.SECRET_ENV, SECRET)
    return endpoint


def event(path: str, method: str = "GET", secret: str | None = SECRET) -> dict[str, Any]:
    headers = {"accept": CARD_MEDIA, **({"x-origin-verify": secret} if secret else {})}
    return {
        "version": "2.0",
        "rawPath": path,
        "headers": headers,
        "requestContext": {"http": {"method": method}},
        "isBase64Encoded": False,
    }


def test_the_lambda_answers_the_card_naming_the_deployed_endpoint(deployed: str) -> None:
    for path in CARD_PATHS:
        answer = lambda_handler.handler(event(path))
        assert answer["statusCode"] == 200, answer
        assert answer["headers"]["content-type"] == CARD_MEDIA
        check_card(json.loads(answer["body"]), deployed)
        assert json.loads(answer["body"])["name"].startswith("test.example.agents/")
    # The origin secret guards the card too, and other paths stay 404.
    assert lambda_handler.handler(event(CARD_PATHS[0], secret=None))["statusCode"] == 403
    assert lambda_handler.handler(event("/mcp/other"))["statusCode"] == 404


def test_the_readme_server_json_example_keeps_the_registry_rules() -> None:
    """The MCP Registry's server.json (schema 2025-12-11): name reverse-DNS with one
    slash, 3 to 200 characters; description 1 to 100; a version, not a range; a remote
    over streamable HTTP at the MCP endpoint."""
    from tests.conftest import REPO

    readme = (REPO / "README.md").read_text("utf-8")
    block = readme.split("server.json` like this one", 1)[1].split("```json", 1)[1]
    example = json.loads(block.split("```", 1)[0])
    assert example["$schema"].endswith("/schemas/2025-12-11/server.schema.json")
    assert NAME.match(example["name"]) and 3 <= len(example["name"]) <= 200
    assert 1 <= len(example["description"]) <= 100
    assert re.fullmatch(r"\d+\.\d+\.\d+", example["version"])
    (remote,) = example["remotes"]
    assert remote["type"] == "streamable-http" and remote["url"].endswith("/mcp")
