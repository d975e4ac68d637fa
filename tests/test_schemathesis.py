"""Schemathesis against the served OpenAPI and `serve`: every GET answers what the schema says.

One server (built for its own loopback URL) serves the whole module. The schema is read from
that server, and every operation gets Hypothesis-generated requests, checked by exactly three
Schemathesis checks: response schema, content type and status code conformance. Positive data
(ids from the enums) must get 200; negative data (a path id outside its enum) must get a 404
whose body is the declared ErrorResponse. Generation is derandomized: same cases on every run.
The last test breaks the server on purpose and proves each check fires.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import given, settings
from schemathesis import GenerationMode
from schemathesis.core.failures import Failure
from schemathesis.errors import FailureGroup
from schemathesis.openapi.checks import JsonSchemaError, UndefinedContentType, UndefinedStatusCode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from agent_edge.edge import Edge, Response
from agent_edge.serve import EdgeServer
from tests.conftest import running_server

OPENAPI_PATH = "/api/v1/openapi.json"
CHECKS = [response_schema_conformance, content_type_conformance, status_code_conformance]
MAX_EXAMPLES = 25
TIMEOUT = 10  # seconds per request; a loopback answer takes milliseconds

# operationId -> path, written out here (not read from the renderer) so a lost route fails.
OPERATIONS = {
    "getDiscovery": "/.well-known/service.json",
    "getMcpWellKnown": "/.well-known/mcp.json",
    "getContentIndex": "/api/v1/content/index.json",
    "getSearchIndex": "/api/v1/content/search-index.json",
    "getContentDocument": "/api/v1/content/{document_id}.json",
    "getFaq": "/api/v1/faq/{faq_id}.json",
    "getArchitecture": "/api/v1/architecture.json",
    "getOnSiteAgent": "/api/v1/on-site-agent.json",
    "getMcpManifest": "/api/v1/mcp.json",
    "getOpenApi": OPENAPI_PATH,
    "getLlmsTxt": "/llms.txt",
    "getLlmsFullTxt": "/llms-full.txt",
    "getNotFoundBody": "/errors/404.json",
    # Issue 14's extensions.
    "getContentDocumentMarkdown": "/api/v1/content/{document_id}.md",
    "getFaqMarkdown": "/api/v1/faq/{faq_id}.md",
    "getChanges": "/api/v1/changes.json",
    # The web conventions (api-catalog, sitemap, robots.txt) are no operations (issue 26).
    # The Agent Skill at the discovery RFC v0.2.0 location; the v0.1.0 copies are no
    # operations either.
    "getSkillsIndex": "/.well-known/agent-skills/index.json",
    "getSkill": "/.well-known/agent-skills/service/SKILL.md",
    "getLlmsTxtPart": "/llms/{part}.txt",
    # Issue 25: the sharded search index.
    "getSearchTermMap": "/api/v1/search/terms.json",
    "getSearchShard": "/api/v1/search/shards/{shard}.json",
    "getSearchEntries": "/api/v1/search/entries/{prefix}.json",
}
#: Named by the build, too many to list: a pattern and an example, not an enum. Data made
#: from them is the example (200) or a name the site may or may not have: left out of
#: generated data. test_openapi_http GETs the example; tests/test_search_shards.py reads
#: every file through the term map.
NO_GENERATED_DATA = {"getSearchShard", "getSearchEntries"}
# The operations with a path parameter (an enum of ids): the only ones negative data can reach.
WITH_ID = {
    "getContentDocument": "document_id",
    "getFaq": "faq_id",
    "getContentDocumentMarkdown": "document_id",
    "getFaqMarkdown": "faq_id",
    "getLlmsTxtPart": "part",
}


@pytest.fixture(scope="module")
def server() -> Iterator[EdgeServer]:
    with running_server() as edge_server:
        yield edge_server


@pytest.fixture(scope="module")
def session() -> Iterator[requests.Session]:
    with requests.Session() as http:
        http.trust_env = False  # no proxy from the environment: loopback only
        yield http


@pytest.fixture(scope="module")
def raw_openapi(server: EdgeServer, session: requests.Session) -> dict[str, Any]:
    response = session.get(server.base_url + OPENAPI_PATH, timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture(scope="module")
def api_schema(server: EdgeServer, raw_openapi: dict[str, Any]) -> Any:
    # An explicit Config: no schemathesis.toml discovered from the working directory.
    schema = schemathesis.openapi.from_dict(raw_openapi, config=schemathesis.Config())
    schema.config.update(base_url=server.base_url)
    return schema


def run_operation(
    api_schema: Any,
    session: requests.Session,
    operation_id: str,
    mode: GenerationMode,
    expected_status: int,
) -> list[str]:
    """Generate up to MAX_EXAMPLES cases, send each, run CHECKS; return the paths sent.

    A check failure raises Schemathesis' FailureGroup (after Hypothesis shrinks it).
    """
    operation = api_schema.find_operation_by_id(operation_id)
    sent: list[str] = []

    @settings(max_examples=MAX_EXAMPLES, derandomize=True, database=None, deadline=None)
    @given(case=operation.as_strategy(generation_mode=mode))
    def check_case(case: schemathesis.Case) -> None:
        response = case.call_and_validate(session=session, checks=CHECKS, timeout=TIMEOUT)
        sent.append(response.request.path_url)
        # The three checks accept any documented status (200 or 404) for any request;
        # a server answering 404 everywhere would pass them, so the status is pinned too.
        assert response.status_code == expected_status, (
            f"{response.request.path_url}: {response.status_code}"
        )

    check_case()
    return sent


def test_schema_is_served_for_this_server_with_every_operation(
    server: EdgeServer, raw_openapi: dict[str, Any], api_schema: Any
) -> None:
    assert raw_openapi["servers"] == [{"url": server.base_url}]
    assert api_schema.get_base_url() == server.base_url
    operations = {}
    for result in api_schema.get_all_operations():
        operation = result.ok()  # raises if Schemathesis cannot use an operation
        operations[operation.definition.raw["operationId"]] = (operation.method, operation.path)
    assert operations == {op_id: ("get", path) for op_id, path in OPERATIONS.items()}
    for op_id, name in WITH_ID.items():
        [parameter] = api_schema.find_operation_by_id(op_id).iter_parameters()
        assert (parameter.name, parameter.location) == (name, "path")
        assert parameter.definition["schema"]["enum"], op_id


def _failures(error: BaseException) -> list[Failure]:
    if isinstance(error, BaseExceptionGroup):
        return [failure for inner in error.exceptions for failure in _failures(inner)]
    return [error] if isinstance(error, Failure) else []


@pytest.mark.parametrize("operation_id", [op for op in OPERATIONS if op not in NO_GENERATED_DATA])
def test_positive_data_conforms(
    api_schema: Any, session: requests.Session, operation_id: str
) -> None:
    # Found once: architecture endpoints are URI templates, now declared "uri-template".
    sent = run_operation(api_schema, session, operation_id, GenerationMode.POSITIVE, 200)
    if operation_id in WITH_ID:
        # With 25 examples Hypothesis reaches every id of the enum, not just one.
        enum = api_schema.find_operation_by_id(operation_id).definition.raw["parameters"][0]
        assert len(set(sent)) == len(enum["schema"]["enum"]), sent
    else:
        assert set(sent) == {OPERATIONS[operation_id]}


@pytest.mark.parametrize("operation_id", list(WITH_ID))
def test_ids_outside_the_enum_get_the_documented_404(
    api_schema: Any, session: requests.Session, operation_id: str
) -> None:
    sent = run_operation(api_schema, session, operation_id, GenerationMode.NEGATIVE, 404)
    assert len(set(sent)) > 5, sent  # varied invalid ids, not one value repeated


# --- the checks really fire: a deliberately broken server must fail them ----------------


def _with_body(response: Response, body: bytes) -> Response:
    headers = tuple(
        (name, str(len(body)) if name.lower() == "content-length" else value)
        for name, value in response.headers
    )
    return replace(response, headers=headers, body=body)


def wrong_field_type(response: Response) -> Response:
    document = json.loads(response.body)
    document["answer"] = 42  # FAQEntry.answer is a string
    return _with_body(response, json.dumps(document).encode())


def wrong_content_type(response: Response) -> Response:
    headers = tuple(
        (name, "text/html; charset=utf-8" if name.lower() == "content-type" else value)
        for name, value in response.headers
    )
    return replace(response, headers=headers)


def undocumented_status(response: Response) -> Response:
    return replace(response, status=500)


class TamperedEdge(Edge):
    """The real edge, with successful FAQ answers altered after the fact."""

    def __init__(self, inner: Edge, tamper: Callable[[Response], Response]) -> None:
        super().__init__(inner.artifacts, inner.discovery_url)
        self.tamper = tamper

    def handle(self, method: str, target: str, headers: Any) -> Response:
        response = super().handle(method, target, headers)
        if target.startswith("/api/v1/faq/") and response.status == 200:
            return self.tamper(response)
        return response


@pytest.mark.parametrize(
    ("tamper", "expected"),
    [
        (wrong_field_type, JsonSchemaError),
        (wrong_content_type, UndefinedContentType),
        (undocumented_status, UndefinedStatusCode),
    ],
    ids=["response_schema_conformance", "content_type_conformance", "status_code_conformance"],
)
def test_a_broken_server_fails_the_checks(
    server: EdgeServer,
    api_schema: Any,
    session: requests.Session,
    monkeypatch: pytest.MonkeyPatch,
    tamper: Callable[[Response], Response],
    expected: type[Failure],
) -> None:
    assert server.edge is not None
    monkeypatch.setattr(server, "edge", TamperedEdge(server.edge, tamper))  # undone after
    with pytest.raises(FailureGroup) as caught:
        run_operation(api_schema, session, "getFaq", GenerationMode.POSITIVE, 200)
    failures = _failures(caught.value)
    assert [type(failure) for failure in failures] == [expected], caught.value
    assert failures[0].operation == "GET /api/v1/faq/{faq_id}.json"
