"""site_data/ -> Site: read every YAML file, substitute {base_url}, validate.

Errors name the file, the field (dotted path, list indexes in brackets) and what was
expected. Problems of every file are collected, so one run reports them all.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel, ValidationError

from content_builder import links
from content_builder.errors import Problem, SiteDataError
from content_builder.models import ArchitectureDocument, OnSiteAgentStatus
from content_builder.source import (
    CONTENT_SHAPES,
    DocumentSource,
    FaqSource,
    FeatureContentSource,
    PageContentSource,
    SiteSource,
)
from content_builder.yaml_io import read_yaml_mapping

BASE_URL_TOKEN = "{base_url}"

SITE_FILE = "site.yaml"
CONTENT_DIR = "content"
FAQ_DIR = "faq"
ARCHITECTURE_FILE = "architecture.yaml"
ON_SITE_AGENT_FILE = "on-site-agent.yaml"
LOCK_FILE = "content.lock.json"

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class LoadedDocument:
    source: DocumentSource
    content: PageContentSource | FeatureContentSource
    file: str

    @property
    def id(self) -> str:
        return self.source.id


@dataclass(frozen=True)
class LoadedFaq:
    source: FaqSource
    file: str

    @property
    def id(self) -> str:
        return self.source.id


@dataclass(frozen=True)
class Site:
    """Everything in site_data/, validated, with {base_url} already substituted."""

    root: Path
    base_url: str
    config: SiteSource
    documents: tuple[LoadedDocument, ...]
    faqs: tuple[LoadedFaq, ...]
    architecture: ArchitectureDocument
    on_site_agent: OnSiteAgentStatus
    architecture_file: str
    on_site_agent_file: str

    def display(self, name: str) -> str:
        return display_path(self.root / name)


def display_path(path: Path) -> str:
    """A path as the user typed it, relative to the working directory when inside it."""
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def normalize_base_url(value: str) -> str:
    """Validate a --base-url / stack override: absolute http(s), no path, no trailing slash."""
    value = value.rstrip("/")
    expected = "expected an absolute http(s) URL of an origin, like https://agents.example.com"
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError as error:
        raise SiteDataError.single(
            "--base-url", None, f"{expected}, got {value!r} ({error})"
        ) from error
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.path
        or parts.query
        or parts.fragment
        or any(ch.isspace() for ch in value)
    ):
        # Paths are refused: every published path starts at the origin (/.well-known/...).
        raise SiteDataError.single("--base-url", None, f"{expected}, got {value!r}")
    return value


def load_site(root: Path, base_url: str | None = None) -> Site:
    problems: list[Problem] = []
    site_display = display_path(root / SITE_FILE)
    if not root.is_dir():
        raise SiteDataError.single(display_path(root), None, "site data folder does not exist")
    site_config = _validate(SiteSource, _read(root / SITE_FILE, problems), site_display, problems)
    if site_config is None:
        raise SiteDataError(problems)
    effective_base = normalize_base_url(base_url) if base_url else site_config.base_url

    literal_bases = {site_config.base_url, effective_base}

    def read(path: Path) -> dict[str, Any] | None:
        raw = _read(path, problems)
        if raw is None:
            return None
        # A literal base URL would only be right for one deployment (and its lock hash
        # would differ between deployments): links into the API are written {base_url}.
        problems.extend(
            Problem(
                display_path(path),
                location or None,
                f"write {BASE_URL_TOKEN} instead of the literal {base} in links into the API "
                f"(found {url})",
            )
            for location, text in located_strings(raw)
            for url in links.urls(text)
            for base in sorted(literal_bases)
            if links.api_path(url, base) not in (None, *links.NON_FILE_PATHS)
        )
        return _substitute(raw, effective_base)

    documents = _load_documents(root, read, problems)
    faqs = _load_faqs(root, read, problems)
    architecture = _validate(
        ArchitectureDocument,
        read(root / ARCHITECTURE_FILE),
        display_path(root / ARCHITECTURE_FILE),
        problems,
    )
    on_site_agent = _validate(
        OnSiteAgentStatus,
        read(root / ON_SITE_AGENT_FILE),
        display_path(root / ON_SITE_AGENT_FILE),
        problems,
    )
    _check_unique_ids(documents, faqs, problems)
    if problems or architecture is None or on_site_agent is None:
        raise SiteDataError(problems)
    return Site(
        root=root,
        base_url=effective_base,
        config=site_config,
        documents=tuple(sorted(documents, key=lambda d: (d.source.order, d.id))),
        faqs=tuple(sorted(faqs, key=lambda f: f.id)),
        architecture=architecture,
        on_site_agent=on_site_agent,
        architecture_file=display_path(root / ARCHITECTURE_FILE),
        on_site_agent_file=display_path(root / ON_SITE_AGENT_FILE),
    )


def _load_documents(
    root: Path, read: Callable[[Path], dict[str, Any] | None], problems: list[Problem]
) -> list[LoadedDocument]:
    loaded = []
    for path in _yaml_files(root / CONTENT_DIR, problems):
        display = display_path(path)
        raw = read(path)
        document = _validate(DocumentSource, raw, display, problems)
        if document is None:
            continue
        shape = CONTENT_SHAPES[document.content_type]
        content = _validate(shape, document.content, display, problems, prefix="content")
        if content is not None:
            loaded.append(LoadedDocument(document, content, display))  # type: ignore[arg-type]
    return loaded


def _load_faqs(
    root: Path, read: Callable[[Path], dict[str, Any] | None], problems: list[Problem]
) -> list[LoadedFaq]:
    loaded = []
    for path in _yaml_files(root / FAQ_DIR, problems):
        display = display_path(path)
        faq = _validate(FaqSource, read(path), display, problems)
        if faq is not None:
            loaded.append(LoadedFaq(faq, display))
    return loaded


def _yaml_files(folder: Path, problems: list[Problem]) -> list[Path]:
    if not folder.is_dir():
        problems.append(Problem(display_path(folder), None, "folder is missing"))
        return []
    strays = sorted(p.name for p in folder.iterdir() if p.suffix == ".yml")
    for name in strays:
        problems.append(Problem(display_path(folder / name), None, "use the .yaml extension"))
    files = sorted(folder.glob("*.yaml"))
    if not files:
        problems.append(Problem(display_path(folder), None, "holds no .yaml files"))
    return files


#: Document ids whose file name is taken by an aggregate in /api/v1/content/.
RESERVED_DOCUMENT_IDS = frozenset({"index", "search-index"})


def _check_unique_ids(
    documents: list[LoadedDocument], faqs: list[LoadedFaq], problems: list[Problem]
) -> None:
    for document in documents:
        if document.id in RESERVED_DOCUMENT_IDS:
            problems.append(
                Problem(document.file, "id", f"{document.id!r} is reserved: /api/v1/content/"
                        f"{document.id}.json is an aggregate; choose another id")
            )  # fmt: skip
    # Documents and FAQ entries share the content index, so they share one id space.
    first_seen: dict[str, str] = {}
    for item in [*documents, *faqs]:
        if item.id in first_seen:
            problems.append(
                Problem(
                    item.file, "id", f"duplicate id {item.id!r}, also used by {first_seen[item.id]}"
                )
            )
        else:
            first_seen[item.id] = item.file


def _read(path: Path, problems: list[Problem]) -> dict[str, Any] | None:
    if not path.is_file():
        problems.append(Problem(display_path(path), None, "file is missing"))
        return None
    try:
        return read_yaml_mapping(path, display_path(path))
    except SiteDataError as error:
        problems.extend(error.problems)
        return None


def located_strings(value: Any, location: str = "") -> Iterator[tuple[str, str]]:
    """Every string in nested data, with its dotted location (`sections[2].body`)."""
    if isinstance(value, str):
        yield location, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from located_strings(item, f"{location}.{key}" if location else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from located_strings(item, f"{location}[{index}]")


def _substitute(value: Any, base_url: str) -> Any:
    if isinstance(value, str):
        return value.replace(BASE_URL_TOKEN, base_url)
    if isinstance(value, dict):
        return {key: _substitute(item, base_url) for key, item in value.items()}
    if isinstance(value, list):
        return [_substitute(item, base_url) for item in value]
    return value


def _validate(
    model: type[M],
    raw: dict[str, Any] | None,
    display: str,
    problems: list[Problem],
    prefix: str | None = None,
) -> M | None:
    if raw is None:
        return None
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        for detail in error.errors(include_url=False):
            location = _format_location(((prefix,) if prefix else ()) + tuple(detail["loc"]))
            problems.append(Problem(display, location or None, _describe(detail)))
        return None


def _format_location(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def _describe(detail: dict[str, Any]) -> str:
    kind = detail["type"]
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return "unknown field (check the spelling against docs/site-data-format.md)"
    message = detail["msg"]
    if kind == "string_too_short":
        message = "expected non-empty text"
    elif kind == "value_error":
        message = message.removeprefix("Value error, ")
    found = detail.get("input")
    if kind not in ("string_too_short",) and not isinstance(found, dict | list):
        message += f" (found {found!r})"
    return message
