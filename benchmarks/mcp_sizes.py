"""Issue 25: how large every MCP answer is, at any site size.

The live server (agent_mcp) over a build held in memory, driven by the official SDK's
client through its in-memory transport; each answer is counted as the characters of its
JSON-RPC `result` serialized as the SDK sends it (camelCase, no nulls): every content
block and the structuredContent, which is what crosses the wire less the ~40 characters
of the envelope. That is an upper bound on what a model reads: a client puts the content
blocks, or the structured value, into the context window, not both.

Asked: tools/list; every tool with its largest answer on the site (the largest
document, FAQ entry and Markdown twin, the index's pages and llms-full.txt's parts
first, middle and last, a broad search); every kind of error (an unknown id per tool,
an unknown fetch id, an unknown resource URI); resources/list's first page; resources/read
of the manifest's resources and of the largest document (each its first part).

    python -m benchmarks.mcp_sizes --n 5000      # sitegen's n: 2n entries
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.shared.exceptions import MCPError

from agent_contract import paths
from agent_mcp.catalog import Catalog
from agent_mcp.server import create_server
from agent_mcp.sources import MemoryFiles

#: The bound every answer keeps (issue 25), in characters.
BOUND = 100_000
BASE_URL = "https://agents.example.com"


def _size(result: Any) -> int:
    return len(result.model_dump_json(by_alias=True, exclude_none=True))


def _largest(files: Mapping[str, bytes], ids: list[str], path_of: Any) -> str:
    return max(ids, key=lambda entry_id: (len(files.get(path_of(entry_id), b"")), entry_id))


async def _measure(files: Mapping[str, bytes]) -> dict[str, int]:
    server = create_server(Catalog(MemoryFiles(files)))
    index = json.loads(files[paths.CONTENT_INDEX])
    documents = [e["id"] for e in index["documents"] if e["content_type"] != "faq"]
    faqs = [e["id"] for e in index["documents"] if e["content_type"] == "faq"]
    sizes: dict[str, int] = {}
    async with Client(server, mode="legacy") as client:
        listed = await client.list_tools()
        sizes["tools/list"] = _size(listed)
        tools = {tool.name: tool for tool in listed.tools}

        async def call(label: str, name: str, arguments: dict[str, Any]) -> Any:
            result = await client.call_tool(name, arguments)
            sizes[label] = _size(result)
            return result

        for name in ("get_site_overview", "get_architecture"):
            await call(name, name, {})
        pages = tools["get_content_index"].input_schema["properties"]["page"]["maximum"]
        parts = tools["get_full_content"].input_schema["properties"]["part"]["maximum"]
        for number in sorted({1, (pages + 1) // 2, pages}):
            await call(f"get_content_index page {number}", "get_content_index", {"page": number})
        for number in sorted({1, (parts + 1) // 2, parts}):
            await call(f"get_full_content part {number}", "get_full_content", {"part": number})
        document = _largest(files, documents, paths.document)
        await call(
            "get_content_document (largest)", "get_content_document", {"document_id": document}
        )
        faq = _largest(files, faqs, paths.faq)
        await call("get_faq (largest)", "get_faq", {"faq_id": faq})
        twin = max(
            documents + faqs,
            key=lambda i: (
                len(files.get(paths.document_markdown(i), b""))
                + len(files.get(paths.faq_markdown(i), b""))
            ),
        )
        await call("fetch (largest twin)", "fetch", {"id": twin})
        # Broad: words most entries hold, so the ranking has the whole site to choose from.
        broad = "agents content search api documents how"
        await call("search_content (broad)", "search_content", {"query": broad})
        await call("search (broad)", "search", {"query": broad})
        await call("error: get_faq unknown id", "get_faq", {"faq_id": faqs[-1] + "x"})
        await call(
            "error: get_content_document unknown id",
            "get_content_document",
            {"document_id": documents[-1] + "x"},
        )
        await call("error: fetch unknown id", "fetch", {"id": "q-nothing-like-it"})
        await call("error: page past the last", "get_content_index", {"page": pages + 1})
        resources = await client.list_resources()
        sizes["resources/list (first page)"] = _size(resources)
        # The manifest's resources (listed first: the index, llms-full.txt, the OpenAPI,
        # ...) and the largest document's, each as one read answers it (its first part).
        entry_uri = f"service://content/{document}"
        for uri in [str(r.uri) for r in resources.resources if "://content/" not in str(r.uri)]:
            sizes[f"resources/read {uri}"] = _size(await client.read_resource(uri))
        for uri in ("service://content/index", "service://content/search-index", entry_uri):
            sizes[f"resources/read {uri}"] = _size(await client.read_resource(uri))
        try:
            await client.read_resource("service://content/no-such-entry")
        except MCPError as error:
            sizes["error: resources/read unknown URI"] = len(
                json.dumps({"code": error.code, "message": error.message, "data": error.data})
            )
    return sizes


def measure(files: Mapping[str, bytes]) -> dict[str, int]:
    """Characters of each answer (see the module's docstring for what is counted)."""
    try:
        return anyio.run(_measure, files)
    finally:
        asyncio.set_event_loop(asyncio.new_event_loop())  # as the tests leave it


def main(argv: list[str] | None = None) -> int:
    import os

    from benchmarks import sitegen
    from content_builder.build import plan

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=5000, help="sitegen's n (2n entries)")
    args = parser.parse_args(argv)
    os.environ.setdefault("AGENT_ACCESS_CACHE_DIR", "off")
    with tempfile.TemporaryDirectory() as folder:
        site = sitegen.generate(Path(folder) / "site_data", args.n)
        started = time.perf_counter()
        files = {a.path: a.body for a in plan(site.root, BASE_URL).artifacts}
        built = time.perf_counter() - started
    entries = len(json.loads(files[paths.CONTENT_INDEX])["documents"])
    started = time.perf_counter()
    Catalog(MemoryFiles(files))  # what a new generation costs the Lambda, reads aside
    print(f"catalog (index parsed, pages and ids computed): {time.perf_counter() - started:.2f} s")
    started = time.perf_counter()
    sizes = measure(files)
    took = time.perf_counter() - started
    print(f"{entries:,} entries (build {built:.1f} s, measured in {took:.1f} s)")
    for label, size in sizes.items():
        print(f"  {size:>9,}  {label}{'  OVER' if size >= BOUND else ''}")
    return 0 if all(size < BOUND for size in sizes.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
