"""Issue 11 target 6: the local edge next to `python -m http.server --protocol HTTP/1.1`.

Both serve the same built site from their own process on 127.0.0.1; one keep-alive
client (this process, `http.client`) GETs the same small JSON file `requests` times (or
for `seconds`, whichever ends first) from each, the servers alternating `rounds` times.
Reported: requests per second and p50/p99 latency, the median round of each.

    python -m benchmarks.edge_bench [--requests 3000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks import sitegen
from benchmarks.watch_bench import free_port

REPO = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"
_ENV = {**os.environ, "AGENT_ACCESS_CACHE_DIR": "off"}  # a benchmark leaves no cache behind


@dataclass(frozen=True)
class Round:
    requests_per_second: float
    p50_ms: float
    p99_ms: float


@dataclass(frozen=True)
class EdgeResult:
    path: str
    body_bytes: int
    requests: int
    edge: Round  # the median round by requests per second
    http_server: Round
    edge_runs: list[float]
    http_server_runs: list[float]
    quick_ack: bool = False  # the client acknowledged at once (TCP_QUICKACK)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _wait_until_listening(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        try:
            with socket.create_connection((HOST, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {port}")


#: Linux only; None where the platform lacks it.
QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)


def _ack_at_once(connection: http.client.HTTPConnection, quick_ack: bool) -> None:
    """Make this client acknowledge what it receives at once (Linux TCP_QUICKACK).

    A server that sends its headers and its body in two writes without TCP_NODELAY
    (`http.server`) holds the body back (Nagle) until the headers are acknowledged, and
    a client that only reads delays that ACK up to 40 ms: ~23 req/s, a figure of the
    client, not of the server. The kernel clears the flag by itself (sending re-enters
    its delayed-ACK mode), so it is set again after each send and each read. Elsewhere
    (no TCP_QUICKACK) nothing is done, and `EdgeResult.quick_ack` says so."""
    if quick_ack and QUICKACK is not None and connection.sock is not None:
        connection.sock.setsockopt(socket.IPPROTO_TCP, QUICKACK, 1)


def _hammer(
    port: int,
    path: str,
    requests: int,
    seconds: float,
    expected: bytes,
    quick_ack: bool = QUICKACK is not None,
    warm_up: int = 50,
) -> Round:
    """`requests` GETs on one keep-alive connection, or as many as `seconds` allow."""
    connection = http.client.HTTPConnection(HOST, port, timeout=10)
    timings = []
    try:
        connection.connect()
        _ack_at_once(connection, quick_ack)
        for _ in range(warm_up):  # connection, caches
            connection.request("GET", path)
            _ack_at_once(connection, quick_ack)
            connection.getresponse().read()
            _ack_at_once(connection, quick_ack)
        started = time.perf_counter()
        for _ in range(requests):
            before = time.perf_counter()
            if before - started > seconds and len(timings) >= 20:
                break
            connection.request("GET", path)
            _ack_at_once(connection, quick_ack)
            response = connection.getresponse()
            body = response.read()
            _ack_at_once(connection, quick_ack)
            timings.append(time.perf_counter() - before)
            if response.status != 200 or body != expected:
                raise RuntimeError(f"port {port}: {response.status}, {len(body)} bytes")
        elapsed = time.perf_counter() - started
    finally:
        connection.close()
    done = len(timings)
    timings.sort()
    return Round(
        done / elapsed,
        1000 * timings[len(timings) // 2],
        1000 * timings[min(len(timings) - 1, int(0.99 * len(timings)))],
    )


def _serve(command: list[str], port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_ENV
    )
    try:
        _wait_until_listening(port, process)
    except BaseException:
        process.kill()
        process.wait()
        raise
    return process


def measure(work: Path, requests: int = 3000, rounds: int = 3, seconds: float = 3.0) -> EdgeResult:
    site = sitegen.generate(work / "edge-site", 20).root
    dist = work / "edge-dist"
    built = subprocess.run(
        [sys.executable, "-m", "content_builder", "build", "--site", str(site),
         "--out", str(dist)],
        cwd=REPO, capture_output=True, text=True, check=False, env=_ENV,
    )  # fmt: skip
    if built.returncode != 0:
        raise RuntimeError(built.stderr)
    path = "/" + min(
        (p.relative_to(dist).as_posix() for p in (dist / "api/v1/faq").glob("*.json")),
        key=lambda name: (len((dist / name).read_bytes()), name),
    )
    body = (dist / path.lstrip("/")).read_bytes()
    edge_port, plain_port = free_port(), free_port()
    base_url = f"http://{HOST}:{edge_port}"
    edge = _serve(
        [sys.executable, "-m", "content_builder", "serve", "--site", str(site),
         "--port", str(edge_port), "--base-url", base_url],
        edge_port,
    )  # fmt: skip
    plain = _serve(
        [sys.executable, "-m", "http.server", "--protocol", "HTTP/1.1", "--bind", HOST,
         "--directory", str(dist), str(plain_port)],
        plain_port,
    )  # fmt: skip
    try:
        # The edge serves the build it made with its own base URL: compare with that.
        conn = http.client.HTTPConnection(HOST, edge_port, timeout=10)
        conn.request("GET", path)
        edge_body = conn.getresponse().read()
        conn.close()
        edge_rounds, plain_rounds = [], []
        for _ in range(rounds):  # alternating, so both see the same machine load
            edge_rounds.append(_hammer(edge_port, path, requests, seconds, edge_body))
            plain_rounds.append(_hammer(plain_port, path, requests, seconds, body))
    finally:
        for process in (edge, plain):
            process.terminate()
            process.wait(10)

    def median(runs: list[Round]) -> Round:
        return sorted(runs, key=lambda r: r.requests_per_second)[(len(runs) - 1) // 2]

    return EdgeResult(
        path=path,
        body_bytes=len(body),
        requests=requests,
        edge=median(edge_rounds),
        http_server=median(plain_rounds),
        edge_runs=[r.requests_per_second for r in edge_rounds],
        http_server_runs=[r.requests_per_second for r in plain_rounds],
        quick_ack=QUICKACK is not None,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="agent-access-edge-"))
    try:
        result = measure(work, args.requests, args.rounds)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result.as_dict(), indent=2))
    print(f"median runs: statistics {statistics.median(result.edge_runs):.0f} vs "
          f"{statistics.median(result.http_server_runs):.0f} req/s")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
