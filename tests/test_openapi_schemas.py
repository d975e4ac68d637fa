"""The OpenAPI component schemas shipped with the code (render/openapi_schemas.py): the
current contract's, used by a cold build instead of walking the models (issue 22), and
never used for another contract."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from content_builder.render import openapi_schemas
from tests.conftest import run_cli
from tests.sites import Shape, make_site


def _schemas_published(site: Path, out: Path) -> str:
    result = run_cli("build", "--site", site, "--out", out)
    assert result.code == 0, result.err
    document = json.loads((out / "api" / "v1" / "openapi.json").read_bytes())
    return json.dumps(document["components"]["schemas"])  # in order


def test_the_shipped_schemas_are_the_current_contracts() -> None:
    """Fails after a change to agent_contract until the file is made again:
    `python -m content_builder.render.openapi_schemas`."""
    shipped = json.loads(openapi_schemas.SHIPPED.read_bytes())
    assert shipped["contract"] == openapi_schemas.contract_fingerprint(), (
        "openapi_schemas.json is another contract's: run "
        "`python -m content_builder.render.openapi_schemas`"
    )
    assert json.dumps(shipped["schemas"]) == json.dumps(openapi_schemas.component_schemas())


def test_a_cold_build_does_not_walk_the_models(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = make_site(tmp_path / "site", Shape(documents=3, faqs=2, brand="guide"))
    monkeypatch.setenv("AGENT_ACCESS_CACHE_DIR", str(tmp_path / "empty-cache"))
    walked = []

    def counted() -> dict[str, object]:
        walked.append(True)
        return real()

    real = openapi_schemas.component_schemas
    monkeypatch.setattr(openapi_schemas, "component_schemas", counted)
    published = _schemas_published(site, tmp_path / "out")
    assert walked == []
    assert published == json.dumps(real())


def test_another_contracts_schemas_are_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model edited since the file was made: the build walks the models, as before."""
    site = make_site(tmp_path / "site", Shape(documents=2, faqs=3))
    monkeypatch.setenv("AGENT_ACCESS_CACHE_DIR", "off")
    monkeypatch.setattr(openapi_schemas, "contract_fingerprint", lambda: "another contract")
    assert openapi_schemas.shipped_component_schemas() is None
    shipped = json.loads(openapi_schemas.SHIPPED.read_bytes())
    shipped["schemas"]["Link"] = {"type": "string", "description": "a stale schema"}
    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps(shipped))
    monkeypatch.setattr(openapi_schemas, "SHIPPED", stale)
    published = _schemas_published(site, tmp_path / "out")
    assert "a stale schema" not in published
    assert published == json.dumps(openapi_schemas.component_schemas())
