"""`fetch` answers a long entry in parts (issue 25: MCP answers sized for agents).

A docs page past the build's 100,000-character entry budget is published whole (issue
23), so its Markdown twin can be several hundred thousand characters; `fetch` answers it
FETCH_CHARS at a time, cut at its "## " headings where it has them. Checked on a real
build of a Markdown docs tree holding such a page, through the catalog and through the
SDK's own client (which validates structuredContent against fetch's outputSchema).
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from mcp import Client

from agent_contract import paths
from agent_contract.models import ContentDocument
from agent_mcp import paging
from agent_mcp.catalog import ENTRY_CHARS, FETCH_CHARS, FETCH_WINDOW, Catalog, ToolError
from agent_mcp.server import FETCH_OUTPUT_SCHEMA, create_server
from agent_mcp.sources import MemoryFiles
from benchmarks.mcp_sizes import BOUND
from content_builder.build import plan
from tests.conftest import TEST_BASE_URL

FIXTURES = Path(__file__).parent / "fixtures"
#: Claude Code keeps a tool result's text over this many characters out of the
#: conversation (saved to a file): a part's whole text block stays under it.
CLAUDE_CODE_INLINE = 50_000
CONTINUATION = re.compile(
    r"\n\[part (\d+) of (\d+) of this entry\'s text; it continues in part (\d+): call fetch "
    r'with (\{"id":"[^"]+","part":\d+\})\]\Z'
)


def _changelog() -> str:
    """About 330,000 characters: releases of varied length under "## " headings, one
    section longer than a part (paragraphs only), and one line longer than the window
    (so every kind of cut happens)."""
    releases = [
        f"## Version 2.{number}\n\n"
        + f"Fixed connection pool case {number}. " * (20 + number * 7 % 60)
        + "\n\n```python\n## not a heading: a comment in a fence\nclient.get(url)\n```\n\n"
        for number in range(150)
    ]
    huge = "## The migration guide\n\n" + "".join(
        f"Step {step}: move the transport option to the client. " * 12 + "\n\n"
        for step in range(120)
    )
    one_line = "## Raw log\n\n" + "token " * 9_000 + "\n\n"
    return "# Changelog\n\n" + "".join(releases[:70]) + huge + one_line + "".join(releases[70:])


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    root = tmp_path_factory.mktemp("fetch-parts")
    site = root / "site"
    shutil.copytree(
        FIXTURES / "httpx-site", site, ignore=shutil.ignore_patterns("search-questions.yaml")
    )
    text = (site / "site.yaml").read_text().replace("../httpx/docs", "../docs")
    (site / "site.yaml").write_text(text)
    docs = root / "docs"
    docs.mkdir()
    (docs / "changelog.md").write_text(_changelog(), encoding="utf-8")
    (docs / "guide.md").write_text("# Guide\n\nA short page.\n\n## Setup\n\nInstall it.\n")
    return {a.path: a.body for a in plan(site, TEST_BASE_URL).artifacts}


@pytest.fixture(scope="module")
def catalog(files: dict[str, bytes]) -> Catalog:
    return Catalog(MemoryFiles(files))


def twin(files: dict[str, bytes], entry_id: str) -> str:
    return files[paths.markdown_twin(paths.document(entry_id))].decode("utf-8")


def _without_part(answer: dict[str, Any]) -> dict[str, Any]:
    metadata = {k: v for k, v in answer["metadata"].items() if k not in ("part", "parts")}
    return {**answer, "text": None, "metadata": metadata}


def body_of(text: str, number: int, count: int) -> str:
    """A part's text less its continuation line, which must name the next part."""
    if number == count:
        assert "[part " not in text[-300:]
        return text
    line = CONTINUATION.search(text)
    assert line, text[-300:]
    assert [int(line[1]), int(line[2]), int(line[3])] == [number, count, number + 1]
    assert json.loads(line[4]) == {"id": "changelog", "part": number + 1}
    return text[: line.start()]


def test_a_long_page_is_answered_in_parts_that_join_back_into_its_twin(
    files: dict[str, bytes], catalog: Catalog
) -> None:
    whole = twin(files, "changelog")
    assert len(whole) > 300_000
    first = catalog.fetch("changelog")
    count = first["metadata"]["parts"]
    assert count >= len(whole) // FETCH_CHARS + 1
    assert catalog.fetch("changelog", 1) == first
    bodies = []
    for number in range(1, count + 1):
        answer = catalog.fetch("changelog", number)
        assert len(answer["text"]) <= FETCH_CHARS
        assert answer["metadata"]["part"] == number and answer["metadata"]["parts"] == count
        jsonschema.validate(answer, FETCH_OUTPUT_SCHEMA)
        bodies.append(body_of(answer["text"], number, count))
        if number < count:  # as long as the budget allows: a cut in its window
            assert len(bodies[-1]) >= FETCH_CHARS - FETCH_WINDOW
        # Everything but the text and where it sits is the whole entry's answer.
        assert _without_part(answer) == _without_part(first)
    assert "".join(bodies) == whole
    # Cut at a heading wherever one is in the window: whole sections, not a fenced
    # comment that looks like one; the section longer than a part is cut at a blank
    # line, the line longer than the window at the budget.
    starts = [body.split("\n", 1)[0] for body in bodies[1:]]
    headings = [start for start in starts if start.startswith("## ")]
    assert len(headings) >= 6 and not any("not a heading" in start for start in headings)
    others = [start[:6] for start in starts if not start.startswith("## ")]
    assert sorted(others) == ["Step 6", "token "], "a blank-line cut, a cut within a line"


def test_small_entries_are_answered_as_before(files: dict[str, bytes], catalog: Catalog) -> None:
    answer = catalog.fetch("guide")
    assert answer["text"] == twin(files, "guide")
    assert set(answer["metadata"]) == {
        "content_type", "api_url", "text_url", "mime_type", "updated_at", "description"
    }  # fmt: skip
    assert catalog.fetch("guide", 1) == answer
    with pytest.raises(ToolError, match="one part, part 1"):
        catalog.fetch("guide", 2)


@pytest.mark.parametrize("part", [0, -1, "2", True, 1.5, None, [1], 10**6])
def test_a_part_that_does_not_exist_is_a_tool_error_naming_the_parts(
    catalog: Catalog, part: Any
) -> None:
    count = catalog.fetch("changelog")["metadata"]["parts"]
    with pytest.raises(ToolError, match=f"parts 1 to {count}") as caught:
        catalog.fetch("changelog", part)
    assert caught.value.data == {"tool": "fetch", "argument": "part", "parts": count}


def test_a_whole_number_written_as_a_float_is_that_part(catalog: Catalog) -> None:
    assert catalog.fetch("changelog", 2.0) == catalog.fetch("changelog", 2)  # JSON Schema


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet="#\n a", max_size=400),
    budget=st.integers(min_value=4, max_value=60),
    window=st.integers(min_value=1, max_value=60),
)
def test_text_parts_join_back_within_the_budget(text: str, budget: int, window: int) -> None:
    parts = paging.TextParts.of(text, budget, window)
    pieces = [text[slice(*parts.bounds(n))] for n in range(1, parts.count + 1)]
    assert "".join(pieces) == text
    assert all(0 < len(piece) <= budget for piece in pieces) or text == ""
    assert all(len(piece) >= budget - window for piece in pieces[:-1])


LINES = ["```", "```py", "````", "~~~", "~~~ x", "   ```", "    ```", "``` `x`", "## h", "", "a"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(LINES), max_size=30))
def test_fences_are_found_as_commonmark_finds_them(lines: list[str]) -> None:
    """paging.fenced_spans against markdown-it-py's CommonMark parser (the builder's; the
    MCP function's layer does not carry it): the same blocks, line for line."""
    text = "\n".join(lines) + "\n"
    line_of = [0] * (len(text) + 1)
    for offset, character in enumerate(text):
        line_of[offset + 1] = line_of[offset] + (character == "\n")
    spans = paging.fenced_spans(text)
    found = [
        (line_of[start], line_of[min(end + 1, len(text))])
        for start, end in zip(spans[::2], spans[1::2], strict=True)
    ]
    fences = [
        tuple(token.map) for token in MarkdownIt("commonmark").parse(text) if token.type == "fence"
    ]
    assert found == fences, text


def run(coroutine_function: Any, *args: Any) -> Any:
    try:
        return anyio.run(coroutine_function, *args)
    finally:
        asyncio.set_event_loop(asyncio.new_event_loop())  # as tests/test_mcp_server.py


def test_an_sdk_client_reads_every_part_and_the_schemas_say_so(
    files: dict[str, bytes], catalog: Catalog
) -> None:
    official = json.loads(Path("/work/shared/mcp-schema/2025-11-25.json").read_text())
    call_result = jsonschema.Draft202012Validator(
        {"$ref": "#/$defs/CallToolResult", "$defs": official["$defs"]}
    )

    async def go() -> None:
        async with Client(create_server(catalog), mode="legacy") as client:
            tool = {t.name: t for t in (await client.list_tools()).tools}["fetch"]
            assert tool.input_schema["required"] == ["id"]
            assert tool.input_schema["properties"]["part"]["default"] == 1
            assert {"part", "parts"} <= set(
                tool.output_schema["properties"]["metadata"]["properties"]
            )
            # The client validated structuredContent against the outputSchema already.
            small = await client.call_tool("fetch", {"id": "guide"})
            assert small.structured_content == catalog.fetch("guide")
            first = await client.call_tool("fetch", {"id": "changelog"})
            count = first.structured_content["metadata"]["parts"]
            bodies = []
            for number in range(1, count + 1):
                result = await client.call_tool("fetch", {"id": "changelog", "part": number})
                assert result.is_error is False
                assert result.structured_content == json.loads(result.content[0].text)
                assert result.structured_content == catalog.fetch("changelog", number)
                text = result.structured_content["text"]
                bodies.append(body_of(text, number, count))
                answer = result.model_dump(by_alias=True, exclude_none=True, mode="json")
                call_result.validate(answer)
                # What benchmarks/mcp_sizes counts, and what Claude Code keeps inline.
                assert len(result.model_dump_json(by_alias=True, exclude_none=True)) < BOUND
                assert len(result.content[0].text) < CLAUDE_CODE_INLINE
            assert "".join(bodies) == twin(files, "changelog")
            for bad in (0, count + 1, "2", True, None):
                error = await client.call_tool("fetch", {"id": "changelog", "part": bad})
                assert error.is_error is True
                assert f"parts 1 to {count}" in error.content[0].text
                call_result.validate(error.model_dump(by_alias=True, exclude_none=True))
            unexpected = await client.call_tool("fetch", {"id": "guide", "page": 2})
            assert unexpected.is_error is True and "'part'" in unexpected.content[0].text

    run(go)


def test_the_long_pages_json_document_is_answered_in_parts_of_whole_sections(
    files: dict[str, bytes], catalog: Catalog
) -> None:
    """get_content_document on the same page (session 26): parts of its sections, each
    a ContentDocument; the migration guide and the one-line log, each longer than a part
    alone, cut in their bodies (at blank lines, at words); all joined back exactly."""
    published = json.loads(files[paths.document("changelog")])
    first = catalog.call("get_content_document", {"document_id": "changelog"})
    count = int(re.search(r"^\[part 1 of (\d+) ", first.notes[0])[1])
    assert count >= len(files[paths.document("changelog")]) // ENTRY_CHARS + 1
    pieces = []
    for number in range(1, count + 1):
        answer = catalog.call("get_content_document", {"document_id": "changelog", "part": number})
        assert len(answer.text) <= ENTRY_CHARS
        part = ContentDocument.model_validate_json(answer.text).model_dump(exclude_none=True)
        assert part["metadata"] == published["metadata"]
        pieces += part["content"]["sections"]
    rejoined: list[dict[str, str]] = []
    for piece in pieces:
        if rejoined and rejoined[-1]["title"] == piece["title"]:
            rejoined[-1]["body"] += piece["body"]
        else:
            rejoined.append(dict(piece))
    assert rejoined == published["content"]["sections"]
    assert len(pieces) > len(rejoined)  # some sections were cut
    with pytest.raises(ToolError, match=f"parts 1 to {count}"):
        catalog.call("get_content_document", {"document_id": "changelog", "part": count + 1})
