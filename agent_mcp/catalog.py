"""What the server offers, read from the published files alone (a pure core, no SDK).

The tools, their input schemas and enums come from the published MCP manifest; the ids,
titles and URLs of documents and FAQ entries come from the content index. Nothing here
knows how the builder renders them, so a manifest generated some other way (an endpoint
table, a later API version) is followed with no change here.

Every answer is the published file's text, byte for byte (a long one in parts), except
`search_content`, whose static endpoint is the whole search index: the live tool does
the filtering the manifest tells a client to do, with the client's own ranking
(`agent_client.client.rank`), and answers a search index holding only the best matching
entries (at most ten), best first.

Sized for agents at any site size (issue 25): the two aggregates that grow with the site
(the content index, llms-full.txt) answer a page or a part (agent_mcp.paging; a site they
fit whole gets the file as before), and their tools say the whole's size; ids are checked
against the index, not only a schema's enum (past 200 entries the manifest lists none);
an unknown id or a bad argument is a ToolError, answered as the tool's result with
isError and at most five close ids; `fetch` answers the entry's Markdown twin, in parts
of at most FETCH_CHARS characters where it is longer (a docs page past the build's entry
budget is published whole); `get_content_document` and `get_faq` answer an entry's JSON
longer than FETCH_CHARS in parts too, each part an object of the published model with
only its sections or answer cut (agent_mcp.entry_parts), a note after it saying where.
"""

from __future__ import annotations

import difflib
import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import jsonschema

from agent_contract import paths
from agent_contract.models import SearchIndex
from agent_mcp import entry_parts, paging
from agent_mcp.search import ShardSearch
from agent_mcp.sources import FileSource, MissingFile, read_range, size_of

#: How many results a search answers, best first: enough to choose from, and a tool
#: result stays small in a context window (a broad query matches most of a large site).
SEARCH_LIMIT = 10
_PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
#: How many known names an error about an unknown one suggests: enough to correct a typo,
#: and the answer stays small at any site size (issue 25: the whole list was 458,812
#: characters at 10,000 entries).
CLOSE_NAMES = 5
#: resources/list answers this many resources a page (a generated site's are about 400
#: characters each: 40,000 a page).
RESOURCE_PAGE = 100
#: The paging argument each large aggregate's tool takes (agent_mcp.paging).
PAGE_ARGUMENT = {paths.CONTENT_INDEX: "page", paths.LLMS_FULL_TXT: "part"}
#: The most characters of an entry's text one `fetch` answer holds; a longer text is
#: answered in parts (agent_mcp.paging.TextParts). Claude Code keeps a tool result over
#: 50,000 characters out of the conversation (saved to a file, a preview shown), and
#: `fetch` answers its text twice (the JSON text block and structuredContent, which
#: benchmarks/mcp_sizes counts together against 100,000): 40,000 leaves room for the
#: JSON escaping and the other fields in both (docs/decisions.md, session 24).
FETCH_CHARS = 40_000
#: How far before FETCH_CHARS a part's end looks for a heading: a part is at least
#: FETCH_CHARS - FETCH_WINDOW characters, unless it is the last.
FETCH_WINDOW = 20_000
#: The tools answering one entry's JSON, by path template, and what their parts cut (the
#: long text of agent_contract.models ContentDocument / FAQEntry): an entry whose JSON
#: is over FETCH_CHARS characters is answered in parts (agent_mcp.entry_parts), for the
#: same reason as fetch's text (docs/decisions.md, session 26).
ENTRY_PARTS = {
    paths.DOCUMENT_TEMPLATE: "its content.sections (a section too long alone is cut in its "
    "body, keeping its title on every piece)",
    paths.FAQ_TEMPLATE: "its answer",
}
#: The most characters of a part's JSON: FETCH_CHARS less room for the note after it.
ENTRY_CHARS = FETCH_CHARS - 1_000


class InvalidRequest(ValueError):
    """Bad input from the client: an unknown tool, id or URI, or arguments off the schema."""

    def __init__(self, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data or {}


class ToolError(InvalidRequest):
    """A tool's arguments are wrong (an unknown id, a page past the last): answered as the
    tool's result with `isError: true`, which the model reads and corrects, not as a
    protocol error (MCP 2025-11-25, CallToolResult.isError: "Any errors that originate
    from the tool SHOULD be reported inside the result object")."""


class ResourceNotFound(InvalidRequest):
    """resources/read of a URI the server does not have (MCP: error -32002)."""


def close_names(name: str, known: list[str]) -> list[str]:
    """At most CLOSE_NAMES of `known` that look like `name`, closest first."""
    return difflib.get_close_matches(name, known, n=CLOSE_NAMES, cutoff=0.5)


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
    """A tool's answer: the text (the published bytes, decoded, or a page of them), its
    media type, and `notes`: short text blocks after it (where a part sits in the whole)."""

    text: str
    mime_type: str
    notes: tuple[str, ...] = field(default=())

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


def _short(message: str, limit: int = 300) -> str:
    """jsonschema's message quotes the offending value and, for an enum, every allowed
    one: cut, so an error stays small whatever the client sent or the site holds."""
    return message if len(message) <= limit else message[: limit - 1] + "…"


def _next_call(tool: str, arguments: dict[str, Any]) -> str:
    return f"call {tool} with {compact(arguments)}"


def _continuation(entry_id: str, number: int, count: int) -> str:
    """The line ending part `number` of `count`: what to call for the next part."""
    call = _next_call("fetch", {"id": entry_id, "part": number + 1})
    return (
        f"[part {number} of {count} of this entry's text; it continues in part "
        f"{number + 1}: {call}]"
    )


def _resource_part_number(query: str | None, count: int, uri: str) -> int:
    """The part a resource URI's query asks (`part=N`, 1 to `count`; none: 1), or an
    invalid request naming them."""
    if query is None:
        return 1
    name, _, value = query.partition("=")
    digits = value.isascii() and value.isdigit() and len(value) <= 9
    if name == "part" and digits and 1 <= int(value) <= count:
        return int(value)
    shown = _short(query, 40)
    raise InvalidRequest(
        f"{uri}?{shown}: a resource is read whole or by part=N, N from 1 to {count}",
        {"uri": uri, "parts": count},
    )


def _part_number(part: object, count: int, tool: str, subject: str) -> int:
    """`part` as `tool` was given it for `subject`, checked: an integer from 1 to `count`
    (a JSON number with no fraction, 2.0, is an integer to JSON Schema), or a ToolError
    naming them."""
    if isinstance(part, float) and part.is_integer():
        part = int(part)
    if isinstance(part, int) and not isinstance(part, bool) and 1 <= part <= count:
        return part
    shown = _short(compact(part), 40)
    raise ToolError(
        f"{tool}: part {shown} does not exist for {subject}: its text has "
        + ("one part, part 1" if count == 1 else f"parts 1 to {count}")
        + " (an integer; omit part for the first)",
        {"tool": tool, "argument": "part", "parts": count},
    )


class Catalog:
    """The published API as MCP tools and resources, read once from a file source."""

    def __init__(self, source: FileSource) -> None:
        self.source = source
        # Read leniently, field by field: the published shapes may grow (an endpoint
        # table, a later API version) and the server must follow, not refuse.
        manifest = _object(_json(source.read(paths.MCP_MANIFEST)), paths.MCP_MANIFEST)
        index_body = source.read(paths.CONTENT_INDEX)
        index = _object(_json(index_body), paths.CONTENT_INDEX)
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
        # Where each entry is published: a resource there is read in parts of its model.
        self._entry_paths = frozenset(urlsplit(e.api_url).path for e in self.entries.values())
        self._index = index
        self._pages = paging.IndexPages.of(
            _objects(index, "documents", paths.CONTENT_INDEX),
            len(index_body.decode("utf-8")),
        )
        self._full_size: int | None = None
        self.tools = [self._sized(tool) for tool in self.tools]
        self._tools = {tool.name: tool for tool in self.tools}
        # Per path template (a tool's, e.g. /api/v1/faq/{faq_id}.json): the ids whose
        # index entry is published at it, in the index's order. The manifest enumerates
        # them only on a small site (agent_contract.endpoints.ID_LIST_LIMIT); the server
        # checks every id itself.
        self._template_ids = {
            tool.path_template: self._ids_at(tool.path_template) for tool in self.tools
        }
        self.resources = self._resources()
        self._resources_by_uri = {resource.uri: resource for resource in self.resources}
        self._search_index: SearchIndex | None = None
        self.shard_search = ShardSearch(source)
        # Calls run on several threads (agent_mcp.server.CallGate): the first searches
        # at once parse the index once, not once each.
        self._search_index_lock = threading.Lock()
        self._known_sets = {path: frozenset(ids) for path, ids in self._template_ids.items()}
        self._validators = {
            tool.name: jsonschema.Draft202012Validator(tool.input_schema) for tool in self.tools
        }

    # --- the large aggregates, paged -------------------------------------------------

    def _ids_at(self, template: str) -> list[str]:
        names = _PLACEHOLDER.findall(template)
        if len(names) != 1:
            return []
        placeholder = "{" + names[0] + "}"
        return [
            entry.id
            for entry in self.entries.values()
            if urlsplit(entry.api_url).path == template.replace(placeholder, entry.id)
        ]

    def full_content_size(self) -> int:
        if self._full_size is None:
            self._full_size = size_of(self.source, paths.LLMS_FULL_TXT)
        return self._full_size

    def _sized(self, tool: ToolSpec) -> ToolSpec:
        """A large aggregate's tool with its paging argument and its size said: the
        manifest's schema, plus one optional property (unless the manifest has it)."""
        if tool.path_template in ENTRY_PARTS:
            return self._with_parts(tool)
        argument = PAGE_ARGUMENT.get(tool.path_template)
        if argument is None:
            return tool
        if tool.path_template == paths.CONTENT_INDEX:
            count, whole = self._pages.count, self._pages.total_chars
            entries = len(self.entries)
            size = f" The index lists {entries:,} entries ({whole:,} characters): " + (
                "one page, answered whole."
                if count == 1
                else f"{count:,} pages of at most {paging.PAGE_CHARS:,} characters of "
                f"entries each; pass page (1 to {count:,}, default 1). Each page says "
                "its first and last entry and the next page."
            )
            what = "Page of the index to read (1 = the first)."
        else:
            whole = self.full_content_size()
            count = paging.part_count(whole)
            size = f" The file is {whole:,} bytes: " + (
                "one part, answered whole."
                if count == 1
                else f"{count:,} parts of at most {paging.PART_BYTES + paging.WINDOW:,} "
                f"characters, each cut at an entry's heading where one is near; pass part (1 "
                f"to {count:,}, default 1). To find one entry, search_content and fetch cost "
                "far less."
            )
            what = "Part of the file to read (1 = the first)."
        properties = dict(tool.input_schema.get("properties", {}))
        properties.setdefault(
            argument,
            {"type": "integer", "minimum": 1, "maximum": count, "description": what},
        )
        return ToolSpec(
            name=tool.name,
            description=tool.description + size,
            input_schema={**tool.input_schema, "properties": properties},
            path_template=tool.path_template,
            returns=tool.returns,
        )

    # --- one entry's JSON, in parts where long -----------------------------------------

    @staticmethod
    def _with_parts(tool: ToolSpec) -> ToolSpec:
        """An entry tool with an optional `part` (unless the manifest has one): its size
        depends on the entry, so no maximum; the description says the limit and the cut."""
        what = (
            f"Which part of a long entry to read (1 = the first, the default). An entry of "
            f"at most {FETCH_CHARS:,} characters of JSON is one part; a longer one is cut "
            f"into parts of at most {ENTRY_CHARS:,}, each the same object with only "
            f"{ENTRY_PARTS[tool.path_template]} cut at blank lines, else lines; the pieces "
            "join back exactly. A note after each part's JSON says what it holds and the "
            "call for the next part."
        )
        properties = dict(tool.input_schema.get("properties", {}))
        properties.setdefault(
            "part", {"type": "integer", "minimum": 1, "default": 1, "description": what}
        )
        return ToolSpec(
            name=tool.name,
            description=tool.description
            + f" An entry over {FETCH_CHARS:,} characters is answered in parts (see part).",
            input_schema={**tool.input_schema, "properties": properties},
            path_template=tool.path_template,
            returns=tool.returns,
        )

    def _entry(self, tool: ToolSpec, arguments: dict[str, Any], path: str) -> Answer:
        """The entry at `path` as published, or the part `arguments` asks of a long one
        (agent_mcp.entry_parts); a part past the last is the tool's error."""
        text, parts = self._entry_parts(path)
        (name,) = _PLACEHOLDER.findall(tool.path_template)
        entry_id = str(arguments[name])
        subject = f"{name} {_short(entry_id, 120)!r}"
        part = arguments.get("part", 1)
        if parts is None:
            _part_number(part, 1, tool.name, subject)
            return Answer(text, media_type(path))
        number = _part_number(part, parts.count, tool.name, subject)
        note = f"[part {number} of {parts.count} of {subject}: {parts.holds(number)}; " + (
            f"it continues in part {number + 1}: "
            + _next_call(tool.name, {name: entry_id, "part": number + 1})
            if number < parts.count
            else "the last part"
        )
        fetch = _next_call("fetch", {"id": entry_id}) if entry_id in self.entries else None
        if fetch:
            note += f". To read the entry as Markdown instead, {fetch} (in parts too, where long)"
        return Answer(compact(parts.part(number)), "application/json", (note + "]",))

    def _paged(self, tool: ToolSpec, number: int | float | None) -> Answer:
        if isinstance(number, float):
            # The schema passed it as an integer (JSON Schema: 2.0 is one); index with an int.
            number = int(number)
        path = tool.path_template
        count = self._aggregate_count(path)
        if number is not None and not 1 <= number <= count:
            # The schema says so too, unless the manifest declared the argument itself.
            argument = PAGE_ARGUMENT[path]
            raise ToolError(
                f"{tool.name}: {argument} {number} does not exist; {argument}s are 1 to {count}",
                {"tool": tool.name, "argument": argument},
            )
        number = number or 1
        text, span = self._aggregate_part(path, number)
        if span is None:  # the index (its page says where it sits), or one part
            return Answer(text, media_type(path))
        start, end = span
        note = (
            f"[part {number:,} of {count:,}: bytes {start:,} to {end:,} of "
            f"{self.full_content_size():,}"
            + (f"; next: part {number + 1:,}]" if number < count else "; the last part]")
        )
        return Answer(text, media_type(path), (note,))

    # The large files a tool answers by pages or parts (PAGE_ARGUMENT), and a resource too.

    def _aggregate_count(self, path: str) -> int:
        """How many pages the content index, or parts llms-full.txt, is answered in."""
        if path == paths.CONTENT_INDEX:
            return self._pages.count
        return paging.part_count(self.full_content_size())

    def _aggregate_part(self, path: str, number: int) -> tuple[str, tuple[int, int] | None]:
        """Page or part `number` of the content index or llms-full.txt (the published
        file when it is one), and, for a part of llms-full.txt, its byte span."""
        if self._aggregate_count(path) == 1:
            return self._read(path).decode("utf-8"), None
        if path == paths.CONTENT_INDEX:
            return compact(self._pages.page(self._index, number)), None
        start, end, body = paging.part_bounds(
            number, self.full_content_size(), lambda a, b: self._read_range(path, a, b)
        )
        return body.decode("utf-8"), (start, end)

    def _entry_parts(self, path: str) -> tuple[str, entry_parts.EntryParts | None]:
        """An entry's published text, and its parts when it is answered in more than one
        (its JSON past FETCH_CHARS, cut by agent_mcp.entry_parts)."""
        text = self._read(path).decode("utf-8")
        if len(text) <= FETCH_CHARS:
            return text, None
        value = json.loads(text)
        parts = entry_parts.cut(value, ENTRY_CHARS) if isinstance(value, dict) else None
        return text, parts if parts is not None and parts.count > 1 else None

    def _read_range(self, path: str, start: int, end: int) -> bytes:
        try:
            return read_range(self.source, path, start, end)
        except MissingFile as error:
            raise InvalidRequest(
                f"{path} is listed but not published by {self.source.label}", {"path": path}
            ) from error

    # --- names ------------------------------------------------------------------------

    def entry_uri(self, entry_id: str) -> str:
        return f"{self.scheme}://{self._uri_kind(entry_id)}/{entry_id}"

    def _uri_kind(self, entry_id: str) -> str:
        """The host of an entry's URI: `faq` for an FAQ entry, `content` for a document."""
        return "faq" if self.entries[entry_id].content_type == "faq" else "content"

    def resource_templates(self) -> list[ResourceSpec]:
        """resources/templates/list: one URI template (RFC 6570) per kind of entry the
        site has, `entry_uri`'s shape, so that a client reads an entry by the id search
        gave it without paging resources/list (201 pages at 10,000 entries). `path` is
        the template of the file it reads."""
        kinds = {self._uri_kind(entry_id) for entry_id in self.entries}
        return [
            ResourceSpec(
                uri=f"{self.scheme}://{kind}/{{{argument}}}",
                name=name,
                description=f"{what} by its id (from search, search_content or "
                f"get_content_index), as its JSON; one past {FETCH_CHARS:,} characters is "
                "read in parts: the note after a part names the next part's URI (?part=N).",
                mime_type="application/json",
                path=template,
            )
            for kind, argument, name, what, template in (
                ("content", "document_id", "document", "A document", paths.DOCUMENT_TEMPLATE),
                ("faq", "faq_id", "faq-entry", "An FAQ entry", paths.FAQ_TEMPLATE),
            )
            if kind in kinds
        ]

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
        if tool.path_template in PAGE_ARGUMENT:
            return self._paged(tool, arguments.get(PAGE_ARGUMENT[tool.path_template]))
        self._check_ids(tool, arguments)
        path = _PLACEHOLDER.sub(lambda m: str(arguments[m.group(1)]), tool.path_template)
        if tool.path_template in ENTRY_PARTS:
            return self._entry(tool, arguments, path)
        return Answer(self._read(path).decode("utf-8"), media_type(path))

    def _check_ids(self, tool: ToolSpec, arguments: dict[str, Any]) -> None:
        """An id the index does not publish at the tool's path: a tool error naming the
        closest known ids (never all of them) and where the rest are listed."""
        known = self._template_ids.get(tool.path_template)
        if not known:
            return
        (name,) = _PLACEHOLDER.findall(tool.path_template)
        value = arguments.get(name)
        if value in self._known_sets[tool.path_template]:
            return
        raise self._unknown_id(tool.name, name, str(value), known)

    def _unknown_id(self, tool: str, argument: str, value: str, known: list[str]) -> ToolError:
        # Matched and echoed cut short: a request may carry a megabyte-long "id".
        value = _short(value, 120)
        close = close_names(value, known)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        return ToolError(
            f"{tool}: no {argument} {value!r} is published ({len(known):,} are).{hint} Find "
            "ids with search_content (or search), or list them with get_content_index.",
            {"tool": tool, "argument": argument, "close": close},
        )

    def tool_names(self) -> list[str]:
        return [tool.name for tool in self.tools] + ["search", "fetch"]

    def _check_arguments(self, tool: ToolSpec, arguments: dict[str, Any]) -> None:
        schema = tool.input_schema
        unexpected = sorted(set(arguments) - set(schema.get("properties", {})))
        if unexpected:
            raise ToolError(
                f"{tool.name}: unexpected argument(s) {_short(', '.join(unexpected), 200)}; "
                f"it takes: {', '.join(schema.get('properties', {})) or 'no arguments'}",
                {"tool": tool.name, "unexpected": [_short(name, 60) for name in unexpected[:5]]},
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
        if "enum" in spec and isinstance(arguments.get(field), str):
            raise self._unknown_id(tool.name, str(field), arguments[field], list(spec["enum"]))
        raise ToolError(
            f"{tool.name}: invalid arguments: {_short(error.message)}",
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

    def fetch(self, entry_id: str, part: object = 1) -> dict[str, Any]:
        """ChatGPT's `fetch`: {id, title, text, url, metadata}; text is the entry's
        Markdown twin (what a model reads best, and a third of its JSON's size), or its
        JSON where the deployment publishes no twin (metadata.mime_type says which).

        A text longer than FETCH_CHARS is answered in parts: `part` (1-based, default 1)
        says which; metadata gains `part` and `parts`, and every part but the last ends
        with a line naming the call for the next. A text that fits is answered as it
        always was (no `part` or `parts`), whatever valid `part` is asked."""
        entry = self.entries.get(entry_id)
        if entry is None:
            raise self._unknown_id("fetch", "id", entry_id, list(self.entries))
        answer = self._fetch_whole(entry)
        text = answer["text"]
        # The continuation line at its longest (a million parts), so a part's text with
        # its line stays within FETCH_CHARS.
        reserve = len(_continuation(entry.id, 999_999, 1_000_000)) + 1
        parts = (
            paging.TextParts.of(text, FETCH_CHARS - reserve, FETCH_WINDOW)
            if len(text) > FETCH_CHARS
            else paging.TextParts((0,), len(text))
        )
        number = _part_number(part, parts.count, "fetch", f"id {entry.id!r}")
        if parts.count == 1:
            return answer
        start, end = parts.bounds(number)
        body = text[start:end]
        if number < parts.count:
            body += "\n" + _continuation(entry.id, number, parts.count)
        answer["text"] = body
        answer["metadata"].update(part=number, parts=parts.count)
        return answer

    def _fetch_whole(self, entry: IndexEntry) -> dict[str, Any]:
        json_path = urlsplit(entry.api_url).path
        twin = paths.markdown_twin(json_path)
        try:
            if twin is None:
                raise MissingFile(json_path)
            text, mime, read_from = self.source.read(twin).decode("utf-8"), "text/markdown", twin
        except MissingFile:
            text, mime = self._read(json_path).decode("utf-8"), "application/json"
            read_from = json_path
        origin = urlsplit(entry.api_url)
        return {
            "id": entry.id,
            "title": entry.title,
            "text": text,
            "url": entry.canonical_url,
            "metadata": {
                "content_type": entry.content_type,
                "api_url": entry.api_url,
                "text_url": f"{origin.scheme}://{origin.netloc}{read_from}",
                "mime_type": mime,
                "updated_at": entry.updated_at,
                "description": entry.description,
            },
        }

    # --- resources --------------------------------------------------------------------

    def resources_page(self, cursor: str | None) -> tuple[list[ResourceSpec], str | None]:
        """resources/list, RESOURCE_PAGE at a time (MCP pagination: an opaque cursor, the
        next one absent on the last page); one resource per entry is 10,000 at 10,000."""
        start = 0
        if cursor is not None:
            # Digits, and few of them: int() refuses 4,301 digits and more with a ValueError.
            if not (cursor.isascii() and cursor.isdigit() and len(cursor) <= 18) or not 0 < int(
                cursor
            ) < len(self.resources):
                shown = _short(cursor, 40)
                raise InvalidRequest(f"invalid cursor {shown!r}", {"cursor": shown})
            start = int(cursor)
        end = start + RESOURCE_PAGE
        return self.resources[start:end], str(end) if end < len(self.resources) else None

    def read_resource(self, uri: str) -> tuple[ResourceSpec, str, tuple[str, ...]]:
        """A resource's text, and notes after it. A resource over FETCH_CHARS characters
        is read in parts, as the tools answer the same files (the index by pages,
        llms-full.txt by parts, an entry in parts of its model, any other text cut at its
        lines): `<uri>?part=N`, 1 when not given; the note names the part and the next
        one's URI. A resources/read of llms-full.txt was 86 MB at 10,000 entries."""
        base, asked, query = uri.partition("?")
        resource = self._resources_by_uri.get(base)
        if resource is None:
            shown = _short(uri, 200)
            close = close_names(shown, list(self._resources_by_uri))
            hint = f"; did you mean: {', '.join(close)}?" if close else ""
            raise ResourceNotFound(
                f"unknown resource {shown!r}{hint} (resources/list pages through all "
                f"{len(self.resources):,})",
                {"uri": shown, "close": close},
            )
        text, count, part = self._resource_part(resource, query if asked else None)
        if count == 1:
            return resource, text, ()
        note = f"[part {part} of {count} of {base}: " + (
            f"it continues in part {part + 1}: read the resource {base}?part={part + 1}]"
            if part < count
            else "the last part]"
        )
        return resource, text, (note,)

    def _resource_part(self, resource: ResourceSpec, query: str | None) -> tuple[str, int, int]:
        """(the text of the part `query` asks, how many parts, which part it is)."""
        path = resource.path
        if path in PAGE_ARGUMENT:  # the content index, llms-full.txt: as their tools
            count = self._aggregate_count(path)
            part = _resource_part_number(query, count, resource.uri)
            return self._aggregate_part(path, part)[0], count, part
        if path in self._entry_paths:  # an entry: each part a valid object of its model
            text, parts = self._entry_parts(path)
            if parts is None:  # as published, as its tool answers it
                return text, 1, _resource_part_number(query, 1, resource.uri)
            part = _resource_part_number(query, parts.count, resource.uri)
            return compact(parts.part(part)), parts.count, part
        text = self._read(path).decode("utf-8")
        if len(text) <= FETCH_CHARS:
            return text, 1, _resource_part_number(query, 1, resource.uri)
        # Any other text (the OpenAPI, the client-side search index) cut at its lines; not
        # parsed, which for the search index (9.4 MB at 10,000 entries) was 0.35 s a part.
        cut = paging.TextParts.of(text, ENTRY_CHARS, FETCH_WINDOW)
        part = _resource_part_number(query, cut.count, resource.uri)
        start, end = cut.bounds(part)
        return text[start:end], cut.count, part
