"""The canonical hash: what a document's `metadata.content_hash` is computed over.

The build writes it, `verify` recomputes it from the published file; both read it here.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

# Fields left out of metadata.content_hash: the metadata itself, and updated_at, which
# is derived from the hash (content_hash says *whether* it changed, updated_at *when*).
_UNHASHED = ("metadata", "updated_at")


def canonical_json(data: Any) -> bytes:
    """Key-sorted, whitespace-free JSON: the input of every content hash."""
    return json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode(
        "utf-8"
    )


def content_hash(data: dict[str, Any]) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(unhashed_fields(data))).hexdigest()


def unhashed_fields(data: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if key not in _UNHASHED}
