"""The MCP server: a `Catalog` served with the official SDK's low-level `Server`.

The low-level server, not `MCPServer`: the tools' input schemas are the published
manifest's, verbatim, and `MCPServer` derives schemas from Python signatures instead.
Every tool is read-only (annotated so); a bad tool name, id, argument or URI answers a
JSON-RPC error naming what is valid, never a crash.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from agent_mcp.catalog import Catalog, InvalidRequest, compact
from agent_mcp.sources import SourceError

READ_ONLY = types.ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)

SEARCH_TOOL = types.Tool(
    name="search",
    description="Search the site's documents and FAQ entries. Returns {results: [{id, title, "
    "url}]}, best first; pass an id to `fetch` for the full text. (The shape ChatGPT "
    "connectors and deep research call.)",
    input_schema={
        "type": "object",
        "properties": {"query": {"type": "string", "description": "What to look for."}},
        "required": ["query"],
    },
    annotations=READ_ONLY,
)
FETCH_TOOL = types.Tool(
    name="fetch",
    description="Retrieve one document or FAQ entry by the id `search` returned: {id, title, "
    "text, url, metadata}; text is the published JSON document.",
    input_schema={
        "type": "object",
        "properties": {"id": {"type": "string", "description": "An id from `search`."}},
        "required": ["id"],
    },
    annotations=READ_ONLY,
)


def _error(problem: InvalidRequest) -> MCPError:
    return MCPError(code=types.INVALID_PARAMS, message=problem.message, data=problem.data or None)


def _text_result(text: str, structured: dict[str, Any] | None) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured
    )


def create_server(catalog: Catalog) -> Server[Any]:
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

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = params.arguments or {}
        try:
            if params.name in ("search", "fetch"):
                key = "query" if params.name == "search" else "id"
                value = arguments.get(key)
                if not isinstance(value, str) or set(arguments) != {key}:
                    raise InvalidRequest(
                        f"{params.name}: takes exactly one string argument, {key!r}",
                        {"tool": params.name, "argument": key},
                    )
                result = catalog.search(value) if key == "query" else catalog.fetch(value)
                return _text_result(compact(result), result)
            answer = catalog.call(params.name, arguments)
            return _text_result(answer.text, answer.structured())
        except InvalidRequest as problem:
            raise _error(problem) from None
        except SourceError as error:
            raise MCPError(code=types.INTERNAL_ERROR, message=str(error)) from None

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=resource.uri,
                    name=resource.name,
                    description=resource.description,
                    mime_type=resource.mime_type,
                )
                for resource in catalog.resources
            ]
        )

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        try:
            resource, text = catalog.read_resource(str(params.uri))
        except InvalidRequest as problem:
            raise _error(problem) from None
        except SourceError as error:
            raise MCPError(code=types.INTERNAL_ERROR, message=str(error)) from None
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(
                    uri=resource.uri, mime_type=resource.mime_type, text=text
                )
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
        on_read_resource=read_resource,
    )
