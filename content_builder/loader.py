"""site_data/ -> Site: read every YAML file, substitute the tokens ({base_url}, ...), validate.

Errors name the file, the field (dotted path, list indexes in brackets) and what was
expected. Problems of every file are collected, so one run reports them all.
"""

from __future__ import annotations

import ipaddress
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, Literal, NamedTuple, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel, ValidationError

from agent_contract import links, paths
from agent_contract.models import ArchitectureDocument, OnSiteAgentStatus
from agent_contract.uri import url_problem
from content_builder.cache import EntryCache, entry_key
from content_builder.errors import Problem, SiteDataError
from content_builder.overview import (
    ORDER,
    SITE_DOCUMENT_ID,
    SOURCE_NAME,
    overview_key,
    overview_models,
)
from content_builder.site_files import has_markdown, irregular, read_site_file, yaml_names
from content_builder.source import (
    CONTENT_SHAPES,
    DocumentSource,
    FaqSource,
    FeatureContentSource,
    PageContentSource,
    SiteSource,
)
from content_builder.yaml_io import (
    Scalar,
    locate,
    read_yaml_mapping,
    unquoted_dates,
    with_lines,
)

BASE_URL_TOKEN = "{base_url}"
#: Every token an author may write; a rename is then one line of site.yaml.
TOKENS = ("{base_url}", "{discovery_url}", "{brand}", "{name}", "{website}", "{contact}")
# Hyphens too: `{base-url}` is a misspelt token, not text.
_BRACED = re.compile(r"\{([A-Za-z_][A-Za-z0-9_-]*)\}")
# A token that should start a URL path: `{base_url}api/v1` lost its slash.
_GLUED = re.compile(r"\{(base_url|website)\}(?=[A-Za-z0-9_.~-])")
# ... and `{base_url}//api/v1` has one too many (the CDN looks `//api/...` up as written).
_DOUBLED = re.compile(r"\{(base_url|website)\}//")

SITE_FILE = "site.yaml"
CONTENT_DIR = "content"
FAQ_DIR = "faq"
ARCHITECTURE_FILE = "architecture.yaml"
ON_SITE_AGENT_FILE = "on-site-agent.yaml"
#: The owner's own Agent Skill, published in place of the generated one (issue 26).
SKILL_FILE = "SKILL.md"
LOCK_FILE = "content.lock.json"
#: Every file of its own a site may have (search_eval.QUESTIONS_FILE too) and its
#: folders: each must be a regular file or a real folder, checked before anything is read.
SITE_FILES = (
    SITE_FILE,
    ARCHITECTURE_FILE,
    ON_SITE_AGENT_FILE,
    LOCK_FILE,
    "search-questions.yaml",
    SKILL_FILE,
)
SITE_FOLDERS = (CONTENT_DIR, FAQ_DIR)

M = TypeVar("M", bound=BaseModel)


#: How a loader parses one entry's file: (path, bytes, problems found[, display]) -> its models.
Parse = Callable[..., tuple[Any, ...] | None]


class _Lazy:
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


class _MarkdownLazy(_Lazy):
    """A Markdown page's models: its parse (markdown_tree.py) holds the text it was
    keyed by, so parsing again gives the same models."""

    __slots__ = ()

    def _reload(self) -> tuple[Any, ...]:
        problems: list[Problem] = []
        models = self._parse(problems)  # type: ignore[call-arg]
        if models is None or problems:
            raise SiteDataError.single(str(self._named), None, "could not be parsed again")
        return models  # type: ignore[no-any-return]


def _overview_document(config: SiteSource) -> LoadedDocument:
    """The generated `site` document (overview.py) of a site that writes none."""
    key = overview_key(config)
    lazy = _MarkdownLazy(
        overview_models(config), SOURCE_NAME, key, lambda _: overview_models(config)
    )
    return LoadedDocument(SITE_DOCUMENT_ID, SOURCE_NAME, key, ORDER, None, lazy)


def _markdown_document(
    id: str,
    file: str,
    key: str,
    order: int,
    version: str | None,
    models: tuple[Any, ...] | None,
    parse: Callable[[list[Problem]], tuple[Any, ...] | None],
    searchable: bool = True,
) -> LoadedDocument:
    lazy = _MarkdownLazy(models, file, key, parse)  # type: ignore[arg-type]
    return LoadedDocument(id, file, key, order, version, lazy, searchable)


@dataclass
class MarkdownPages:
    """What the Markdown trees add to a site (markdown_tree.py)."""

    documents: list[LoadedDocument] = field(default_factory=list)
    groups: dict[str, str] = field(default_factory=dict)  # document id -> llms.txt group
    group_order: list[str] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    roots: list[Path] = field(default_factory=list)  # folders to watch


class _LoadedEntry:
    """One content or FAQ file: its id, its file and its cache key, which every build
    needs, and its models, parsed (or re-read from the file) only when it must render."""

    __slots__ = ("_lazy", "cache_key", "file", "id")

    def __init__(self, id: str, file: str, cache_key: str, lazy: _Lazy) -> None:
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
        lazy: _Lazy,
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
        or url_problem(value) is not None  # RFC 3986, no user information (issue 24)
    ):
        # Paths are refused: every published path starts at the origin (/.well-known/...).
        raise SiteDataError.single("--base-url", None, f"{expected}, got {value!r}")
    return value


def load_site_config(root: Path) -> SiteSource:
    """site.yaml alone, validated as `load_site` validates it (errors name file and field)."""
    problems: list[Problem] = []
    path = root / SITE_FILE
    config = validate_model(
        SiteSource, _read(path, problems), display_path(path), problems, path=path
    )
    if config is None:
        raise SiteDataError(problems)
    return config


@dataclass(frozen=True)
class Authoring:
    """What an author's strings are read with: the tokens they may write and the base URLs
    their links are checked against (docs/site-data-format.md, Tokens)."""

    tokens: dict[str, str]
    bases: tuple[str, ...]  # site.yaml's base URL and the one this build publishes at
    base_url: str  # site.yaml's

    def prepare(self, path: Path, raw: dict[str, Any]) -> Prepared:
        """The tokens substituted in a file's data, and the problems of its links."""
        checked: list[str] = []
        substituted = _substitute(raw, self.tokens, checked)
        found: list[Problem] = []
        if any(_has_link_problem(text, self.bases, self.base_url) for text in checked):
            found = [
                Problem(display_path(path), location or None, message)
                for location, text in located_strings(raw)
                for message in link_problems(text, set(self.bases), self.base_url)
            ]
            found = with_lines(found, path)
        return Prepared(substituted, found)


class Listed(NamedTuple):
    """One YAML file of content/ or faq/ as the listing found it."""

    path: str  # a Path is made only to parse it: 20,000 Paths are 20,000 more objects
    display: str
    key: str  # the build cache's key for its bytes; "" when it could not be read
    data: bytes | None  # its bytes, when read and not known to the cache
    hit: Any  # the cache's record of a clean file with these bytes, if any
    problems: tuple[Problem, ...] = ()  # why it could not be read
    # Its stat signature when it was read too soon after its last change to be trusted
    # by stat later (`settle_racy_reads`).
    racy: tuple[int, int, int, int] | None = None


@dataclass(frozen=True)
class SiteFiles:
    """site.yaml read and validated, the build cache opened, and every YAML file of
    content/ and faq/ listed: read and keyed, or answered for by the cache. Nothing
    parsed yet (`load_files`), so that many new files can be parsed elsewhere first
    (prime.py)."""

    root: Path
    base_url: str  # the one this build publishes at
    config: SiteSource
    authoring: Authoring
    cache: EntryCache
    content: Folder
    faqs: Folder


def load_site(root: Path, base_url: str | None = None, last: EntryCache | None = None) -> Site:
    """site_data/ validated; `last`: the build cache the previous build of a series used."""
    return load_files(list_site(root, base_url, last))


def list_site(root: Path, base_url: str | None = None, last: EntryCache | None = None) -> SiteFiles:
    """site.yaml validated and the site's YAML files listed (`SiteFiles`)."""
    problems: list[Problem] = []
    site_display = display_path(root / SITE_FILE)
    if not root.is_dir():
        raise SiteDataError.single(display_path(root), None, "site data folder does not exist")
    # A link, a FIFO or a device among the site's own files: refused before any is read
    # (a FIFO would block the read, a link would publish what it points at).
    refused = irregular(root, SITE_FILES, SITE_FOLDERS, display_path)
    if refused:
        raise SiteDataError(refused)
    site_config = validate_model(
        SiteSource, _read(root / SITE_FILE, problems), site_display, problems, path=root / SITE_FILE
    )
    if site_config is None:
        raise SiteDataError(problems)
    effective_base = normalize_base_url(base_url) if base_url else site_config.base_url
    authoring = Authoring(
        token_values(site_config, effective_base),
        tuple(sorted({site_config.base_url, effective_base})),
        site_config.base_url,
    )
    settings = b"\0".join(
        [_bytes_or_empty(root / SITE_FILE), effective_base.encode(), os.getcwd().encode()]
    )
    cache = EntryCache.open(root, settings, last)
    # content/ is optional (a site's pages may come from elsewhere); no document at all
    # is one error, NO_CONTENT, raised by load_files. A site may have no FAQ (yet).
    content = _listed(root / CONTENT_DIR, cache)
    faqs = _listed(root / FAQ_DIR, cache)
    return SiteFiles(root, effective_base, site_config, authoring, cache, content, faqs)


def load_files(files: SiteFiles) -> Site:
    """The listed files parsed (those the cache does not know), validated, and joined
    with the Markdown pages and the site's optional files into one Site."""
    root, site_config, cache, authoring = files.root, files.config, files.cache, files.authoring
    effective_base, tokens = files.base_url, authoring.tokens
    problems: list[Problem] = []

    def read(path: Path) -> dict[str, Any] | None:
        return _prepared(authoring, path, problems)

    documents = _load_documents(files.content, authoring, problems, cache)
    faqs = _load_faqs(files.faqs, authoring, problems, cache)
    markdown = MarkdownPages()
    if site_config.docs_dir is not None or has_markdown(root / CONTENT_DIR):
        # Imported here: a site without Markdown pages never loads the Markdown modules
        # and markdown-it-py (~20 ms of a 0.3 s build, issue 22).
        from content_builder.markdown_tree import load_markdown

        markdown = load_markdown(
            root, site_config, effective_base, tokens, cache, problems, display_path,
            _markdown_document,
        )  # fmt: skip
    documents += markdown.documents
    # Optional (issue 23): a site without them publishes what is true of any build
    # (render/site_facts.py), never a sample's claims.
    architecture = _optional_model(ArchitectureDocument, root / ARCHITECTURE_FILE, read, problems)
    on_site_agent = _optional_model(OnSiteAgentStatus, root / ON_SITE_AGENT_FILE, read, problems)
    _check_unique_ids(documents, faqs, problems)
    if documents and not any(d.id == SITE_DOCUMENT_ID for d in documents):
        documents.append(_overview_document(site_config))
    if not documents and not problems:
        # Zero documents would publish an API whose overview (the MCP manifest's
        # get_site_overview) and document enum name nothing: refused, with the way out.
        problems.append(Problem(display_path(root / CONTENT_DIR), None, NO_CONTENT))
    if problems or architecture is False or on_site_agent is False:
        raise SiteDataError(problems)
    return Site(
        root=root,
        base_url=effective_base,
        config=site_config,
        documents=tuple(sorted(documents, key=lambda d: (d.order, d.id))),
        faqs=tuple(sorted(faqs, key=lambda f: f.id)),
        architecture=architecture,
        on_site_agent=on_site_agent,
        architecture_file=display_path(root / ARCHITECTURE_FILE) if architecture else None,
        on_site_agent_file=display_path(root / ON_SITE_AGENT_FILE) if on_site_agent else None,
        groups=markdown.groups,
        group_order=tuple(markdown.group_order),
        warnings=tuple(markdown.warnings),
        skill_md=_optional_file(root / SKILL_FILE),
        cache=cache,
    )


def _optional_model(
    model: type[M],
    path: Path,
    read: Callable[[Path], dict[str, Any] | None],
    problems: list[Problem],
) -> M | Literal[False] | None:
    """A file the site may leave out: its model, None when absent, False when refused.
    Only a missing name is absence: a link or a FIFO of that name was refused before."""
    if not os.path.lexists(path):
        return None
    validated = validate_model(model, read(path), display_path(path), problems, path=path)
    return False if validated is None else validated


def _optional_file(path: Path) -> bytes | None:
    """A file the site folder may hold, read as site files are (site_files.py)."""
    if not os.path.lexists(path):
        return None
    return read_site_file(path, display_path(path))


def _bytes_or_empty(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


@dataclass(frozen=True)
class Prepared:
    """A file's YAML data with the tokens substituted, and the problems its links have
    (as `load_site` reports them, in order, before the file's model is validated)."""

    data: dict[str, Any]
    problems: list[Problem]


#: A file changed this close to the moment the build read it could change again within
#: the same tick of the filesystem's clock and keep its stat: such a read is never trusted
#: by stat later (git's "racily clean" rule, with a margin for clocks of 1 s ticks).
RACY_NS = 2_000_000_000


def _stat_signature(stat: os.stat_result) -> tuple[int, int, int, int]:
    # ctime is set by the kernel on every change of the file (content, mtime, rename into
    # place) and cannot be set back by a user: `touch -d`, `cp -p` or a checkout that
    # restores an old mtime and size still changes it.
    return (stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


#: The build cache's record of a file's stat signature and key, by display path.
_STAT = "stat\0"


def _trust_stat(
    cache: EntryCache, display: str, signature: tuple[int, int, int, int], key: str
) -> None:
    """The next build may know the file by this stat: its bytes, read longer than RACY_NS
    after its last change, had this key."""
    cache.put(_STAT + display, "read", (signature, key))


def _listed(folder: Path, cache: EntryCache) -> Folder:
    """Each YAML file in `folder`, sorted by name (`Listed`).

    A file whose inode, size, mtime and ctime are what they were when an earlier build
    read it (longer than RACY_NS before that read) is not read again: its key and cached
    entry are taken from the cache. Any other file is read and hashed, and its key is the
    truth; its bytes are kept for parsing unless the cache knows the key."""
    problems: list[Problem] = []
    names = _yaml_files(folder, problems, required=False)
    # Every file is `folder / name` (_yaml_files): its display path is the folder's, once,
    # joined with its name, as _display_of_file would find it file by file.
    where = _display_of_folder(os.getcwd(), folder)
    # Files are named by strings: a Path is made only for a file that is parsed (20,000
    # Paths were 0.05-0.1 s of a cached 10,000-entry build, and each is two objects the
    # collector walks as long as the entry's `_Lazy` holds it).
    at = os.path.join(str(folder), "")
    # `os.path.join(where, name)`, joined once: 20,000 calls were 0.1 s of an edit.
    shown = "" if where == os.curdir else os.path.join(where, "")
    listed: list[Listed] = []
    for name in names:
        display = shown + name
        try:
            stat = os.stat(at + name)
        except OSError:
            stat = None
        if stat is not None:
            seen = cache.get(_STAT + display, "read")
            if seen is not None and seen[0] == _stat_signature(stat):
                hit = cache.get(seen[1], "loaded")
                if hit is not None:
                    listed.append(Listed(at + name, display, seen[1], None, hit))
                    continue
        path = at + name
        # The moment before the read, which the racy window is measured from: a change
        # after the read stamps the file's ctime with a later tick than its stat's when
        # that stat is older than the read by more than a tick. (Measured from the start
        # of the listing instead, a cold build of freshly written files, which reads them
        # over seconds, left half of them to be read again by the next build.)
        reading = time.time_ns()
        try:
            # A regular file by now (the listing refused anything else), read within its
            # size limit without following a link swapped in since (site_files.py).
            data = read_site_file(path, display)
        except SiteDataError as error:
            listed.append(Listed(path, display, "", None, None, tuple(error.problems)))
            continue
        key = entry_key(display, data)
        racy: tuple[int, int, int, int] | None = None
        if stat is not None:
            if max(stat.st_mtime_ns, stat.st_ctime_ns) < reading - RACY_NS:
                _trust_stat(cache, display, _stat_signature(stat), key)
            else:
                racy = _stat_signature(stat)
        hit = cache.get(key, "loaded")
        listed.append(Listed(path, display, key, None if hit is not None else data, hit, (), racy))
    return Folder(listed, problems)


def settle_racy_reads(files: SiteFiles) -> None:
    """The files read too soon after their last change to be known by their stat later
    (RACY_NS), read once more when that is over: a long build (prime.py) outlasts the
    window, so the next build does not read them again. A fresh clone or copy built at
    once is all such files: the first edit after its cold build read and hashed 20,000
    files again at N = 10,000. Their bytes must still be what the build read (the same
    key), with the stat they had then; the read is then older than the window, as a
    listed read must be (`_listed`)."""
    for folder in (files.content, files.faqs):
        for listed in folder.files:
            if listed.racy is None:
                continue
            reading = time.time_ns()
            _, _, mtime, ctime = listed.racy
            if max(mtime, ctime) >= reading - RACY_NS:
                continue
            try:
                if _stat_signature(os.stat(listed.path)) != listed.racy:
                    continue
                data = read_site_file(listed.path, listed.display)
            except (OSError, SiteDataError):
                continue
            if entry_key(listed.display, data) == listed.key:
                _trust_stat(files.cache, listed.display, listed.racy, listed.key)


class Folder(NamedTuple):
    """content/ or faq/ as listed: its YAML files, and what is wrong with the folder."""

    files: list[Listed]
    problems: list[Problem]


def token_values(config: SiteSource, base_url: str) -> dict[str, str]:
    """What each author token stands for (docs/site-data-format.md, Tokens)."""
    values = {
        "{base_url}": base_url,
        "{discovery_url}": base_url + paths.discovery(config.brand),
        "{brand}": config.brand,
        "{name}": config.name,
        "{website}": config.website.rstrip("/"),
        "{contact}": config.contact,
    }
    assert tuple(values) == TOKENS
    return values


def link_problems(text: str, literal_bases: set[str], base_url: str) -> Iterator[str]:
    """What is wrong with the links written in one authored string (before substitution)."""
    for match in _BRACED.finditer(text):
        token = match.group(0)
        if token in TOKENS:
            continue
        import difflib  # only for a token that is not one: not at every build's start-up

        close = difflib.get_close_matches(token, TOKENS, n=1, cutoff=0.75)
        glued_to_path = text[match.end() : match.end() + 1] == "/"
        if close or glued_to_path:
            advice = f"did you mean {close[0]}?" if close else "tokens are " + ", ".join(TOKENS)
            yield f"unknown token {token}: {advice}"
    for match in _GLUED.finditer(text):
        found = _snippet(text, match)
        yield f"write {match.group(0)}/ with a slash before the path (found {found})"
    for match in _DOUBLED.finditer(text):
        found = _snippet(text, match)
        yield f"write {{{match.group(1)}}}/ with one slash before the path (found {found})"
    if "://" not in text:  # no URL (links.urls finds none without it)
        return
    bases = tuple(sorted(literal_bases))
    for url in links.urls(text):
        message = _url_problem(url, bases, base_url)
        if message is not None:
            yield message


def _has_link_problem(text: str, bases: tuple[str, ...], base_url: str) -> bool:
    """`any(link_problems(text, set(bases), base_url))`, at a fraction of the cost: most
    strings hold no token and no URL, most tokens are known and most URLs repeat."""
    if "{" in text and _SUSPECT_TOKEN.search(text):
        return any(True for _ in link_problems(text, set(bases), base_url))
    if "://" in text:
        return any(_url_problem(url, bases, base_url) is not None for url in links.urls(text))
    return False


# What `_BRACED`, `_GLUED` or `_DOUBLED` would report, in one scan: an unknown token (it
# is a problem only when close to a known one or glued to a path: link_problems decides),
# a token glued to a path, a doubled slash.
_KNOWN_NAMES = "|".join(re.escape(token[1:-1]) for token in TOKENS)
_SUSPECT_TOKEN = re.compile(
    rf"\{{(?!(?:{_KNOWN_NAMES})\}})[A-Za-z_][A-Za-z0-9_-]*\}}"
    r"|\{(?:base_url|website)\}(?:[A-Za-z0-9_.~-]|//)"
)


# Memoized: the same URLs are written in many files (N = 10,000: ~270,000 authored strings).
@lru_cache(maxsize=1 << 16)
def _url_problem(url: str, literal_bases: tuple[str, ...], base_url: str) -> str | None:
    """What is wrong with one URL written in site data (`literal_bases` sorted), if anything."""
    parts = urlsplit(url)
    try:
        host = parts.hostname
    except ValueError:
        return None
    if _is_local(host):
        return (
            f"link to a local server ({url}); write {BASE_URL_TOKEN}/... so that it "
            "points at each deployment"
        )
    if host == _hostname(base_url) and parts.scheme == "http":
        return f"link to the API over http ({url}); write {BASE_URL_TOKEN}/... (HTTPS only)"
    if any(links.api_path(url, base) not in (None, *links.NON_FILE_PATHS)
           for base in literal_bases):  # fmt: skip
        # A literal base URL would only be right for one deployment (and its lock hash
        # would differ between deployments): links into the API are written {base_url}.
        base = next(b for b in literal_bases if links.api_path(url, b) is not None)
        return (
            f"write {BASE_URL_TOKEN} instead of the literal {base} in links into the API "
            f"(found {url})"
        )
    return None


@lru_cache(maxsize=16)
def _hostname(url: str) -> str | None:
    return urlsplit(url).hostname


def _is_local(host: str | None) -> bool:
    """A host that only exists on the author's machine (`make serve` prints one of them):
    localhost names, any loopback address (127.0.0.0/8, ::1) and the unspecified one."""
    if not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):  # RFC 6761 6.3
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def _snippet(text: str, match: re.Match[str]) -> str:
    end = match.end()
    while end < len(text) and not text[end].isspace() and end - match.end() < 30:
        end += 1
    return text[match.start() : end]


def parse_document(
    authoring: Authoring,
    path: Path,
    data: bytes | None,
    problems: list[Problem],
    display: str | None = None,  # display_path(path), when the caller knows it
) -> tuple[DocumentSource, PageContentSource | FeatureContentSource] | None:
    """A content file's models, or None with its problems added to `problems`."""
    display = display or _display_of_file(path)
    raw = _prepared(authoring, path, problems, data, display)
    document = validate_model(DocumentSource, raw, display, problems, path=path)
    if document is None:
        return None
    shape = CONTENT_SHAPES[document.content_type]
    content = validate_model(
        shape, document.content, display, problems, prefix="content", path=path
    )
    return None if content is None else (document, content)


def parse_faq(
    authoring: Authoring,
    path: Path,
    data: bytes | None,
    problems: list[Problem],
    display: str | None = None,  # display_path(path), when the caller knows it
) -> tuple[FaqSource] | None:
    """An FAQ file's model, or None with its problems added to `problems`."""
    display = display or _display_of_file(path)
    raw = _prepared(authoring, path, problems, data, display)
    faq = validate_model(FaqSource, raw, display, problems, path=path)
    return None if faq is None else (faq,)


def document_record(models: tuple[DocumentSource, Any]) -> tuple[str, int, str | None]:
    """What the build cache keeps of a clean content file: (id, order, version)."""
    return (models[0].id, models[0].order, models[0].version)


def faq_record(models: tuple[FaqSource]) -> tuple[str]:
    """What the build cache keeps of a clean FAQ file: (id,)."""
    return (models[0].id,)


def loaded_document(
    parse: Parse, listed: Listed, models: tuple[Any, ...] | None, record: tuple[Any, ...]
) -> LoadedDocument:
    """A content file as loaded: its record (`document_record`) and its models, held or
    (None) parsed again from its file when asked for, by `parse` (`parse_document` with
    the site's authoring rules: one for all the folder's files, not an object each)."""
    entry_id, order, version = record
    lazy = _Lazy(models, listed.path, listed.key, parse)
    return LoadedDocument(entry_id, listed.display, listed.key, order, version, lazy)


def loaded_faq(
    parse: Parse, listed: Listed, models: tuple[Any, ...] | None, record: tuple[Any, ...]
) -> LoadedFaq:
    """An FAQ file as loaded (`loaded_document`; `parse`: `parse_faq`'s)."""
    lazy = _Lazy(models, listed.path, listed.key, parse)
    return LoadedFaq(record[0], listed.display, listed.key, lazy)


def _load_documents(
    folder: Folder, authoring: Authoring, problems: list[Problem], cache: EntryCache
) -> list[LoadedDocument]:
    parse = partial(parse_document, authoring)
    loaded = []
    problems.extend(folder.problems)
    for listed in folder.files:
        hit = _known(listed, cache)
        if isinstance(hit, tuple) and len(hit) == 3:  # (id, order, version) of a clean file
            loaded.append(loaded_document(parse, listed, None, hit))
            continue
        before = len(problems)
        models = _parsed(listed, parse, problems)
        if models is None:
            continue
        record = document_record(models)  # type: ignore[arg-type]
        loaded.append(loaded_document(parse, listed, models, record))
        if listed.key and len(problems) == before:  # only a clean entry is remembered
            cache.put(listed.key, "loaded", record)
    return loaded


def _load_faqs(
    folder: Folder, authoring: Authoring, problems: list[Problem], cache: EntryCache
) -> list[LoadedFaq]:
    parse = partial(parse_faq, authoring)
    loaded = []
    problems.extend(folder.problems)
    for listed in folder.files:
        hit = _known(listed, cache)
        if isinstance(hit, tuple) and len(hit) == 1:  # (id,) of a clean file
            loaded.append(loaded_faq(parse, listed, None, hit))
            continue
        before = len(problems)
        models = _parsed(listed, parse, problems)
        if models is None:
            continue
        record = faq_record(models)  # type: ignore[arg-type]
        loaded.append(loaded_faq(parse, listed, models, record))
        if listed.key and len(problems) == before:
            cache.put(listed.key, "loaded", record)
    return loaded


def _known(listed: Listed, cache: EntryCache) -> Any:
    """The cache's record of a listed file: found by the listing, or put since (prime.py)."""
    if listed.hit is not None or not listed.key:
        return listed.hit
    return cache.get(listed.key, "loaded")


def _parsed(listed: Listed, parse: Parse, problems: list[Problem]) -> tuple[Any, ...] | None:
    if listed.problems:  # it could not be read
        problems.extend(listed.problems)
        return None
    return parse(Path(listed.path), listed.data, problems, listed.display)


def _yaml_files(folder: Path, problems: list[Problem], required: bool = True) -> list[str]:
    """The names of the folder's .yaml files, sorted."""
    if not folder.is_dir():
        if required:
            problems.append(Problem(display_path(folder), None, "folder is missing"))
        return []
    # One scandir, names sorted as strings: glob + sorting Paths was 0.7 s at 20,000 files.
    # Only regular files are listed: a link or a FIFO named .yaml is a problem.
    files = yaml_names(folder, _display_of_folder(os.getcwd(), folder), problems)
    if not files and required:
        problems.append(Problem(display_path(folder), None, "holds no .yaml files"))
    return files


#: What a site without a single document is told.
NO_CONTENT = (
    "no content: add content/ (YAML documents, content/site.yaml the overview) or docs_dir "
    "(a Markdown docs tree, named in site.yaml)"
)


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
    # Ids equal after case folding are one file name on a case-insensitive disk.
    first_seen: dict[str, str] = {}
    for item in [*documents, *faqs]:
        folded = item.id.casefold()
        if folded in first_seen:
            problems.append(
                Problem(
                    item.file, "id", f"duplicate id {item.id!r}, also used by {first_seen[folded]}"
                )
            )
        else:
            first_seen[folded] = item.file


def _read(
    path: Path, problems: list[Problem], data: bytes | None = None, display: str | None = None
) -> dict[str, Any] | None:
    if data is None and not path.is_file():
        problems.append(Problem(display_path(path), None, "file is missing"))
        return None
    try:
        return read_yaml_mapping(path, display or _display_of_file(path), data)
    except SiteDataError as error:
        problems.extend(error.problems)
        return None


def _prepared(
    authoring: Authoring,
    path: Path,
    problems: list[Problem],
    data: bytes | None = None,
    display: str | None = None,
) -> dict[str, Any] | None:
    """A file's YAML data with the tokens substituted, its link problems added."""
    raw = _read(path, problems, data, display)
    if raw is None:
        return None
    prepared = authoring.prepare(path, raw)
    problems.extend(prepared.problems)
    return prepared.data


def _display_of_file(path: Path) -> str:
    """`display_path(path)` for a file, at a fraction of the cost (`os.path.relpath`
    normalizes both paths each time): its folder's is remembered, then its name joined.
    A file cannot hold the working directory, so the two spellings agree."""
    name = path.name
    if name in ("", ".", ".."):
        return display_path(path)
    folder = _display_of_folder(os.getcwd(), path.parent)
    return name if folder == os.curdir else os.path.join(folder, name)


@lru_cache(maxsize=64)
def _display_of_folder(cwd: str, folder: Path) -> str:
    return display_path(folder)


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


def located_strings_containing(value: Any, needle: str) -> list[tuple[str, str]]:
    """`located_strings(value)` less the strings without `needle`, in the same order;
    a location is only spelt out for a string that has it (most have not)."""
    found: list[tuple[str, str]] = []
    if isinstance(value, str):
        if needle in value:
            found.append(("", value))
    elif isinstance(value, dict | list):
        _collect_containing(value, "", needle, found)
    return found


def _collect_containing(
    value: dict[Any, Any] | list[Any], location: str, needle: str, found: list[tuple[str, str]]
) -> None:
    in_list = isinstance(value, list)
    prefix = f"{location}." if location else ""
    for key, item in enumerate(value) if in_list else value.items():  # type: ignore[union-attr]
        if isinstance(item, str):
            if needle not in item:
                continue
        elif not isinstance(item, dict | list):
            continue
        child = f"{location}[{key}]" if in_list else f"{prefix}{key}"
        if isinstance(item, str):
            found.append((child, item))
        else:
            _collect_containing(item, child, needle, found)


def _substitute(value: Any, tokens: dict[str, str], checked: list[str] | None = None) -> Any:
    """`value` with the tokens substituted; `checked` gets each string (as written) that
    may hold a link problem: a token or a URL (`_has_link_problem`)."""
    if isinstance(value, str):
        if "{" in value:
            if checked is not None:
                checked.append(value)
            return _substituted(value, tokens)
        if checked is not None and "://" in value:
            checked.append(value)
        return value
    if isinstance(value, dict | list):
        return _substitute_in(value, tokens, checked)
    return value


def _substituted(text: str, tokens: dict[str, str]) -> str:
    for token, replacement in tokens.items():
        text = text.replace(token, replacement)
        if "{" not in text:  # no token left for the rest to replace
            break
    return text


def _substitute_in(
    value: dict[Any, Any] | list[Any], tokens: dict[str, str], checked: list[str] | None
) -> dict[Any, Any] | list[Any]:
    """A copy of a mapping or list, substituted (`_substitute`), with a call per
    container rather than per value: site data is mostly text."""
    is_dict = isinstance(value, dict)
    items: list[Any] = list(value.values()) if is_dict else list(value)  # type: ignore[union-attr]
    for index, item in enumerate(items):
        if type(item) is str:
            if "{" in item:
                if checked is not None:
                    checked.append(item)
                items[index] = _substituted(item, tokens)
            elif checked is not None and "://" in item:
                checked.append(item)
        elif isinstance(item, dict | list):
            items[index] = _substitute_in(item, tokens, checked)
        elif isinstance(item, str):  # a subclass (YamlDate): as `_substitute` treats it
            items[index] = _substitute(item, tokens, checked)
    return dict(zip(value, items, strict=True)) if is_dict else items


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
