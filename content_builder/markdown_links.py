"""Where a Markdown page's links lead, and which snippets it may include.

A relative link names another page of the tree (rewritten to its published URL), a file
of the human site (an image, a download: its absolute URL), or nothing (a broken link:
an error naming the page and line, or a warning). Snippets (`--8<--`) are read only from
inside the tree's folder, through site_files.read_site_file. What counts as a page file,
an index page, and the tree itself (its folders, URL style, nav) are defined here for
markdown_tree.py, which reads the tree.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote, urljoin

from agent_contract import paths
from agent_contract.uri import PATH_SAFE
from content_builder.errors import Problem, SiteDataError
from content_builder.markdown_includes import Includes, hidden_part, read_include, real_folder
from content_builder.markdown_page import INCLUDED, PAGE_RELATIVE, Context, forbidden_lines
from content_builder.site_files import MARKDOWN_SUFFIXES, read_site_file


def stem(rel: str) -> str:
    return rel[: -len(".mdx")] if rel.endswith(".mdx") else rel.removesuffix(".md")


#: A folder's own page: index.md, README.md, _index.md (Hugo).
INDEX_NAMES = frozenset({"index", "readme", "_index"})
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
#: The prefix of a Hugo page's path in lower case among a tree's ids (Hugo's lookups
#: ignore case); no path starts with NUL.
FOLDED = "\0"
_LINE_RANGE = re.compile(r"(?::-?\d*){1,2}$")


#: What a URL path an author wrote keeps as written: a path's characters (RFC 3986 3.3)
#: and the `%` of an escape already written.
_WRITTEN_SAFE = PATH_SAFE + "%"


def written_url_path(path: str) -> str:
    """A URL path an author wrote (a slug, Hugo's `url`) as a URL path: what a URL cannot
    hold (`é`, `?`, `#`) percent-encoded as the docs tools' routers and browsers write it
    (`/café` is served at `/caf%C3%A9`), the rest as written."""
    return quote(path, safe=_WRITTEN_SAFE)


@dataclass(frozen=True)
class Tree:
    root: Path  # the pages' folder
    project: Path  # what snippets may include: mkdocs.yml's folder, else root
    style: str  # directory | clean | html
    docs_url: str  # the human pages' base URL, no trailing slash
    nav: (
        dict[str, tuple[int, str, str | None]] | None
    )  # mkdocs nav: path -> (position, group, title)
    recursive: bool = True
    #: "docusaurus" when the tree is a Docusaurus site's (markdown_docusaurus.py), else "".
    tool: str = ""
    #: The human site's root URL, no trailing slash: where a Docusaurus link from the
    #: site's root (`/community/support`, `/img/x.png`) leads.
    site_url: str = ""
    #: What `{! file !}` / `{* file *}` lines include (markdown_includes.py); None: text.
    includes: Includes | None = None


def page_context(
    tree: Tree,
    page_path: str,
    display: str,
    ids: dict[str, str],
    base_url: str,
    tokens: dict[str, str],
    broken_links: str,
    warnings: list[Problem],
    urls: dict[str, str] | None = None,
    page_url: str = "",
) -> Context:
    """What the page at `page_path` needs of its tree: where its links lead (`ids`: every
    page's path -> id; `urls`: every page's human URL, no trailing slash -> id, and
    `page_url` this page's, for Docusaurus' URL links), its images' URLs, the snippets
    it may include."""
    docusaurus = tree.tool == "docusaurus"
    hugo = tree.tool == "hugo"
    root = str(tree.root)
    folder = os.path.dirname(page_path)
    page_stem, name = stem(page_path), stem(os.path.basename(page_path))
    # mkdocs leaves a link that names no .md file to the browser (from the page's URL);
    # Hugo's link render hook finds every link's page from the page's file (GetPage).
    url_folder = (
        page_stem
        if tree.style == "directory" and name.lower() not in INDEX_NAMES and not hugo
        else None
    )

    def target_of(dest: str) -> tuple[str, str] | None:
        """(absolute path, fragment) a relative destination names, or None to keep it."""
        if not dest or dest.startswith(("#", "//", "{")) or SCHEME.match(dest):
            return None
        path, _, fragment = dest.partition("#")
        path = unquote(path.split("?", 1)[0])
        if path.startswith("/"):  # VitePress, Docusaurus: from the tree's root
            joined = os.path.join(root, path.lstrip("/"))
        elif url_folder is not None and not path.lower().endswith(MARKDOWN_SUFFIXES):
            # mkdocs rewrites links to .md files only; any other relative link is left
            # to the browser, which resolves it against the page's directory URL
            # (async.md is served at async/: `../advanced/x` is advanced/x).
            joined = os.path.join(url_folder, path)
        else:
            joined = os.path.join(folder, path)
        normal = os.path.normpath(joined)
        if path.endswith("/") or not path:
            normal = os.path.join(normal, "")
        return normal, fragment

    def by_url(dest: str) -> str | None:
        """Docusaurus: a link that names no file is a URL, resolved as the browser
        resolves it from the page's URL (`./installation`, `/docs/sidebar/items`), and
        leads to the page published at that URL, slug and all."""
        path, _, fragment = dest.partition("#")
        joined = urljoin(page_url, path.split("?", 1)[0]) if path else page_url
        hit = (urls or {}).get(joined.rstrip("/"))
        if hit is None:
            return None
        return f"{base_url}{paths.document(hit)}{'#' + fragment if fragment else ''}"

    def resolve_link(dest: str, line: int | None = None) -> tuple[str | None, str | None]:
        if dest.startswith("?") and page_url:
            # The page itself with a query (a search link): its human page.
            return page_url + dest, None
        if docusaurus and dest.startswith("pathname://"):
            # Docusaurus' escape hatch: a path on the site, left to the browser.
            return tree.site_url + "/" + dest[len("pathname://") :].lstrip("/"), None
        found = target_of(dest)
        if found is None:
            return None, None
        target, fragment = found
        anchor = f"#{fragment}" if fragment else ""
        name = os.path.basename(target.rstrip(os.sep))
        extension = os.path.splitext(name)[1].lower() if not target.endswith(os.sep) else ""
        if docusaurus and extension not in MARKDOWN_SUFFIXES and extension in ("", ".html"):
            hit = by_url(dest)
            if hit is not None:
                return hit, None
        if extension in MARKDOWN_SUFFIXES and docusaurus:
            # Docusaurus tries a file link from the page's folder, then from the
            # content root; one from `/` names the content root, then the site folder
            # (`/docs/x.mdx`): @docusaurus/utils, resolveMarkdownLinkPathname.
            relative = unquote(dest.partition("#")[0].split("?", 1)[0])
            bases = (root, str(tree.root.parent)) if relative.startswith("/") else (folder, root)
            candidates = [os.path.normpath(os.path.join(b, relative.lstrip("/"))) for b in bases]
        elif extension in (*MARKDOWN_SUFFIXES, ".html", ""):
            candidates = _page_files(target, extension)
        else:  # a file that is not a page (an image, a download): the human site's
            return _asset_url(tree, target), None
        if hugo:
            # Hugo's link render hook (`.Page.GetPage`): a path from the page's folder,
            # then from the content root, in any case; `x/` may be the page x.md.
            rooted = target_of("/" + dest) if not dest.startswith(("/", ".")) else None
            targets = [target, rooted[0]] if rooted else [target]
            candidates += _page_files(rooted[0], extension) if rooted else []
            candidates += [t.rstrip(os.sep) + ".md" for t in targets if t.endswith(os.sep)]
            candidates += [FOLDED + candidate.lower() for candidate in candidates]
        for candidate in candidates:
            hit = ids.get(candidate)
            if hit is not None:
                return f"{base_url}{paths.document(hit)}{anchor}", None
        if hugo and dest.partition("#")[0]:
            # Hugo publishes lower-case URLs: a link by URL finds its page so.
            hit = by_url(dest.partition("#")[0].lower() + anchor)
            if hit is not None:
                return hit, None
        if dest.startswith("/") and extension not in MARKDOWN_SUFFIXES:
            # A path on the site that is no page of the tree (the blog, a download
            # area): a link to the human site, as the docs tool would publish it.
            if docusaurus:  # from the site's root, not the docs route
                return tree.site_url + dest, None
            return _asset_url(tree, target), None
        inside = target.startswith(os.path.join(root, "")) or target.rstrip(os.sep) == root
        where = (
            f"no page {os.path.relpath(candidates[0], root)} in the docs tree"
            if inside
            else "it leads outside the docs tree"
        )
        message = f"relative link to {dest!r}: {where}"
        if broken_links == "warn":
            at = "" if line is None else f"line {line}: "
            warnings.append(Problem(display, None, at + message + " (kept as written)"))
            return None, None
        return None, message + " (site.yaml broken_links: warn makes this a warning)"

    def resolve_image(src: str) -> str | None:
        if docusaurus and src.startswith("/") and not src.startswith("//"):
            return tree.site_url + src  # static/ is served at the site's root
        found = target_of(src)
        return None if found is None else _asset_url(tree, found[0])

    project = real_folder(str(tree.project))

    def read_snippet(name: str) -> tuple[str | None, str | None, str | None]:
        if name.startswith(INCLUDED) and tree.includes is not None:
            return read_include(tree.includes, name[len(INCLUDED) :])
        # An MDX import is relative to the importing page alone; a pymdownx snippet is
        # looked up from the project, the docs root, then the page's folder.
        bases = (folder,) if name.startswith(PAGE_RELATIVE) else (str(tree.project), root, folder)
        name = name.removeprefix(PAGE_RELATIVE)
        clean = _LINE_RANGE.sub("", name)  # `file.md:1:3`: pymdownx's line ranges
        for base in bases:
            candidate = os.path.normpath(os.path.join(base, clean))
            if not os.path.lexists(candidate):
                continue
            real = os.path.realpath(candidate)
            if not real.startswith(project) or not candidate.startswith(
                os.path.join(str(tree.project), "")
            ):
                return (
                    None,
                    None,
                    (
                        f"snippet {name!r} is outside the docs tree ({tree.project}): only files "
                        "inside it are included"
                    ),
                )
            hidden = hidden_part(candidate, str(tree.project)) or hidden_part(real, project)
            if hidden:
                # The tree is often the whole checkout (mkdocs.yml at its root): .git/config
                # holds the CI's token, .env its secrets. Pages in hidden folders are never
                # read, and neither are snippets.
                message = (f"snippet {name!r} is inside {hidden!r}, a hidden file or folder: "
                           "those (.git, .env, ...) are never included")  # fmt: skip
                return None, None, message
            try:
                data = read_site_file(candidate, candidate)
            except SiteDataError as error:
                return None, None, f"snippet {name!r}: {error.problems[0].message}"
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                return None, None, f"snippet {name!r} is not UTF-8 text"
            bad = forbidden_lines(text)
            if bad:
                return None, None, f"snippet {name!r}, line {bad[0][0]}: {bad[0][1]}"
            key = candidate + "\0" + hashlib.sha256(data).hexdigest()
            return key, text, None
        outside = os.path.normpath(os.path.join(str(tree.project), clean))
        if not outside.startswith(os.path.join(str(tree.project), "")):
            return (
                None,
                None,
                (
                    f"snippet {name!r} is outside the docs tree ({tree.project}): only files "
                    "inside it are included"
                ),
            )
        if broken_links == "warn":  # as pymdownx.snippets' default: skipped
            warnings.append(Problem(display, None, f"snippet {name!r} not found (skipped)"))
            return f"missing\0{name}", "", None
        return (
            None,
            None,
            (
                f"snippet {name!r} not found in the docs tree (site.yaml broken_links: warn "
                "makes this a warning)"
            ),
        )

    syntaxes = frozenset(
        name
        for name, on in (("include", tree.includes and tree.includes.include),
                         ("variants", tree.includes and tree.includes.variants))
        if on
    )  # fmt: skip
    return Context(resolve_link, resolve_image, read_snippet, tokens, syntaxes)


def _page_files(target: str, extension: str) -> list[str]:
    """The files a link to `target` may name, in the order docs tools try them: the file,
    an `.html` page's source, an extensionless link's `.md`/`.mdx`, a folder's page."""
    if extension in MARKDOWN_SUFFIXES:
        return [target]
    if extension == ".html":
        return [target[:-5] + suffix for suffix in MARKDOWN_SUFFIXES] + _folder_pages(target[:-5])
    if target.endswith(os.sep):
        return _folder_pages(target)
    return [target + suffix for suffix in MARKDOWN_SUFFIXES] + _folder_pages(target)


def _folder_pages(folder: str) -> list[str]:
    """The files that are a folder's page, in the order docs tools look for them."""
    return [
        os.path.join(folder, name + suffix)
        for name in ("index", "README", "_index")
        for suffix in MARKDOWN_SUFFIXES
    ]


def _asset_url(tree: Tree, target: str) -> str | None:
    """The human site's URL of a file of the tree (VitePress serves public/ at the root);
    None for a path outside the tree (the link is kept as written)."""
    rel = os.path.relpath(target, tree.root).replace(os.sep, "/")
    if rel == ".." or rel.startswith("../"):
        return None
    if rel.startswith("public/"):
        rel = rel[len("public/") :]
    suffix = "/" if target.endswith(os.sep) and rel != "." else ""
    # The path was decoded to find the file: encoded again, a link's `%20` or `%0A` is
    # published as written, never as a space or a line break inside the link.
    return f"{tree.docs_url}/{'' if rel == '.' else quote(rel, safe=PATH_SAFE)}{suffix}"
