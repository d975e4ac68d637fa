"""Markdown trees -> content documents: the pages of `docs_dir` and content/*.md.

What the tree decides, the page (markdown_page.py) cannot: each page's id (from its path,
or front matter `id`), its place in the navigation (mkdocs.yml `nav`, else front matter
ordering keys, else folders and file names), its llms.txt group, its human URL in the docs
tool's style, where a relative link leads and which snippet files may be included.

Every file is read with site_files.read_site_file (a regular file, no link followed, under
the size limit). A page's parse goes through the build cache, keyed by its bytes, its
place in the tree, the snippets it includes and where its links lead now (`_document`):
an edit parses one page, a page added parses the pages whose links it changes.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

import yaml

from agent_contract.uri import PATH_SAFE
from content_builder import markdown_docusaurus as docusaurus
from content_builder import markdown_hugo as hugo
from content_builder import markdown_includes
from content_builder import markdown_vitepress as vitepress
from content_builder.cache import EntryCache, entry_key
from content_builder.errors import Problem, SiteDataError
from content_builder.loaded import MarkdownPages
from content_builder.markdown_links import (
    FOLDED,
    INDEX_NAMES,
    SCHEME,
    Tree,
    page_context,
    stem,
    written_url_path,
)
from content_builder.markdown_page import (
    Context,
    Converted,
    convert,
    forbidden_lines,
    read_once,
    split_front_matter,
    split_toml_front_matter,
)
from content_builder.model_errors import validate_model
from content_builder.site_files import MARKDOWN_SUFFIXES, has_markdown, kind, read_site_file
from content_builder.source import DocumentSource, MarkdownPageSource, SiteSource
from content_builder.text_rules import forbidden_problems
from content_builder.yaml_io import read_yaml_mapping

#: The llms.txt group of pages outside any nav group, and of YAML documents.
DEFAULT_GROUP = "Documents"
#: Names llms.txt already uses for a section of its own.
_TAKEN_GROUPS = frozenset({"Interfaces", "Optional", "FAQ", DEFAULT_GROUP})
#: Markdown pages come after YAML documents in publication order (YAML: `order`, 100).
_ORDER_BASE = 1_000_000
_SKIPPED_FOLDERS = frozenset({"node_modules"})
#: The most files and folders a docs tree's walk lists (skipped folders not entered):
#: `docs_dir: /` walked the whole machine for minutes. The largest real trees hold a few
#: thousand; 200,000 entries are listed in about a second.
MAX_TREE_ENTRIES = 200_000
#: Front matter keys that order pages (Docusaurus, VitePress themes, Hugo, just-the-docs).
_ORDER_KEYS = ("sidebar_position", "order", "weight", "nav_order")
_SLUG_RUN = re.compile(r"[^a-z0-9]+")


@dataclass
class _Page:
    tree: Tree
    path: str  # absolute (os) path
    rel: str  # posix path within the tree
    display: str
    data: bytes
    text: str
    front: dict[str, Any]
    body_start: int
    key: str = ""  # the build cache's key of its bytes
    id: str = ""
    order: int = 0
    group: str = DEFAULT_GROUP
    canonical: str = ""


def page_id(rel: str) -> str:
    """A page's id from its path (docs/site-data-format.md): `guide/ssr.md` -> `guide-ssr`,
    `guide/index.md` (or README.md) -> `guide`, the root's index.md -> `home`; lower
    case, every run of other characters one hyphen."""
    parts = stem(rel).split("/")
    if parts and parts[-1].lower() in INDEX_NAMES:
        parts = parts[:-1]
    slug = _SLUG_RUN.sub("-", "-".join(parts).lower()).strip("-")
    return slug or "home"


def page_url_path(rel: str, style: str) -> str:
    """The page's path on the human site: mkdocs directory URLs (`guide/ssr/`), clean
    URLs (`guide/ssr`), or `.html`; an index page is its folder (`guide/`)."""
    base = stem(rel)
    folder, _, name = base.rpartition("/")
    if name.lower() in INDEX_NAMES:
        return f"{folder}/" if folder else ""
    if style == "directory":
        return f"{base}/"
    if style == "html":
        return f"{base}.html"
    return base


def load_markdown(
    site_root: Path,
    config: SiteSource,
    base_url: str,
    tokens: dict[str, str],
    cache: EntryCache,
    problems: list[Problem],
    display_path: Callable[[Path], str],
    make_document: Callable[..., Any],
) -> MarkdownPages:
    """Every Markdown page of the site as a LoadedDocument (`make_document` builds one)."""
    found = MarkdownPages()
    trees = _trees(site_root, config, problems, display_path)
    pages: list[_Page] = []
    for tree in trees:
        pages += _read_pages(tree, problems, display_path, cache)
    if not pages:
        return found
    pages = [page for page in pages if page.front.get("draft") is not True]
    if any(page.tree.tool == "hugo" for page in pages):
        pages = _rendered_by_hugo(pages, found, display_path)
    pages = _assign_ids(pages, problems)  # a page whose id collides: reported, left out
    _assign_order(pages, found)
    ids = {page.path: page.id for page in pages}
    # Hugo finds a page by its path in any case (`/methods/page/title/` is Title.md):
    # under a NUL-prefixed key, which no path has (markdown_links.FOLDED).
    ids.update((FOLDED + page.path.lower(), page.id) for page in pages if page.tree.tool == "hugo")
    urls = {page.canonical.rstrip("/"): page.id for page in pages}
    for page in pages:
        document = _document(page, ids, urls, base_url, tokens, config, cache, problems,
                             found, make_document)  # fmt: skip
        if document is not None:
            found.documents.append(document)
    return found


def _rendered_by_hugo(
    pages: list[_Page], found: MarkdownPages, display_path: Callable[[Path], str]
) -> list[_Page]:
    """`pages` less the Hugo pages Hugo does not render (headless, `build.render: never`,
    their own or cascaded from a branch or the site config: markdown_hugo.py)."""
    ours = [page for page in pages if page.tree.tool == "hugo"]
    site, unread = hugo.site_config(ours[0].tree.root)
    if unread is not None:
        found.warnings.append(Problem(display_path(unread[0]), "cascade", unread[1]))
    rendered, unapplied = hugo.rendered_pages(
        ours[0].tree.root, [(page.rel, page.front) for page in ours], site
    )
    shown = {page.rel: page.display for page in ours}
    found.warnings += [Problem(shown[rel], "cascade", why) for rel, why in unapplied]
    flags = iter(rendered)
    return [page for page in pages if page.tree.tool != "hugo" or next(flags)]


def watch_roots(site_root: Path) -> list[Path]:
    """What `serve --watch` watches: the site folder, its docs tree (which may lie
    outside it), the mkdocs.yml beside that tree (its nav groups llms.txt) and a Hugo
    tree's site config. site.yaml is read leniently: a broken one is the build's to
    report."""
    roots = [site_root]
    try:
        settings = read_yaml_mapping(site_root / "site.yaml", "site.yaml")
    except SiteDataError:
        return roots
    docs_dir = settings.get("docs_dir")
    if not (isinstance(docs_dir, str) and (site_root / docs_dir).is_dir()):
        return roots
    folder = Path(os.path.normpath(os.path.abspath(site_root / docs_dir)))
    found = mkdocs_config(folder, [], str)
    extra = [folder, *([found[0] / "mkdocs.yml"] if found is not None else [])]
    extra += hugo.config_files(folder)  # its cascades decide which pages are published
    watched = [os.path.join(os.path.abspath(site_root), "")]
    for root in extra:  # each unless a root already watched holds it
        if not any(str(root).startswith(prefix) for prefix in watched):
            roots.append(root)
            watched.append(os.path.join(str(root), ""))
    return roots


# --- trees ------------------------------------------------------------------------------


def _trees(
    site_root: Path,
    config: SiteSource,
    problems: list[Problem],
    display_path: Callable[[Path], str],
) -> list[Tree]:
    trees = []
    docs_url = (config.docs_url or config.website).rstrip("/")
    content = site_root / "content"
    if has_markdown(content):
        style = config.docs_url_style or "clean"
        trees.append(Tree(content, content, style, docs_url, None, recursive=False))
    if config.docs_dir is not None:
        root = site_root / config.docs_dir
        if not root.is_dir():
            problems.append(
                Problem(display_path(site_root / "site.yaml"), "docs_dir",
                        f"folder {display_path(root)} does not exist")
            )  # fmt: skip
            return trees
        root = Path(os.path.normpath(os.path.abspath(root)))
        mkdocs = mkdocs_config(root, problems, display_path)
        if mkdocs is not None:
            folder, settings = mkdocs
            style = config.docs_url_style or (
                "directory" if settings.get("use_directory_urls", True) is not False else "html"
            )
            nav = _nav(settings.get("nav"))
            include_root = _include_root(site_root, config, root, problems, display_path)
            includes = markdown_includes.configured(settings, folder, include_root)
            trees.append(Tree(root, folder, style, docs_url, nav, includes=includes))
        elif docusaurus.is_docusaurus(root):
            website = config.website.rstrip("/")
            url = (config.docs_url or f"{website}/{docusaurus.ROUTE_BASE}").rstrip("/")
            style = config.docs_url_style or "clean"
            trees.append(Tree(root, root, style, url, None, tool="docusaurus", site_url=website))
        elif hugo.is_hugo(root):
            style = config.docs_url_style or "directory"  # Hugo's pretty URLs
            trees.append(Tree(root, root, style, docs_url, None, tool="hugo"))
        else:
            style = config.docs_url_style or "clean"
            trees.append(Tree(root, root, style, docs_url, None))
    return trees


def _include_root(
    site_root: Path,
    config: SiteSource,
    tree: Path,
    problems: list[Problem],
    display_path: Callable[[Path], str],
) -> Path | None:
    """site.yaml's `include_root`: an existing folder holding the docs tree, or a problem."""
    if config.include_root is None:
        return None
    # As docs_dir: lexical, absolute; read_include checks every file's real path too.
    folder = Path(os.path.normpath(os.path.abspath(site_root / config.include_root)))
    if not folder.is_dir() or not os.path.join(tree, "").startswith(os.path.join(folder, "")):
        problems.append(
            Problem(display_path(site_root / "site.yaml"), "include_root",
                    f"{config.include_root!r} is not a folder holding the docs tree "
                    f"({display_path(tree)})")
        )  # fmt: skip
        return None
    return folder


class _IgnoringLoader(yaml.SafeLoader):
    """mkdocs.yml holds tags for Python objects (`!!python/name:...`) and plugins'
    own (`!ENV`, `!relative`): read as null, never constructed, nothing executed."""


_IgnoringLoader.add_multi_constructor("", lambda loader, suffix, node: None)


def mkdocs_config(
    root: Path, problems: list[Problem], display_path: Callable[[Path], str]
) -> tuple[Path, dict[str, Any]] | None:
    """mkdocs.yml beside the docs tree (in its parent, naming it as its docs_dir) or in it."""
    for folder in (root.parent, root):
        path = folder / "mkdocs.yml"
        if not os.path.lexists(path):
            continue
        display = display_path(path)
        try:
            data = read_site_file(path, display)
            settings = yaml.load(data.decode("utf-8"), Loader=_IgnoringLoader)
        except SiteDataError as error:
            problems.extend(error.problems)
            return None
        except (yaml.YAMLError, UnicodeDecodeError, RecursionError) as error:
            problems.append(Problem(display, None, f"invalid YAML: {error}"))
            return None
        if not isinstance(settings, dict):
            continue
        docs_dir = settings.get("docs_dir", "docs")
        if folder == root.parent and (
            not isinstance(docs_dir, str) or os.path.normpath(folder / docs_dir) != str(root)
        ):
            continue
        return folder, settings
    return None


def _nav(nav: Any) -> dict[str, tuple[int, str, str | None]] | None:
    """mkdocs `nav` -> page path -> (position, top-level group, its title in the nav);
    None without a nav."""
    if not isinstance(nav, list):
        return None
    found: dict[str, tuple[int, str, str | None]] = {}
    budget = [10_000]  # a nav made of aliases would be walked without end

    def walk(items: Any, group: str) -> None:
        if not isinstance(items, list):
            items = [items]
        for item in items:
            budget[0] -= 1
            if budget[0] < 0:
                return
            if isinstance(item, str):
                add(item, group, None)
            elif isinstance(item, dict):
                for title, value in item.items():
                    if isinstance(value, str):
                        add(value, group, " ".join(str(title).split()) or None)
                    elif isinstance(value, list):
                        walk(value, group if group != DEFAULT_GROUP else _group_name(title))

    def add(target: str, group: str, title: str | None) -> None:
        if SCHEME.match(target) or target.startswith("/"):
            return  # an external link in the nav
        rel = posixpath.normpath(target)
        if rel not in found:
            found[rel] = (len(found), group, title)

    walk(nav, DEFAULT_GROUP)
    return found


def _group_name(title: Any) -> str:
    name = " ".join(str(title).split()) or DEFAULT_GROUP
    name = re.sub(r"[\[\]]", "", name)[:80] or DEFAULT_GROUP
    return name if name not in _TAKEN_GROUPS - {DEFAULT_GROUP} else f"{name} (docs)"


# --- reading ------------------------------------------------------------------------------


def _read_pages(
    tree: Tree, problems: list[Problem], display_path: Callable[[Path], str], cache: EntryCache
) -> list[_Page]:
    pages = []
    for path, rel in _walk(tree, problems, display_path):
        display = display_path(Path(path))
        try:
            data = read_site_file(path, display)
        except SiteDataError as error:
            problems.extend(error.problems)
            continue
        try:
            text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
        except UnicodeDecodeError as error:
            problems.append(Problem(display, None, f"not UTF-8 text ({error.reason})"))
            continue
        text = text.removeprefix("\ufeff")
        # A clean page's front matter, by its bytes: a warm build reads no YAML.
        key = entry_key(display, data)
        known = cache.get(key, "markdown_front")
        if known is not None:
            front, body_start = known
            pages.append(_Page(tree, path, rel, display, data, text, front, body_start, key))
            continue
        bad = forbidden_lines(text)
        if bad:
            problems += [Problem(display, None, f"line {line}: {message}") for line, message in bad]
            continue
        yaml_text, body_start = split_front_matter(text)
        front: dict[str, Any] = {}
        toml_text, toml_end = (None, 0) if yaml_text is not None else split_toml_front_matter(text)
        if toml_text is not None:
            body_start = toml_end
            try:
                front = _toml_front_matter(toml_text)
            except ValueError as error:
                problems.append(
                    Problem(
                        display, None, f"front matter: invalid TOML ({_page_lines(str(error))})"
                    )
                )
                continue
            # TOML's escapes (`\u001b`) write what the page's text may not hold, as
            # YAML's do: checked as read_yaml_mapping checks YAML's.
            forbidden = forbidden_problems(toml_text, front, display)
            if forbidden:
                problems += [
                    Problem(p.file, p.field, "front matter: " + p.message) for p in forbidden
                ]
                continue
        elif yaml_text is not None and yaml_text.strip():
            try:
                # Hugo's docs keep `---`, a comment, `---` on purpose: no fields.
                front = read_yaml_mapping(
                    Path(path), display, yaml_text.encode("utf-8"), empty_ok=True
                )
            except SiteDataError as error:
                problems += [
                    Problem(p.file, p.field, "front matter: " + _page_lines(p.message))
                    for p in error.problems
                ]
                continue
        cache.put(key, "markdown_front", (front, body_start))
        pages.append(_Page(tree, path, rel, display, data, text, front, body_start, key))
    return pages


def _toml_front_matter(text: str) -> dict[str, Any]:
    """Hugo's TOML front matter as the data YAML front matter gives: its dates and times
    as their text (a YAML page's unquoted date is text too)."""
    return json.loads(json.dumps(tomllib.loads(text), default=str))  # type: ignore[no-any-return]


def _page_lines(message: str) -> str:
    """A front matter problem's `line N` counted in the page (the YAML or TOML starts on line 2)."""
    return _YAML_LINE.sub(lambda match: f"line {int(match.group(1)) + 1}", message)


_YAML_LINE = re.compile(r"\bline (\d+)")


def _walk(
    tree: Tree, problems: list[Problem], display_path: Callable[[Path], str]
) -> list[tuple[str, str]]:
    """(path, posix path within the tree) of every .md page, sorted; a link or anything
    but a regular file named .md is a problem, a linked folder is not followed (and
    said so)."""
    found: list[tuple[str, str]] = []
    stack = [""]
    seen = 0
    while stack:
        rel_folder = stack.pop()
        folder = os.path.join(tree.root, rel_folder) if rel_folder else str(tree.root)
        try:
            with os.scandir(folder) as entries:
                listed = sorted(entries, key=lambda entry: entry.name)
        except OSError as error:
            problems.append(Problem(display_path(Path(folder)), None, f"cannot list: {error}"))
            continue
        seen += len(listed)
        if seen > MAX_TREE_ENTRIES:
            problems.append(
                Problem(display_path(tree.root), None,
                        f"holds more than {MAX_TREE_ENTRIES:,} files and folders: not a docs "
                        "tree (is site.yaml's docs_dir the folder of the docs?)")
            )  # fmt: skip
            return []
        for entry in listed:
            rel = f"{rel_folder}/{entry.name}" if rel_folder else entry.name
            if entry.is_dir(follow_symlinks=False):
                if (
                    tree.recursive
                    and not entry.name.startswith(".")
                    and (entry.name not in _SKIPPED_FOLDERS)
                    and not (tree.tool == "docusaurus" and entry.name.startswith("_"))
                ):
                    stack.append(rel)
                continue
            if not entry.name.endswith(MARKDOWN_SUFFIXES):
                continue
            if tree.tool == "docusaurus" and docusaurus.is_partial(rel):
                continue  # a partial, included by the pages that import it
            if not entry.is_file(follow_symlinks=False):
                mode = entry.stat(follow_symlinks=False).st_mode
                problems.append(
                    Problem(display_path(Path(entry.path)), None,
                            f"is {kind(mode)}, not a regular file: the build reads only "
                            "regular files inside the docs tree (docs/security.md)")
                )  # fmt: skip
                continue
            found.append((entry.path, rel))
    found.sort(key=lambda item: item[1])
    return found


# --- ids, order, groups -------------------------------------------------------------------


def _assign_ids(pages: list[_Page], problems: list[Problem]) -> list[_Page]:
    seen: dict[str, _Page] = {}
    kept = []
    for page in pages:
        chosen = page.front.get("id")
        if page.tree.tool == "docusaurus":
            # Docusaurus' `id` names the page within its folder (`i18n/tutorial`).
            identifier = docusaurus.doc_id(page.rel, chosen)
            page.id = page_id(identifier)
        else:
            page.id = str(chosen) if isinstance(chosen, str | int) else page_id(page.rel)
        folded = page.id.casefold()
        if folded in seen:
            other = seen[folded]
            problems.append(
                Problem(page.display, "id",
                        f"id {page.id!r} is also the id of {other.display} ({other.id!r}); "
                        "ids come from the path (docs/site-data-format.md) and must differ "
                        "after case folding: rename one, or set `id` in its front matter")
            )  # fmt: skip
            continue
        seen[folded] = page
        kept.append(page)
        if page.tree.tool == "docusaurus":
            path = docusaurus.url_path(page.rel, identifier, page.front.get("slug"))
            page.canonical = page.tree.docs_url + "/" + path
            continue
        url_path = page_url_path(page.rel, page.tree.style)
        if page.tree.tool == "hugo":
            # What a URL cannot hold as written (`é`, `?`, a space) percent-encoded, as
            # for a slug below.
            hugo_path = written_url_path(hugo.url_path(url_path, page.front))
            page.canonical = page.tree.docs_url + "/" + hugo_path
            continue
        # A file name is not a URL: `a?b.md` is served at `a%3Fb/` (mkdocs' urlquote), not
        # at a query; a space, `%` or `é` in a name is written as the docs tool writes it.
        url_path = quote(url_path, safe=PATH_SAFE)
        slug = page.front.get("slug")
        if isinstance(slug, str) and slug.strip() and " " not in slug:
            # Docusaurus: the page's URL path, from the site's root when absolute.
            folder = page.rel.rpartition("/")[0]
            written = slug.lstrip("/") if slug.startswith("/") else f"{folder}/{slug}".lstrip("/")
            url_path = written_url_path(written)
        page.canonical = page.tree.docs_url + "/" + url_path
    return kept


def _order_value(front: dict[str, Any]) -> float:
    for key in _ORDER_KEYS:
        value = front.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return float("inf")


def _assign_order(pages: list[_Page], found: MarkdownPages) -> None:
    categories: dict[str, dict[str, Any]] = {}  # a Docusaurus folder -> its _category_

    def category(tree: Tree, folder: str) -> dict[str, Any]:
        if folder not in categories:
            categories[folder] = docusaurus.category(os.path.join(tree.root, folder))
        return categories[folder]

    def folders(page: _Page, folder: str) -> list[Any]:
        parts = folder.split("/") if folder else []
        if page.tree.tool != "docusaurus":
            return parts
        # Docusaurus: a folder's `_category_` position orders it among its siblings.
        return [
            (docusaurus.position(category(page.tree, "/".join(parts[: depth + 1]))), part)
            for depth, part in enumerate(parts)
        ]

    def folder_key(page: _Page) -> tuple[Any, ...]:
        folder, _, name = page.rel.rpartition("/")
        is_index = stem(name).lower() in INDEX_NAMES
        return (folders(page, folder), not is_index, _order_value(page.front), name)

    def group_of(page: _Page) -> str:
        top = page.rel.split("/", 1)[0]
        label = category(page.tree, top).get("label") if page.tree.tool == "docusaurus" else None
        if isinstance(label, str) and label.strip():
            return _group_name(label)  # the sidebar's label for the folder
        return _group_name(top.replace("-", " ").replace("_", " ").capitalize())

    def key(page: _Page) -> tuple[Any, ...]:
        nav = page.tree.nav
        if nav is not None and page.rel in nav:
            return (0, nav[page.rel][0])
        return (1, folder_key(page))

    ordered = sorted(pages, key=lambda page: (str(page.tree.root), key(page)))
    for rank, page in enumerate(ordered):
        page.order = _ORDER_BASE + rank
        nav = page.tree.nav
        if nav is not None:
            page.group = nav[page.rel][1] if page.rel in nav else DEFAULT_GROUP
        elif "/" in page.rel:
            page.group = group_of(page)
        found.groups[page.id] = page.group
        if page.group != DEFAULT_GROUP and page.group not in found.group_order:
            found.group_order.append(page.group)


# --- one page -------------------------------------------------------------------------


def _document(
    page: _Page,
    ids: dict[str, str],
    urls: dict[str, str],
    base_url: str,
    tokens: dict[str, str],
    config: SiteSource,
    cache: EntryCache,
    problems: list[Problem],
    found: MarkdownPages,
    make_document: Callable[..., Any],
) -> Any:
    """The page's LoadedDocument, parsed only when the build cache does not know it.

    What a page's parse depends on, beyond the site's settings (the cache's own): its
    bytes, its id, URL and nav entry, the tree's URL style and folders, the snippets it
    includes and where each of its links leads. The last two are known only from a
    parse, so the cache keeps, by the rest, the snippet names and link destinations the
    page had: a build resolves those again (string work) and finds the page's entry by
    the results. An edit parses one page; adding a page parses only the pages whose
    links now lead elsewhere."""
    warnings: list[Problem] = []
    context = page_context(
        page.tree, page.path, page.display, ids, base_url, tokens, config.broken_links,
        warnings, urls, page.canonical,
    )  # fmt: skip
    # Read once for the page: its key, its parse and the files it read all ask.
    context = replace(context, read_snippet=read_once(context.read_snippet))
    tree = page.tree
    own = "\0".join(
        map(str, (page.key, page.id, page.canonical, (tree.nav or {}).get(page.rel),
                  tree.style, tree.root, tree.project, tree.docs_url, tree.tool, tree.site_url,
                  tree.includes))
    )  # fmt: skip

    def snippet_part(names: list[str]) -> str:
        return "\0".join(str(context.read_snippet(name)[0::2]) for name in names)

    def key_of(names: list[str], destinations: list[str]) -> str:
        resolved = [context.resolve_link(destination, None) for destination in destinations]
        text = f"{own}\0{snippet_part(names)}\0{resolved!r}"
        return entry_key(page.display, text.encode("utf-8"))

    key = ""
    known = cache.get(page.key, "markdown_used")  # (snippet names, link destinations)
    if known is not None:
        kept = len(warnings)
        key = key_of(*known)
        if cache.get(key, "loaded") is None:
            del warnings[kept:]  # the parse reports them again
            key = ""
    used_names: list[str] = []
    used_links: list[str] = []
    recording = _recording(context, used_names, used_links)

    def parse(problems_out: list[Problem]) -> tuple[Any, ...] | None:
        return _models(page, recording, problems_out, warnings)

    models = None
    if not key:
        before = len(problems)
        models = parse(problems)
        if models is None:
            return None
        kept = len(warnings)
        key = key_of(used_names, used_links)
        del warnings[kept:]
        if len(problems) == before and not warnings:
            cache.put(page.key, "markdown_used", (list(used_names), list(used_links)))
            cache.put(key, "loaded", (page.id, models[0].version))
    found.warnings += warnings
    names = used_names if models is not None else (known[0] if known is not None else [])
    found.read_files.update(_files_read(context, names))
    version = page.front.get("version") if isinstance(page.front.get("version"), str) else None
    if models is not None:
        version = models[0].version
    searchable = not excluded_from_search(page.front)
    return make_document(page.id, page.display, key, page.order, version, models, parse, searchable)


def excluded_from_search(front: dict[str, Any]) -> bool:
    """Whether a page's front matter keeps it out of the site's search, as its docs tool
    reads it: mkdocs-material `search: {exclude: true}`, VitePress `search: false`,
    Docusaurus `unlisted: true` (listed in no sidebar, sitemap or search). Published all
    the same; left out of search-index.json and the sharded index."""
    search = front.get("search")
    return (
        search is False
        or (isinstance(search, dict) and search.get("exclude") is True)
        or front.get("unlisted") is True
    )


def _files_read(context: Context, names: list[str]) -> Iterator[str]:
    """The files the snippets and includes `names` were read from (their key is the
    file's path and a hash of its bytes; one not read has no text)."""
    for name in names:
        key, text, _ = context.read_snippet(name)
        if key is not None and text is not None and os.path.isabs(key.split("\0", 1)[0]):
            yield key.split("\0", 1)[0]


def _recording(context: Context, names: list[str], links: list[str]) -> Context:
    """`context`, noting each snippet name and link destination the parse asks about."""

    def read_snippet(name: str) -> tuple[str | None, str | None, str | None]:
        names.append(name)
        return context.read_snippet(name)

    def resolve_link(destination: str, line: int | None) -> tuple[str | None, str | None]:
        links.append(destination)
        return context.resolve_link(destination, line)

    return replace(context, resolve_link=resolve_link, read_snippet=read_snippet)


def _models(
    page: _Page, context: Context, problems: list[Problem], warnings: list[Problem]
) -> tuple[Any, ...] | None:
    lead = vitepress.home_text(page.front)
    converted: Converted = convert(
        page.text, page.body_start, context, page.rel.endswith(".mdx"), lead
    )
    found = [Problem(page.display, None, f"line {line}: {message}")
             for line, message in converted.problems]  # fmt: skip
    problems += found
    warnings += [Problem(page.display, None, f"line {line}: {message}")
                 for line, message in converted.warnings]  # fmt: skip
    front = page.front
    nav = page.tree.nav or {}
    nav_title = nav[page.rel][2] if page.rel in nav else None
    title = (
        front.get("title")
        or converted.title
        or nav_title
        or vitepress.hero_name(front)
        or _title_from_name(page.rel)
    )
    # The author's description as written (a one-line field: a line break is refused);
    # the first paragraph, when it stands in, as one bounded line.
    description = front.get("description") or (
        _bounded(converted.description) if converted.description else title
    )
    keywords = front.get("keywords", [])
    if isinstance(keywords, str):
        keywords = [part.strip() for part in keywords.split(",") if part.strip()]
    raw: dict[str, Any] = {
        "id": page.id,
        "title": title,
        "content_type": front.get("content_type", "page"),
        "description": description,
        "canonical_url": front.get("canonical_url") or page.canonical,
        "order": page.order,
        "keywords": keywords,
        "content": {},
    }
    for name in ("version", "language"):
        if name in front:
            raw[name] = front[name]
    document = validate_model(DocumentSource, raw, page.display, problems)
    if document is None or found:
        return None
    if document.content_type == "feature":
        problems.append(
            Problem(page.display, "content_type",
                    "a Markdown page is a page, faq or product document; 'feature' has a "
                    "body of its own shape (write it in YAML)")
        )  # fmt: skip
        return None
    sections = [
        {"title": section_title or document.title, "body": body}
        for section_title, body in converted.sections
    ] or [{"title": document.title, "body": ""}]
    content = validate_model(
        MarkdownPageSource,
        {"headline": document.title, "sections": sections},
        page.display,
        problems,
        prefix="content",
    )
    return None if content is None else (document, content)


def _title_from_name(rel: str) -> str:
    name = stem(rel).rsplit("/", 1)[-1]
    if name.lower() in INDEX_NAMES:
        name = rel.rsplit("/", 2)[-2] if "/" in rel else "Home"
    return name.replace("-", " ").replace("_", " ").capitalize()


def _bounded(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0].rstrip(",;:") + "…"


# --- links and snippets ---------------------------------------------------------------
