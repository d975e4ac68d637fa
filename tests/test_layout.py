"""The import rules of the layout (docs/decisions.md, "Layout and import rules").

Checked on the source with `ast`, every import statement counted (those inside functions
too), and followed through the project's own modules, so a rule cannot be broken by way
of a module in between. The checker is tested on a violation of each rule it enforces.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO

PROJECT = (
    "agent_access",
    "agent_contract",
    "content_builder",
    "agent_edge",
    "agent_client",
    "agent_mcp",
    "infra",
)
AWS = ("boto3", "botocore", "pulumi", "pulumi_aws")


def _parse(source: str) -> ast.Module:
    """ast.parse, again when CPython 3.11 raises its spurious "AST constructor recursion
    depth mismatch": the counter lives in the interpreter-wide `_ast` state, so a parse
    on another thread (a server or watcher an earlier test left running) can upset it
    (python/cpython#106905, pytest-dev/pytest#10763). Parsing is pure: retrying is safe."""
    for _ in range(4):
        try:
            return ast.parse(source)
        except SystemError:
            time.sleep(0.05)
    return ast.parse(source)


def _nodes(tree: ast.AST, top_level: bool) -> Iterable[ast.AST]:
    """Every node, or with `top_level` those that run on import (not in a function)."""
    if not top_level:
        yield from ast.walk(tree)
        return
    for node in ast.iter_child_nodes(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node
            yield from _nodes(node, top_level)


def imports_of(source: str, module: str, top_level: bool = False) -> set[str]:
    """Every module `source` imports, as dotted names (`from a import b` counts a and a.b);
    with `top_level`, only the imports that run when the module is imported."""
    package = module.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in _nodes(_parse(source), top_level):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def project_sources(root: Path = REPO) -> dict[str, str]:
    sources: dict[str, str] = {}
    for package in PROJECT:
        for file in sorted((root / package).rglob("*.py")):
            parts = file.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            sources[name] = file.read_text(encoding="utf-8")
    return sources


def closure(start: str, graph: Mapping[str, set[str]]) -> set[str]:
    """`start` and every module it reaches through the project's own modules."""
    seen, todo = {start}, [start]
    while todo:
        for name in graph.get(todo.pop(), ()):
            if name in graph and name not in seen:
                seen.add(name)
                todo.append(name)
    return seen


@dataclass(frozen=True)
class Rule:
    """Modules under `source` (and what they reach, when `transitive`) import nothing under
    any of `forbidden`, except what is under `allowed`."""

    name: str
    source: str
    forbidden: tuple[str, ...]
    allowed: tuple[str, ...] = ()
    transitive: bool = True
    exempt: tuple[str, ...] = ()  # modules under `source` the rule does not apply to


def _under(name: str, prefixes: Iterable[str]) -> bool:
    """Whether `name` is one of `prefixes` or under one ("" is every module)."""
    return any(not prefix or name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


RULES = (
    Rule(
        "the contract imports nothing of the project",
        "agent_contract",
        tuple(p for p in PROJECT if p != "agent_contract"),
    ),
    Rule(
        "the publisher imports neither the loader nor PyYAML",
        "infra.publisher",
        ("content_builder", "yaml", "agent_edge", "agent_client", "agent_mcp"),
    ),
    Rule("nothing in the build imports AWS", "content_builder", AWS),
    Rule("the contract imports no AWS", "agent_contract", AWS),
    Rule("the local edge imports no AWS", "agent_edge", AWS),
    Rule(
        "the agent side (client, verify) is the contract plus the client",
        "agent_client",
        ("content_builder", "agent_edge", "agent_mcp", "infra", *AWS),
    ),
    Rule(
        "the MCP server knows the build only by its public plan()",
        "agent_mcp",
        ("content_builder", "agent_edge", "infra", *AWS),
        allowed=("content_builder.build",),
        transitive=False,
        exempt=("agent_mcp.s3",),
    ),
    Rule(
        "the MCP Lambda's bucket source uses boto3 alone (the Lambda runtime has it), "
        "nothing of the deployment",
        "agent_mcp.s3",
        ("content_builder", "agent_edge", "infra", "pulumi", "pulumi_aws"),
        transitive=False,
    ),
    Rule(
        "the pure edge does not know the build",
        "agent_edge.edge",
        ("content_builder", "agent_client", "agent_mcp", "infra"),
    ),
    Rule(
        "the build knows no other party's insides (only the client's ranking, for the "
        "search evaluation)",
        "content_builder",
        ("agent_edge", "agent_client", "agent_mcp", "infra"),
        exempt=("content_builder.__main__",),
        allowed=("agent_client.client",),
        transitive=False,
    ),
    Rule(
        "no party imports the front door above them all (but `python -m content_builder`, "
        "its old name)",
        "",
        ("agent_access",),
        exempt=("agent_access", "content_builder.__main__"),
    ),
    Rule(
        "the local edge knows the build only by its public plan() and its errors",
        "agent_edge",
        ("content_builder", "agent_client", "infra"),
        allowed=("content_builder.build", "content_builder.errors"),
        transitive=False,
    ),
    Rule(
        "the Pulumi program knows the build only by build()/plan() and the manifest",
        "infra",
        ("content_builder", "agent_edge", "agent_client", "agent_mcp"),
        allowed=("content_builder.build", "content_builder.writer"),
        transitive=False,
    ),
)


def violations(sources: Mapping[str, str], rules: Iterable[Rule] = RULES) -> list[str]:
    graph = {name: imports_of(text, name) for name, text in sources.items()}
    found = []
    for rule in rules:
        starts = [
            name for name in graph if _under(name, [rule.source]) and not _under(name, rule.exempt)
        ]
        for start in starts:
            reached = closure(start, graph) if rule.transitive else {start}
            for module in sorted(reached):
                for imported in sorted(graph[module]):
                    if _under(imported, rule.forbidden) and not _under(imported, rule.allowed):
                        found.append(f"{rule.name}: {module} imports {imported} (from {start})")
    return sorted(set(found))


def test_the_tree_keeps_every_import_rule() -> None:
    assert violations(project_sources()) == []


def test_every_rule_covers_modules_that_exist() -> None:
    sources = project_sources()
    for rule in RULES:
        assert any(_under(name, [rule.source]) for name in sources), rule


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.name)
def test_the_checker_reports_a_violation_of_each_rule(rule: Rule) -> None:
    sources = dict(project_sources())
    forbidden = next(f for f in rule.forbidden if not _under(f, rule.allowed))
    module = next(
        name
        for name in sorted(sources)
        if _under(name, [rule.source]) and not _under(name, rule.exempt)
    )
    sources[module] += f"\n\ndef _late() -> None:\n    import {forbidden}.sneaky\n"
    assert any(f"{module} imports {forbidden}" in line for line in violations(sources, [rule]))


def test_the_checker_follows_a_module_in_between() -> None:
    sources = {
        "infra.publisher": "from agent_contract import routes\n",
        "agent_contract.routes": "from content_builder import loader\n",
        "content_builder.loader": "import yaml\n",
    }
    rule = next(r for r in RULES if r.source == "infra.publisher")
    assert violations(sources, [rule]) == [
        f"{rule.name}: agent_contract.routes imports content_builder (from infra.publisher)",
        f"{rule.name}: agent_contract.routes imports content_builder.loader (from infra.publisher)",
        f"{rule.name}: content_builder.loader imports yaml (from infra.publisher)",
    ]


def test_importing_the_publisher_loads_no_builder_and_no_yaml() -> None:
    """The same rule at run time, in a fresh interpreter (the provider process's view)."""
    probe = (
        "import sys, infra.publisher; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('yaml', 'content_builder', 'agent_edge', 'agent_client', 'agent_mcp')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_a_provider_pickled_before_the_layout_change_still_loads_and_works() -> None:
    """Existing stacks hold the dynamic provider as Pulumi pickled it (by module path,
    `infra.site_content.SiteContentProvider`); refresh and destroy unpickle that. The
    fixture was made with main's code before the packages moved (commit dca0d1e)."""
    import base64

    import dill

    from infra.site_content import SiteContentProvider

    fixture = REPO / "tests" / "fixtures" / "site_content_provider.pickle.b64"
    provider = dill.loads(base64.b64decode(fixture.read_text(encoding="ascii").strip()))
    assert type(provider) is SiteContentProvider
    entry = "0" * 64 + " 3 application/json|public, max-age=60"
    props = {"bucket": "b", "region": "eu-west-1", "distribution_id": "D", "source_dir": "dist"}
    same = provider.diff("b-content", {**props, "files": {"/api/v1/a.json": entry}},
                         {**props, "files": {"/api/v1/a.json": entry}})  # fmt: skip
    edited = provider.diff("b-content", {**props, "files": {"/api/v1/a.json": entry}},
                           {**props, "files": {"/api/v1/a.json": "1" + entry[1:]}})  # fmt: skip
    moved = provider.diff("b-content", props, {**props, "region": "us-east-1"})
    assert (same.changes, edited.changes, moved.replaces) == (False, True, ["region"])


def test_the_mcp_lambda_package_holds_everything_its_handler_imports() -> None:
    """infra/mcp_function.py packages only PACKAGES: importing the handler must reach
    nothing else. (Inside a function, agent_mcp.sources reaches the build's plan() for
    `--site`, which the Lambda, reading packaged files, never calls.)"""
    from infra.mcp_function import HANDLER, PACKAGES

    sources = project_sources()
    graph = {name: imports_of(text, name, top_level=True) for name, text in sources.items()}
    reached = closure(HANDLER.rsplit(".", 1)[0], graph)
    outside = sorted(module for module in reached if not _under(module, PACKAGES))
    assert "agent_contract.models" in reached and outside == []
    everything = {name: imports_of(text, name) for name, text in sources.items()}
    lazily = closure(HANDLER.rsplit(".", 1)[0], everything) - reached
    assert "content_builder.build" in lazily  # the checker sees the function-level import


def test_the_readme_layout_names_every_package_and_module() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    layout = readme.split("## Layout\n", 1)[1].split("\n## ", 1)[0]
    listed = {line.split()[0] for line in layout.splitlines() if line[:1].isalpha()}
    assert {f"{package}/" for package in PROJECT} <= listed
    assert all((REPO / folder).is_dir() for folder in listed if folder.endswith("/"))
    for package in PROJECT:
        for module in (REPO / package).rglob("*.py"):
            if module.stem in ("__init__", "__main__"):
                continue
            if module.parent == REPO / package:
                assert f"{module.stem}.py" in layout, module
            else:  # a subpackage (render/) is listed as a folder
                assert f"{module.parent.name}/" in layout, module
