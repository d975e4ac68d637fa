"""What a Hugo content tree means by its files (docs/site-data-format.md, Markdown).

A tree is a Hugo one when it is the site's `content/` folder (or a language's folder in
it, `content/en`) and the site's config (`hugo.toml`, `.yaml`, `.yml`, `.json`, or the
older `config.*`) sits in the folder holding `content/`. Then, as Hugo publishes it:

- a page's URL is its path with Hugo's defaults: pretty URLs (`/section/page/`) and
  lower case (`disablePathToLower: false`); front matter `url` (a path from the site's
  root) replaces it and `slug` its last part;
- a link by URL path (`/methods/resource/resourcetype/`) leads to the page published
  there, and a relative link that names no page from the page's folder is looked up
  from the content root, as Hugo's link render hook does (`.Page.GetPage`).

Nothing here reads the config: a site whose `baseURL` has a path, whose
`uglyURLs` or `disablePathToLower` is set, sets `docs_url` / `docs_url_style` in
site.yaml. Source: Hugo's documentation, "URL management" and "Page.GetPage".
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
