"""What the loader gives the rest of the build: the Site and its entries.

An entry is known by its id, file and cache key at once; its validated models are held
or parsed again from its file only when a renderer asks for them (`LazyModels`), so a
build that copies an entry from the build cache never parses it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from agent_contract.models import ArchitectureDocument, OnSiteAgentStatus
from content_builder.cache import EntryCache, entry_key
from content_builder.errors import Problem, SiteDataError
from content_builder.source import (
    DocumentSource,
    FaqSource,
    FeatureContentSource,
    PageContentSource,
    SiteSource,
)

#: How a loader parses one entry's file: (path, bytes, problems found[, display]) -> its models.
Parse = Callable[..., tuple[Any, ...] | None]


class LazyModels:
    """The validated models of one entry, parsed now (a new or edited file) or on first use
    (an entry the build cache already knows: its file is read again and checked against
    its key, so a build never pays for parsing what it only copies from the cache).
    Plain fields, no closure per entry: 20,000 entries' closures and their cells were
    80,000 more objects for the garbage collector to walk at every full collection."""

    __slots__ = ("_key", "_models", "_named", "_parse")

    def __init__(
        self, models: tuple[Any, ...] | None, named: Path | str, key: str, parse: Parse
    ) -> None:
        self._models = models
        self._named, self._key, self._parse = named, key, parse

    def models(self) -> tuple[Any, ...]:
        if self._models is None:
            self._models = self._reload()
        return self._models

    def _reload(self) -> tuple[Any, ...]:
        """Parse a cached entry's file again when its models are needed after all."""
        path = Path(self._named)
        problems: list[Problem] = []
        try:
            data = path.read_bytes()
        except OSError as error:
            raise SiteDataError.single(display_path(path), None, f"cannot read: {error}") from error
        models = (
            self._parse(path, data, problems)
            if entry_key(display_path(path), data) == self._key
            else None
        )
        if models is None or problems:
            raise SiteDataError.single(
                display_path(path), None, "changed while the build was running; run it again"
            )
        return models

    def release(self) -> None:
        """Drop the models once rendered (the build's peak memory); they reload on use."""
        self._models = None


class LazyMarkdownModels(LazyModels):
    """A Markdown page's models: its parse (markdown_tree.py) holds the text it was
    keyed by, so parsing again gives the same models."""

    __slots__ = ()

    def _reload(self) -> tuple[Any, ...]:
        problems: list[Problem] = []
        models = self._parse(problems)  # type: ignore[call-arg]
        if models is None or problems:
            raise SiteDataError.single(str(self._named), None, "could not be parsed again")
        return models  # type: ignore[no-any-return]


@dataclass
class MarkdownPages:
    """What the Markdown trees add to a site (markdown_tree.py)."""

    documents: list[LoadedDocument] = field(default_factory=list)
    groups: dict[str, str] = field(default_factory=dict)  # document id -> llms.txt group
    group_order: list[str] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    #: Files besides the pages that pages read (snippets, includes): what `serve --watch`
    #: watches besides the docs tree, which need not hold them.
    read_files: set[str] = field(default_factory=set)


class _LoadedEntry:
    """One content or FAQ file: its id, its file and its cache key, which every build
    needs, and its models, parsed (or re-read from the file) only when it must render."""

    __slots__ = ("_lazy", "cache_key", "file", "id")

    def __init__(self, id: str, file: str, cache_key: str, lazy: LazyModels) -> None:
        self.id = id
        self.file = file
        self.cache_key = cache_key  # the build cache's key for the file's bytes (cache.py)
        self._lazy = lazy

    def release(self) -> None:
        self._lazy.release()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.id!r}, {self.file!r})"


class LoadedDocument(_LoadedEntry):
    """A content file; its order and pinned version are known without its models.
    `searchable`: False for a Markdown page whose front matter keeps it out of search
    (markdown_tree.py `excluded_from_search`): published, but in no search index."""

    __slots__ = ("order", "searchable", "version")

    def __init__(
        self,
        id: str,
        file: str,
        cache_key: str,
        order: int,
        version: str | None,
        lazy: LazyModels,
        searchable: bool = True,
    ) -> None:
        super().__init__(id, file, cache_key, lazy)
        self.order = order
        self.version = version
        self.searchable = searchable

    @property
    def source(self) -> DocumentSource:
        return self._lazy.models()[0]  # type: ignore[no-any-return]

    @property
    def content(self) -> PageContentSource | FeatureContentSource:
        return self._lazy.models()[1]  # type: ignore[no-any-return]


class LoadedFaq(_LoadedEntry):
    """An FAQ file."""

    __slots__ = ()

    @property
    def source(self) -> FaqSource:
        return self._lazy.models()[0]  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Site:
    """Everything in site_data/, validated, with {base_url} already substituted."""

    root: Path
    base_url: str
    config: SiteSource
    documents: tuple[LoadedDocument, ...]
    faqs: tuple[LoadedFaq, ...]
    #: None: the site has no file of its own; the build publishes what it knows
    #: (render/site_facts.py). The file's display path, or None.
    architecture: ArchitectureDocument | None
    on_site_agent: OnSiteAgentStatus | None
    architecture_file: str | None
    on_site_agent_file: str | None
    #: Markdown pages' llms.txt groups (document id -> group; markdown_tree.py), in order.
    groups: dict[str, str] = field(default_factory=dict)
    group_order: tuple[str, ...] = ()
    #: What the build reports without failing (a broken link under `broken_links: warn`).
    warnings: tuple[Problem, ...] = ()
    #: Files besides the site's own that its Markdown pages read (snippets, includes),
    #: sorted: `serve --watch` watches them too.
    read_files: tuple[str, ...] = ()
    #: The owner's SKILL.md, when the site folder has one (render/skill.py checks it).
    skill_md: bytes | None = None
    #: What earlier builds derived from unchanged entries; not part of the site's value.
    cache: EntryCache = field(default_factory=EntryCache.disabled, compare=False, repr=False)
    #: This build's memo of the API path each URL names (validate.py), by URL.
    api_paths: dict[str, str | None] = field(default_factory=dict, compare=False, repr=False)

    def display(self, name: str) -> str:
        return display_path(self.root / name)


def display_path(path: Path) -> str:
    """A path as the user typed it, relative to the working directory when inside it."""
    return _relative(str(path), os.getcwd())


@lru_cache(maxsize=1 << 16)  # a build shows each file's path several times
def _relative(path: str, cwd: str) -> str:
    try:
        return os.path.relpath(path, cwd)
    except ValueError:
        return path
