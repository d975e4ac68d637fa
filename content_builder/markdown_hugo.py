"""What a Hugo content tree means by its files (docs/site-data-format.md, Markdown).

A tree is a Hugo one when it is the site's `content/` folder (or a language's folder in
it, `content/en`) and the site's config (`hugo.toml`, `.yaml`, `.yml`, `.json`, or the
older `config.*`) sits in the folder holding `content/`. Then, as Hugo publishes it:

- a page's URL is its path with Hugo's defaults: pretty URLs (`/section/page/`) and
  lower case (`disablePathToLower: false`); front matter `url` (a path from the site's
  root) replaces it and `slug` its last part;
- a link by URL path (`/methods/resource/resourcetype/`) leads to the page published
  there, and a relative link that names no page from the page's folder is looked up
  from the content root, as Hugo's link render hook does (`.Page.GetPage`);
- a page Hugo does not render is not published: `build: {render: never}` (or `link`,
  or the older `render: false`, `_build`, `headless: true`), its own or cascaded from a
  section's `_index.md` (`cascade`) to the section and everything below it, as
  hugoDocs' `_common/` snippets are (Hugo's documentation, "Build options" and
  "Front matter: cascade").

Nothing here reads the config (a cascade there, or one with a `target`, is not
applied): a site whose `baseURL` has a path, whose `uglyURLs` or `disablePathToLower`
is set, sets `docs_url` / `docs_url_style` in site.yaml. Source: Hugo's documentation,
"URL management" and "Page.GetPage".
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path
from typing import Any

_CONFIG_NAMES = tuple(
    f"{name}.{ext}" for name in ("hugo", "config") for ext in ("toml", "yaml", "yml", "json")
)


def is_hugo(root: Path) -> bool:
    """Whether the tree at `root` is a Hugo site's content (or one language's of it)."""
    for content in (root, root.parent):
        if content.name == "content" and any(
            os.path.isfile(content.parent / name) for name in _CONFIG_NAMES
        ):
            return True
    return False


def url_path(default: str, front: dict[str, Any]) -> str:
    """The page's path on the site, no leading slash, from its `default` (the path in
    the tree's URL style)."""
    url = front.get("url")
    if isinstance(url, str) and url.strip() and " " not in url:
        return url.lstrip("/")
    slug = front.get("slug")
    if isinstance(slug, str) and slug.strip() and " " not in slug and default:
        folder, _, last = default.rstrip("/").rpartition("/")
        trailing = "/" if default.endswith("/") else ""
        default = posixpath.join(folder, slug) + trailing if last else default
    return default.lower()


def rendered(rel: str, front: dict[str, Any], cascades: dict[str, dict[str, Any]]) -> bool:
    """Whether Hugo renders the page at `rel` (posix, within the tree): its own build
    options, else the closest section's cascaded ones (`cascades`: `section_cascades`)."""
    if front.get("headless") is True:
        return False
    own = _build_render(front)
    if own is not None:
        return own
    folder = posixpath.dirname(rel)
    while True:
        cascaded = cascades.get(folder)
        if cascaded is not None:
            inherited = _build_render(cascaded)
            if inherited is not None:
                return inherited
        if not folder:
            return True
        folder = posixpath.dirname(folder)


def section_cascades(pages: list[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Each section's cascaded front matter, by the section's folder: its `_index.md`'s
    `cascade` (a map, or a list of maps: those without a `target`)."""
    found: dict[str, dict[str, Any]] = {}
    for rel, front in pages:
        if posixpath.basename(rel).rsplit(".", 1)[0] != "_index":
            continue
        cascade = front.get("cascade")
        entries = cascade if isinstance(cascade, list) else [cascade]
        merged: dict[str, Any] = {}
        for entry in entries:
            if isinstance(entry, dict) and "target" not in entry and "_target" not in entry:
                merged = {**entry, **merged}  # the first entry that sets a key wins
        if merged:
            found[posixpath.dirname(rel)] = merged
    return found


def _build_render(front: dict[str, Any]) -> bool | None:
    """`build.render` (or `_build`'s) as whether the page is written: None when unset."""
    options = front.get("build", front.get("_build"))
    if not isinstance(options, dict) or "render" not in options:
        return None
    render = options["render"]
    if isinstance(render, bool):  # before Hugo 0.76: render = false
        return render
    return str(render).lower() not in ("never", "link", "false")
