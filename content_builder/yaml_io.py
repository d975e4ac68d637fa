"""Strict YAML reading: safe types only, and duplicate keys are an error, not a silent overwrite.

Parsing uses libyaml (`yaml.CSafeLoader`) when PyYAML was built with it, which reads
site_data about seven times faster than the pure-Python parser (benchmarks/README.md);
the constructors, and so the types, duplicate-key and plain-data checks, are the same
Python code either way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from content_builder.errors import Problem, SiteDataError
from content_builder.site_files import MAX_FILE_BYTES, read_site_file, too_large
from content_builder.text_rules import forbidden_problems

#: libyaml's parser when available (the same safe constructors, in C only the parsing).
_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StrictLoader(_BaseLoader):  # type: ignore[valid-type,misc]
    def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        # libyaml calls this for every node; the tag of a plain scalar depends only on its
        # text (no path resolvers here), and keys repeat in every file: remembered.
        if kind is yaml.ScalarNode and implicit[0]:
            try:
                return _PLAIN_TAGS[value]
            except KeyError:
                tag: str = super().resolve(kind, value, implicit)
                if len(value) <= _REMEMBERED_LENGTH and len(_PLAIN_TAGS) < _REMEMBERED_COUNT:
                    _PLAIN_TAGS[value] = tag
                return tag
        if kind is yaml.ScalarNode:
            return self.DEFAULT_SCALAR_TAG  # type: ignore[no-any-return]
        if kind is yaml.SequenceNode:
            return self.DEFAULT_SEQUENCE_TAG  # type: ignore[no-any-return]
        return self.DEFAULT_MAPPING_TAG  # type: ignore[no-any-return]

    # Path resolvers are not used (asserted below): nothing to follow node by node.
    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        pass

    def ascend_resolver(self) -> None:
        pass


assert not _StrictLoader.yaml_path_resolvers  # else a tag depends on more than the text
_PLAIN_TAGS: dict[str, str] = {}
_REMEMBERED_LENGTH = 64
_REMEMBERED_COUNT = 1 << 16


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


class YamlDate(str):
    """An unquoted date or time, kept as its text: building a `datetime` from it would
    crash on an impossible one (2025-02-30, 25:00:00), and site data never wants one."""


def _construct_date(loader: _StrictLoader, node: yaml.ScalarNode) -> YamlDate:
    return YamlDate(loader.construct_scalar(node))


_StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", _construct_date)


def read_yaml_mapping(
    path: Path, display: str, data: bytes | None = None, empty_ok: bool = False
) -> dict[str, Any]:
    """Read one YAML file holding a mapping (`data`: its bytes, when already read);
    every failure names the file. Only a regular file is read, never through a link
    (site_files.read_site_file), and none over MAX_FILE_BYTES. `empty_ok`: a document
    of nothing but comments is no fields (a page's front matter), not an error."""
    if data is None:
        data = read_site_file(path, display)
    elif len(data) > MAX_FILE_BYTES:
        raise too_large(display, len(data))
    try:
        # as read_text would: universal newlines
        text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError as error:
        raise SiteDataError.single(display, None, f"not UTF-8 text ({error.reason})") from error
    try:
        data = _load(text)
    except AliasRefused as error:
        raise SiteDataError.single(display, None, str(error)) from error
    except yaml.YAMLError as error:
        raise SiteDataError.single(
            display, None, f"invalid YAML: {_describe(error, text)}"
        ) from error
    except RecursionError as error:
        raise SiteDataError.single(display, None, "invalid YAML: nested too deeply") from error
    except (ValueError, KeyError, IndexError, TypeError, OverflowError) as error:
        # yaml's converters fail this way on an explicit tag they cannot apply
        # (`!!float x`, `!!bool maybe`, `!!int ''`): an error in the file, not a crash.
        raise SiteDataError.single(
            display, None, f"invalid YAML: a value its !!tag cannot convert ({error!r})"
        ) from error
    if data is None and empty_ok:
        data = {}
    if isinstance(data, _Plain):
        data = data.value  # plain by construction: nothing more to check
    elif not isinstance(data, dict):
        found = "an empty file" if data is None else f"a {type(data).__name__}"
        raise SiteDataError.single(display, None, f"expected a mapping of fields, found {found}")
    else:
        try:
            _require_plain_data(data, display)
        except SiteDataError as error:
            raise SiteDataError(with_lines(error.problems, path)) from None
    forbidden = forbidden_problems(text, data, display)
    if forbidden:  # control characters, bidi overrides (text_rules): in no field
        raise SiteDataError(with_lines(forbidden, path))
    return data


@dataclass(frozen=True, slots=True)
class _Plain:
    """A mapping the fast constructor built: JSON-like, no alias, so no recursion."""

    value: dict[str, Any]


def _load(text: str) -> Any:
    """`yaml.load(text, Loader=_StrictLoader)`, the same data and errors, faster.

    libyaml composes the nodes (and resolves each plain scalar's tag) either way; the
    Python constructors then make about ten Python calls per node. Site data holds
    mappings, lists and text with a few numbers and booleans, so those are built here
    directly; a node of any other kind (a `!!set`, a merge key, an alias, a non-text or
    duplicate key, anything yaml would refuse) hands the whole document back to the
    constructors, which build it or fail exactly as before. A result from here is
    wrapped in `_Plain`: it holds only mappings, lists and plain scalars, each once.

    An alias is refused before anything is built (`refuse_aliases`).
    """
    if "&" in text and "*" in text:  # no alias without an anchor before it
        refuse_aliases(text)
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if type(node) is yaml.MappingNode:
            try:
                data = _build_mapping(node, loader, set())
            except (_NotFast, RecursionError):
                pass
            else:
                return _Plain(data)
        return loader.construct_document(node)
    finally:
        loader.dispose()


class AliasRefused(yaml.YAMLError):
    """A YAML alias in site data: refused, whatever it repeats (issue 24)."""


def refuse_aliases(text: str) -> None:
    """Raise `AliasRefused` at the first alias (`*name`, a merge key's `<<: *name`).

    An alias repeats a node without repeating its text: nine levels of nine aliases
    each (billion laughs) name 9**9 strings in under 500 bytes, and whatever walks the
    data (the plain-data check, the token substitution, the renderers) walks every
    repetition. Site data has no use for them (each value is written where it is used),
    so any alias is refused, at its line; an anchor alone repeats nothing and is
    harmless, and an alias of no anchor is left to the composer's own error (so a text
    without `&` needs no look here). Only the parser's events are read: nothing is
    composed or built, so this takes as long as parsing the text, whatever the aliases
    would expand to. A parse error raises what composing would raise, at the same place.
    """
    loader = _BaseLoader(text)
    anchors: set[str] = set()
    try:
        while loader.check_event():
            event = loader.get_event()
            anchor = getattr(event, "anchor", None)
            if type(event) is not yaml.AliasEvent:
                if anchor is not None:
                    anchors.add(anchor)
            elif anchor in anchors:  # an undefined one: composing says so, as before
                mark = event.start_mark
                raise AliasRefused(
                    f"YAML alias *{event.anchor} (line {mark.line + 1}, column "
                    f"{mark.column + 1}): aliases are not allowed in site data; write the "
                    "value out where it is used"
                )
    finally:
        loader.dispose()


class _NotFast(Exception):
    """A node the fast path leaves to yaml's own constructors."""


_STR_TAG = "tag:yaml.org,2002:str"
_MAP_TAG = yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG
_SEQ_TAG = yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
#: Scalars other than text: yaml's own conversions (YAML 1.1: `yes` is true, `0o17`...).
_SCALAR_CONSTRUCTORS = {
    tag: _StrictLoader.yaml_constructors[tag]
    for tag in ("tag:yaml.org,2002:null", "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int",
                "tag:yaml.org,2002:float")
}  # fmt: skip


def _build_mapping(node: yaml.MappingNode, loader: _StrictLoader, seen: set[int]) -> dict:
    if node.tag != _MAP_TAG or id(node) in seen:
        raise _NotFast
    seen.add(id(node))
    mapping: dict[str, Any] = {}
    for key_node, value_node in node.value:
        if type(key_node) is not yaml.ScalarNode or key_node.tag != _STR_TAG:
            raise _NotFast  # a merge key (<<), a non-text key: the constructors decide
        key = key_node.value
        if key in mapping:
            raise _NotFast  # a duplicate: the constructors say so with its line
        if type(value_node) is yaml.ScalarNode and value_node.tag == _STR_TAG:
            mapping[key] = value_node.value  # most values: text, without a call
        else:
            mapping[key] = _build(value_node, loader, seen)
    return mapping


def _build(node: yaml.Node, loader: _StrictLoader, seen: set[int]) -> Any:
    kind = type(node)
    if kind is yaml.ScalarNode:
        tag = node.tag
        if tag == _STR_TAG:
            return node.value
        if tag == _TIMESTAMP_TAG:
            return YamlDate(node.value)
        construct = _SCALAR_CONSTRUCTORS.get(tag)
        if construct is None:
            raise _NotFast
        try:
            return construct(loader, node)
        except Exception as error:  # `!!float x`: the constructors decide what it is
            raise _NotFast from error
    if kind is yaml.MappingNode:
        return _build_mapping(node, loader, seen)
    if kind is yaml.SequenceNode and node.tag == _SEQ_TAG and id(node) not in seen:
        seen.add(id(node))
        return [
            child.value
            if type(child) is yaml.ScalarNode and child.tag == _STR_TAG
            else _build(child, loader, seen)
            for child in node.value
        ]
    raise _NotFast


_PLAIN_SCALARS = (str, int, float, bool, type(None))


def _require_plain_data(value: Any, display: str) -> None:
    """Only JSON-like data: no sets or binary.

    A `!!set` has no stable order (the output would not be reproducible). A bare date
    stays as its text (`YamlDate`): whoever validates the data decides what to say of it
    (`unquoted_dates`), because the right advice depends on the field. Aliases were
    refused before (`refuse_aliases`), so the data is a tree and each value is visited
    once.
    """
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, location = stack.pop()
        if isinstance(item, dict | list):
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in pairs:
                child_location = (
                    f"{location}[{key}]" if isinstance(key, int) else
                    f"{location}.{key}" if location else str(key)
                )  # fmt: skip
                stack.append((child, child_location))
        elif not isinstance(item, _PLAIN_SCALARS):
            raise SiteDataError.single(
                display,
                location or None,
                f"unsupported YAML value of type {type(item).__name__}; quote it if it is text",
            )


def unquoted_dates(value: Any, location: str = "") -> list[tuple[str, YamlDate]]:
    """Every unquoted date or time in plain data, with its dotted location."""
    if not _holds_date(value):  # nearly always: no location is spelt out
        return []
    return _located_dates(value, location)


def _holds_date(value: Any) -> bool:
    if isinstance(value, YamlDate):
        return True
    if isinstance(value, dict):
        value = value.values()
    elif not isinstance(value, list):
        return False
    for item in value:
        kind = type(item)
        if kind is str:
            continue
        if kind is YamlDate:
            return True
        if isinstance(item, dict | list):
            if _holds_date(item):
                return True
        elif isinstance(item, YamlDate):
            return True
    return False


def _located_dates(value: Any, location: str) -> list[tuple[str, YamlDate]]:
    if isinstance(value, YamlDate):
        return [(location, value)]
    if isinstance(value, dict):
        pairs: Any = (
            (f"{location}.{key}" if location else str(key), v) for key, v in value.items()
        )
    elif isinstance(value, list):
        pairs = ((f"{location}[{index}]", v) for index, v in enumerate(value))
    else:
        return []
    return [found for child, v in pairs for found in _located_dates(v, child)]


def _describe(error: yaml.YAMLError, text: str) -> str:
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    problem = getattr(error, "problem", None) or str(error)
    hint = ""
    if mark is not None:
        lines = text.splitlines()
        line = lines[mark.line] if mark.line < len(lines) else ""
        if "\t" in line[: mark.column + 1]:
            hint = "; YAML indents with spaces, not tabs: replace the tab"
        elif _STARTS_WITH_TOKEN.search(line):
            hint = '; a value that starts with a token such as {name} must be quoted: "{name} ..."'

        return f"{problem} (line {mark.line + 1}, column {mark.column + 1}){hint}"
    return str(problem)


_STARTS_WITH_TOKEN = re.compile(r"(^|:|-)\s*\{[a-z_]+\}")


@dataclass(frozen=True)
class Scalar:
    """Where a value was written, and how (plain scalars are the ones YAML retypes)."""

    line: int
    text: str | None  # the scalar's source text, None for a mapping or a list
    plain: bool


def locate(path: Path) -> dict[str, Scalar]:
    """Dotted location (`sections[2].body`) -> where it is in the file.

    Only called to explain a problem, so the happy path parses each file once.
    """
    try:
        text = read_site_file(path, str(path)).decode("utf-8")
        root = yaml.compose(text.replace("\r\n", "\n").replace("\r", "\n"), Loader=_StrictLoader)
    except (SiteDataError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return {}
    found: dict[str, Scalar] = {}
    stack: list[tuple[yaml.Node, str]] = [(root, "")] if root is not None else []
    seen: set[int] = set()  # an alias repeats a node; a recursive one would loop forever
    while stack:
        node, location = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                key = str(key_node.value)
                child = f"{location}.{key}" if location else key
                found[child] = _scalar(value_node, key_node.start_mark.line + 1)
                stack.append((value_node, child))
        elif isinstance(node, yaml.SequenceNode):
            for index, value_node in enumerate(node.value):
                child = f"{location}[{index}]"
                found[child] = _scalar(value_node, value_node.start_mark.line + 1)
                stack.append((value_node, child))
    return found


def with_lines(found: list[Problem], path: Path) -> list[Problem]:
    """The problems, each with the line of its field when YAML gives one."""
    if not found:
        return found
    written = locate(path)
    return [
        Problem(p.file, p.field, f"{p.message} (line {written[p.field].line})")
        if p.field in written
        else p
        for p in found
    ]


def _scalar(node: yaml.Node, line: int) -> Scalar:
    if isinstance(node, yaml.ScalarNode):
        # libyaml marks a plain scalar with style '', the pure-Python parser with None.
        return Scalar(line, node.value, not node.style)
    return Scalar(line, None, False)
