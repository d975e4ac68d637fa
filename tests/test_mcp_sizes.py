"""MCP answers stay agent-sized at any site size (issue 25).

Measured on real builds of generated sites past the enum limit (600 and 1,000 entries),
with the SDK's own client (benchmarks/mcp_sizes.py says what is counted). Why the bound
holds at 10,000 entries and beyond, without building 10,000 here: nothing an answer
holds grows with the site. tools/list names no ids past ID_LIST_LIMIT (checked: its size
is the same, to a few digits, at 600 and 1,000 entries); an index page holds at most
PAGE_CHARS characters of entries and a llms-full.txt part at most PART_BYTES + WINDOW
bytes (checked on files of every shape below); an error names at most five ids; a
document, a FAQ entry and a twin are one entry's (the build's entry budget; a docs page
past it is published whole, and `fetch` answers its twin in parts of at most
catalog.FETCH_CHARS characters: tests/test_mcp_fetch_parts.py); a
resources/list page is RESOURCE_PAGE resources. `python -m benchmarks.mcp_sizes --n 5000`
measures 10,000 entries (docs/decisions.md has the figures).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from agent_contract import paths
from agent_contract.endpoints import ID_LIST_LIMIT
from agent_mcp import paging
from agent_mcp.catalog import FETCH_CHARS, RESOURCE_PAGE, Catalog, ToolError
from agent_mcp.sources import MemoryFiles
from benchmarks import mcp_sizes, sitegen
from content_builder.build import plan
from tests.conftest import TEST_BASE_URL


def build(root: Path, n: int) -> dict[str, bytes]:
    site = sitegen.generate(root / "site_data", n)
    return {a.path: a.body for a in plan(site.root, TEST_BASE_URL).artifacts}


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    return build(tmp_path_factory.mktemp("mcp-large"), 500)  # 1,000 entries


def test_every_answer_is_under_the_bound_and_tools_list_does_not_grow(
    large: dict[str, bytes], tmp_path: Path
) -> None:
    sizes = mcp_sizes.measure(large)
    assert len(sizes) >= 20  # every kind of answer was asked
    over = {label: size for label, size in sizes.items() if size >= mcp_sizes.BOUND}
    assert not over
    # Paged for real: this index and this llms-full.txt are several pieces each.
    assert any(label.startswith("get_content_index page ") for label in sizes)
    assert len([label for label in sizes if label.startswith("get_full_content part")]) == 3
    smaller = mcp_sizes.measure(build(tmp_path, 300))  # 600 entries, also past the limit
    assert abs(sizes["tools/list"] - smaller["tools/list"]) < 40  # counts' digits only
    for label in ("error: get_faq unknown id", "error: fetch unknown id"):
        assert abs(sizes[label] - smaller[label]) < 200


def test_past_the_limit_the_manifest_lists_no_ids_and_the_server_checks_them(
    large: dict[str, bytes],
) -> None:
    manifest = json.loads(large[paths.MCP_MANIFEST])
    index = json.loads(large[paths.CONTENT_INDEX])["documents"]
    assert len(index) > ID_LIST_LIMIT
    by_name = {tool["name"]: tool for tool in manifest["tools"]}
    for tool, argument in (("get_faq", "faq_id"), ("get_content_document", "document_id")):
        schema = by_name[tool]["inputSchema"]["properties"][argument]
        assert "enum" not in schema and schema["pattern"]
        assert paths.CONTENT_INDEX in schema["description"]
    catalog = Catalog(MemoryFiles(large))
    faq = next(e["id"] for e in index if e["content_type"] == "faq")
    document = next(e["id"] for e in index if e["content_type"] != "faq")
    assert catalog.call("get_faq", {"faq_id": faq}).text.encode() == large[paths.faq(faq)]
    for tool, argument, wrong in (
        ("get_faq", "faq_id", faq[:-1]),  # a typo
        ("get_faq", "faq_id", document),  # a document's id is no FAQ entry's
        ("get_content_document", "document_id", faq),
    ):
        with pytest.raises(ToolError) as caught:
            catalog.call(tool, {argument: wrong})
        close = caught.value.data["close"]
        assert len(close) <= 5 and wrong not in close
        assert len(caught.value.message) < 1_000
    with pytest.raises(ToolError) as caught:
        catalog.call("get_faq", {"faq_id": faq[:-1]})
    assert faq in caught.value.data["close"]


def test_index_pages_cover_every_entry_once_in_order(large: dict[str, bytes]) -> None:
    catalog = Catalog(MemoryFiles(large))
    index = json.loads(large[paths.CONTENT_INDEX])
    pages = catalog.tools[[t.name for t in catalog.tools].index("get_content_index")]
    count = pages.input_schema["properties"]["page"]["maximum"]
    assert count > 1 and f"{count:,} pages" in pages.description
    seen: list[str] = []
    for number in range(1, count + 1):
        page = json.loads(catalog.call("get_content_index", {"page": number}).text)
        entries = page.pop("documents")
        assert sum(len(paging.compact(e)) + 1 for e in entries) <= paging.PAGE_CHARS
        assert page == {
            "version": index["version"],
            "total_documents": index["total_documents"],
            "page": number,
            "pages": count,
            "first": len(seen) + 1,
            "last": len(seen) + len(entries),
            **({"next_page": number + 1} if number < count else {}),
        }
        seen += [e["id"] for e in entries]
    assert seen == [e["id"] for e in index["documents"]]
    with pytest.raises(ToolError):
        catalog.call("get_content_index", {"page": count + 1})
    with pytest.raises(ToolError):
        catalog.call("get_content_index", {"page": 0})


def test_llms_full_parts_join_into_the_file_and_cut_at_headings(large: dict[str, bytes]) -> None:
    catalog = Catalog(MemoryFiles(large))
    whole = large[paths.LLMS_FULL_TXT]
    count = paging.part_count(len(whole))
    texts = []
    for number in range(1, count + 1):
        answer = catalog.call("get_full_content", {"part": number})
        texts.append(answer.text)
        assert len(answer.text.encode()) <= paging.PART_BYTES + paging.WINDOW
        # A part and its note within what one `fetch` answer's text may be: under the
        # 50,000 characters past which Claude Code keeps a tool result out of the
        # conversation (catalog.FETCH_CHARS); parts ran to 75,000 bytes before.
        assert len(answer.text) + sum(map(len, answer.notes)) <= FETCH_CHARS
        assert f"part {number:,} of {count:,}" in answer.notes[0]
        if number > 1:  # each part after the first starts at an entry's heading
            assert answer.text.startswith("## ")
    assert "".join(texts).encode() == whole


@pytest.mark.parametrize("shape", ["one long line", "no headings", "multibyte", "tiny"])
def test_parts_of_any_file_join_back_and_stay_within_the_bound(shape: str) -> None:
    rng = random.Random(25)
    if shape == "one long line":
        body = ("é" * 50_000 + "x" * 90_001 + "日本" * 40_000).encode()
    elif shape == "no headings":
        body = "".join(f"line {i} {'w' * rng.randrange(200)}\n" for i in range(4_000)).encode()
    elif shape == "multibyte":
        words = ["Zürich", "日本語", "emoji ✨", "## heading", "\n## Entry"]
        body = " ".join(rng.choice(words) for _ in range(60_000)).encode()
    else:
        body = b"# Site\n\n## One\n\ntext\n"
    count = paging.part_count(len(body))
    pieces = [
        paging.part_bounds(number, len(body), lambda a, b: body[a:b])
        for number in range(1, count + 1)
    ]
    assert b"".join(piece for _, _, piece in pieces) == body
    for start, end, piece in pieces:
        assert end - start == len(piece) <= paging.PART_BYTES + paging.WINDOW
        piece.decode("utf-8")  # every part is whole characters


def test_resources_list_pages_through_every_resource(large: dict[str, bytes]) -> None:
    catalog = Catalog(MemoryFiles(large))
    seen, cursor = [], None
    while True:
        page, cursor = catalog.resources_page(cursor)
        assert len(page) <= RESOURCE_PAGE
        seen += [resource.uri for resource in page]
        if cursor is None:
            break
    assert seen == [resource.uri for resource in catalog.resources]
    assert len(seen) > RESOURCE_PAGE


def test_a_page_argument_the_manifest_declares_itself_is_still_checked(
    large: dict[str, bytes],
) -> None:
    """A manifest may declare `page` itself (no maximum): the server keeps it, and a page
    past the last is still the tool's error, not a crash."""
    files = dict(large)
    manifest = json.loads(files[paths.MCP_MANIFEST])
    tool = next(t for t in manifest["tools"] if t["name"] == "get_content_index")
    tool["inputSchema"]["properties"]["page"] = {"type": "integer"}
    files[paths.MCP_MANIFEST] = json.dumps(manifest).encode()
    catalog = Catalog(MemoryFiles(files))
    live = next(t for t in catalog.tools if t.name == "get_content_index")
    assert live.input_schema["properties"]["page"] == {"type": "integer"}
    for page in (0, 10_000):
        with pytest.raises(ToolError, match="does not exist"):
            catalog.call("get_content_index", {"page": page})
    # JSON Schema's integer includes 2.0: the page it names, not a crash.
    assert catalog.call("get_content_index", {"page": 2.0}) == catalog.call(
        "get_content_index", {"page": 2}
    )
    assert catalog.call("get_full_content", {"part": 2.0}) == catalog.call(
        "get_full_content", {"part": 2}
    )


def test_a_huge_argument_is_not_echoed_back(large: dict[str, bytes]) -> None:
    """Errors cut what the client sent: a 500,000-character id, URI or cursor answers an
    error of a few hundred characters (the request body limit is 1 MiB)."""
    from agent_mcp.catalog import InvalidRequest

    catalog = Catalog(MemoryFiles(large))
    huge = "q" * 500_000
    for call in (
        lambda: catalog.call("get_faq", {"faq_id": huge}),
        lambda: catalog.fetch(huge),
        lambda: catalog.read_resource("service://content/" + huge),
        lambda: catalog.resources_page("9" * 500_000),
        lambda: catalog.call("get_faq", {f"{n}{huge[:10_000]}": 1 for n in range(50)}),
    ):
        with pytest.raises(InvalidRequest) as caught:
            call()
        assert len(caught.value.message) + len(json.dumps(caught.value.data)) < 2_000
