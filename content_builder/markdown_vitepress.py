"""A VitePress home page's words, which its front matter holds (docs/site-data-format.md).

VitePress' default theme draws a `layout: home` page from its front matter: `hero`
(`name`, `text`, `tagline`, `actions` of `text` and `link`) and `features` (`title`,
`details`, `link`); the body is often empty or a `<style>` block. Those fields become the
Markdown that opens the page, so the page is published with what its readers see: the
hero's name is its title when it has none, the text and tagline are paragraphs, the
actions and features list items. Icons and images are pictures, left out. Source:
VitePress, "Default Theme: Home Page" (vitepress.dev/reference/default-theme-home-page).
"""

from __future__ import annotations

from typing import Any


def _text(value: Any) -> str:
    """A field's text on one line ('' for a value that is not text)."""
    return " ".join(value.split()) if isinstance(value, str) else ""


def hero_name(front: dict[str, Any]) -> str:
    hero = front.get("hero")
    return _text(hero.get("name")) if isinstance(hero, dict) else ""


def home_text(front: dict[str, Any]) -> str:
    """The Markdown a home page's hero and features stand for ('' when it has none)."""
    hero = front.get("hero") if isinstance(front.get("hero"), dict) else {}
    features = front.get("features") if isinstance(front.get("features"), list) else []
    blocks = [_text(hero.get(key)) for key in ("text", "tagline")]
    actions = hero.get("actions") if isinstance(hero.get("actions"), list) else []
    blocks.append("\n".join(filter(None, (_item(action, "text", None) for action in actions))))
    blocks.append("\n".join(filter(None, (_item(item, "title", "details") for item in features))))
    return "\n\n".join(block for block in blocks if block)


def _item(entry: Any, name: str, details: str | None) -> str:
    """One action or feature as a list item: its name (a link when it has one), bold for
    a feature, and its details."""
    if not isinstance(entry, dict) or not _text(entry.get(name)):
        return ""
    label, link = _text(entry.get(name)), _text(entry.get("link"))
    label = f"**{label}**" if details else label
    item = f"[{label}]({link})" if link and " " not in link else label
    more = _text(entry.get(details)) if details else ""
    return f"- {item}: {more}" if more else f"- {item}"
