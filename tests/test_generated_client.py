"""A client generated from our OpenAPI by openapi-python-client (issue 26), calling every
operation against the local edge: each 200 is parsed without `UnexpectedStatus`, each
conditional GET's 304 too. Generation runs here, offline (the generator is a dev
dependency; no network), into a temporary folder; the edge answers through httpx's
MockTransport, in process.

Before issue 26 the generator dropped GET /sitemap.xml's 200 (it has no XML media type),
so the generated `get_sitemap()` raised UnexpectedStatus on a 200; the web conventions
(sitemap, robots.txt, api-catalog) are no longer operations, and the generator must now
emit no warning at all.
"""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_contract import paths
from agent_contract.artifacts import Artifact
from agent_edge.edge import Edge
from content_builder.build import plan
from tests.conftest import SPEC_SITE, TEST_BASE_URL

PACKAGE = "agent_access_generated_client"


def generator() -> str:
    found = shutil.which("openapi-python-client", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("openapi-python-client is not installed: `make .venv/.installed-dev`")
    return found


@pytest.fixture(scope="module")
def spec_files() -> dict[str, Artifact]:
    return {a.path: a for a in plan(SPEC_SITE, TEST_BASE_URL).artifacts}


@pytest.fixture(scope="module")
def generated(
    spec_files: dict[str, Artifact], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    folder = tmp_path_factory.mktemp("generated")
    (folder / "openapi.json").write_bytes(spec_files[paths.OPENAPI].body)
    (folder / "config.yaml").write_text("post_hooks: []\n")  # no formatter needed to import
    done = subprocess.run(
        [
            generator(), "generate", "--path", "openapi.json", "--meta", "none",
            "--output-path", PACKAGE, "--config", "config.yaml",
        ],
        cwd=folder, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    # Any warning means an operation or a response was left out of the client.
    assert "Warning" not in done.stdout + done.stderr, done.stdout + done.stderr
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(folder))
        for name in [m for m in sys.modules if m.split(".")[0] == PACKAGE]:
            del sys.modules[name]


def client_for(package: Any, edge: Edge, headers: dict[str, str] | None = None) -> Any:
    def answer(request: httpx.Request) -> httpx.Response:
        target = request.url.raw_path.decode("ascii")
        response = edge.handle(request.method, target, dict(request.headers))
        return httpx.Response(
            response.status, headers=list(response.headers), content=response.body
        )

    client_module = importlib.import_module(f"{PACKAGE}.client")
    client = client_module.Client(
        base_url=TEST_BASE_URL,
        raise_on_unexpected_status=True,
        httpx_args={"transport": httpx.MockTransport(answer)},
    )
    return client.with_headers(headers) if headers else client


def operations(spec_files: dict[str, Artifact]) -> list[tuple[str, str, dict[str, str]]]:
    """(module name, path, path arguments) of every operation, its first enum value."""
    document = json.loads(spec_files[paths.OPENAPI].body)
    found = []
    for path, item in document["paths"].items():
        operation = item["get"]
        module = "".join("_" + c.lower() if c.isupper() else c for c in operation["operationId"])
        arguments = {  # a listed id, or (the sharded index's names) the published example
            p["name"]: (p["schema"].get("enum") or p["schema"]["examples"])[0]
            for p in operation.get("parameters", [])
        }
        found.append((module, path, arguments))
    return found


def call(package: Any, module: str, client: Any, arguments: dict[str, str]) -> Any:
    api = importlib.import_module(f"{package.__name__}.api.default.{module}")
    signature = api.sync_detailed.__annotations__
    values = {}
    for name, value in arguments.items():
        annotation = signature.get(name)
        enum_type = getattr(api, type_name(annotation), None) if annotation else None
        values[name] = enum_type(value) if enum_type is not None else value
    return api.sync_detailed(*values.values(), client=client)


def utc_as_z(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: utc_as_z(item) for key, item in value.items()}
    if isinstance(value, list):
        return [utc_as_z(item) for item in value]
    if isinstance(value, str) and value.endswith("+00:00"):
        return value.removesuffix("+00:00") + "Z"
    return value


def type_name(annotation: Any) -> str:
    return annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")


def test_every_operation_of_the_generated_client_accepts_its_200_and_304(
    generated: Any, spec_files: dict[str, Artifact]
) -> None:
    edge = Edge(spec_files, TEST_BASE_URL + paths.discovery("service"))
    found = operations(spec_files)
    assert len(found) >= 19, "every operation of the API"
    conventions = {paths.SITEMAP, paths.ROBOTS_TXT, paths.API_CATALOG}
    assert not conventions & {path for _, path, _ in found}, "web conventions are no operations"
    for module, path, arguments in found:
        answer = call(generated, module, client_for(generated, edge), arguments)
        assert answer.status_code == 200, (module, answer.status_code)
        assert answer.parsed is not None, module
        published = spec_files[path.format(**arguments)]
        if published.media_type.startswith("application/json") and not path.endswith(
            "openapi.json"
        ):
            # A model's answer: the generated model holds the published JSON, field for field.
            # (Timestamps come back as datetime.isoformat() writes them: +00:00 for Z.)
            assert utc_as_z(answer.parsed.to_dict()) == json.loads(published.body), module
        elif not published.media_type.startswith("application/json"):
            assert answer.parsed == published.body.decode("utf-8"), module
        etag = dict(answer.headers)["etag"]
        again = call(
            generated, module, client_for(generated, edge, {"If-None-Match": etag}), arguments
        )
        assert again.status_code == 304, (module, again.status_code)
