"""The OpenAPI component schemas, worked out once per version of the contract and shipped
beside this module (openapi_schemas.json), not walked out of the models at every build.

They are a function of the contract alone: agent_contract's models (which import nothing
else of the project, tests/test_layout.py), pydantic's and pydantic-core's versions and
Python's. pydantic's walk over every response model is ~13 ms, a twentieth of a cold
build of the sample site (issue 22); reading the file is ~0.3 ms. The file names the
contract it was made for (`contract_fingerprint`): for any other contract (a model
edited, another pydantic) it is not used, and the build walks the models as before
(render/openapi.py, the build cache keeping the result). tests/test_openapi_schemas.py
fails while the file is not the current contract's; make it again with

    python -m content_builder.render.openapi_schemas
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from pydantic.json_schema import models_json_schema

import agent_contract
from agent_contract.endpoints import response_models

SHIPPED = Path(__file__).with_name("openapi_schemas.json")
_CONTRACT = Path(agent_contract.__file__).resolve().parent
REF = "#/components/schemas/{model}"


def contract_fingerprint() -> str:
    """SHA-256 of what the schemas are made from: agent_contract's sources and the
    versions of Python, pydantic and pydantic-core."""
    import pydantic
    import pydantic_core

    digest = hashlib.sha256(
        f"{sys.version_info[:2]};{pydantic.VERSION};{pydantic_core.__version__};".encode()
    )
    for source in sorted(_CONTRACT.rglob("*.py")):
        digest.update(source.relative_to(_CONTRACT).as_posix().encode() + b"\0")
        digest.update(source.read_bytes() + b"\0")
    return digest.hexdigest()


def component_schemas() -> dict[str, Any]:
    """pydantic's JSON schemas of every response model, by model name (sorted)."""
    _, top = models_json_schema(
        [(model, "serialization") for model in response_models()], ref_template=REF
    )
    return dict(sorted(top["$defs"].items()))


def shipped_component_schemas() -> dict[str, Any] | None:
    """The shipped schemas, when they were made for this contract (else None)."""
    try:
        shipped = json.loads(SHIPPED.read_bytes())
    except (OSError, ValueError):
        return None  # absent (a copy without it) or damaged: walked out of the models
    if not isinstance(shipped, dict) or shipped.get("contract") != contract_fingerprint():
        return None
    schemas = shipped.get("schemas")
    return schemas if isinstance(schemas, dict) else None


def write_shipped() -> Path:
    """Make the file again from the models, for the current contract."""
    made = {"contract": contract_fingerprint(), "schemas": component_schemas()}
    SHIPPED.write_text(json.dumps(made, ensure_ascii=False, indent=1) + "\n", "utf-8")
    return SHIPPED


if __name__ == "__main__":
    print(f"wrote {write_shipped()}")
