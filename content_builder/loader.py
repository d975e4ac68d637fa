"""site_data/ -> Site: list and read every YAML file, substitute the tokens (tokens.py),
validate each against its model (model_errors.py), join the Markdown pages
(markdown_tree.py), and hand the renderers a Site (loaded.py).

A file the build cache knows by its stat or its bytes is not parsed: its record is
enough until a renderer asks for its models. Errors name the file, the field (dotted
path, list indexes in brackets) and what was expected. Problems of every file are
collected, so one run reports them all.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, Literal, NamedTuple
from urllib.parse import urlsplit

from agent_contract.models import ArchitectureDocument, OnSiteAgentStatus
from agent_contract.uri import url_problem
from content_builder.cache import EntryCache, entry_key
from content_builder.errors import Problem, SiteDataError
from content_builder.loaded import (
    LazyMarkdownModels,
    LazyModels,
    LoadedDocument,
    LoadedFaq,
    MarkdownPages,
    Parse,
    Site,
    display_path,
)
from content_builder.model_errors import M, validate_model
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
from content_builder.tokens import Authoring, token_values
from content_builder.yaml_io import read_yaml_mapping

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


def _overview_document(config: SiteSource) -> LoadedDocument:
    """The generated `site` document (overview.py) of a site that writes none."""
    key = overview_key(config)
    lazy = LazyMarkdownModels(
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
    lazy = LazyMarkdownModels(models, file, key, parse)  # type: ignore[arg-type]
    return LoadedDocument(id, file, key, order, version, lazy, searchable)


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
        read_files=tuple(sorted(markdown.read_files)),
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
    # collector walks as long as the entry's `LazyModels` holds it).
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
    lazy = LazyModels(models, listed.path, listed.key, parse)
    return LoadedDocument(entry_id, listed.display, listed.key, order, version, lazy)


def loaded_faq(
    parse: Parse, listed: Listed, models: tuple[Any, ...] | None, record: tuple[Any, ...]
) -> LoadedFaq:
    """An FAQ file as loaded (`loaded_document`; `parse`: `parse_faq`'s)."""
    lazy = LazyModels(models, listed.path, listed.key, parse)
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
