"""The CloudFront Function that negotiates Markdown on AWS (issue 14), run under node.

The function's source (infra/edge_functions/markdown_negotiation.js) is run with events
shaped like CloudFront's (functions-event-structure: lowercase header names, `{value}`
objects, `multiValue` for repeated headers), and its decisions are compared with the
local edge's over the same Accept values and paths: the two must never disagree.

node is required, not optional: a skipped test here would leave the only code deployed to
CloudFront untested while CI stays green. If node is missing the test fails and says so
(CI's image and this machine have it at /usr/bin/node; `apt-get install nodejs` otherwise).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent_contract import paths
from agent_contract.artifacts import Artifact
from agent_contract.directives import (
    MARKDOWN_TOKENS_HEADER,
    every_answer_link,
    object_metadata,
)
from agent_edge.edge import Edge, etag, prefers_markdown
from content_builder.build import plan
from infra.site import (
    MARKDOWN_PATTERNS,
    NEGOTIATED_HEADERS,
    NEGOTIATED_PATTERNS,
    NEGOTIATION_SOURCE,
    function_source,
)
from tests.conftest import SPEC_SITE, TEST_BASE_URL

RUNNER = Path(__file__).with_name("edge_function_runner.js")

ACCEPTS: list[str | None] = [
    None,
    "",
    "*/*",
    "text/*",
    "text/markdown",
    "TEXT/Markdown",
    "text/markdown; charset=utf-8",
    "text/markdown, text/html, */*",
    "text/markdown, application/json",
    "application/json, text/markdown",
    "application/json, text/markdown;q=0.5",
    "text/markdown;q=0.9, application/json;q=0.5",
    "text/markdown;q=0.5, */*;q=0.5",
    "text/markdown;q=0.5, application/*;q=0.6",
    "application/json;q=0.8, text/markdown",
    "text/markdown;q=0",
    "text/markdown;q=0.000",
    "text/markdown;q=abc",
    "text/markdown;q=0.5abc, application/json;q=0.4",  # parseFloat would say 0.5
    "text/markdown;q=1.5",  # outside RFC 9110's qvalue grammar: 0
    "text/markdown;q=0.0001",  # four decimals: outside the grammar
    "text/markdown;q= 0.7 , application/json;q=0.6",
    "text/markdown;Q=0.7, application/json;q=0.6",
    " , text/markdown",
    "text/html, application/xhtml+xml, application/xml;q=0.9, */*;q=0.8",  # a browser
]

PATHS = [
    paths.document("site"),
    paths.faq("q01-difference"),
    paths.CONTENT_INDEX,
    paths.SEARCH_INDEX,
    paths.API_PREFIX + "/faq/index.json",
    paths.document_markdown("site"),
    paths.LLMS_TXT,
    paths.API_PREFIX + "/content/a/b.json",
    paths.API_PREFIX + "/content/.json",
]


def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.fail(
            "node is not installed: the CloudFront Function cannot be tested "
            "(install nodejs; see this module's docstring for why this is not a skip)"
        )
    return found


def viewer_request(uri: str, headers: dict[str, Any], method: str = "GET") -> dict[str, Any]:
    """An event as CloudFront passes it to a viewer-request function."""
    return {
        "version": "1.0",
        "context": {
            "distributionDomainName": "d111111abcdef8.cloudfront.net",
            "distributionId": "EDFDVBD6EXAMPLE",
            "eventType": "viewer-request",
            "requestId": "4TyzHTaYWb1GX1qTfsHhEqV6HUDd_BzoBZnwfnvQc_1oF26ClkoUSEQ==",
        },
        "viewer": {"ip": "198.51.100.11"},
        "request": {
            "method": method,
            "uri": uri,
            "querystring": {},
            "headers": {"host": {"value": "d111111abcdef8.cloudfront.net"}, **headers},
            "cookies": {},
        },
    }


def run_function(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    payload = json.dumps({"source": function_source(), "events": events})
    done = subprocess.run(
        [node(), str(RUNNER)], input=payload, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def accept_header(accept: str | None) -> dict[str, Any]:
    return {} if accept is None else {"accept": {"value": accept}}


def test_the_function_decides_as_the_contract_and_the_local_edge_do() -> None:
    cases = [(path, accept) for path in PATHS for accept in ACCEPTS]
    results = run_function([viewer_request(p, accept_header(a)) for p, a in cases])
    rewritten = 0
    for (path, accept), request in zip(cases, results, strict=True):
        twin = paths.markdown_twin(path)
        expected = twin if twin and prefers_markdown(accept) else path
        assert request["uri"] == expected, (path, accept)
        assert request["headers"]["host"] == {"value": "d111111abcdef8.cloudfront.net"}
        rewritten += request["uri"] != path
    assert rewritten >= 2 * 10, "the cases exercise the rewrite, not only the pass-through"


@pytest.fixture(scope="module")
def spec_files() -> dict[str, Artifact]:
    return {a.path: a for a in plan(SPEC_SITE, TEST_BASE_URL).artifacts}


def test_the_local_edge_and_the_function_serve_the_same_file(
    spec_files: dict[str, Artifact],
) -> None:
    """Same Accept, same URL: the file the local edge answers with is the object the
    function's rewritten URI names, and both sides add the same Vary."""
    edge = Edge(spec_files, TEST_BASE_URL + "/.well-known/service.json")
    urls = [paths.document("site"), paths.faq("q01-difference"), paths.CONTENT_INDEX]
    cases = [(url, accept) for url in urls for accept in ACCEPTS]
    results = run_function([viewer_request(u, accept_header(a)) for u, a in cases])
    for (url, accept), request in zip(cases, results, strict=True):
        answer = edge.handle("GET", url, {"Accept": accept} if accept is not None else {})
        assert answer.body == spec_files[request["uri"]].body, (url, accept)
        if paths.markdown_twin(url):
            for name, value in NEGOTIATED_HEADERS.items():
                assert dict(answer.headers)[name] == value


def test_repeated_accept_headers_are_joined() -> None:
    """RFC 9110 5.3: repeated fields are one comma-separated list; CloudFront hands them
    to the function as `multiValue`."""
    path = paths.document("site")
    twin = paths.markdown_twin(path)
    both = {
        "accept": {
            "value": "application/json;q=0.5",
            "multiValue": [{"value": "application/json;q=0.5"}, {"value": "text/markdown"}],
        }
    }
    json_wins = {
        "accept": {
            "value": "text/markdown;q=0.5",
            "multiValue": [{"value": "text/markdown;q=0.5"}, {"value": "application/json"}],
        }
    }
    results = run_function([viewer_request(path, both), viewer_request(path, json_wins)])
    assert [r["uri"] for r in results] == [twin, path]


@pytest.mark.parametrize("method", ["OPTIONS", "POST"])
def test_only_reads_are_rewritten(method: str) -> None:
    path = paths.document("site")
    [request] = run_function([viewer_request(path, accept_header("text/markdown"), method)])
    assert request["uri"] == path


def test_the_behaviour_patterns_cover_every_negotiated_url(spec_files: dict[str, Artifact]) -> None:
    """Every JSON path with a Markdown twin falls under one of the function's behaviours
    (CloudFront's `*` matches any characters, `/` included)."""
    negotiated = [p for p in spec_files if paths.markdown_twin(p)]
    assert negotiated
    prefixes = [pattern.removesuffix("*.json") for pattern in NEGOTIATED_PATTERNS]
    for path in negotiated:
        assert any(path.startswith(p) and path.endswith(".json") for p in prefixes), path


def test_the_runner_refuses_node_globals() -> None:
    """The runner's sandbox is what makes these tests mean anything for CloudFront: code
    reaching for Node's `require` must fail here as it would there."""
    payload = json.dumps(
        {"source": "function handler(e) { return require('fs'); }", "events": [{}]}
    )
    done = subprocess.run(
        [node(), str(RUNNER)], input=payload, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0 and "require is not defined" in done.stderr


DISCOVERY_PATH = "/.well-known/service.json"


def viewer_response(
    request: dict[str, Any], status: int, headers: dict[str, str]
) -> dict[str, Any]:
    """An event as CloudFront passes it to a viewer-response function: the request and
    the response, whose headers include the response headers policy's (CloudFront
    inserts them before the function runs; docs/decisions.md, issue 26)."""
    event = {key: value for key, value in request.items() if key != "context"}
    event["context"] = {**request["context"], "eventType": "viewer-response"}
    event["response"] = {
        "statusCode": status,
        "statusDescription": "",
        "headers": {name.lower(): {"value": value} for name, value in headers.items()},
        "cookies": {},
    }
    return event


RESPONSE_URLS = [
    paths.document("site"),
    paths.faq("q01-difference"),
    paths.document_markdown("site"),
    paths.faq_markdown("q01-difference"),
    paths.CONTENT_INDEX,
    paths.LLMS_TXT,
    paths.API_PREFIX + "/content/no-such-entry.json",
]
RESPONSE_ACCEPTS = [None, "text/markdown", "application/json, text/markdown;q=0.5", "*/*"]


@pytest.mark.parametrize("request_uri_seen", ["viewer's", "rewritten"])
def test_the_viewer_response_half_sends_the_local_edges_link_and_estimate(
    spec_files: dict[str, Artifact], request_uri_seen: str
) -> None:
    """Case by case (URL x Accept x 200/304/404), the AWS pipeline as CloudFront runs it:
    viewer request (the rewrite), the object S3 answers (its user metadata as
    `x-amz-meta-` headers), the policy's Link, then the viewer-response half, which
    CloudFront skips at 400 and above. Its Link and X-Markdown-Tokens must be the local
    edge's, byte for byte, whether the event shows the viewer's URI or the rewritten one
    (AWS's documentation does not say which)."""
    edge = Edge(spec_files, TEST_BASE_URL + DISCOVERY_PATH)
    policy_link = every_answer_link(DISCOVERY_PATH)
    cases = [
        (url, accept, conditional)
        for url in RESPONSE_URLS
        for accept in RESPONSE_ACCEPTS
        for conditional in (False, True)
    ]
    requests = [viewer_request(url, accept_header(accept)) for url, accept, _ in cases]
    rewritten = run_function(requests)
    events, expected_headers = [], []
    for (url, accept, conditional), request, after in zip(cases, requests, rewritten, strict=True):
        stored = spec_files.get(after["uri"])
        local_request = {"Accept": accept} if accept is not None else {}
        if conditional and stored is not None:
            local_request["If-None-Match"] = etag(stored)
        local = edge.handle("GET", url, local_request)
        status = 404 if stored is None else (304 if conditional else 200)
        assert local.status == status, (url, accept, conditional)
        origin = {"Link": policy_link}
        if stored is not None:
            origin["Content-Type"] = stored.media_type
            for key, value in object_metadata(stored.path, stored.size).items():
                origin["x-amz-meta-" + key] = value
        seen = after if request_uri_seen == "rewritten" else request["request"]
        events.append(viewer_response({**request, "request": seen}, status, origin))
        expected_headers.append(dict(local.headers))
    # CloudFront invokes no viewer-response function at 400 and above.
    run = [i for i, event in enumerate(events) if event["response"]["statusCode"] < 400]
    answered = dict(zip(run, run_function([events[i] for i in run]), strict=True))
    alternates = tokens = 0
    for index, (case, expected) in enumerate(zip(cases, expected_headers, strict=True)):
        response = answered.get(index, events[index]["response"])  # CloudFront skips >= 400
        headers = response["headers"]
        assert headers["link"]["value"] == expected["Link"], case
        assert headers.get(MARKDOWN_TOKENS_HEADER.lower(), {}).get("value") == expected.get(
            MARKDOWN_TOKENS_HEADER
        ), case
        if index in answered:
            assert not any(name.startswith("x-amz-meta-") for name in headers), case
        alternates += 'rel="alternate"' in expected["Link"]
        tokens += MARKDOWN_TOKENS_HEADER in expected
    assert alternates >= 16 and tokens >= 4, "the cases exercise both additions"


def test_the_function_source_restates_no_contract_value() -> None:
    """The table is written in from agent_contract; the source holds a placeholder."""
    source = NEGOTIATION_SOURCE.read_text("utf-8")
    for literal in ("/api/v1/", "search-index", "text/markdown", "x-markdown-tokens", "400"):
        assert literal not in source.split("var TABLE", 1)[1], literal


def test_the_markdown_behaviours_cover_every_twin(spec_files: dict[str, Artifact]) -> None:
    twins = [p for p in spec_files if p.endswith(".md") and not p.endswith("/SKILL.md")]
    assert twins
    prefixes = [pattern.removesuffix("*.md") for pattern in MARKDOWN_PATTERNS]
    for path in twins:
        assert any(path.startswith(p) for p in prefixes), path
