"""What `verify` and `mcp --from` read is a deployment's answers, which are input too
(session 27, issue 24): a body they cannot use is a failed check or one `error:` line,
never a traceback."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from agent_contract import paths
from agent_edge.edge import Edge, Response
from agent_edge.serve import EdgeServer
from tests.conftest import run_cli, running_server

#: JSON nested past the decoder's recursion limit (json.loads raised RecursionError).
DEEP = b"[" * 100_000 + b"]" * 100_000


@pytest.fixture
def server(site_copy: Path) -> Iterator[EdgeServer]:
    with running_server(site_copy) as running:
        yield running


class _Answering(Edge):
    """The deployment, but `path` answers `body`."""

    def __init__(self, edge: Edge, path: str, body: bytes) -> None:
        super().__init__(edge.artifacts, edge.discovery_url)
        self.path, self.body = path, body

    def handle(self, method, target, headers) -> Response:  # type: ignore[no-untyped-def]
        answer = super().handle(method, target, headers)
        return replace(answer, body=self.body) if target == self.path else answer


def _answering(server: EdgeServer, path: str, body: bytes) -> None:
    assert server.edge is not None
    server.edge = _Answering(server.edge, path, body)


@pytest.mark.parametrize(
    ("path", "body"),
    [(paths.discovery("service"), DEEP), (paths.CONTENT_INDEX, DEEP),
     (paths.discovery("service"), b"{}"), (paths.discovery("service"), b"[]")],
)  # fmt: skip
def test_verify_reports_a_body_it_cannot_use_as_a_failed_check(
    server: EdgeServer, path: str, body: bytes
) -> None:
    # A discovery document that is JSON but not one (`{}`) raised ValidationError too.
    _answering(server, path, body)
    result = run_cli("verify", server.base_url)
    assert result.code == 1
    assert "Traceback" not in result.out + result.err
    assert any(line.startswith("FAIL") for line in result.out.splitlines()), result.out


def test_mcp_from_a_deployment_answering_deep_json_is_one_error(server: EdgeServer) -> None:
    _answering(server, paths.MCP_MANIFEST, DEEP)
    result = run_cli("mcp", "--from", server.base_url)
    assert result.code == 1
    assert result.err.startswith("error: ") and "not an agent-access API" in result.err, result.err
