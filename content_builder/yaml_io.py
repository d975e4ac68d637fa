"""Strict YAML reading: safe types only, and duplicate keys are an error, not a silent overwrite.

Parsing uses libyaml (`yaml.CSafeLoader`) when PyYAML was built with it, which reads
site_data about seven times faster than the pure-Python parser (benchmarks/README.md);
the constructors, and so the types, duplicate-key and plain-data checks, are the same
Python code either way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from content_builder.errors import SiteDataError

#: libyaml's parser when available (the same safe constructors, in C only the parsing).
_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StrictLoader(_BaseLoader):  # type: ignore[valid-type,misc]
    pass


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if not isinstance(key, str):
            raise yaml.constructor.ConstructorError(
                None, None, f"expected a string key, found {key!r}", key_node.start_mark
            )
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_yaml_mapping(path: Path, display: str) -> dict[str, Any]:
    """Read one YAML file holding a mapping; every failure names the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise SiteDataError.single(display, None, f"not UTF-8 text ({error.reason})") from error
    except OSError as error:
        raise SiteDataError.single(display, None, f"cannot read: {error.strerror}") from error
    try:
        data = yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as error:
        raise SiteDataError.single(display, None, f"invalid YAML: {_describe(error)}") from error
    except RecursionError as error:
        raise SiteDataError.single(display, None, "invalid YAML: nested too deeply") from error
    if not isinstance(data, dict):
        found = "an empty file" if data is None else f"a {type(data).__name__}"
        raise SiteDataError.single(display, None, f"expected a mapping of fields, found {found}")
    _require_plain_data(data, display)
    return data


_PLAIN_SCALARS = (str, int, float, bool, type(None))


def _require_plain_data(value: Any, display: str) -> None:
    """Only JSON-like data: no recursive aliases, no sets, dates or binary.

    A self-containing alias (`a: &x [*x]`) would recurse forever downstream, a `!!set`
    has no stable order (the output would not be reproducible), and a bare date is
    almost always a string the author forgot to quote.
    """
    stack: list[tuple[Any, str, frozenset[int]]] = [(value, "", frozenset())]
    while stack:
        item, location, ancestors = stack.pop()
        if isinstance(item, dict | list):
            if id(item) in ancestors:
                raise SiteDataError.single(display, location or None, "recursive YAML alias")
            inside = ancestors | {id(item)}
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in pairs:
                child_location = (
                    f"{location}[{key}]" if isinstance(key, int) else
                    f"{location}.{key}" if location else str(key)
                )  # fmt: skip
                stack.append((child, child_location, inside))
        elif not isinstance(item, _PLAIN_SCALARS):
            raise SiteDataError.single(
                display,
                location or None,
                f"unsupported YAML value of type {type(item).__name__}; quote it if it is text",
            )


def _describe(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    problem = getattr(error, "problem", None) or str(error)
    if mark is not None:
        return f"{problem} (line {mark.line + 1}, column {mark.column + 1})"
    return str(problem)
