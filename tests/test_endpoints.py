"""The endpoint table (agent_contract/endpoints.py) is the one list of endpoints: every
row appears in every interface that must list it, and nothing lists what is not a row.

`coverage_problems` checks one build against a table; it is run on the real table (no
problems) and on the table plus a row nothing renders or lists (a problem per interface).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import pytest

from agent_contract import paths
from agent_contract.endpoints import (
    ENDPOINTS,
    SINGLE_FILES,
    Endpoint,
    Kind,
    LlmsListing,
    McpListing,
    model_for,
)
from agent_contract.models import DiscoveryInterfaces
from agent_contract.routes import rule_for
from content_builder.build import Plan, plan
from content_builder.render.endpoints import RENDERERS
from tests.conftest import SPEC_SITE, TEST_BASE_URL


@pytest.fixture(scope="module")
def planned() -> Plan:
    return plan(SPEC_SITE, TEST_BASE_URL)


def _example(endpoint: Endpoint, result: Plan) -> str:
    """A concrete path of the row: a template filled with an id the site has."""
    path = endpoint.resolve(result.site.config.brand)
    if endpoint.parameter is None:
        return path
    if endpoint.parameter.name == "part":  # llms.txt's parts are named by the build
        return path.format(part="documents-1")
    if endpoint.parameter.pattern:  # search shards and entry files: named by the build
        head = path.split("{", 1)[0]
        return min(a.path for a in result.artifacts if a.path.startswith(head))
    ids = result.site.documents if endpoint.parameter.name == "document_id" else result.site.faqs
    return path.format(**{endpoint.parameter.name: ids[0].id})


def coverage_problems(result: Plan, endpoints: Iterable[Endpoint]) -> list[str]:
    endpoints = tuple(endpoints)
    files = {artifact.path: artifact.body for artifact in result.artifacts}
    brand, base = result.site.config.brand, result.site.base_url
    openapi = json.loads(files[paths.OPENAPI])["paths"]
    llms = files[paths.LLMS_TXT].decode()
    manifest = json.loads(files[paths.MCP_MANIFEST])
    resources = {resource["uri"]: resource for resource in manifest["resources"]}
    interfaces = json.loads(files[paths.discovery(brand)])["interfaces"]
    problems = []
    for endpoint in endpoints:
        path, example = endpoint.resolve(brand), _example(endpoint, result)
        if example not in files:
            problems.append(f"{endpoint.key}: not built")
        operation = openapi.get(path, {}).get("get", {})
        if not endpoint.openapi:  # a web convention: published, never an operation
            if path in openapi:
                problems.append(f"{endpoint.key}: a web convention listed in OpenAPI")
        elif operation.get("operationId") != endpoint.operation_id:
            problems.append(f"{endpoint.key}: not in OpenAPI as {endpoint.operation_id}")
        elif endpoint.media_type not in operation["responses"]["200"]["content"]:
            problems.append(f"{endpoint.key}: OpenAPI shows another media type")
        if endpoint.llms is not None:
            section = llms.split(f"## {endpoint.llms.section}\n", 1)[-1].split("\n## ", 1)[0]
            if f"]({base}{path}): {endpoint.llms.note}" not in section:
                problems.append(f"{endpoint.key}: not in llms.txt's {endpoint.llms.section}")
        if endpoint.mcp is not None:
            resource = resources.get(f"{brand}://{endpoint.mcp.name}", {})
            if resource.get("endpoint") != f"GET {base}{example}" or (
                resource.get("mimeType") != endpoint.media_type
            ):
                problems.append(f"{endpoint.key}: not an MCP resource")
        if endpoint.in_discovery and interfaces.get(endpoint.key) != base + path:
            problems.append(f"{endpoint.key}: not in the discovery document")
        if model_for(example, paths.discovery(brand)) is not endpoint.model:
            problems.append(f"{endpoint.key}: verify would not validate it as {endpoint.model}")
        if not rule_for(example).media_type.startswith(endpoint.media_type):
            problems.append(f"{endpoint.key}: its route rule serves another media type")
    rows = {e.resolve(brand) for e in endpoints if e.openapi}
    problems += [f"OpenAPI lists {p}, which is no row" for p in sorted(set(openapi) - rows)]
    listed = {e.key for e in endpoints if e.in_discovery}
    problems += [f"discovery lists {k}, no row" for k in sorted(set(interfaces) - listed)]
    mcp_rows = {f"{brand}://{e.mcp.name}" for e in endpoints if e.mcp}
    problems += [f"MCP lists {uri}, no row" for uri in sorted(set(resources) - mcp_rows)]
    return problems


def test_every_row_appears_in_every_interface_that_must_list_it(planned: Plan) -> None:
    assert coverage_problems(planned, ENDPOINTS) == []


def test_every_single_file_row_has_a_renderer_and_every_renderer_a_row() -> None:
    assert sorted(RENDERERS) == sorted(endpoint.key for endpoint in SINGLE_FILES)


def test_the_build_publishes_exactly_the_rows(planned: Plan) -> None:
    brand = planned.site.config.brand
    single = {endpoint.resolve(brand) for endpoint in SINGLE_FILES}
    per_entry = [e for e in ENDPOINTS if e.kind is Kind.PER_ENTRY]
    for artifact in planned.artifacts:
        assert artifact.path in single or any(
            e.matches(artifact.path, paths.discovery(brand)) for e in per_entry
        ), artifact.path


def test_discovery_interfaces_are_the_listed_rows() -> None:
    listed = [endpoint.key for endpoint in ENDPOINTS if endpoint.in_discovery]
    assert sorted(DiscoveryInterfaces.model_fields) == sorted(listed)


def test_a_row_nothing_renders_or_lists_is_reported_by_every_interface(planned: Plan) -> None:
    ghost = Endpoint(
        "ghost",
        "/api/v1/ghost.json",
        Kind.FIXED,
        "FAQEntry",
        "application/json",
        "getGhost",
        "A row without a renderer",
        llms=LlmsListing("Interfaces", 99, "Ghost", "nowhere"),
        mcp=McpListing(99, "ghost", "Ghost", "Nowhere."),
        discovery=99,
    )
    problems = coverage_problems(planned, [*ENDPOINTS, ghost])
    assert problems == [
        "ghost: not built",
        "ghost: not in OpenAPI as getGhost",
        "ghost: not in llms.txt's Interfaces",
        "ghost: not an MCP resource",
        "ghost: not in the discovery document",
        "ghost: verify would not validate it as <class 'agent_contract.models.FAQEntry'>",
    ]


def test_a_row_the_interfaces_list_differently_is_reported(planned: Plan) -> None:
    renamed = [
        replace(e, operation_id="getSomethingElse") if e.key == "architecture" else e
        for e in ENDPOINTS
    ]
    missing = [e for e in ENDPOINTS if e.key != "architecture"]
    assert coverage_problems(planned, renamed) == [
        "architecture: not in OpenAPI as getSomethingElse"
    ]
    assert set(coverage_problems(planned, missing)) == {
        "OpenAPI lists /api/v1/architecture.json, which is no row",
        "discovery lists architecture, no row",
        f"MCP lists {planned.site.config.brand}://architecture, no row",
    }


def test_paths_are_read_from_the_table() -> None:
    assert Path(paths.CONTENT_INDEX).name == "index.json"
    assert paths.document("x") == "/api/v1/content/x.json"
    assert paths.discovery("acme") == "/.well-known/acme.json"
