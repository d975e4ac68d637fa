"""Artifact: one published file, with the headers its route rule gives it."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from content_builder.routes import RouteRule, rule_for


@dataclass(frozen=True)
class Artifact:
    path: str  # URL path, starting with "/"
    body: bytes
    source: str | None = None  # the site_data file it was rendered from, for error messages
    rule: RouteRule = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "rule", rule_for(self.path))

    @property
    def media_type(self) -> str:
        return self.rule.media_type

    @property
    def cache_control(self) -> str:
        return self.rule.cache_control

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.body).hexdigest()

    @property
    def size(self) -> int:
        return len(self.body)

    @property
    def key(self) -> str:
        """The path as an S3 key / a path under the output folder."""
        return self.path.lstrip("/")


def json_body(value: BaseModel | dict[str, Any]) -> bytes:
    """Published JSON: UTF-8, two-space indent, model field order, trailing newline."""
    data = (
        value.model_dump(mode="json", exclude_none=True) if isinstance(value, BaseModel) else value
    )
    return (json.dumps(data, ensure_ascii=False, indent=2) + "\n").encode("utf-8")


def canonical_json(data: Any) -> bytes:
    """Key-sorted, whitespace-free JSON: the input of every content hash."""
    return json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode(
        "utf-8"
    )


def text_body(text: str) -> bytes:
    return (text.rstrip("\n") + "\n").encode("utf-8")
