"""The MCP server's search tools over the sharded search index (issue 25).

Both run the one query procedure (agent_contract/search_shards.py) that the agent
client runs, reading the term map, a shard per query word and the hits' entry files
from the file source: a query reads a few small files at any site size, never the whole
search-index.json.

- `search` answers OpenAI's shape, `{"results": [{id, title, url}]}` with a `snippet`
  per hit, as structured content with an output schema, a page of `limit` hits and a
  `next_cursor` for the next page (absent on the last one);
- `search_content` (the static manifest's tool) answers the matched entries with their
  id, title, description and api_url, best first, without their keyword arrays.
"""

from __future__ import annotations

import json
from typing import Any

from agent_contract import search_query
from agent_mcp.sources import FileSource, SourceError

#: Hits per page unless `limit` says otherwise, and the most a page may hold: enough to
#: choose from, and a tool result stays small in a context window.
DEFAULT_LIMIT = 10
MAX_LIMIT = 50
#: The longest snippet (the entry's description, cut at a word).
SNIPPET_CHARACTERS = 200

SEARCH_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What to look for, in plain words."},
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_LIMIT,
            "description": f"Hits per page (default {DEFAULT_LIMIT}).",
        },
        "cursor": {
            "type": "string",
            "description": "The next_cursor of the previous page, for the hits after it.",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}

SEARCH_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "results": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "Pass it to `fetch`."},
                    "title": {"type": "string"},
                    "url": {"type": "string", "description": "The page to cite."},
                    "snippet": {"type": "string"},
                },
                "required": ["id", "title", "url", "snippet"],
            },
        },
        "next_cursor": {
            "type": "string",
            "description": "Present when more hits follow: pass it back as `cursor`.",
        },
    },
    "required": ["results"],
}


class SearchArgumentError(ValueError):
    """A search argument off its schema (the server answers it as invalid params)."""


def _cursor_offset(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not cursor.isdigit() or len(cursor) > 9:
        raise SearchArgumentError(f"search: cursor {cursor!r} is not one this server gave")
    return int(cursor)


def snippet(text: str) -> str:
    if len(text) <= SNIPPET_CHARACTERS:
        return text
    cut = text[: SNIPPET_CHARACTERS - 1].rsplit(" ", 1)[0]
    return cut.rstrip(",;:") + "…"


class ShardSearch:
    """The search tools' answers, over one file source's sharded index."""

    def __init__(self, source: FileSource) -> None:
        self._source = source

    def query(self, text: str, limit: int | None, offset: int = 0) -> search_query.Results:
        try:
            return search_query.query(self._source.read, text, limit, offset)
        except (search_query.SearchFormatError, LookupError) as error:
            # The deployment's files, not the caller's arguments: an internal error.
            raise SourceError(f"the sharded search index: {error}") from None

    def search(
        self, query: str, limit: int | None = None, cursor: str | None = None
    ) -> dict[str, Any]:
        """`search`: a page of {id, title, url, snippet}, and `next_cursor` when more follow."""
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT
        ):
            raise SearchArgumentError(f"search: limit must be an integer from 1 to {MAX_LIMIT}")
        offset = _cursor_offset(cursor)
        found = self.query(query, limit or DEFAULT_LIMIT, offset)
        answer: dict[str, Any] = {
            "results": [
                {
                    "id": hit.id,
                    "title": hit.title,
                    "url": hit.url,
                    "snippet": snippet(hit.description),
                }
                for hit in found.hits
            ]
        }
        if found.more and found.hits:
            answer["next_cursor"] = str(offset + len(found.hits))
        return answer

    def search_content(self, query: str) -> str:
        """`search_content`: the best entries (at most DEFAULT_LIMIT), without keywords."""
        found = self.query(query, DEFAULT_LIMIT)
        answer = {
            "query": query,
            "entries": [
                {
                    "id": hit.id,
                    "title": hit.title,
                    "description": hit.description,
                    "api_url": hit.api_url,
                }
                for hit in found.hits
            ],
            "more": found.more,
        }
        return json.dumps(answer, ensure_ascii=False, indent=2) + "\n"
