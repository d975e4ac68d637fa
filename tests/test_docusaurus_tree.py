"""Docusaurus docs trees (issue 23; session 23): small trees made here, one rule each, a
`docusaurus.config.js` beside the docs folder as in every Docusaurus site. The real tree
is tests/fixtures/docusaurus (tests/test_markdown_source.py)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from agent_contract import paths
from content_builder.build import Plan, plan
from tests.conftest import plan_errors

FIXTURES = Path(__file__).parent / "fixtures"


def _site(tmp_path: Path, pages: dict[str, str], config: bool = True) -> Path:
    """A site folder whose docs tree (../website/docs) holds `pages`; with `config`, a
    Docusaurus site's config file beside the tree."""
    site = tmp_path / "site"
    shutil.copytree(
        FIXTURES / "docusaurus-site", site, ignore=shutil.ignore_patterns("search-questions.yaml")
    )
    text = (site / "site.yaml").read_text().replace("../docusaurus/docs", "../website/docs")
    (site / "site.yaml").write_text(text)
    docs = tmp_path / "website" / "docs"
    docs.mkdir(parents=True)
    if config:
        (tmp_path / "website" / "docusaurus.config.js").write_text("export default {};\n")
    for rel, body in pages.items():
        (docs / rel).parent.mkdir(parents=True, exist_ok=True)
        (docs / rel).write_text(body, encoding="utf-8")
    return site


def _files(result: Plan) -> dict[str, bytes]:
    return {artifact.path: artifact.body for artifact in result.artifacts}


def _document(result: Plan, document_id: str) -> dict:  # type: ignore[type-arg]
    return json.loads(_files(result)[paths.document(document_id)])  # type: ignore[no-any-return]


def _body(result: Plan, document_id: str) -> str:
    return "\n\n".join(s["body"] for s in _document(result, document_id)["content"]["sections"])


def test_front_matter_id_names_the_page_in_its_folder(tmp_path: Path) -> None:
    # Docusaurus: `id` replaces the file name only, so two folders may both say
    # `id: introduction` (the real tree does); number prefixes are not part of ids.
    pages = {
        "guides/docs-introduction.mdx": "---\nid: introduction\n---\n# Docs\n\nx\n",
        "i18n/i18n-introduction.mdx": "---\nid: introduction\n---\n# I18n\n\nx\n",
        "tutorial/01-first-steps.md": "# First\n\nx\n",
        "tutorial/_partial.mdx": "A partial, imported by pages.\n",
        "_drafts/wip.md": "# WIP\n\nx\n",
    }
    files = _files(plan(_site(tmp_path, pages)))
    for document_id in ("guides-introduction", "i18n-introduction", "tutorial-first-steps"):
        assert paths.document(document_id) in files, document_id
    assert not any("partial" in path or "wip" in path for path in files)
    # Outside a Docusaurus tree, `id` is the whole id (docs/site-data-format.md): the
    # two pages collide there, which is why the tree's kind decides.
    assert "/api/v1/content/introduction.json" not in files


def test_urls_follow_slugs_and_the_docs_route(tmp_path: Path) -> None:
    pages = {
        "intro.mdx": "---\nslug: /\n---\n# Intro\n\nx\n",
        "guides/docs/sidebar/index.mdx": "---\nslug: /sidebar\n---\n# Sidebar\n\nx\n",
        "guides/docs/sidebar/items.mdx": "---\nslug: items-page\n---\n# Items\n\nx\n",
        "guides/plain.md": "# Plain\n\nx\n",
        "guides/guides.md": "# Guides\n\nx\n",  # named as its folder: the folder's page
        "api/config.mdx": "---\nslug: /api/docusaurus-config\n---\n# Config\n\nx\n",
    }
    result = plan(_site(tmp_path, pages))
    site = "https://docusaurus.io/docs"  # website + the docs plugin's default route
    expected = {
        "intro": f"{site}/",
        "guides-docs-sidebar": f"{site}/sidebar",
        "guides-docs-sidebar-items": f"{site}/guides/docs/sidebar/items-page",
        "guides-plain": f"{site}/guides/plain",
        "guides-guides": f"{site}/guides",
        "api-config": f"{site}/api/docusaurus-config",
    }
    for document_id, url in expected.items():
        assert _document(result, document_id)["canonical_url"] == url, document_id


def test_links_as_docusaurus_resolves_them(tmp_path: Path) -> None:
    pages = {
        "guides/links.mdx": (
            "# Links\n\n"
            "[by URL from the site root](/docs/sidebar/items#anchor)\n"
            "[by URL from this page](./other-page)\n"
            "[a file from the content root](blog.mdx)\n"
            "[a file named from the content root](/blog.mdx)\n"
            "[a file named from the site folder](/docs/blog.mdx)\n"
            "[another plugin's page](/community/support)\n"
            "[escape hatch](pathname:///pure-html)\n\n"
            "![logo](/img/logo.png)\n"
        ),
        "guides/other.mdx": "---\nslug: other-page\n---\n# Other\n\nx\n",
        "sidebar/items.mdx": "---\nslug: /sidebar/items\n---\n# Items\n\nx\n",
        "blog.mdx": "# Blog\n\nx\n",
    }
    result = plan(_site(tmp_path, pages))
    body = _body(result, "guides-links")
    api = result.site.base_url + "/api/v1/content/"
    assert f"({api}sidebar-items.json#anchor)" in body
    assert f"({api}guides-other.json)" in body
    assert body.count(f"({api}blog.json)") == 3
    assert "(https://docusaurus.io/community/support)" in body
    assert "(https://docusaurus.io/pure-html)" in body
    assert "(https://docusaurus.io/img/logo.png)" in body  # static/ at the site's root


def test_mdx_code_never_reaches_the_text(tmp_path: Path) -> None:
    fence = "```js title=\"docusaurus.config.js\"\nexport default {\n  title: 'x',\n};\n```"
    page = (
        "---\ndescription: MDX.\n---\n"
        "import Tabs from '@theme/Tabs';\n"
        "import {\n  useA,\n  useB,\n} from '@site/src/hooks';\n\n"
        "# MDX page\n\n"
        "export const Highlight = ({children, color}) => (\n"
        "  <span style={{backgroundColor: color}}>{children}</span>\n);\n\n"
        "```mdx-code-block\nimport TabItem from '@theme/TabItem';\n\n"
        "<Tabs>\nTabbed words.\n</Tabs>\n```\n\n"
        "{/*\n  A comment\n  for editors\n*/}\n\n"
        "<a\n  target=\"_blank\"\n  href={require('./x.docx').default}>\n"
        "  {'Download this'}\n</a>\n\n"
        "<>A fragment</>\n\n"
        "1. A step:\n\n        <details>\n\n    Indented words.\n\n        </details>\n\n"
        f"{fence}\n\n"
        "## Title {#custom-id}\n\n### Deeper {#deeper-id}\n\nWords.\n"
    )
    result = plan(_site(tmp_path, {"page.mdx": page}))
    document = _document(result, "page")
    body = _body(result, "page")
    for leaked in ("import", "export const", "useA", "Highlight", "{/*", "for editors",
                   "href=", "require(", "<>", "<details>", "{#"):  # fmt: skip
        assert leaked not in body.replace(fence, ""), leaked
    assert fence in body  # a real fence, byte for byte
    for kept in ("Tabbed words.", "Download this", "A fragment", "Indented words."):
        assert kept in body, kept
    assert [s["title"] for s in document["content"]["sections"]] == ["MDX page", "Title"]
    assert "### Deeper\n" in body


def test_admonitions_as_docusaurus_writes_them(tmp_path: Path) -> None:
    page = (
        "# Notes\n\n:::tip[My title]\n\nBracket title.\n\n:::\n\n"
        ":::info Spaced title\n\nSpace title.\n\n:::\n\n"
        "::::note\n\nOuter.\n\n:::warning\n\nInner.\n\n:::\n\n::::\n"
    )
    body = _body(plan(_site(tmp_path, {"notes.md": page})), "notes")
    assert "**Tip: My title**" in body and "**Info: Spaced title**" in body
    assert "**Note**" in body and "**Warning**" in body and ":::" not in body


def test_a_draft_is_not_published_and_an_unlisted_page_is(tmp_path: Path) -> None:
    pages = {
        "draft.md": "---\ndraft: true\n---\n# Draft\n\nx\n",
        "hidden.md": "---\nunlisted: true\n---\n# Hidden\n\nx\n",
    }
    files = _files(plan(_site(tmp_path, pages)))
    assert "/api/v1/content/draft.json" not in files
    assert "/api/v1/content/hidden.json" in files


def test_an_import_under_a_vue_script_block_is_not_mdx(tmp_path: Path) -> None:
    # VitePress writes `<script setup>` then an import: Vue's, not an MDX block; taking
    # it for one would drop `</script>` and swallow the page's next fence.
    page = (
        "# Vue\n\n<script setup>\nimport graph from '../graph.svg?raw'\n</script>\n"
        '<svg-image :svg="graph" />\n\nText.\n\n```\nEntry ---> A\n```\n'
    )
    body = _body(plan(_site(tmp_path, {"vue.md": page}, config=False)), "vue")
    assert "```\nEntry ---> A\n```" in body


def test_category_files_label_and_order_folders(tmp_path: Path) -> None:
    pages = {
        "alpha/one.md": "# One\n\nx\n",
        "beta/two.md": "# Two\n\nx\n",
        "beta/_category_.json": '{"label": "Beta guides", "position": 1}',
        "alpha/_category_.yml": "position: 2\n",
        "beta/deep/three.md": "# Three\n\nx\n",
        "beta/deep/_category_.yml": "label: Deep\nposition: 0\n",
    }
    result = plan(_site(tmp_path, pages))
    llms = _files(result)[paths.LLMS_TXT].decode()
    assert "\n## Beta guides\n" in llms and "\n## Alpha\n" in llms
    assert llms.index("## Beta guides") < llms.index("## Alpha")  # by position, not name
    at = [
        llms.index(f"/api/v1/content/{i}.md") for i in ("beta-two", "beta-deep-three", "alpha-one")
    ]
    assert at == sorted(at)  # beta's pages first: its own, then its subfolder's


def test_an_imported_partial_is_the_pages_text(tmp_path: Path) -> None:
    pages = {
        "api/blog.mdx": (
            "# Blog plugin\n\nimport TagsFile from './_tags-file.mdx';\n\n<TagsFile />\n\n"
            "```mdx\n<TagsFile />\n```\n"
        ),
        "api/_tags-file.mdx": "## Tags file\n\nThe tags file lists tags.\n",
    }
    result = plan(_site(tmp_path, pages))
    sections = _document(result, "api-blog")["content"]["sections"]
    assert [s["title"] for s in sections] == ["Tags file"]  # the partial's own heading
    assert "The tags file lists tags." in sections[0]["body"]
    assert "```mdx\n<TagsFile />\n```" in sections[0]["body"]  # in code: as written
    assert "/api/v1/content/api-tags-file.json" not in _files(result)  # not a page


def test_a_partial_is_found_beside_the_page_that_imports_it(tmp_path: Path) -> None:
    """MDX resolves an import from the importing file's folder only: a partial of the
    same name at the docs root is another file (the review's reproduction)."""
    pages = {
        "guides/page.mdx": "# Page\n\nimport Shared from './_shared.mdx';\n\n<Shared />\n",
        "guides/_shared.mdx": "The guides' own partial.\n",
        "_shared.mdx": "The root's partial, not imported here.\n",
        "a/b/deep.mdx": "# Deep\n\nimport Up from '../_up.mdx';\n\n<Up />\n",
        "a/_up.mdx": "One folder up, inside the tree.\n",
    }
    (tmp_path / "_up.mdx").write_text("Beside the docs folder: never read.\n")
    result = plan(_site(tmp_path, pages))
    body = _body(result, "guides-page")
    assert "The guides' own partial." in body and "root's partial" not in body
    assert "One folder up, inside the tree." in _body(result, "a-b-deep")


def test_a_partial_used_many_times_is_refused_past_the_bound(tmp_path: Path) -> None:
    """A page of 1 MiB may not make itself hundreds of MB by using a large partial many
    times (the review's reproduction: 100 uses of 462 KB took 21 s and 1.1 GB)."""
    use = "<Big />\n\n"
    page = "# Page\n\nimport Big from './_big.mdx';\n\n" + use * 40
    pages = {"page.mdx": page, "_big.mdx": ("word " * 20 + "\n") * 4_000}  # ~400 KB
    started = time.monotonic()
    problems = plan_errors(_site(tmp_path, pages))
    assert time.monotonic() - started < 10
    assert any("includes more than" in problem and "page.mdx" in problem for problem in problems)


def test_a_crafted_heading_id_is_read_in_linear_time(tmp_path: Path) -> None:
    heading = "#### a" + " " * 80_000 + "b{"
    pages = {"page.md": f"# Page\n\n## Section {{#custom}}\n\ntext\n\n{heading}\n\nmore\n"}
    started = time.monotonic()
    result = plan(_site(tmp_path, pages))
    assert time.monotonic() - started < 3  # quadratic: ~9 s
    assert [s["title"] for s in _document(result, "page")["content"]["sections"]] == ["Section"]


def test_a_tabs_label_stays_above_its_content(tmp_path: Path) -> None:
    page = (
        "# Deploy\n\n<Tabs>\n"
        '<TabItem value="gh" label="GitHub Actions">\n\nUse a workflow.\n\n</TabItem>\n'
        "<TabItem value='travis'>\n\nUse a .travis.yml.\n\n</TabItem>\n</Tabs>\n"
    )
    body = _body(plan(_site(tmp_path, {"deploy.mdx": page})), "deploy")
    assert body.index("**GitHub Actions**") < body.index("Use a workflow.")
    assert body.index("**travis**") < body.index("Use a .travis.yml.")  # no label: its value
    assert "TabItem" not in body


def test_the_cache_follows_partials_and_slugs(tmp_path: Path) -> None:
    """Editing a partial renders the page importing it again; changing the slug a URL
    link names re-points the link."""
    from content_builder import build as pipeline

    pages = {
        "page.mdx": (
            "# Page\n\nimport Part from './_part.mdx';\n\n<Part />\n\n[items](/docs/items)\n"
        ),
        "_part.mdx": "Part one.\n",
        "items.md": "---\nslug: /items\n---\n# Items\n\nx\n",
        "other.md": "# Other\n\nx\n",
    }
    site = _site(tmp_path, pages)
    docs, out = tmp_path / "website" / "docs", tmp_path / "out"

    def build() -> str:
        pipeline.build(site, out)
        return (out / "api/v1/content/page.md").read_text()

    assert "Part one." in build() and "/api/v1/content/items.md)" in build()
    (docs / "_part.mdx").write_text("Part two.\n")
    assert "Part two." in build()
    (docs / "other.md").write_text("---\nslug: /items\n---\n# Other\n\nx\n")
    (docs / "items.md").write_text("---\nslug: /old-items\n---\n# Items\n\nx\n")
    assert "/api/v1/content/other.md)" in build()  # /docs/items is the other page now
