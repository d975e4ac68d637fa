"""`Edge.handle` keeps its GET and HEAD answers: an answer it gives again is the answer a
fresh snapshot gives, whatever the order of the requests before it."""

from __future__ import annotations

import itertools

import pytest

from agent_edge import edge as edge_module
from agent_edge.edge import Edge
from agent_edge.serve import load_edge
from tests.conftest import SPEC_SITE, TEST_BASE_URL


def _fresh(snapshot: Edge) -> Edge:
    return Edge(snapshot.artifacts, snapshot.discovery_url)


def test_a_kept_answer_is_the_answer_a_fresh_edge_gives() -> None:
    edge = load_edge(SPEC_SITE, TEST_BASE_URL)
    document = next(path for path in edge.artifacts if path.startswith("/api/v1/content/"))
    tag = f'"{edge.artifacts[document].sha256}"'
    requests = [
        (method, target, headers)
        for method, target, headers in itertools.product(
            ("GET", "HEAD"),
            (document, document + "?x=1", "/", "/nothing-here", "/%zz"),
            (
                {},
                {"Accept": "text/markdown"},
                {"accept": "application/json"},
                {"If-None-Match": tag},
                {"If-None-Match": tag, "Accept": "text/markdown"},
                {"If-None-Match": '"other"'},
            ),
        )
    ]
    for _ in range(2):  # the second time every answer is a kept one
        for method, target, headers in requests:
            kept = edge.handle(method, target, headers)
            assert kept == _fresh(edge).handle(method, target, headers), (method, target, headers)
            assert kept.header_lines == b"".join(
                f"{name}: {value}\r\n".encode("latin-1") for name, value in kept.headers
            )


def test_the_kept_answers_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    edge = load_edge(SPEC_SITE, TEST_BASE_URL)
    monkeypatch.setattr(edge_module, "_ANSWERS_KEPT", 3)
    for number in range(10):
        edge.handle("GET", f"/missing-{number}", {})
        assert len(edge._answers) <= 3
