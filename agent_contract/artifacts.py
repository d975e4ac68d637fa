"""Artifact: one published file, with the headers its route rule gives it."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import pydantic_core
from pydantic import BaseModel

from agent_contract.routes import RouteRule, rule_for


# Slots, no instance dict: a build holds one Artifact per published file (48,000 at
# 10,000 entries), each a dict fewer for the collector to walk at every full collection
# while the build lasts (issue 22).
@dataclass(frozen=True, slots=True)
class Artifact:
    path: str  # URL path, starting with "/"
    body: bytes
    source: str | None = None  # the site_data file it was rendered from, for error messages
    rule: RouteRule = field(init=False)
    _sha256: str | None = field(init=False, default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "rule", rule_for(self.path))

    @classmethod
    def hashed(cls, path: str, body: bytes, sha256: str, source: str | None = None) -> Artifact:
        """An artifact whose body's SHA-256 is already known (the build cache keeps it)."""
        artifact = cls(path, body, source)
        object.__setattr__(artifact, "_sha256", sha256)
        return artifact

    @property
    def media_type(self) -> str:
        return self.rule.media_type

    @property
    def cache_control(self) -> str:
        return self.rule.cache_control

    @property
    def sha256(self) -> str:
        # Kept once known: the manifest, the change report and the serve/verify paths ask.
        known = self._sha256
        if known is None:
            known = hashlib.sha256(self.body).hexdigest()
            object.__setattr__(self, "_sha256", known)
        return known

    @property
    def size(self) -> int:
        return len(self.body)

    @property
    def key(self) -> str:
        """The path as an S3 key / a path under the output folder."""
        return self.path.lstrip("/")


def json_body(value: BaseModel | dict[str, Any]) -> bytes:
    """Published JSON: UTF-8, two-space indent, model field order, trailing newline.

    Written by pydantic-core, whose output is byte for byte that of
    `json.dumps(data, ensure_ascii=False, indent=2)` (tested), several times faster:
    the standard library falls back to its pure-Python encoder as soon as `indent` is set.
    """
    if isinstance(value, BaseModel):
        return value.model_dump_json(indent=2, exclude_none=True).encode("utf-8") + b"\n"
    return pydantic_core.to_json(value, indent=2) + b"\n"


def dumps_indented(data: Any) -> bytes:
    """`json.dumps(data, indent=2)` and a newline, as UTF-8 bytes (the lock, manifest.json).

    The standard library's indented encoder is pure Python (~0.8 s for a 20,000-entry
    lock); pydantic-core writes the same bytes except where json.dumps escapes (ensure_ascii:
    non-ASCII text, and DEL), so its bytes are used only when they hold neither."""
    fast = pydantic_core.to_json(data, indent=2) + b"\n"
    if fast.isascii() and b"\x7f" not in fast:
        return fast
    return (json.dumps(data, indent=2) + "\n").encode("utf-8")


def text_body(text: str) -> bytes:
    return (text.rstrip("\n") + "\n").encode("utf-8")
