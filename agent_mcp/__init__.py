"""A live MCP server over the published agent-access API (the spec's "future release").

It reads published files only (URL path -> bytes): a build in memory, a folder, or a
deployment over HTTPS; see `sources`. Needs the `mcp` extra.
"""
