"""The MCP server: a `Catalog` served with the official SDK's low-level `Server`.

The low-level server, not `MCPServer`: the tools' input schemas are the published
manifest's, verbatim, and `MCPServer` derives schemas from Python signatures instead.
Every tool is read-only (annotated so). A bad tool name or URI answers a JSON-RPC error;
a bad argument or id answers the tool's own result with `isError: true`, naming at most
five close ids (the model reads it and corrects the call); never a crash.

Tool calls and resource reads run off the event loop (`CallGate`): a search of a large
site's index is seconds of CPU, and on the loop it held up every other request of every
client (a ping waited 3.15 s behind one search; twelve searches at once left every
client unanswered past 30 s). The loop only parses, dispatches and answers; the work
runs on at most `CallLimits.concurrency` threads, each call within `CallLimits.timeout`
seconds or answered with a JSON-RPC error (docs/decisions.md, "Issue 24: the MCP server
and its Lambda").
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from agent_mcp import search
from agent_mcp.catalog import FETCH_CHARS, Catalog, InvalidRequest, ToolError, compact
from agent_mcp.sources import SourceError

READ_ONLY = types.ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)

SEARCH_TOOL = types.Tool(
    name="search",
    description="Search the site's documents and FAQ entries. Returns {results: [{id, title, "
    "url, snippet}], next_cursor?}, best first, `limit` per page (default "
    f"{search.DEFAULT_LIMIT}); pass next_cursor back as `cursor` for the next page, and an "
    "id to `fetch` for the full text. (The shape ChatGPT connectors and deep research call.)",
    input_schema=search.SEARCH_INPUT_SCHEMA,
    output_schema=search.SEARCH_OUTPUT_SCHEMA,
    annotations=READ_ONLY,
)
#: fetch's structuredContent: OpenAI's fetch shape, its metadata as this server fills it.
FETCH_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "title": {"type": "string"},
        "text": {"type": "string", "description": "The entry as Markdown (its .md twin)."},
        "url": {"type": "string", "description": "The page to cite (canonical_url)."},
        "metadata": {
            "type": "object",
            "properties": {
                "content_type": {"type": "string"},
                "api_url": {"type": "string"},
                "text_url": {"type": "string", "description": "The file `text` is."},
                "mime_type": {"enum": ["text/markdown", "application/json"]},
                "updated_at": {"type": "string"},
                "description": {"type": "string"},
                "part": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Which part of the entry's text `text` is (only for a "
                    "text answered in parts).",
                },
                "parts": {
                    "type": "integer",
                    "minimum": 2,
                    "description": "How many parts the entry's text is answered in.",
                },
            },
            "required": ["content_type", "api_url", "text_url", "mime_type", "updated_at"],
        },
    },
    "required": ["id", "title", "text", "url", "metadata"],
}
FETCH_TOOL = types.Tool(
    name="fetch",
    description="Retrieve one document or FAQ entry by the id `search` returned: {id, title, "
    "text, url, metadata}; text is the entry as Markdown (its published .md twin), url the "
    f"page to cite. A text longer than {FETCH_CHARS:,} characters is answered in parts, cut "
    "at its sections' headings where it has them: metadata.part and metadata.parts say "
    "where, and each part but the last ends with a line naming the call for the next. An "
    "unknown id answers an error naming the closest ids.",
    input_schema={
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "An id from `search`."},
            "part": {
                "type": "integer",
                "minimum": 1,
                "default": 1,
                "description": "Which part of a long text to read (1 = the first, the "
                f"default; a text of at most {FETCH_CHARS:,} characters is one part).",
            },
        },
        "required": ["id"],
    },
    output_schema=FETCH_OUTPUT_SCHEMA,
    annotations=READ_ONLY,
)


T = TypeVar("T")


@dataclass(frozen=True)
class CallLimits:
    """How much tool work runs at once, and how long one call may take.

    `concurrency`: threads doing tool work at once, per server. Ranking a search index is
    CPU-bound Python, so under the GIL threads add no search throughput: a few let a
    quick call (or a read waiting on a source over HTTPS) run beside slow searches, and
    few keep a flood from taking memory and the loop's share of the GIL (with four busy
    threads pings took under 0.3 s). On Lambda an instance serves one request at a time
    anyway. `timeout`: seconds from a call's arrival to its answer,
    waiting for a thread included; below the HTTP bridge's REQUEST_TIMEOUT, which is
    below the Lambda function's timeout, so each layer answers before the next gives up.
    """

    concurrency: int = 4
    timeout: float = 20.0


#: The limits a server gets unless given others (read when the server is created).
CALL_LIMITS = CallLimits()


class CallGate:
    """Runs blocking work on at most `limits.concurrency` threads, within a time limit.

    A thread pool, not anyio's `to_thread.run_sync(limiter=...)`: with
    `abandon_on_cancel=True` anyio hands the limiter's token back when the waiting task
    gives up, while the thread still runs, so abandoned work would pile up past the
    bound; without it, the timeout cannot answer until the work ends. Here a worker
    thread is the slot: work that overran its limit keeps its thread until it ends (a
    thread cannot be stopped from outside), so at most `concurrency` threads are ever
    busy, and work abandoned while it waits for a thread is cancelled and never starts.
    """

    def __init__(self, limits: CallLimits) -> None:
        self.limits = limits
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=limits.concurrency, thread_name_prefix="mcp-call"
        )

    async def run(self, what: str, work: Callable[[], T]) -> T:
        """`work()`'s result, or an MCPError (REQUEST_TIMEOUT) once the limit is reached."""
        try:
            future = self._pool.submit(work)
        except RuntimeError:  # closed: this server's site was replaced by a rebuild
            raise MCPError(
                code=types.REQUEST_TIMEOUT,
                message=f"{what}: the server is restarting (a rebuilt site); try again",
                data={"reason": "busy", "time_limit_seconds": self.limits.timeout},
            ) from None
        try:
            with anyio.fail_after(self.limits.timeout):
                # Every server here runs on asyncio (stdio: anyio.run's default backend;
                # HTTP: agent_mcp.http's loop), so the pool's future is awaited directly.
                return await asyncio.wrap_future(future)
        except TimeoutError:
            limit = f"{self.limits.timeout:g} s"
            if future.cancel():  # still waiting for a thread: it never runs
                reason = "busy"
                message = (
                    f"{what}: server busy ({self.limits.concurrency} calls at once); not "
                    f"started within the time limit of {limit}; try again"
                )
            else:
                reason = "timeout"
                message = f"{what}: time limit of {limit} reached"
            raise MCPError(
                code=types.REQUEST_TIMEOUT,
                message=message,
                data={"reason": reason, "time_limit_seconds": self.limits.timeout},
            ) from None
        finally:
            # However the wait ended (a result, the limit, the caller's cancellation):
            # work that has not started yet must not start.
            future.cancel()

    def close(self) -> None:
        """No new work. Queued work is not cancelled here but by its callers, as the
        server's tasks end (`run`'s `finally`): cancelling it under them would surface
        as a cancellation of their task, which is not theirs to receive."""
        self._pool.shutdown(wait=False)


def _error(problem: InvalidRequest) -> MCPError:
    return MCPError(code=types.INVALID_PARAMS, message=problem.message, data=problem.data or None)


def _text_result(
    text: str, structured: dict[str, Any] | None, notes: tuple[str, ...] = ()
) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=item) for item in (text, *notes)],
        structured_content=structured,
    )


def _tool_error(problem: ToolError) -> types.CallToolResult:
    """A tool's own error, in its result (isError): the model reads it and corrects the
    call. Small at any site size: it names at most five close ids (catalog.CLOSE_NAMES)."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=problem.message)],
        structured_content={"error": problem.message, **problem.data},
        is_error=True,
    )


def _fetch(catalog: Catalog, arguments: dict[str, Any]) -> types.CallToolResult:
    value = arguments.get("id")
    unexpected = sorted(set(arguments) - {"id", "part"})
    if not isinstance(value, str) or unexpected:
        raise ToolError(
            "fetch: takes a string 'id', and optionally an integer 'part'",
            {"tool": "fetch", "argument": unexpected[0][:60] if unexpected else "id"},
        )
    # Absent, part is 1; a null is checked like any other value (not an integer).
    result = (
        catalog.fetch(value, arguments["part"]) if "part" in arguments else catalog.fetch(value)
    )
    return _text_result(compact(result), result)


def _search_result(catalog: Catalog, arguments: dict[str, Any]) -> types.CallToolResult:
    query = arguments.get("query")
    unexpected = sorted(set(arguments) - set(search.SEARCH_INPUT_SCHEMA["properties"]))
    if not isinstance(query, str) or unexpected:
        raise ToolError(
            "search: takes a string 'query', and optionally 'limit' and 'cursor'",
            {"tool": "search", "argument": unexpected[0] if unexpected else "query"},
        )
    cursor = arguments.get("cursor")
    if cursor is not None and not isinstance(cursor, str):
        raise ToolError("search: cursor must be a string", {"argument": "cursor"})
    try:
        result = catalog.search(query, arguments.get("limit"), cursor)
    except search.SearchArgumentError as problem:
        raise ToolError(str(problem), {"tool": "search"}) from None
    return _text_result(compact(result), result)


def create_server(
    catalog: Catalog, limits: CallLimits | None = None, gate: CallGate | None = None
) -> Server[Any]:
    """The server over `catalog`; its tool calls and reads run through `gate` (one made
    with `limits`, default CALL_LIMITS, when none is given)."""
    gate = gate or CallGate(limits or CALL_LIMITS)
    tools = [
        types.Tool(
            name=tool.name,
            description=tool.description,
            input_schema=tool.input_schema,
            annotations=READ_ONLY,
        )
        for tool in catalog.tools
    ] + [SEARCH_TOOL, FETCH_TOOL]
    schemas = {tool.name: tool.input_schema for tool in tools}
    templates = [
        types.ResourceTemplate(
            uri_template=template.uri,
            name=template.name,
            description=template.description,
            mime_type=template.mime_type,
        )
        for template in catalog.resource_templates()
    ]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    def answer_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        if name == "fetch":
            return _fetch(catalog, arguments)
        if name == "search":
            return _search_result(catalog, arguments)
        answer = catalog.call(name, arguments)
        return _text_result(answer.text, answer.structured(), answer.notes)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = params.arguments or {}
        try:
            return await gate.run(params.name, lambda: answer_tool(params.name, arguments))
        except ToolError as problem:
            return _tool_error(problem)
        except InvalidRequest as problem:
            raise _error(problem) from None
        except SourceError as error:
            raise MCPError(code=types.INTERNAL_ERROR, message=str(error)) from None

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        try:
            page, next_cursor = catalog.resources_page(params.cursor if params else None)
        except InvalidRequest as problem:
            raise _error(problem) from None
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=resource.uri,
                    name=resource.name,
                    description=resource.description,
                    mime_type=resource.mime_type,
                )
                for resource in page
            ],
            next_cursor=next_cursor,
        )

    async def list_resource_templates(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=templates)

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            # Off the loop too: a source over HTTPS (`--from URL`) reads with a network wait.
            resource, text, notes = await gate.run(uri, lambda: catalog.read_resource(uri))
        except InvalidRequest as problem:
            raise _error(problem) from None
        except SourceError as error:
            raise MCPError(code=types.INTERNAL_ERROR, message=str(error)) from None
        # A part (of a resource past FETCH_CHARS) says where it sits after it, as text.
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(uri=uri, mime_type=resource.mime_type, text=text),
                *(
                    types.TextResourceContents(uri=uri, mime_type="text/plain", text=note)
                    for note in notes
                ),
            ]
        )

    return Server(
        catalog.server_name,
        version=catalog.server_version,
        description="Read-only MCP server over the published agent-access API.",
        instructions="Read-only access to the site's published agent-access API: use "
        "search/search_content to find documents and FAQ entries, then fetch, "
        "get_content_document or get_faq to read them.",
        get_tool_input_schema=schemas.get,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
    )
