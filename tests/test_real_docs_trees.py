"""What real docs trees write, distilled into small trees (issue 23; session 27): each
case was found publishing a real tree (Hugo's docs, FastAPI's, Starlette's, VitePress's)
and is kept here as the few lines that broke."""

from __future__ import annotations

import json
from pathlib import Path

from content_builder.build import plan
from tests.test_markdown_source import _files, _site, _twin


def test_front_matter_of_only_comments_is_no_fields(tmp_path: Path) -> None:
    # gohugoio/hugoDocs content/en/_common/*.md: `---`, `# Do not remove front matter.`,
    # `---`. YAML of only comments is an empty document: no fields, not an error.
    site = _site(
        tmp_path,
        {
            "store.md": "---\n# Do not remove front matter.\n---\n\n## Methods\n\nText.\n",
            "empty.md": "---\n---\n# Empty\n\nText.\n",
        },
    )
    result = plan(site)
    assert "## Methods\n\nText." in _twin(result, "store")
    assert json.loads(_files(result)["/api/v1/content/empty.json"])["title"] == "Empty"


def test_a_footnote_definition_is_text_not_a_link(tmp_path: Path) -> None:
    # vuejs/vitepress docs/en/guide/markdown.md, hugoDocs installation/*.md: `[^1]: Easy
    # if ...` is a footnote (GFM, Python-Markdown, markdown-it-footnote), not a link
    # reference definition to `Easy`: it was a broken link error.
    site = _site(
        tmp_path,
        {"page.md": "# Page\n\nSupported[^1], and [linked][ref].\n\n"
         "[^1]: Definitions can contain **markdown**.\n[ref]: other.md\n",
         "other.md": "# Other\n\nx\n"},
    )  # fmt: skip
    twin = _twin(plan(site), "page")
    assert "[^1]: Definitions can contain **markdown**." in twin
    assert "[ref]: https://" in twin and "/api/v1/content/other.md" in twin
