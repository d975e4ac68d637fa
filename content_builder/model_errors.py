"""A file's data validated against its model: each problem named by file, field and line,
in words an author acts on (a YAML-retyped value, a managed field, an unquoted date)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from content_builder.errors import Problem
from content_builder.yaml_io import Scalar, locate, unquoted_dates

M = TypeVar("M", bound=BaseModel)


def validate_model(
    model: type[M],
    raw: dict[str, Any] | None,
    display: str,
    problems: list[Problem],
    prefix: str | None = None,
    path: Path | None = None,
) -> M | None:
    if raw is None:
        return None
    found: list[tuple[str, Any]] = []  # (location, a pydantic error detail or a message)
    validated: M | None = None
    try:
        validated = model.model_validate(raw)
    except ValidationError as error:
        found += [
            (_format_location(((prefix,) if prefix else ()) + tuple(detail["loc"])), detail)
            for detail in error.errors(include_url=False)
        ]
    # An unquoted date that the model did not already refuse (a managed field, a number
    # field say so themselves) is text the author forgot to quote.
    refused = {location for location, _ in found}
    for location, date in unquoted_dates(raw, prefix or ""):
        if location not in refused:
            found.append((location, f'a YAML date or time is not text; quote it: "{date}"'))
    if not found:
        return validated
    written = locate(path) if path is not None else {}
    for location, detail in found:
        scalar = written.get(location)
        message = detail if isinstance(detail, str) else _describe(detail, scalar)
        if scalar is not None:
            message += f" (line {scalar.line})"
        problems.append(Problem(display, location or None, message))
    return None


def _format_location(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


#: Fields the build writes; an author who copies one from a published file is told why not.
MANAGED_FIELDS = {
    "updated_at": "managed by content.lock.json (the build sets it when the content changes); "
    "remove it",
    "content_version": "managed by content.lock.json; remove it, or pin a version with `version`",
    "metadata": "managed by the build (content_version and content_hash); remove it",
    "content_hash": "managed by the build; remove it",
    "api_url": "managed by the build (it follows from the id); remove it",
}

_YAML_KINDS = {bool: "true/false", int: "a number", float: "a number", type(None): "null"}


def _describe(detail: dict[str, Any], scalar: Scalar | None = None) -> str:
    kind = detail["type"]
    found = detail.get("input")
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        name = str(detail["loc"][-1]) if detail["loc"] else ""
        if name in MANAGED_FIELDS:
            return f"{name} is {MANAGED_FIELDS[name]}"
        return "unknown field (check the spelling against docs/site-data-format.md)"
    if (
        kind == "string_type"
        and type(found) in _YAML_KINDS
        and scalar is not None
        and scalar.plain
        and scalar.text is not None
    ):
        # `answer: yes`, `version: 1.2`: YAML retyped text the author meant as text.
        return (
            f"expected text, but YAML reads the unquoted {scalar.text} as "
            f'{_YAML_KINDS[type(found)]}; quote it: "{scalar.text}"'
        )
    message = detail["msg"]
    if kind == "string_too_short":
        message = "expected non-empty text"
    elif kind == "value_error":
        message = message.removeprefix("Value error, ")
    if kind != "string_too_short" and not isinstance(found, dict | list):
        shown = repr(found)
        if shown not in message:  # a validator that already quotes the value says it once
            message += f" (found {shown})"
    return message
