"""`python -m content_builder mcp`: the MCP server on stdio, over one source of files."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--site", type=Path, help="site data folder, built in memory (default: site_data)"
    )
    where.add_argument(
        "--from", dest="from_url", metavar="URL", help="a deployment's base URL, read over HTTPS"
    )
    where.add_argument("--dist", type=Path, help="a built output folder (dist/)")
    parser.add_argument("--base-url", help="with --site: base URL written into the files")


def run(args: argparse.Namespace) -> int:
    """Serve until the client closes stdin. Errors go to stderr: stdout is the protocol."""
    try:
        from agent_mcp.catalog import Catalog
        from agent_mcp.sources import (
            DirectoryFiles,
            HttpFiles,
            MissingFile,
            SourceError,
            build_in_memory,
        )
        from agent_mcp.stdio import run_stdio
    except ImportError as error:  # the `mcp` extra is not installed
        print(f"error: {error}; install the MCP extra: pip install '.[mcp]'", file=sys.stderr)
        return 1
    if args.from_url:
        source = HttpFiles(args.from_url)
    elif args.dist:
        source = DirectoryFiles(args.dist)
    else:
        source = build_in_memory(args.site or Path("site_data"), args.base_url)
    try:
        catalog = Catalog(source)  # fail before the client connects, with the reason
    except (MissingFile, SourceError, ValueError, RecursionError) as error:  # JSON too deep
        print(f"error: {source.label} is not an agent-access API: {error}", file=sys.stderr)
        return 1
    run_stdio(catalog)
    return 0
