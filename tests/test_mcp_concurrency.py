"""One slow tool call must not stall the MCP server (issue 24, item 7).

The slowness is injected: `search_query.query` (what a search spends its time in)
is wrapped to sleep first, standing for a search of a large site's index. The old server
ran it on the event loop, so a ping waited for it, and a dozen searches at once left
every client without an answer. Now tool work runs on a bounded set of threads
(`agent_mcp.server.CallLimits`), each call within a time limit that answers a JSON-RPC
error, and the loop stays free for pings.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from agent_contract import search_query
from agent_mcp import http as mcp_http
from agent_mcp import server as mcp_server
from agent_mcp.catalog import Catalog
from agent_mcp.server import CallLimits, create_server
from agent_mcp.sources import MemoryFiles
from benchmarks import sitegen
from tests.conftest import TEST_BASE_URL, running_server
from tests.test_mcp_server import published, run

#: How long each injected search takes, and the limits the tests run the server with:
#: two calls at once, one second each (waiting for a thread included).
SLOW = 1.2
LIMITS = CallLimits(concurrency=2, timeout=1.6)
#: A ping must come back within this while searches run (it waited 3.15 s before; on
#: the loop it would wait SLOW at least).
PING_BOUND = SLOW / 2


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> sitegen.GeneratedSite:
    return sitegen.generate(tmp_path_factory.mktemp("mcp-slow") / "site_data", 3)


@pytest.fixture
def slow_search(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every search sleeps SLOW seconds first; returns the queries that started."""
    started: list[str] = []
    real = search_query.query

    def slow_query(fetch: Any, query: str, *args: Any) -> Any:
        started.append(query)  # list.append is atomic: called from worker threads
        time.sleep(SLOW)
        return real(fetch, query, *args)

    monkeypatch.setattr(search_query, "query", slow_query)
    return started


# `ping` is the legacy era's (the mode this session speaks); the SDK warns it is gone later.
@pytest.mark.filterwarnings("ignore:ping is removed")
def test_a_ping_is_answered_while_a_slow_search_runs(
    site: sitegen.GeneratedSite, slow_search: list[str]
) -> None:
    """One session (as on stdio): the search and the ping are in flight together."""
    server = create_server(Catalog(MemoryFiles(published(site.root, TEST_BASE_URL))), LIMITS)

    async def go() -> tuple[float, float]:
        async with Client(server, mode="legacy") as client:
            took: dict[str, float] = {}
            began = time.perf_counter()

            async def search() -> None:
                result = await client.call_tool("search", {"query": "agents"})
                assert result.is_error is False
                took["search"] = time.perf_counter() - began

            async with anyio.create_task_group() as group:
                group.start_soon(search)
                # Wait for the search to be running, then ping. On the loop (the old
                # server), these sleeps themselves waited for the whole search.
                with anyio.fail_after(10):
                    while not slow_search:
                        await anyio.sleep(0.01)
                await client.send_ping()
                took["ping"] = time.perf_counter() - began
                assert "search" not in took, "the ping came back only after the search"
            return took["ping"], took["search"]

    ping, search = run(go)
    assert ping < PING_BOUND
    assert search >= SLOW


def test_a_call_over_its_time_limit_answers_a_json_rpc_error(
    site: sitegen.GeneratedSite, slow_search: list[str]
) -> None:
    server = create_server(
        Catalog(MemoryFiles(published(site.root, TEST_BASE_URL))),
        CallLimits(concurrency=2, timeout=SLOW / 4),
    )

    async def go() -> tuple[MCPError, float]:
        async with Client(server, mode="legacy") as client:
            began = time.perf_counter()
            with pytest.raises(MCPError) as caught:
                await client.call_tool("search_content", {"query": "agents"})
            return caught.value, time.perf_counter() - began

    error, took = run(go)
    assert error.error.code == types.REQUEST_TIMEOUT
    assert "time limit" in error.error.message
    assert took < SLOW  # answered at the limit, not when the work ended


def _search_call(number: int) -> dict[str, Any]:
    """A JSON-RPC tools/call of `search`, its id and query told apart by `number`."""
    return {
        "jsonrpc": "2.0",
        "id": number,
        "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": f"agents {number}"}},
    }


def _post(url: str, message: dict[str, Any]) -> tuple[int, dict[str, Any], float]:
    request = urllib.request.Request(
        url,
        data=json.dumps(message).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json"},
    )
    began = time.perf_counter()
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, json.loads(response.read()), time.perf_counter() - began


def test_more_calls_than_the_bound_over_http_are_all_answered_and_a_ping_too(
    site: sitegen.GeneratedSite, slow_search: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through `serve`'s /mcp (the bridge every HTTP host shares, Lambda included): six
    searches of 1.2 s at once against a bound of two and a limit of 1.6 s. Each gets an
    answer within its time limit
    (a result, or a JSON-RPC error saying busy or timed out), a ping sent meanwhile is
    answered at once, and the searches abandoned while waiting for a thread never run."""
    monkeypatch.setattr(mcp_server, "CALL_LIMITS", LIMITS)
    calls = 6
    answers: list[tuple[int, dict[str, Any], float]] = []
    with running_server(site.root) as server:
        url = server.base_url + "/mcp"
        _post(url, {"jsonrpc": "2.0", "id": 0, "method": "ping"})  # the endpoint, started

        def search(number: int) -> None:
            answers.append(_post(url, _search_call(number)))

        threads = [threading.Thread(target=search, args=(n,)) for n in range(1, calls + 1)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 10
        while not slow_search and time.monotonic() < deadline:
            time.sleep(0.01)
        status, pong, ping_took = _post(url, {"jsonrpc": "2.0", "id": 99, "method": "ping"})
        for thread in threads:
            thread.join(timeout=30)
    assert status == 200 and pong == {"jsonrpc": "2.0", "id": 99, "result": {}}
    assert ping_took < PING_BOUND
    assert len(answers) == calls
    results = [answer for status, answer, _ in answers if "result" in answer]
    errors = [answer["error"] for status, answer, _ in answers if "error" in answer]
    assert all(status == 200 for status, _, _ in answers)
    assert len(results) >= 1 and len(results) + len(errors) == calls
    assert errors, "six calls of 1.2 s each, two at a time, cannot all end within 1.6 s"
    for error in errors:
        assert error["code"] == types.REQUEST_TIMEOUT
        assert "busy" in error["message"] or "time limit" in error["message"]
    slowest = max(took for _, _, took in answers)
    assert slowest < LIMITS.timeout + 1.5  # the limit, plus the machine's slack
    # Two ran, two more started when the first two ended (and overran their limit); the
    # last two were abandoned while waiting and never started.
    assert len(slow_search) < calls


def test_the_bridge_answers_even_when_its_own_wait_runs_out(
    site: sitegen.GeneratedSite, slow_search: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The HTTP bridge's own limit (a request the server does not finish in time) is an
    answer too, never an exception in the host's thread; and the requests it gives up on
    are cancelled: their tool work still waiting for a thread never starts."""
    monkeypatch.setattr(mcp_server, "CALL_LIMITS", CallLimits(concurrency=1, timeout=30.0))
    monkeypatch.setattr(mcp_http, "REQUEST_TIMEOUT", SLOW / 4)
    files = published(site.root, TEST_BASE_URL)
    headers = {"content-type": "application/json", "accept": "application/json"}
    answers: dict[int, tuple[int, list[tuple[str, str]], bytes]] = {}

    def call(number: int) -> None:
        body = _search_call(number)
        answers[number] = mcp_http.handle_http(
            "POST", "/mcp", headers, json.dumps(body).encode(), files
        )

    threads = [threading.Thread(target=call, args=(n,)) for n in (7, 8, 9)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    for number, (status, response_headers, payload) in answers.items():
        assert status == 504
        answer = json.loads(payload)
        assert answer["id"] == number and answer["error"]["code"] == types.REQUEST_TIMEOUT
        assert dict(response_headers)["Content-Length"] == str(len(payload))
    assert len(answers) == 3
    time.sleep(SLOW + 0.5)  # the one search that started has ended by now
    assert len(slow_search) == 1


def test_the_limits_fire_in_order_call_then_bridge_then_lambda() -> None:
    """A call's limit ends first (a JSON-RPC error), the bridge's next (an HTTP answer),
    and the Lambda function's timeout (infra/mcp_function.py: no answer at all) last."""
    from infra import mcp_function

    assert mcp_server.CALL_LIMITS.timeout < mcp_http.REQUEST_TIMEOUT
    assert mcp_http.REQUEST_TIMEOUT < mcp_function.FUNCTION_TIMEOUT
    assert mcp_server.CALL_LIMITS.concurrency >= 1
