"""`get_content_document` and `get_faq` answer a long entry in parts (issue 25; session 26).

The server sends an entry's JSON twice (a text block and structuredContent): a page of
80,000 characters was one answer of 160,000+. Checked on a real build of a generated
site holding one long page (one section longer than a part alone) and one long FAQ
answer, through the SDK's own client: each part is a valid object of the published model
with only the long text cut, under the bounds, the pieces join back into the published
entry, and every other entry is answered byte for byte as before.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from typing import Any

import anyio
import pytest
import yaml
from mcp import Client
from mcp.shared.exceptions import MCPError

from agent_contract import paths
from agent_contract.models import ContentDocument, FAQEntry
from agent_mcp import entry_parts
from agent_mcp.catalog import ENTRY_CHARS, FETCH_CHARS, Catalog
from agent_mcp.server import create_server
from agent_mcp.sources import MemoryFiles
from benchmarks.mcp_sizes import BOUND
from content_builder.build import plan
from tests.conftest import TEST_BASE_URL
from tests.sites import Shape, link_sentence, make_site, refresh_lock

#: Claude Code keeps a tool result's text over this many characters out of the
#: conversation (saved to a file): a part's text block stays under it.
CLAUDE_CODE_INLINE = 50_000
LONG_PAGE, LONG_FAQ = "topic-001", "q002-question"
NEXT_CALL = re.compile(r"it continues in part (\d+): call (\w+) with (\{[^}]*\})")


def _paragraphs(count: int, words: str, seed: int) -> str:
    """Paragraphs of varied length with what JSON escapes (quotes, backslashes) and
    non-ASCII text, as docs hold them."""
    return "\n\n".join(
        f"Paragraph {n}: " + (words + " ") * (5 + (n * seed) % 17) + 'Say "retry" or C:\\path.'
        for n in range(count)
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    root = make_site(tmp_path_factory.mktemp("entry-parts") / "site_data", Shape(4, 3))
    page_path = root / "content" / f"{LONG_PAGE}.yaml"
    page = yaml.safe_load(page_path.read_text(encoding="utf-8"))
    assert page["content_type"] == "page"
    words = "the client retries a request in Zürich — 日本語 too"
    page["content"]["sections"] = [
        {"title": "Overview", "body": "A long reference. " + link_sentence("content/site")},
        {
            "title": "Reference",  # longer than a part alone: cut in its body
            "body": _paragraphs(80, words, 7),
            "code_example": "client.get(url)\n",
        },
        *({"title": f"Topic {n}", "body": _paragraphs(10, words, n)} for n in range(1, 4)),
    ]
    page_path.write_text(yaml.safe_dump(page, allow_unicode=True, width=10**6), "utf-8")
    faq_path = root / "faq" / f"{LONG_FAQ}.yaml"
    faq = yaml.safe_load(faq_path.read_text(encoding="utf-8"))
    faq["answer"] += "\n\n" + _paragraphs(160, 'an answer with a \\ and a " quote', 5)
    faq_path.write_text(yaml.safe_dump(faq, allow_unicode=True, width=10**6), "utf-8")
    refresh_lock(root)
    return {a.path: a.body for a in plan(root, TEST_BASE_URL).artifacts}


def run(coroutine_function: Any, *args: Any) -> Any:
    try:
        return anyio.run(coroutine_function, *args)
    finally:
        asyncio.set_event_loop(asyncio.new_event_loop())  # as tests/test_mcp_server.py


def _size(result: Any) -> int:
    # What benchmarks/mcp_sizes counts: every content block and the structuredContent.
    return len(result.model_dump_json(by_alias=True, exclude_none=True))


def _calls(
    files: dict[str, bytes], tool: str, argument: str, entry_id: str, parts: list[int | None]
) -> Any:
    """The answers to `tool` for each part asked (None: no part argument)."""

    async def go() -> list[Any]:
        async with Client(create_server(Catalog(MemoryFiles(files))), mode="legacy") as client:
            answers = []
            for part in parts:
                arguments: dict[str, Any] = {argument: entry_id}
                if part is not None:
                    arguments["part"] = part
                answers.append(await client.call_tool(tool, arguments))
            return answers

    return run(go)


def _all_parts(files: dict[str, bytes], tool: str, argument: str, entry_id: str) -> list[Any]:
    """Every part's answer, then the answer to the part after the last."""
    (first,) = _calls(files, tool, argument, entry_id, [None])
    match = re.search(r"\[part 1 of (\d+) ", first.content[-1].text)
    assert match, first.content[-1].text[:300]
    count = int(match[1])
    answers = _calls(files, tool, argument, entry_id, [*range(1, count + 2)])
    assert answers[0].model_dump() == first.model_dump()  # no part is part 1
    return answers


def _check_part(result: Any, number: int, count: int, tool: str, argument: str, id_: str) -> None:
    assert result.is_error is False
    text, note = result.content[0].text, result.content[1].text
    assert len(result.content) == 2
    assert result.structured_content == json.loads(text)
    assert len(text) <= ENTRY_CHARS
    assert len(text) + len(note) < CLAUDE_CODE_INLINE
    assert _size(result) < BOUND
    assert f"[part {number} of {count} of {argument} {id_!r}: " in note
    assert f'call fetch with {{"id":"{id_}"}}' in note
    following = NEXT_CALL.search(note)
    if number < count:
        assert following and following[2] == tool
        assert json.loads(following[3]) == {argument: id_, "part": number + 1}
    else:
        assert following is None and "the last part" in note


def test_a_long_page_is_answered_in_parts_of_its_model_that_join_back(
    files: dict[str, bytes],
) -> None:
    published = json.loads(files[paths.document(LONG_PAGE)])
    assert len(files[paths.document(LONG_PAGE)]) > 1.5 * FETCH_CHARS
    answers = _all_parts(files, "get_content_document", "document_id", LONG_PAGE)
    *parts, past = answers
    count = len(parts)
    assert count >= 2
    pieces: list[dict[str, Any]] = []
    for number, result in enumerate(parts, 1):
        _check_part(result, number, count, "get_content_document", "document_id", LONG_PAGE)
        part = result.structured_content
        ContentDocument.model_validate(part)
        # Every field as published but the sections.
        assert {**part, "content": {**part["content"], "sections": None}} == {
            **published,
            "content": {**published["content"], "sections": None},
        }
        assert part["content"]["sections"]
        pieces += part["content"]["sections"]
    # Rejoined: each published section from consecutive pieces carrying its title, the
    # code example on its last piece only.
    for section in published["content"]["sections"]:
        body = ""
        while body != section["body"]:
            piece = pieces.pop(0)
            assert piece["title"] == section["title"]
            body += piece["body"]
            last = body == section["body"]
            assert piece.get("code_example") == (section.get("code_example") if last else None)
            assert section["body"].startswith(body)
    assert pieces == []
    # The long section was cut (it alone is longer than a part).
    reference = [s for r in parts for s in r.structured_content["content"]["sections"]]
    assert sum(s["title"] == "Reference" for s in reference) >= 2
    assert past.is_error is True
    assert f"parts 1 to {count}" in past.content[0].text


def test_a_long_faq_answer_is_answered_in_parts_that_join_back(files: dict[str, bytes]) -> None:
    published = json.loads(files[paths.faq(LONG_FAQ)])
    assert len(files[paths.faq(LONG_FAQ)]) > 1.5 * FETCH_CHARS
    *parts, past = _all_parts(files, "get_faq", "faq_id", LONG_FAQ)
    count = len(parts)
    assert count >= 2
    answer = ""
    for number, result in enumerate(parts, 1):
        _check_part(result, number, count, "get_faq", "faq_id", LONG_FAQ)
        part = result.structured_content
        FAQEntry.model_validate(part)
        assert {**part, "answer": None} == {**published, "answer": None}
        if number < count:  # cut at a paragraph: a blank line ends every part but the last
            assert part["answer"].endswith("\n\n")
        answer += part["answer"]
    assert answer == published["answer"]
    assert past.is_error is True
    assert f"parts 1 to {count}" in past.content[0].text


def test_every_other_entry_is_answered_exactly_as_published(files: dict[str, bytes]) -> None:
    index = json.loads(files[paths.CONTENT_INDEX])["documents"]
    kinds = set()
    for entry in index:
        if entry["id"] in (LONG_PAGE, LONG_FAQ):
            continue
        faq = entry["content_type"] == "faq"
        tool, argument = ("get_faq", "faq_id") if faq else ("get_content_document", "document_id")
        path = paths.faq(entry["id"]) if faq else paths.document(entry["id"])
        kinds.add(entry["content_type"])
        whole, first, second = _calls(files, tool, argument, entry["id"], [None, 1, 2])
        assert [block.text for block in whole.content] == [files[path].decode("utf-8")]
        assert whole.structured_content == json.loads(files[path])
        assert first.model_dump() == whole.model_dump()  # part 1 is the same answer
        assert second.is_error is True and "one part, part 1" in second.content[0].text
    assert {"faq", "page", "product", "feature"} <= kinds


def test_the_entry_tools_advertise_part_and_the_manifest_is_unchanged(
    files: dict[str, bytes],
) -> None:
    async def go() -> dict[str, Any]:
        async with Client(create_server(Catalog(MemoryFiles(files))), mode="legacy") as client:
            return {tool.name: tool for tool in (await client.list_tools()).tools}

    tools = run(go)
    manifest = {t["name"]: t for t in json.loads(files[paths.MCP_MANIFEST])["tools"]}
    for name, argument in (("get_content_document", "document_id"), ("get_faq", "faq_id")):
        schema = tools[name].input_schema
        part = schema["properties"]["part"]
        assert part["type"] == "integer" and part["minimum"] == 1 and part["default"] == 1
        assert f"{FETCH_CHARS:,}" in part["description"]
        assert "blank lines" in part["description"]
        assert schema["required"] == [argument]
        assert f"{FETCH_CHARS:,}" in tools[name].description
        published = manifest[name]["inputSchema"]
        assert "part" not in published["properties"]
        assert {**schema, "properties": {**schema["properties"], "part": None}} == {
            **published,
            "properties": {**published["properties"], "part": None},
        }


@pytest.mark.parametrize("text", ['"\n' * 40_000, "\x01" * 30_000, "日本" * 60_000])
def test_parts_fit_however_much_json_escapes_the_text(text: str) -> None:
    """TextParts counts characters; JSON writes a newline as two and \\x01 as six."""
    entry = {"id": "q", "question": "Why?", "answer": text}
    parts = entry_parts.cut(entry, ENTRY_CHARS)
    assert parts is not None and parts.count > 1
    answers = [parts.part(number) for number in range(1, parts.count + 1)]
    assert all(len(entry_parts.compact(a)) <= ENTRY_CHARS for a in answers)
    assert "".join(a["answer"] for a in answers) == text


# --- resources/read: the same files in parts ------------------------------------------


def _read_all(files: dict[str, bytes], uri: str, extra: Sequence[str] = ()) -> Any:
    """Every part of the resource (following each note's next URI), then the results of
    reading each URI in `extra` (an error's data for a refused one)."""

    async def go() -> tuple[list[Any], list[Any]]:
        async with Client(create_server(Catalog(MemoryFiles(files))), mode="legacy") as client:
            parts, next_uri = [], uri
            while next_uri:
                contents = (await client.read_resource(next_uri)).contents
                parts.append(contents)
                note = contents[1].text if len(contents) > 1 else ""
                found = re.search(r"read the resource (\S+)\]$", note)
                next_uri = found[1] if found else None
            refused = []
            for asked in extra:
                try:
                    await client.read_resource(asked)
                    refused.append(None)
                except MCPError as error:
                    refused.append(error.error)
            return parts, refused

    return run(go)


def test_a_long_entry_resource_is_read_in_parts_of_its_model(files: dict[str, bytes]) -> None:
    """resources/read answered the whole JSON however long (86 MB for llms-full.txt at
    10,000 entries); a long entry now comes in parts as its tool answers it."""
    uri = f"service://content/{LONG_PAGE}"
    parts, refused = _read_all(files, uri, [f"{uri}?part=99", f"{uri}?page=2", f"{uri}?part=x"])
    assert len(parts) >= 2
    published = json.loads(files[paths.document(LONG_PAGE)])
    sections = []
    for number, contents in enumerate(parts, 1):
        text, note = contents[0], contents[1]
        assert len(contents) == 2 and len(text.text) <= ENTRY_CHARS
        assert text.mime_type == "application/json" and note.mime_type == "text/plain"
        assert str(text.uri) == (uri if number == 1 else f"{uri}?part={number}")
        assert f"[part {number} of {len(parts)} of {uri}: " in note.text
        document = ContentDocument.model_validate_json(text.text)
        sections += [s.model_dump(exclude_none=True) for s in document.content.sections]
    assert "the last part]" in parts[-1][1].text
    joined: dict[str, str] = {}
    for section in sections:  # pieces in order: the bodies join back
        joined[section["title"]] = joined.get(section["title"], "") + section["body"]
    assert joined == {s["title"]: s["body"] for s in published["content"]["sections"]}
    assert all(error is not None and error.code == -32602 for error in refused), refused
    assert refused[0].data["parts"] == len(parts)


def test_resources_past_the_limit_come_in_parts_and_short_ones_whole(
    files: dict[str, bytes],
) -> None:
    """llms-full.txt (by its parts, as get_full_content), the OpenAPI (cut at its lines)
    and a short entry (whole, as published)."""
    full, _ = _read_all(files, "service://llms-full")
    assert len(files[paths.LLMS_FULL_TXT]) > 60_000 and len(full) >= 2
    assert all(len(contents[0].text) < 80_000 for contents in full)
    openapi, _ = _read_all(files, "service://openapi")
    assert len(openapi) >= 2
    assert "".join(c[0].text for c in openapi).encode() == files[paths.OPENAPI]
    short = next(
        p
        for p in files
        if p.startswith("/api/v1/faq/") and p.endswith(".json") and p != paths.faq(LONG_FAQ)
    )
    entry_id = short.rsplit("/", 1)[1].removesuffix(".json")
    (whole,), _ = _read_all(files, f"service://faq/{entry_id}")
    assert len(whole) == 1 and whole[0].text.encode() == files[short]


def test_an_entry_whose_compact_json_fits_one_part_is_read_as_published(
    files: dict[str, bytes],
) -> None:
    """Published with two-space indents past the limit, one part once compact: the
    resource, like its tool, answers the published text (not a compact copy)."""
    from agent_contract.artifacts import json_body

    short = next(
        p for p in files if p.startswith("/api/v1/content/") and p.endswith(".json")
        and p != paths.document(LONG_PAGE) and "index" not in p and "search" not in p
        and json.loads(files[p]).get("content", {}).get("sections") is not None
    )  # fmt: skip
    document = json.loads(files[short])
    document["content"]["sections"] = [
        {"title": f"T{n}", "body": f"Short body {n}."} for n in range(900)
    ]
    body = json_body(document)
    compact_length = len(json.dumps(document, ensure_ascii=False, separators=(",", ":")))
    assert len(body.decode()) > FETCH_CHARS and compact_length < ENTRY_CHARS
    changed = {**files, short: body}
    catalog = Catalog(MemoryFiles(changed))
    entry_id = document["id"]
    _, text, notes = catalog.read_resource(f"service://content/{entry_id}")
    assert text.encode() == body and notes == ()
    answer = catalog.call("get_content_document", {"document_id": entry_id})
    assert answer.text.encode() == body
