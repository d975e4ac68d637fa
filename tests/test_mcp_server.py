"""The live MCP server, driven by the official SDK's own client over real transports.

The content is a generated site the tests own (benchmarks/sitegen.py), never site_data/.
Every expectation is read from the published files of the same build: the tools and
schemas from the static MCP manifest, the answers from the files themselves, byte for byte.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any
from unittest.mock import ANY
from urllib.parse import urlsplit

import anyio
import jsonschema
import pytest
import yaml
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from agent_contract import paths, search_query
from agent_contract.models import SearchIndex
from agent_mcp.catalog import SEARCH_LIMIT
from agent_mcp.sources import DirectoryFiles, MissingFile
from benchmarks import sitegen
from content_builder.build import plan
from content_builder.cache import CACHE_ENV
from content_builder.search_eval import QUESTIONS_FILE
from tests.conftest import REPO, SITE_DATA, SPEC_SITE, TEST_BASE_URL, running_server

# Both eras the SDK speaks: the initialize handshake most clients use today, and the
# current sessionless protocol.
MODES = {"legacy": "2025-11-25", "2026-07-28": "2026-07-28"}
CHATGPT_TOOLS = ["search", "fetch"]
#: The tools whose whole answer grows with the site, and the argument that pages them.
#: The tools that take a paging argument the manifest does not declare: the two large
#: aggregates, and the entry tools (a long entry in parts, session 26).
PAGED = {
    "get_content_index": "page",
    "get_full_content": "part",
    "get_content_document": "part",
    "get_faq": "part",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> sitegen.GeneratedSite:
    return sitegen.generate(tmp_path_factory.mktemp("mcp") / "site_data", 4)


def published(site_dir: Path, base_url: str) -> dict[str, bytes]:
    return {a.path: a.body for a in plan(site_dir, base_url).artifacts}


def stdio_params(*args: str | Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "content_builder", "mcp", *map(str, args)],
        cwd=str(REPO),
        # The client passes a minimal environment: keep the server's build cache in the
        # test session's folder (conftest), not the user's ~/.cache.
        env={CACHE_ENV: os.environ.get(CACHE_ENV, "off")},
    )


def run(coroutine_function: Any, *args: Any) -> Any:
    """anyio.run, leaving the thread with an event loop as it found it: asyncio.run
    clears it, and Pulumi's mocks in a later test ask for the current loop."""
    try:
        return anyio.run(coroutine_function, *args)
    finally:
        asyncio.set_event_loop(asyncio.new_event_loop())


async def expect_error(awaitable: Any) -> MCPError:
    with pytest.raises(MCPError) as caught:
        await awaitable
    return caught.value


async def exercise(server: Any, mode: str, files: dict[str, bytes], question: str, faq: str):
    """Everything a client can do, checked against the published files."""
    manifest = json.loads(files[paths.MCP_MANIFEST])
    index = json.loads(files[paths.CONTENT_INDEX])
    async with Client(server, mode=mode) as client:
        assert client.protocol_version == MODES[mode]

        # --- tools/list: the manifest's tools, plus ChatGPT's two; the two large
        # aggregates' tools also take their paging argument and say their size -------
        listed = (await client.list_tools()).tools
        assert [t.name for t in listed] == [t["name"] for t in manifest["tools"]] + CHATGPT_TOOLS
        by_name = {t.name: t for t in listed}
        search_tool = by_name["search"]
        assert (
            search_tool.output_schema and "next_cursor" in search_tool.output_schema["properties"]
        )
        for tool in manifest["tools"]:
            live = by_name[tool["name"]]
            paged = PAGED.get(tool["name"])
            expected_schema = json.loads(json.dumps(tool["inputSchema"]))
            if paged:
                expected_schema["properties"][paged] = live.input_schema["properties"][paged]
                assert live.input_schema["properties"][paged]["type"] == "integer"
                assert paged not in live.input_schema["required"]
                assert live.description.startswith(tool["description"])
                assert "characters" in live.description or "bytes" in live.description
            else:
                assert live.description == tool["description"]
            assert live.input_schema == expected_schema
        for tool in listed:
            assert tool.annotations is not None and tool.annotations.read_only_hint is True
            assert tool.annotations.destructive_hint is False
        assert by_name["fetch"].output_schema["required"] == [
            "id", "title", "text", "url", "metadata"
        ]  # fmt: skip

        # --- every tool, every valid id: the published file's text, byte for byte ----
        calls = 0
        for tool in manifest["tools"]:
            properties = tool["inputSchema"]["properties"]
            path = tool["endpoint"].split(" ", 1)[1].removeprefix(index_base(files))
            if not properties:
                result = await client.call_tool(tool["name"], {})
                assert result.is_error is False
                assert result.content[0].text.encode("utf-8") == files[path]
                calls += 1
                extra = await client.call_tool(tool["name"], {"id": "x"})
                assert extra.is_error is True
                assert "unexpected argument" in extra.content[0].text
            for name, spec in properties.items():
                for value in spec.get("enum", []):
                    result = await client.call_tool(tool["name"], {name: value})
                    expected = files[path.replace("{" + name + "}", value)]
                    assert result.content[0].text.encode("utf-8") == expected
                    assert result.structured_content == json.loads(expected)
                    calls += 1
                if "enum" in spec:
                    # A typo of a real id: a tool error the model reads, naming it among
                    # at most five close ids, never the whole list.
                    typo = spec["enum"][-1] + "x"
                    error = await client.call_tool(tool["name"], {name: typo})
                    assert error.is_error is True
                    assert typo in error.content[0].text
                    close = error.structured_content["close"]
                    assert spec["enum"][-1] in close and len(close) <= 5
                    assert set(close) <= set(spec["enum"])
                    missing = await client.call_tool(tool["name"], {})
                    assert missing.is_error is True and name in missing.content[0].text
        assert calls == 4 + len(index["documents"])  # four argument-free tools + every id

        # search_content: the matched entries through the sharded index, no keyword arrays
        search_index = SearchIndex.model_validate_json(files[paths.SEARCH_INDEX])
        result = await client.call_tool("search_content", {"query": question})
        found = json.loads(result.content[0].text)
        sharded = search_query.query(files.__getitem__, question, limit=SEARCH_LIMIT)
        assert found["entries"] and [e["id"] for e in found["entries"]] == [
            hit.id for hit in sharded.hits
        ]
        published_entries = {e.id: e.model_dump() for e in search_index.entries}
        for entry in found["entries"]:
            assert "keywords" not in entry
            published = published_entries[entry["id"]]
            assert entry == {k: published[k] for k in ("id", "title", "description", "api_url")}
        for bad in ({}, {"query": ""}, {"query": "x", "limit": 3}):
            assert (await client.call_tool("search_content", bad)).is_error is True
        unknown = await expect_error(client.call_tool("drop_tables", {}))
        assert "get_faq" in unknown.message and unknown.data["valid"][-2:] == CHATGPT_TOOLS

        # --- ChatGPT's search and fetch ---------------------------------------------
        result = await client.call_tool("search", {"query": question})
        assert len(result.content) == 1 and result.content[0].type == "text"
        answer = json.loads(result.content[0].text)
        results = answer["results"]
        assert result.structured_content == answer
        jsonschema.validate(answer, search_tool.output_schema)
        assert faq in [r["id"] for r in results[:3]]
        entries = {e["id"]: e for e in index["documents"]}
        for hit in results:
            assert set(hit) == {"id", "title", "url", "snippet"}
            assert hit["url"] == entries[hit["id"]]["canonical_url"]
            assert hit["snippet"] and entries[hit["id"]]["description"].startswith(
                hit["snippet"].rstrip("…")
            )
        # Paged: limit hits a page, next_cursor for the next, no hit twice, same order.
        first = await client.call_tool("search", {"query": question, "limit": 2})
        page = first.structured_content
        assert [r["id"] for r in page["results"]] == [r["id"] for r in results[:2]]
        second = await client.call_tool(
            "search", {"query": question, "limit": 2, "cursor": page["next_cursor"]}
        )
        assert [r["id"] for r in second.structured_content["results"]] == [
            r["id"] for r in results[2:4]
        ]
        for bad in ({"query": question, "limit": 0}, {"query": question, "cursor": "x"}):
            assert (await client.call_tool("search", bad)).is_error is True
        result = await client.call_tool("fetch", {"id": faq})
        fetched = json.loads(result.content[0].text)
        assert result.structured_content == fetched  # validated by the SDK's outputSchema
        assert set(fetched) == {"id", "title", "text", "url", "metadata"}
        # the entry's Markdown twin, not its JSON escaped in a string
        assert fetched["text"].encode("utf-8") == files[paths.faq_markdown(faq)]
        assert fetched["metadata"]["mime_type"] == "text/markdown"
        assert fetched["metadata"]["text_url"].endswith(paths.faq_markdown(faq))
        assert fetched["title"] == entries[faq]["title"]
        assert fetched["url"] == entries[faq]["canonical_url"]
        assert fetched["metadata"]["api_url"] == entries[faq]["api_url"]
        document = next(e["id"] for e in index["documents"] if e["content_type"] != "faq")
        fetched = (await client.call_tool("fetch", {"id": document})).structured_content
        assert fetched["text"].encode("utf-8") == files[paths.document_markdown(document)]
        bad_fetch = await client.call_tool("fetch", {"id": faq + "z"})
        assert bad_fetch.is_error is True and faq in bad_fetch.structured_content["close"]
        assert len(bad_fetch.structured_content["close"]) <= 5
        assert (await client.call_tool("fetch", {})).is_error is True
        assert (await client.call_tool("search", {"query": 3})).is_error is True

        # --- resources: the manifest's seven and one per document and FAQ entry -------
        resources = (await client.list_resources()).resources
        uris = [str(r.uri) for r in resources]
        assert uris[:7] == [r["uri"] for r in manifest["resources"]]
        assert len(uris) == len(set(uris)) == 7 + len(index["documents"]) - 1  # site: listed once
        parted: set[str] = set()
        for resource in resources:
            texts = await read_in_parts(client, str(resource.uri), resource.mime_type)
            assert "".join(texts).encode("utf-8") in files.values()
            parted.update({str(resource.uri)} if len(texts) > 1 else set())
        # A file past 40,000 characters (the OpenAPI here, 105,000) comes in parts.
        assert parted == {r["uri"] for r in manifest["resources"] if "openapi" in r["uri"]}
        for static in manifest["resources"]:
            texts = await read_in_parts(client, static["uri"], static.get("mimeType"))
            path = static["endpoint"].split(" ", 1)[1].removeprefix(index_base(files))
            assert "".join(texts).encode("utf-8") == files[path]
        for entry in index["documents"]:
            kind = "faq" if entry["content_type"] == "faq" else "content"
            read = await client.read_resource(f"{uris[0].split(':')[0]}://{kind}/{entry['id']}")
            api_path = entry["api_url"].removeprefix(index_base(files))
            assert read.contents[0].text.encode("utf-8") == files[api_path]
        bad_uri = await expect_error(client.read_resource(uris[-1] + "x"))
        assert bad_uri.code == -32602  # SEP-2164 (2026-07-28): resource not found
        assert bad_uri.data["uri"] == uris[-1] + "x" and uris[-1] in bad_uri.data["close"]
        assert len(bad_uri.data["close"]) <= 5


async def read_in_parts(client: Any, uri: str, mime_type: str | None) -> list[str]:
    """A resource's text, part after part as each part's note names the next (one part:
    its one content, no note)."""
    texts: list[str] = []
    while True:
        read = (await client.read_resource(uri)).contents
        assert read[0].mime_type == mime_type and str(read[0].uri) == uri
        texts.append(read[0].text)
        assert len(texts[-1]) <= 40_000 or len(read) == 1
        if len(read) == 1:
            assert len(texts) == 1, "only a resource read whole has no note"
            return texts
        (note,) = read[1:]
        assert note.mime_type == "text/plain"
        if "the last part]" in note.text:
            return texts
        uri = note.text.split("read the resource ", 1)[1].removesuffix("]")


def index_base(files: dict[str, bytes]) -> str:
    """The base URL the files were built for, read from the published discovery link."""
    manifest = json.loads(files[paths.MCP_MANIFEST])
    endpoint = next(t for t in manifest["tools"] if t["name"] == "get_content_index")
    return endpoint["endpoint"].split(" ", 1)[1].removesuffix(paths.CONTENT_INDEX)


def question_for(files: dict[str, bytes], faq_id: str) -> str:
    return json.loads(files[paths.faq(faq_id)])["question"]


@pytest.mark.parametrize("mode", list(MODES))
def test_stdio_server_with_the_sdk_client(site: sitegen.GeneratedSite, mode: str) -> None:
    files = published(site.root, TEST_BASE_URL)
    faq = site.faq_ids[1]
    params = stdio_params("--site", site.root, "--base-url", TEST_BASE_URL)
    run(exercise, params, mode, files, question_for(files, faq), faq)


@pytest.fixture(scope="module")
def http_server(site: sitegen.GeneratedSite) -> Iterator[Any]:
    context: AbstractContextManager[Any] = running_server(site.root)
    with context as server:
        yield server


@pytest.mark.parametrize("mode", [*MODES, "auto"])
def test_streamable_http_at_serve_mcp(http_server: Any, site: sitegen.GeneratedSite, mode: str):
    files = {path: a.body for path, a in http_server.edge.artifacts.items()}
    faq = site.faq_ids[-1]
    if mode == "auto":  # what the SDK does unasked: discover, and take the current version

        async def negotiated() -> str:
            async with Client(http_server.base_url + "/mcp") as client:
                return client.protocol_version

        assert run(negotiated) == "2026-07-28"
        return
    run(exercise, http_server.base_url + "/mcp", mode, files, question_for(files, faq), faq)


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"])
def test_mcp_endpoint_refuses_every_method_but_post(http_server: Any, method: str) -> None:
    request = urllib.request.Request(http_server.base_url + "/mcp", method=method)
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    assert caught.value.code == 405
    assert caught.value.headers["Allow"] == "POST"
    # the CDN's response headers policy applies to /mcp too (as on the /mcp behaviour)
    assert caught.value.headers.get_all("Access-Control-Allow-Origin") == ["*"]
    assert caught.value.headers["X-Content-Type-Options"] == "nosniff"
    assert caught.value.headers["Strict-Transport-Security"].startswith("max-age=")


PREFLIGHT = {
    "Origin": "http://localhost:5173",
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "content-type, mcp-protocol-version, mcp-session-id",
}


def check_preflight(status: int, headers: Any) -> None:
    """A browser's CORS preflight to /mcp: answered, and POST allowed with MCP's headers."""
    assert status in (200, 204)
    assert headers.get_all("Access-Control-Allow-Origin") == ["*"]
    assert {m.strip() for m in headers["Access-Control-Allow-Methods"].split(",")} >= {
        "POST", "OPTIONS"
    }  # fmt: skip
    allowed = {h.strip().lower() for h in headers["Access-Control-Allow-Headers"].split(",")}
    assert allowed >= {
        "content-type", "accept", "mcp-protocol-version", "mcp-session-id", "last-event-id"
    }  # fmt: skip
    assert int(headers["Access-Control-Max-Age"]) > 0
    assert headers["Content-Length"] in (None, "0")


def test_a_cors_preflight_is_answered_and_post_answers_carry_cors(http_server: Any) -> None:
    host, port = urlsplit(http_server.base_url).hostname, urlsplit(http_server.base_url).port
    connection = http.client.HTTPConnection(host, port, timeout=5)
    try:
        connection.request("OPTIONS", "/mcp", headers=PREFLIGHT)
        response = connection.getresponse()
        assert response.read() == b""
        check_preflight(response.status, response.headers)
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        headers = {
            "Origin": "http://localhost:5173",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        connection.request("POST", "/mcp", body=body, headers=headers)  # same connection
        response = connection.getresponse()
        response.read()
        assert response.headers.get_all("Access-Control-Allow-Origin") == ["*"]
        exposed = {h.strip() for h in response.headers["Access-Control-Expose-Headers"].split(",")}
        assert exposed >= {"mcp-session-id", "mcp-protocol-version"}
    finally:
        connection.close()


def test_a_refused_method_is_framed_so_keep_alive_clients_go_on(http_server: Any) -> None:
    """A 405 without Content-Length kept a keep-alive client (curl) waiting for the body
    until its timeout: every answer carries its length, and the connection stays usable."""
    host, port = urlsplit(http_server.base_url).hostname, urlsplit(http_server.base_url).port
    connection = http.client.HTTPConnection(host, port, timeout=5)
    try:
        for method in ("GET", "DELETE", "GET"):
            connection.request(method, "/mcp")
            response = connection.getresponse()
            body = response.read()  # times out if the answer has no length
            assert response.status == 405
            assert response.headers["Content-Length"] == str(len(body)) and body
    finally:
        connection.close()


def test_mcp_endpoint_refuses_a_foreign_host_header(http_server: Any) -> None:
    # DNS rebinding: a page on evil.example resolving to 127.0.0.1 must not reach the server.
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    request = urllib.request.Request(
        http_server.base_url + "/mcp",
        data=body,
        method="POST",
        headers={
            "Host": "evil.example",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    assert caught.value.code in (400, 403, 421)


def test_stdio_from_a_deployment_over_http(http_server: Any, site: sitegen.GeneratedSite) -> None:
    """`--from URL` reads a live deployment (here serve on 127.0.0.1) as an agent would."""
    files = {path: a.body for path, a in http_server.edge.artifacts.items()}
    document = site.document_ids[1]

    async def go() -> None:
        async with Client(stdio_params("--from", http_server.base_url), mode="legacy") as client:
            result = await client.call_tool("get_content_document", {"document_id": document})
            assert result.content[0].text.encode("utf-8") == files[paths.document(document)]
            error = await client.call_tool("get_faq", {"faq_id": site.faq_ids[0] + "z"})
            assert error.is_error and site.faq_ids[0] in error.structured_content["close"]

    run(go)


def test_stdio_refuses_a_url_that_is_not_an_agent_access_api(http_server: Any, cli) -> None:
    result = cli("mcp", "--from", http_server.base_url + "/nothing-here")
    assert result.code == 1
    assert "is not an agent-access API" in result.err


def test_directory_source_stays_inside_its_folder(tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "a.json").write_bytes(b"{}")
    (tmp_path / "secret.txt").write_bytes(b"no")
    source = DirectoryFiles(tmp_path / "site")
    assert source.read("/a.json") == b"{}"
    for path in ("/../secret.txt", "/missing.json", "a.json", "/"):
        with pytest.raises(MissingFile):
            source.read(path)


@pytest.mark.parametrize("site", [SPEC_SITE, SITE_DATA], ids=["spec-site", "site-data"])
def test_search_ranks_as_the_client_does_on_the_search_evaluation(site: Path) -> None:
    """On the real content and the search evaluation's questions: the server's `search`
    answers the client's ranking (`agent_client.client.rank`), so it finds what the
    evaluation measures the client finding. Relative, so it holds whatever the content."""
    from agent_mcp.catalog import Catalog
    from agent_mcp.server import create_server
    from agent_mcp.sources import MemoryFiles

    files = published(site, TEST_BASE_URL)
    server = create_server(Catalog(MemoryFiles(files)))
    questions_file = site / QUESTIONS_FILE
    if not questions_file.exists():
        pytest.skip(f"{questions_file} does not exist: the owner asks no questions")
    sets = yaml.safe_load(questions_file.read_text())
    asked = [*sets.get("questions", []), *sets.get("held_out", [])]
    assert asked, questions_file

    async def go() -> None:
        async with Client(server, mode="legacy") as client:
            for item in asked:
                result = await client.call_tool("search", {"query": item["q"]})
                ids = [hit["id"] for hit in result.structured_content["results"]]
                # The sharded index's query procedure, as the client runs it.
                found = search_query.query(files.__getitem__, item["q"], limit=SEARCH_LIMIT)
                assert ids == [hit.id for hit in found.hits], item["q"]
                assert all(
                    hit["snippet"] is not None for hit in result.structured_content["results"]
                )

    run(go)


def post(url: str, message: dict[str, Any], version: str | None = None) -> tuple[int, Any]:
    """One raw JSON-RPC POST, as any client on the wire would send it (no SDK)."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if version:
        headers["MCP-Protocol-Version"] = version
    request = urllib.request.Request(
        url, data=json.dumps(message).encode(), method="POST", headers=headers
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.headers["Content-Type"].startswith("application/json")
        body = response.read()
        return response.status, json.loads(body) if body else None


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_every_handshake_version_on_the_wire(http_server: Any, version: str) -> None:
    """Clients in the field still open with older versions: each is answered in kind, and
    the wire shapes (not the SDK's parsing of them) are the protocol's."""
    url = http_server.base_url + "/mcp"
    files = {path: a.body for path, a in http_server.edge.artifacts.items()}
    manifest = json.loads(files[paths.MCP_MANIFEST])
    status, answer = post(
        url,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "wire-test", "version": "1"},
            },
        },
    )
    assert status == 200 and answer["id"] == 1
    assert answer["result"]["protocolVersion"] == version
    assert answer["result"]["serverInfo"]["name"] == manifest["serverInfo"]["name"]
    assert set(answer["result"]["capabilities"]) >= {"tools", "resources"}
    status, _ = post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, version)
    assert status == 202

    _, listed = post(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, version)
    tools = {tool["name"]: tool for tool in listed["result"]["tools"]}
    for tool in manifest["tools"]:
        live = tools[tool["name"]]["inputSchema"]
        assert {k: v for k, v in live["properties"].items() if k != PAGED.get(tool["name"])} == (
            tool["inputSchema"]["properties"]
        )
        assert live["required"] == tool["inputSchema"]["required"]
        assert tools[tool["name"]]["annotations"]["readOnlyHint"] is True

    faq_tool = next(t for t in manifest["tools"] if t["name"] == "get_faq")
    valid = faq_tool["inputSchema"]["properties"]["faq_id"]["enum"]
    _, error = post(
        url,
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "get_faq", "arguments": {"faq_id": "nope"}},
        },
        version,
    )
    # an unknown id is the tool's own error (isError), naming close ids, not -32602
    assert "error" not in error and error["id"] == 3
    assert error["result"]["isError"] is True
    assert set(error["result"]["structuredContent"]["close"]) <= set(valid)

    _, read = post(
        url,
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "resources/read",
            "params": {"uri": manifest["resources"][0]["uri"]},
        },
        version,
    )
    (content,) = read["result"]["contents"]
    assert content["uri"] == manifest["resources"][0]["uri"]
    assert content["mimeType"] == manifest["resources"][0]["mimeType"]


def test_a_rebuilt_site_is_served_at_mcp_at_once(tmp_path: Path) -> None:
    """`serve --watch` swaps in a new build; /mcp answers from it on the next request."""
    from agent_edge.serve import load_edge

    site = sitegen.generate(tmp_path / "site_data", 3)
    document = site.document_ids[1]

    async def text_of(url: str) -> str:
        async with Client(url, mode="legacy") as client:
            result = await client.call_tool("get_content_document", {"document_id": document})
            return result.content[0].text

    with running_server(site.root) as server:
        url = server.base_url + "/mcp"
        before = run(text_of, url)
        sitegen.edit_document(site.root, document, "Zanzibar quokkas edit this page.")
        server.edge = load_edge(site.root, server.base_url)  # what the watcher does
        after = run(text_of, url)
        assert "Zanzibar quokkas" not in before and "Zanzibar quokkas" in after
        expected = server.edge.artifacts[paths.document(document)].body
        assert after.encode("utf-8") == expected


def test_the_server_follows_the_published_manifest_not_the_builder(
    site: sitegen.GeneratedSite,
) -> None:
    """Tools and schemas come from /api/v1/mcp.json as published: a manifest generated
    differently (an endpoint table, a later version) is served with no code change."""
    from agent_mcp.catalog import Catalog
    from agent_mcp.server import create_server
    from agent_mcp.sources import MemoryFiles

    files = published(site.root, TEST_BASE_URL)
    manifest = json.loads(files[paths.MCP_MANIFEST])
    manifest["tools"] = [t for t in manifest["tools"] if t["name"] != "get_architecture"]
    faq_tool = next(t for t in manifest["tools"] if t["name"] == "get_faq")
    faq_tool["inputSchema"]["additionalProperties"] = False
    faq_tool["inputSchema"]["properties"]["faq_id"]["enum"] = [site.faq_ids[0]]
    files[paths.MCP_MANIFEST] = json.dumps(manifest).encode()
    server = create_server(Catalog(MemoryFiles(files)))

    async def go() -> None:
        async with Client(server, mode="legacy") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert "get_architecture" not in tools
            live = tools["get_faq"].input_schema
            # The manifest's schema, plus the optional `part` (its own keys kept: closed).
            assert live == {
                **faq_tool["inputSchema"],
                "properties": {**faq_tool["inputSchema"]["properties"], "part": ANY},
            }
            assert live["properties"]["part"]["type"] == "integer"
            error = await client.call_tool("get_faq", {"faq_id": site.faq_ids[1]})
            assert error.is_error and set(error.structured_content["close"]) <= {site.faq_ids[0]}
            with pytest.raises(MCPError):
                await client.call_tool("get_architecture", {})

    run(go)


def test_sized_answers_validate_against_the_official_schema(http_server: Any) -> None:
    """The new answers on the wire (fetch's structuredContent, a tool error, a page of
    the index, a part of llms-full.txt, a resources/list page) against MCP 2025-11-25's
    own JSON schema (/work/shared/mcp-schema), not the SDK's parsing of them."""
    import jsonschema

    schema = json.loads(Path("/work/shared/mcp-schema/2025-11-25.json").read_text())

    def check(result: dict[str, Any], definition: str) -> None:
        validator = jsonschema.Draft202012Validator(
            {"$ref": f"#/$defs/{definition}", "$defs": schema["$defs"]}
        )
        validator.validate(result)

    url = http_server.base_url + "/mcp"
    files = {path: a.body for path, a in http_server.edge.artifacts.items()}
    faq = json.loads(files[paths.CONTENT_INDEX])["documents"][-1]["id"]
    version = "2025-11-25"
    _, listed = post(url, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, version)
    check(listed["result"], "ListToolsResult")
    calls = [
        ("fetch", {"id": faq}, False),
        ("fetch", {"id": faq + "-nope"}, True),
        ("get_faq", {"faq_id": "nope"}, True),
        ("get_content_index", {"page": 1}, False),
        ("get_full_content", {"part": 1}, False),
    ]
    for number, (name, arguments, error) in enumerate(calls, start=2):
        message = {
            "jsonrpc": "2.0",
            "id": number,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        _, answer = post(url, message, version)
        check(answer["result"], "CallToolResult")
        assert answer["result"].get("isError", False) is error, (name, arguments)
    _, resources = post(url, {"jsonrpc": "2.0", "id": 9, "method": "resources/list"}, version)
    check(resources["result"], "ListResourcesResult")


def test_resource_templates_name_every_entry_without_paging_the_list(http_server: Any) -> None:
    """A client reads an entry by its id without paging resources/list (201 pages at
    10,000 entries): resources/templates/list answers one template per kind of entry, and
    every entry's URI is its template filled with its id. Before, the server declared the
    resources capability but answered resources/templates/list with -32601, which MCP
    Inspector and other clients call beside resources/list."""
    from agent_mcp.catalog import Catalog
    from agent_mcp.server import create_server
    from agent_mcp.sources import MemoryFiles

    schema = json.loads(Path("/work/shared/mcp-schema/2025-11-25.json").read_text())
    url = http_server.base_url + "/mcp"
    message = {"jsonrpc": "2.0", "id": 1, "method": "resources/templates/list"}
    _, answer = post(url, message, "2025-11-25")
    jsonschema.Draft202012Validator(
        {"$ref": "#/$defs/ListResourceTemplatesResult", "$defs": schema["$defs"]}
    ).validate(answer["result"])
    templates = {t["uriTemplate"]: t for t in answer["result"]["resourceTemplates"]}
    assert set(templates) == {"service://content/{document_id}", "service://faq/{faq_id}"}
    assert all(t["mimeType"] == "application/json" for t in templates.values())

    files = {path: a.body for path, a in http_server.edge.artifacts.items()}
    index = json.loads(files[paths.CONTENT_INDEX])

    async def go() -> None:
        server = create_server(Catalog(MemoryFiles(files)))
        async with Client(server, mode="legacy") as client:
            listed = (await client.list_resource_templates()).resource_templates
            assert {t.uri_template for t in listed} == set(templates)
            for entry in index["documents"]:
                kind, name = (
                    ("faq", "faq_id")
                    if entry["content_type"] == "faq"
                    else ("content", "document_id")
                )
                uri = f"service://{kind}/{{{name}}}".replace(f"{{{name}}}", entry["id"])
                read = await client.read_resource(uri)
                api_path = entry["api_url"].removeprefix(index_base(files))
                assert read.contents[0].text.encode("utf-8") == files[api_path]

    run(go)
