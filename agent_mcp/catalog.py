"""What the server offers, read from the published files alone (a pure core, no SDK).

The tools, their input schemas and enums come from the published MCP manifest; the ids,
titles and URLs of documents and FAQ entries come from the content index. Nothing here
knows how the builder renders them, so a manifest generated some other way (an endpoint
table, a later API version) is followed with no change here.

Every answer is the published file's text, byte for byte, except `search_content`, whose
static endpoint is the whole search index: the live tool does the filtering the manifest
tells a client to do, with the client's own ranking (`agent_client.client.rank`), and
answers a search index holding only the best matching entries (at most ten), best first.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import jsonschema

from agent_contract import paths
from agent_contract.models import SearchIndex
from agent_mcp.search import ShardSearch
from agent_mcp.sources import FileSource, MissingFile

#: How many results a search answers, best first: enough to choose from, and a tool
#: result stays small in a context window (a broad query matches most of a large site).
SEARCH_LIMIT = 10
_PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


class InvalidRequest(ValueError):
    """Bad input from the client: an unknown tool, id or URI, or arguments off the schema."""

    def __init__(self, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data or {}


@dataclass(frozen=True)
class IndexEntry:
    """What the server needs of a content index entry (the spec's ContentIndexEntry)."""

    id: str
    title: str
    content_type: str
    canonical_url: str
    api_url: str
    description: str
    updated_at: str


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]
    path_template: str  # URL path; {param} placeholders filled from the arguments
    returns: str


@dataclass(frozen=True)
class ResourceSpec:
    uri: str
    name: str
    description: str
    mime_type: str
    path: str


@dataclass(frozen=True)
class Answer:
    """A tool's answer: the text (the published bytes, decoded) and its media type."""

    text: str
    mime_type: str

    def structured(self) -> dict[str, Any] | None:
        if self.mime_type != "application/json":
            return None
        value = json.loads(self.text)
        return value if isinstance(value, dict) else None


def endpoint_path(endpoint: str) -> str:
    """`GET https://host/api/v1/x.json` -> `/api/v1/x.json` (base URLs carry no path)."""
    method, _, url = endpoint.partition(" ")
    if method != "GET" or not url:
        raise ValueError(f"unexpected endpoint {endpoint!r}: expected 'GET <url>'")
    return urlsplit(url).path


def media_type(path: str) -> str:
    return "text/plain" if path.endswith(".txt") else "application/json"


def _json(body: bytes) -> Any:
    return json.loads(body.decode("utf-8"))


_ENTRY = tuple(IndexEntry.__dataclass_fields__)


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{where}: expected a JSON object")
    return value


def _objects(container: dict[str, Any], key: str, where: str) -> list[dict[str, Any]]:
    items = container.get(key)
    if not isinstance(items, list):
        raise ValueError(f"{where}: field {key!r}: expected an array")
    return [_object(item, f"{where}: {key}[{i}]") for i, item in enumerate(items)]


def _text(container: dict[str, Any], key: str, where: str) -> str:
    value = container.get(key)
    if not isinstance(value, str):
        raise ValueError(f"{where}: field {key!r}: expected a string")
    return value


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class Catalog:
    """The published API as MCP tools and resources, read once from a file source."""

    def __init__(self, source: FileSource) -> None:
        self.source = source
        # Read leniently, field by field: the published shapes may grow (an endpoint
        # table, a later API version) and the server must follow, not refuse.
        manifest = _object(_json(source.read(paths.MCP_MANIFEST)), paths.MCP_MANIFEST)
        index = _object(_json(source.read(paths.CONTENT_INDEX)), paths.CONTENT_INDEX)
        server_info = _object(manifest.get("serverInfo"), "serverInfo")
        self.server_name = _text(server_info, "name", paths.MCP_MANIFEST)
        self.server_version = _text(server_info, "version", paths.MCP_MANIFEST)
        self.tools = [
            ToolSpec(
                name=_text(tool, "name", paths.MCP_MANIFEST),
                description=_text(tool, "description", paths.MCP_MANIFEST),
                input_schema=_object(tool.get("inputSchema"), "inputSchema"),
                path_template=endpoint_path(_text(tool, "endpoint", paths.MCP_MANIFEST)),
                returns=str(tool.get("returns", "")),
            )
            for tool in _objects(manifest, "tools", paths.MCP_MANIFEST)
        ]
        self._tools = {tool.name: tool for tool in self.tools}
        self._listed_resources = [
            ResourceSpec(
                uri=_text(resource, "uri", paths.MCP_MANIFEST),
                name=_text(resource, "name", paths.MCP_MANIFEST),
                description=str(resource.get("description", "")),
                mime_type=_text(resource, "mimeType", paths.MCP_MANIFEST),
                path=endpoint_path(_text(resource, "endpoint", paths.MCP_MANIFEST)),
            )
            for resource in _objects(manifest, "resources", paths.MCP_MANIFEST)
        ]
        self.scheme = (
            urlsplit(self._listed_resources[0].uri).scheme if self._listed_resources else ""
        )
        self.entries = {
            entry.id: entry
            for entry in (
                IndexEntry(**{name: _text(raw, name, paths.CONTENT_INDEX) for name in _ENTRY})
                for raw in _objects(index, "documents", paths.CONTENT_INDEX)
            )
        }
        self.resources = self._resources()
        self._resources_by_uri = {resource.uri: resource for resource in self.resources}
        self._search_index: SearchIndex | None = None
        self.shard_search = ShardSearch(source)
        # Calls run on several threads (agent_mcp.server.CallGate): the first searches
        # at once parse the index once, not once each.
        self._search_index_lock = threading.Lock()
        self._validators = {
            tool.name: jsonschema.Draft202012Validator(tool.input_schema) for tool in self.tools
        }

    # --- names ------------------------------------------------------------------------

    def entry_uri(self, entry_id: str) -> str:
        kind = "faq" if self.entries[entry_id].content_type == "faq" else "content"
        return f"{self.scheme}://{kind}/{entry_id}"

    def _resources(self) -> list[ResourceSpec]:
        listed = list(self._listed_resources)
        # One per document and FAQ entry; the manifest's own entry wins where the two
        # name the same file (the site overview is also the document `site`).
        known_paths = {resource.path for resource in listed}
        for entry in self.entries.values():
            path = urlsplit(entry.api_url).path
            if path in known_paths:
                continue
            listed.append(
                ResourceSpec(
                    uri=self.entry_uri(entry.id),
                    name=entry.title,
                    description=entry.description,
                    mime_type="application/json",
                    path=path,
                )
            )
        return listed

    # --- tools ------------------------------------------------------------------------

    def call(self, name: str, arguments: dict[str, Any] | None) -> Answer:
        tool = self._tools.get(name)
        if tool is None:
            raise InvalidRequest(
                f"unknown tool {name!r}; valid tools: {', '.join(self.tool_names())}",
                {"tool": name, "valid": self.tool_names()},
            )
        arguments = arguments or {}
        self._check_arguments(tool, arguments)
        if tool.path_template == paths.SEARCH_INDEX and "query" in arguments:
            return Answer(self.search_index_for(arguments["query"]), "application/json")
        path = _PLACEHOLDER.sub(lambda m: str(arguments[m.group(1)]), tool.path_template)
        return Answer(self._read(path).decode("utf-8"), media_type(path))

    def tool_names(self) -> list[str]:
        return [tool.name for tool in self.tools] + ["search", "fetch"]

    def _check_arguments(self, tool: ToolSpec, arguments: dict[str, Any]) -> None:
        schema = tool.input_schema
        unexpected = sorted(set(arguments) - set(schema.get("properties", {})))
        if unexpected:
            raise InvalidRequest(
                f"{tool.name}: unexpected argument(s) {', '.join(unexpected)}; "
                f"it takes: {', '.join(schema.get('properties', {})) or 'no arguments'}",
                {"tool": tool.name, "unexpected": unexpected},
            )
        error = jsonschema.exceptions.best_match(self._validators[tool.name].iter_errors(arguments))
        if error is None:
            return
        field = error.path[0] if error.path else None
        if field is None and error.validator == "required":
            field = next(
                (name for name in schema.get("required", []) if name not in arguments), None
            )
        spec = schema.get("properties", {}).get(field, {}) if isinstance(field, str) else {}
        if "enum" in spec:
            valid = list(spec["enum"])
            raise InvalidRequest(
                f"{tool.name}: {field} must be one of the published ids: {', '.join(valid)}"
                + (f" (got {arguments[field]!r})" if field in arguments else " (missing)"),
                {"tool": tool.name, "argument": field, "valid": valid},
            )
        raise InvalidRequest(
            f"{tool.name}: invalid arguments: {error.message}",
            {"tool": tool.name, "argument": field},
        )

    def _read(self, path: str) -> bytes:
        try:
            return self.source.read(path)
        except MissingFile as error:
            # The manifest names a file the source lacks: the deployment is inconsistent.
            raise InvalidRequest(
                f"{path} is listed but not published by {self.source.label}", {"path": path}
            ) from error

    # --- search -----------------------------------------------------------------------

    def search_index(self) -> SearchIndex:
        # Parsed once: the files behind a source never change (a rebuild is a new source),
        # and parsing costs more than ranking on a large site.
        with self._search_index_lock:
            if self._search_index is None:
                body = self._read(paths.SEARCH_INDEX)
                self._search_index = SearchIndex.model_validate_json(body)
            return self._search_index

    def search_index_for(self, query: str) -> str:
        """`search_content`: the best entries matching `query`, without their keyword
        arrays, through the sharded search index (agent_mcp/search.py)."""
        return self.shard_search.search_content(query)

    def search(
        self, query: str, limit: int | None = None, cursor: str | None = None
    ) -> dict[str, Any]:
        """ChatGPT's `search`, paged (agent_mcp/search.py)."""
        return self.shard_search.search(query, limit, cursor)

    def fetch(self, entry_id: str) -> dict[str, Any]:
        """ChatGPT's `fetch`: {id, title, text, url, metadata}; text is the published JSON."""
        entry = self.entries.get(entry_id)
        if entry is None:
            valid = list(self.entries)
            raise InvalidRequest(
                f"fetch: unknown id {entry_id!r}; valid ids: {', '.join(valid)}",
                {"argument": "id", "valid": valid},
            )
        return {
            "id": entry.id,
            "title": entry.title,
            "text": self._read(urlsplit(entry.api_url).path).decode("utf-8"),
            "url": entry.canonical_url,
            "metadata": {
                "content_type": entry.content_type,
                "api_url": entry.api_url,
                "updated_at": entry.updated_at,
                "description": entry.description,
            },
        }

    # --- resources --------------------------------------------------------------------

    def read_resource(self, uri: str) -> tuple[ResourceSpec, str]:
        resource = self._resources_by_uri.get(uri)
        if resource is None:
            valid = list(self._resources_by_uri)
            raise InvalidRequest(
                f"unknown resource {uri!r}; valid URIs: {', '.join(valid)}",
                {"uri": uri, "valid": valid},
            )
        return resource, self._read(resource.path).decode("utf-8")
