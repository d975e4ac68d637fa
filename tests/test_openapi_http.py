"""The OpenAPI document tells the truth about HTTP: what it declares for 200, 304 and 404
is what the edge answers, header by header, so OpenAPI-driven clients accept a
conditional GET. Expectations are read from the served document and checked against
real responses from `serve` on 127.0.0.1."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest

from agent_edge.serve import EdgeServer
from tests.conftest import running_server

OPENAPI_PATH = "/api/v1/openapi.json"


@pytest.fixture(scope="module")
def server() -> Iterator[EdgeServer]:
    with running_server() as edge_server:
        yield edge_server


def _get(server: EdgeServer, path: str, headers: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    host, port = server.server_address[:2]
    conn = http.client.HTTPConnection(str(host), int(port), timeout=10)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.headers, response.read()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def document(server: EdgeServer) -> dict[str, Any]:
    status, _, body = _get(server, OPENAPI_PATH)
    assert status == 200
    return json.loads(body)


def _concrete(path: str, operation: dict[str, Any]) -> str:
    for parameter in operation.get("parameters", []):
        if parameter.get("in") == "path":
            schema = parameter["schema"]
            # A pattern (search shards, entry files): the example the document gives.
            value = schema["enum"][0] if "enum" in schema else schema["examples"][0]
            path = path.replace("{" + parameter["name"] + "}", value)
    return path


def _declared_headers(document: dict[str, Any], response: dict[str, Any]) -> set[str]:
    return set(response.get("headers", {}))


def test_document_is_public_and_licensed(document: dict[str, Any]) -> None:
    assert document["security"] == [], "no operation needs authentication"
    license_ = document["info"]["license"]
    assert license_["name"] and license_["url"].startswith("https://")


def test_every_get_declares_a_304_with_validator_and_cors_headers(
    document: dict[str, Any],
) -> None:
    for path, item in document["paths"].items():
        responses = item["get"]["responses"]
        not_modified = responses["304"]
        assert "content" not in not_modified, f"{path}: a 304 has no body"
        assert {"ETag", "Access-Control-Allow-Origin", "Access-Control-Expose-Headers"} <= set(
            not_modified["headers"]
        ), path
        assert {"Access-Control-Allow-Origin", "Cache-Control"} <= set(
            responses["404"]["headers"]
        ), path


def test_real_answers_match_what_each_operation_declares(
    server: EdgeServer, document: dict[str, Any]
) -> None:
    for template, item in document["paths"].items():
        operation = item["get"]
        path = _concrete(template, operation)
        status, headers, _ = _get(server, path)
        assert status == 200, path
        declared = operation["responses"]["200"]
        assert headers["Content-Type"].split(";")[0] in declared["content"], path
        for name in _declared_headers(document, declared):
            assert headers.get(name), f"{path}: 200 lacks declared {name}"

        status, headers, body = _get(server, path, {"If-None-Match": headers["ETag"]})
        assert str(status) in operation["responses"], f"{path}: {status} undeclared"
        assert status == 304 and body == b""
        assert headers.get("Content-Type") is None, f"{path}: RFC 9110 15.4.5"
        for name in _declared_headers(document, operation["responses"]["304"]):
            assert headers.get(name), f"{path}: 304 lacks declared {name}"
        assert "ETag" in headers["Access-Control-Expose-Headers"]

    status, headers, _ = _get(server, "/api/v1/faq/not-a-faq.json")
    assert status == 404
    any_get = next(iter(document["paths"].values()))["get"]
    for name in _declared_headers(document, any_get["responses"]["404"]):
        assert headers.get(name), f"404 lacks declared {name}"
