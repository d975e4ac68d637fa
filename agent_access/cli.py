"""Command line: `agent-access build|check|serve|verify|mcp|search-eval|init` (also
`python -m agent_access ...` and, as before, `python -m content_builder ...`).

One entry point above every party (the build, the local edge, the agent side, the MCP
server), which import nothing of it; each subcommand is one handler in `HANDLERS`."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from agent_contract import paths
from content_builder.budgets import budget_report
from content_builder.build import build, plan
from content_builder.errors import SiteDataError
from content_builder.writer import ChangeReport

DEFAULT_SITE = Path("site_data")
DEFAULT_OUT = Path("dist")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agent-access",
        description="Render a website's content as a static agent-access API.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    build_cmd = commands.add_parser("build", help="render every file into the output folder")
    build_cmd.add_argument("--site", type=Path, default=DEFAULT_SITE, help="site data folder")
    build_cmd.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    build_cmd.add_argument("--base-url", help="override site.yaml base_url")
    build_cmd.add_argument(
        "--frozen", action="store_true", help="fail instead of updating content.lock.json"
    )
    build_cmd.add_argument("--verbose", action="store_true", help="list the unchanged files too")

    check_cmd = commands.add_parser("check", help="validate site data without writing anything")
    check_cmd.add_argument("--site", type=Path, default=DEFAULT_SITE, help="site data folder")
    check_cmd.add_argument(
        "--frozen", action="store_true", help="also fail when content.lock.json is stale"
    )
    serve_cmd = commands.add_parser("serve", help="serve the API locally with the CDN's headers")
    serve_cmd.add_argument("--site", type=Path, default=DEFAULT_SITE, help="site data folder")
    serve_cmd.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve_cmd.add_argument("--port", type=int, default=8000, help="port (0: any free port)")
    serve_cmd.add_argument(
        "--base-url", help="base URL written into the files (default: the server's)"
    )
    serve_cmd.add_argument("--watch", action="store_true", help="rebuild when site data changes")

    verify_cmd = commands.add_parser("verify", help="check a live deployment end to end")
    verify_cmd.add_argument("base_url", help="the deployment's base URL")
    expected = verify_cmd.add_mutually_exclusive_group()
    expected.add_argument(
        "--expect-from", type=Path, help="a local build (dist/) every file must match"
    )
    expected.add_argument(
        "--site",
        type=Path,
        help="a site folder, built (frozen) for BASE_URL: every file must match that build",
    )
    verify_cmd.add_argument("--timeout", type=float, default=10.0, help="seconds per request")
    verify_cmd.add_argument(
        "--retry-for",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="repeat until it passes or this time is up (a CDN invalidation takes minutes)",
    )
    verify_cmd.add_argument("--verbose", action="store_true", help="print passed checks too")

    from agent_mcp import cli as mcp_cli  # imports nothing of the `mcp` SDK until run

    mcp_cmd = commands.add_parser("mcp", help="serve the API as an MCP server on stdio")
    mcp_cli.add_arguments(mcp_cmd)

    init_cmd = commands.add_parser(
        "init", help="write a starter site.yaml for an existing Markdown docs tree"
    )
    init_cmd.add_argument("--docs", type=Path, required=True, help="the Markdown docs tree")
    init_cmd.add_argument(
        "--site", type=Path, help="site folder to write site.yaml in (default: beside --docs)"
    )

    eval_cmd = commands.add_parser("search-eval", help="measure search quality on questions")
    eval_cmd.add_argument("--site", type=Path, default=DEFAULT_SITE, help="site data folder")
    eval_cmd.add_argument(
        "--questions",
        type=Path,
        help="evaluation set (default: <site>/search-questions.yaml): questions and the ids "
        "that answer them",
    )
    eval_cmd.add_argument("--misses", action="store_true", help="list questions not in the top 3")
    if set(commands.choices) != set(HANDLERS):
        unhandled = set(commands.choices) ^ set(HANDLERS)
        raise AssertionError(f"subcommands without a handler, or handlers without one: {unhandled}")
    return parser


def format_report(report: ChangeReport) -> str:
    """The files a build wrote or removed (every file when the build was asked for a row
    per file: --verbose), then a count. Not every file by default: after one edit of a
    10,000-entry site, 48,000 lines of which 6 say something."""
    summary = f"{report.files} files, {report.changed} changed"
    if not report.rows:
        return summary
    width = max(len(row.path) for row in report.rows)
    lines = [f"{'file':<{width}}  {'bytes':>8}  status"]
    lines += [f"{row.path:<{width}}  {row.size:>8}  {row.status}" for row in report.rows]
    lines.append(summary)
    return "\n".join(lines)


def run_build(args: argparse.Namespace) -> int:
    result, report = build(args.site, args.out, args.base_url, args.frozen, every_file=args.verbose)
    _print_warnings(result.site)
    print(format_report(report))
    for change in result.lock_changes:
        print(f"lock: {change.id}: {change.reason}")
    print(f"wrote {args.out} for {result.site.base_url}")
    return 0


# Each handler imports what only it needs: `build` is timed start-up included (an edit
# served in seconds, issue 11), and the agent client and the local edge cost ~0.25 s of
# imports that a build never uses.


def run_check(args: argparse.Namespace) -> int:
    from content_builder import search_eval

    result = plan(args.site, frozen=args.frozen)
    _print_warnings(result.site)
    for change in result.lock_changes:
        print(f"lock would change: {change.id}: {change.reason} (run build)")
    body = next(a.body for a in result.artifacts if a.path == paths.SEARCH_INDEX)
    quality = search_eval.site_search_quality(result.site, body)
    print("\n".join(quality.lines))
    print("\n".join(budget_report(result.artifacts)))
    if quality.problems:
        raise SiteDataError(quality.problems)
    print(f"ok: {len(result.artifacts)} files would be published")
    return 0


def _print_warnings(site: Any) -> None:
    for warning in site.warnings:
        print(f"warning: {warning}", file=sys.stderr)


def run_serve(args: argparse.Namespace) -> int:
    from agent_edge.serve import serve
    from content_builder.markdown_tree import watch_roots

    # The docs tree may lie outside the site folder (docs_dir: ../docs): watched too.
    roots = watch_roots(args.site) if args.watch else None
    return serve(args.site, args.host, args.port, args.base_url, args.watch, watch_roots=roots)


def run_verify(args: argparse.Namespace) -> int:
    import tempfile

    from agent_client.verify import live_mcp_endpoint, verify

    with tempfile.TemporaryDirectory(prefix="agent-access-verify-") as folder:
        built: dict[str | None, Path] = {}

        def expected() -> Path:
            # What the deployment should serve: the site built as a deployment builds it,
            # naming its live MCP server when one answers (Pulumi's `mcpServer`). Probed
            # again before each attempt of --retry-for: right after a first deploy the
            # function may not answer yet, and files naming it would then never match.
            endpoint = live_mcp_endpoint(args.base_url, args.timeout)
            if endpoint not in built:
                if endpoint is not None:
                    print(f"a live MCP server answers at {endpoint}: expecting files that name it")
                built[endpoint] = Path(folder) / f"dist-{len(built)}"
                build(args.site, built[endpoint], args.base_url, frozen=True, mcp_endpoint=endpoint)
            return built[endpoint]

        report = verify(
            args.base_url,
            args.expect_from,
            args.timeout,
            args.retry_for,
            expected=expected if args.site is not None else None,
        )
    print(report.render(args.verbose))
    return 1 if report.failures else 0


def run_mcp(args: argparse.Namespace) -> int:
    from agent_mcp import cli as mcp_cli  # imports the `mcp` SDK only when run

    return mcp_cli.run(args)


def run_init(args: argparse.Namespace) -> int:
    from content_builder import starter

    path, survey = starter.write(starter.starter(args.docs, args.site))
    print("\n".join(starter.report(path, survey)))
    return 1 if survey.problems else 0


def run_search_eval(args: argparse.Namespace) -> int:
    from content_builder import search_eval

    print(search_eval.report(args.site, args.questions, args.misses))
    return 0


#: Every subcommand and its handler: a subcommand missing here fails at parse time
#: (tests/test_cli.py), never falls through to another's.
HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "build": run_build,
    "check": run_check,
    "serve": run_serve,
    "verify": run_verify,
    "mcp": run_mcp,
    "search-eval": run_search_eval,
    "init": run_init,
}


def main(argv: Sequence[str] | None = None) -> int:
    return _dispatch(_parser().parse_args(argv))


def _dispatch(args: argparse.Namespace) -> int:
    try:
        return HANDLERS[args.command](args)
    except SiteDataError as error:
        for problem in error.problems:
            print(f"error: {problem}", file=sys.stderr)
        return 1


#: Commands whose process ends when they return (`serve` and `mcp` end by a signal).
_ONE_SHOT = frozenset({"build", "check", "init", "search-eval", "verify"})


def run() -> NoReturn:
    """The console script and `python -m`: `main`, then the process ends.

    A one-shot command skips the interpreter's teardown, as mypy does
    (mypy/util.py `hard_exit`): freeing each of the ~35,000 objects the imports and the
    build made, and the collector's passes over them, cost ~30 ms, an eighth of the
    sample's build. Nothing of ours needs it: every file is written, renamed and closed
    before `main` returns. A build that started the process pool (content_builder/prime.py)
    leaves its cleanup to the interpreter: multiprocessing's exit handlers, and 30 ms is
    nothing beside a build of thousands of pages.
    """
    args = _parser().parse_args()
    code = _dispatch(args)
    # A profiler, a tracer (coverage, a debugger) or a pool's exit handlers: they expect
    # the interpreter's exit (`python -m cProfile -m content_builder build` prints its
    # table then; coverage saves its data).
    watched = (
        sys.getprofile() is not None
        or sys.gettrace() is not None
        or "coverage" in sys.modules  # which may measure by sys.monitoring (3.12+), no tracer
    )
    if args.command not in _ONE_SHOT or "multiprocessing" in sys.modules or watched:
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # None: the descriptor was closed at start (`>&-`)
                stream.flush()
        except OSError:  # a closed pipe (`agent-access check | head`): as Python's exit says
            code = code or 120
    os._exit(code)
