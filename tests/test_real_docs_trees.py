"""What real docs trees write, distilled into small trees (issue 23; session 27): each
case was found publishing a real tree (Hugo's docs, FastAPI's, Starlette's, VitePress's)
and is kept here as the few lines that broke."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from content_builder.build import plan
from tests.conftest import plan_errors, run_cli
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


def test_pymdownx_blocks_degrade_to_text(tmp_path: Path) -> None:
    # tiangolo/fastapi docs/en/docs/tutorial/body.md (pymdownx.blocks, 2,739 marker lines
    # in the tree): `/// info`, `/// note | Title`, `//// tab | Python 3.10+` ... closed by
    # as many slashes; options are YAML indented under the header. They were published as
    # written.
    page = (
        "# Body\n\nIntro.\n\n/// info\n\nTo send data, use `POST`.\n\n///\n\n"
        '/// note | "Technical Details"\n\nDetails.\n\n///\n\n'
        '//// tab | Python 3.10+\n\n```Python hl_lines="2"\nx: int | None\n```\n\n'
        "/// details | Why\n    open: True\n\nNested.\n\n///\n\n////\n\n"
        "/// admonition | Careful\n    type: warning\n\nWatch out.\n///\n\n"
        "Rust:\n\n```rust\n/// doc comment\n///\n```\n"
    )
    site = _site(tmp_path, {"body.md": page})
    twin = _twin(plan(site), "body")
    assert "///" not in twin.replace("```rust\n/// doc comment\n///\n```", "")
    assert "```rust\n/// doc comment\n///\n```" in twin  # code is code
    for text in (
        "**Info**",
        '**Note: "Technical Details"**',
        "**Python 3.10+**",
        "**Why**",
        "**Careful**",
        "To send data, use `POST`.",
        "Nested.",
        "Watch out.",
    ):
        assert text in twin, text
    assert '```Python hl_lines="2"\nx: int | None\n```' in twin
    assert "open: True" not in twin and "type: warning" not in twin


def test_a_mkdocstrings_directive_is_its_identifier_not_a_container(tmp_path: Path) -> None:
    # tiangolo/fastapi docs/en/docs/reference/*.md: `::: fastapi.FastAPI` and its options
    # (YAML, indented) were a forged `**Fastapi: .FastAPI**` and an indented code block.
    page = (
        "# `FastAPI` class\n\nImport it:\n\n```python\nfrom fastapi import FastAPI\n```\n\n"
        "::: fastapi.FastAPI\n    options:\n        members:\n            - openapi\n\n"
        "::: fastapi.routing.APIRouter\n\nAfter.\n\n::: tip\nA VitePress container.\n:::\n"
    )
    site = _site(tmp_path, {"reference.md": page})
    twin = _twin(plan(site), "reference")
    assert "`fastapi.FastAPI`\n\n" in twin and "`fastapi.routing.APIRouter`\n\n" in twin
    assert "Fastapi" not in twin and "options:" not in twin and "- openapi" not in twin
    assert "After." in twin and "**Tip**\n\nA VitePress container." in twin


def test_hugo_toml_front_matter_is_read(tmp_path: Path) -> None:
    # gohugoio/hugoDocs content/en/getting-started/quick-start.md shows it, and older Hugo
    # sites write every page so: `+++` ... `+++`, TOML. It was published as text, its
    # title and ordering lost.
    site = _site(
        tmp_path,
        {
            "quick.md": '+++\ntitle = "Quick start"\ndescription = "Build a site."\n'
            "weight = 1\ndate = 2023-01-02T03:04:05Z\n[params]\nx = [1, 2]\n+++\n\n"
            "Learn Hugo.\n\n## Install\n\nText.\n",
            "draft.md": '+++\ntitle = "Draft"\ndraft = true\n+++\nNot yet.\n',
            "bad.md": "+++\ntitle = \n+++\nx\n",
        },
    )
    errors = plan_errors(site)
    assert any("bad.md" in error and "TOML" in error for error in errors), errors
    (tmp_path / "docs" / "bad.md").unlink()
    result = plan(site)
    files = _files(result)
    quick = json.loads(files["/api/v1/content/quick.json"])
    assert quick["title"] == "Quick start"
    assert "/api/v1/content/quick.json): Build a site. (" in files["/llms.txt"].decode()
    assert "+++" not in _twin(result, "quick") and 'title = "' not in _twin(result, "quick")
    assert "/api/v1/content/draft.json" not in files


def test_an_attribute_list_after_a_link_or_image_is_dropped(tmp_path: Path) -> None:
    # tiangolo/fastapi docs (156 times): `[Bigger Applications](bigger-applications.md)`
    # followed by `{.internal-link target=_blank}`; `![](logo.png){: style="height:50px"}`:
    # attr_list's HTML attributes, not text.
    page = (
        "# Page\n\nSee [Other](other.md){.internal-link target=_blank} and "
        '![logo](https://example.com/logo.png){: style="height:50px"} or [x](other.md){ #id }.\n\n'
        "A set {a, b} and `[c](d){.e}` stay.\n"
    )
    site = _site(tmp_path, {"page.md": page, "other.md": "# Other\n\nx\n"})
    twin = _twin(plan(site), "page")
    assert "/api/v1/content/other.md) and ![logo](https://example.com/logo.png) or [x](" in twin
    assert "internal-link" not in twin and "height:50px" not in twin and "#id" not in twin
    assert "A set {a, b} and `[c](d){.e}` stay." in twin


def test_a_description_reads_reference_links_as_their_text(tmp_path: Path) -> None:
    # encode/starlette docs/schemas.md: "the widely used [OpenAPI\nspecification][openapi]"
    # with `[openapi]: https://...` at the page's end was described with its brackets.
    page = (
        "# API Schemas\n\nStarlette supports the widely used [OpenAPI\nspecification][openapi]"
        " and [Swagger][].\n\n## More\n\nx\n\n[openapi]: https://github.com/OAI/OpenAPI-Specification\n"
        "[swagger]: https://swagger.io\n"
    )
    site = _site(tmp_path, {"schemas.md": page})
    llms = _files(plan(site))["/llms.txt"].decode()
    assert "Starlette supports the widely used OpenAPI specification and Swagger. (" in llms


def _redux_site(tmp_path: Path, pages: dict[str, str]) -> Path:
    """reduxjs/redux's layout (also Jest's, React Native's): docs/ at the repository's
    root holds `pages`, the Docusaurus site in website/ beside it (`path: '../docs'`)."""
    site = _site(tmp_path, pages)
    (tmp_path / "website").mkdir()
    (tmp_path / "website" / "docusaurus.config.ts").write_text("export default {};\n")
    return site


def test_a_docusaurus_config_in_website_beside_the_docs_is_found(tmp_path: Path) -> None:
    # reduxjs/redux (also Jest, React Native): docs/ at the repository's root, the
    # Docusaurus site in website/ (`path: '../docs'`). Read as a plain tree, `id: index`
    # was "reserved" and links Docusaurus resolves from the docs root were broken.
    site = _redux_site(
        tmp_path,
        {
            "usage/index.md": "---\nid: index\ntitle: Usage Guides Index\n---\n# Usage\n\n"
            "See [the store](api/Store.md).\n",
            "api/Store.md": "# Store\n\nx\n",
        },
    )
    result = plan(site)
    assert "/api/v1/content/api-store.md)" in _twin(result, "usage")


def test_a_link_whose_text_runs_over_lines_is_rewritten_and_checked(tmp_path: Path) -> None:
    # pydantic/pydantic docs/concepts/unions.md, astral-sh/ruff docs/configuration.md:
    # `[... the\nvalidation input](../errors/troubleshooting.md)`: the link's text wraps,
    # and the link was published as written (relative, to nothing) and never checked.
    page = (
        "# Page\n\nSee [how to inspect the\nvalidation input](errors/troubleshooting.md#x), "
        "then [more](other.md).\n\nA [wrapped\nbroken link](nope.md).\n"
    )
    pages = {"page.md": page, "other.md": "# O\n\nx\n", "errors/troubleshooting.md": "# T\n\nx\n"}
    site = _site(tmp_path, pages)
    errors = plan_errors(site)
    assert any("page.md: line 7" in error and "'nope.md'" in error for error in errors), errors
    pages["page.md"] = page.replace("nope.md", "other.md")
    site = _site(tmp_path / "fixed", pages)
    twin = _twin(plan(site), "page")
    assert "validation input](https://" in twin and "/errors-troubleshooting.md#x), then" in twin
    assert "broken link](https://" in twin and "/other.md)." in twin


def test_an_admonition_marker_needs_no_space(tmp_path: Path) -> None:
    # pydantic/pydantic docs/concepts/types.md: `!!!note` (Python-Markdown's admonition
    # and pymdownx.details allow it) was published as text, its body as indented code.
    page = '# Types\n\n!!!note\n    This was not possible with V2.3.\n\n???+tip "Hint"\n    Read.\n'
    twin = _twin(plan(_site(tmp_path, {"types.md": page})), "types")
    assert "**Note**\n\nThis was not possible with V2.3." in twin
    assert "**Tip: Hint**\n\nRead." in twin and "!!!" not in twin


def test_block_attribute_lists_and_icon_shortcodes_are_dropped(tmp_path: Path) -> None:
    # pydantic/pydantic docs: `{ .annotate }` under a paragraph, `{#field-plain-serializer}`
    # alone on a line (attr_list), `## :material-help: Usage Documentation` (an icon of
    # mkdocs-material's emoji extension): markup for the HTML, with no words.
    page = (
        "# Serialization\n\nModels are converted (1) by `model_dump()`:\n{ .annotate }\n\n"
        "1. Annotation.\n\n{#field-plain-serializer}\n\n## :material-help: Usage Documentation\n\n"
        "Ask :fontawesome-brands-github: here :tada:.\n\n"
        "```python\nx = {'.a': 1}\n{ .annotate }\n```\n"
    )
    result = plan(_site(tmp_path, {"serialization.md": page}))
    twin = _twin(result, "serialization")
    assert "annotate }\n```" in twin  # code is code
    assert twin.count(".annotate") == 1 and "{#field" not in twin
    assert "## Usage Documentation\n\nAsk here :tada:." in twin
    assert "Models are converted (1) by `model_dump()`:\n\n1. Annotation." in twin


def test_hugo_shortcodes_degrade_to_their_content(tmp_path: Path) -> None:
    # gohugoio/hugoDocs content/en (1,219 lines): `{{< new-in 0.123.0 />}}`,
    # `{{% include "x.md" %}}`, `{{< img` with its arguments on the lines below, paired
    # `{{< code-toggle >}}` ... `{{< /code-toggle >}}`; Hugo's `ref`/`relref` give a link
    # its page. Template calls whose output the tree does not hold: tags dropped, content
    # kept, a `ref` link rewritten; `{{</* x */>}}` (written to show a shortcode) and code
    # stay as written.
    page = (
        '# Resize\n\n{{< new-in 0.123.0 />}}\n\nSee [Process]({{< ref "process" >}}) and '
        '[the other]({{< relref "/guide/other.md" >}}).\n\n{{< img\n  src="zion.jpg"\n'
        '  alt="Zion"\n>}}\n\nAfter the image.\n\n{{< code-toggle file=hugo >}}\nbaseURL = "x"\n'
        "{{< /code-toggle >}}\n\nWrite `{{</* audio */>}}` or {{</* audio */>}}.\n\n"
        '```go-html-template\n{{< img src="x" >}}\n```\n'
    )
    pages = {"resize.md": page, "process.md": "# Process\n\nx\n", "guide/other.md": "# O\n\nx\n"}
    twin = _twin(plan(_site(tmp_path, pages)), "resize")
    assert "{{< new-in" not in twin and 'src="zion.jpg"' not in twin and "code-toggle" not in twin
    assert "After the image." in twin and 'baseURL = "x"' in twin
    assert "[Process](https://" in twin and "/api/v1/content/process.md)" in twin
    assert "/api/v1/content/guide-other.md)" in twin
    assert "Write `{{</* audio */>}}` or {{</* audio */>}}." in twin
    assert '```go-html-template\n{{< img src="x" >}}\n```' in twin


def test_hostile_shortcode_lines_build_in_linear_time(tmp_path: Path) -> None:
    # The first shortcode pattern had two runs of spaces side by side: one 200 KB line
    # took minutes.
    page = (
        "# Page\n\nx {{< a"
        + " " * 200_000
        + "\n\n{{<"
        + " " * 200_000
        + "\n\n"
        + ("{{< a " * 30_000 + "\n")
    )
    started = time.perf_counter()
    plan(_site(tmp_path, {"page.md": page}))
    assert time.perf_counter() - started < 5


def test_hostile_block_header_lines_build_in_linear_time(tmp_path: Path) -> None:
    # pymdownx.blocks' header pattern had a lazy title before `\s*$` and a run of spaces
    # that the title's `|` may follow or not: one 100 KB line took about 45 s.
    from tests.test_hostile_content import within

    page = (
        "# Page\n\n/// tip | a" + " " * 100_000 + "b\n\ntext\n\n///\n\n"
        "/// tip" + " " * 100_000 + "x\n\ntext\n"
    )
    with within(5):
        plan(_site(tmp_path, {"page.md": page}))


def test_a_description_keeps_code_spans_as_written(tmp_path: Path) -> None:
    # The icon and attr_list patterns ran over the description's paragraph code and all:
    # "Write `:material-help:` ..." was described as "Write  ...", `a(){.b}` as `a)`,
    # while the page's body kept both as written.
    page = "# Icons\n\nWrite `:material-help:` for the icon and `a(){.b}` for the class.\n"
    llms = _files(plan(_site(tmp_path, {"icons.md": page})))["/llms.txt"].decode()
    assert "Write :material-help: for the icon and a(){.b} for the class." in llms


def test_invalid_toml_front_matter_names_the_pages_line(tmp_path: Path) -> None:
    # tomllib counts lines in the TOML, which starts on the page's line 2: the error named
    # the line above the one at fault (YAML front matter's are counted in the page).
    page = '+++\ntitle = "x"\n\nweight = = 1\n+++\n\nx\n'
    errors = plan_errors(_site(tmp_path, {"bad.md": page}))
    assert len(errors) == 1 and "bad.md" in errors[0] and "line 4," in errors[0], errors


def test_a_slug_a_url_cannot_hold_as_written_is_percent_encoded(tmp_path: Path) -> None:
    # `slug: /café` (Docusaurus, and the plain trees that take its front matter): the
    # router serves it at /caf%C3%A9. The build failed on `canonical_url`, a field the
    # author never wrote. An escape already written, and sub-delimiters, stay as written.
    pages = {
        "cafe.md": "---\nslug: /café\n---\n# Café\n\nx\n",
        "sub/plan.md": "---\nslug: tarifs&plans?v=2\n---\n# Plans\n\nx\n",
        "escaped.md": "---\nslug: /caf%C3%A9-2\n---\n# Escaped\n\nx\n",
        "index.md": "# Home\n\nSee [the café](cafe.md) and [plans](sub/plan.md).\n",
    }
    for tree in ("plain", "docusaurus"):
        site = _site(tmp_path / tree, pages)
        if tree == "docusaurus":
            (tmp_path / tree / "docusaurus.config.js").write_text("module.exports = {};\n")
        result = plan(site)
        index = json.loads(_files(result)["/api/v1/content/index.json"])
        urls = {entry["title"]: entry["canonical_url"] for entry in index["documents"]}
        home = next(entry["id"] for entry in index["documents"] if entry["title"] == "Home")
        assert urls["Café"].endswith("/caf%C3%A9"), (tree, urls)
        assert urls["Plans"].endswith("/sub/tarifs&plans%3Fv=2"), (tree, urls)
        assert urls["Escaped"].endswith("/caf%C3%A9-2"), (tree, urls)
        assert "[the café](https://" in _twin(result, home)


def test_a_hugo_content_tree_has_hugos_urls_and_links(tmp_path: Path) -> None:
    # gohugoio/hugoDocs: content/en beside hugo.toml. Hugo publishes `/section/page/`,
    # lower case (`methods/page/GitInfo.md` is `/methods/page/gitinfo/`), honours `url`
    # and `slug`, and its link render hook finds `/methods/page/gitinfo/` and
    # `methods/page/title/` (from templates/introduction.md) by URL and from the content
    # root. They were `.../GitInfo` canonical URLs and 9 broken links.
    site = _site(tmp_path, {})
    yaml_text = (site / "site.yaml").read_text().replace("../docs", "../hugo/content/en")
    (site / "site.yaml").write_text(yaml_text)
    content = tmp_path / "hugo" / "content" / "en"
    pages = {
        "_index.md": "---\ntitle: Hugo\n---\nHome.\n",
        "methods/page/GitInfo.md": "# GitInfo\n\nx\n",
        "methods/page/Title.md": "---\nslug: page-title\n---\n# Title\n\nx\n",
        "about/license.md": "+++\nurl = '/license/'\n+++\n# License\n\nx\n",
        "templates/introduction.md": "# Intro\n\n[GitInfo](/methods/page/gitinfo/#x), "
        "[Title](methods/page/title/) and [nope](methods/nope/).\n\n[Menus](menus/#m)\n",
        "templates/menus.md": "# Menus\n\nx\n",
    }
    for rel, text in pages.items():
        (content / rel).parent.mkdir(parents=True, exist_ok=True)
        (content / rel).write_text(text)
    (tmp_path / "hugo" / "hugo.toml").write_text("baseURL = 'https://gohugo.io/'\n")
    errors = plan_errors(site)
    assert any("introduction.md: line 3" in e and "methods/nope/" in e for e in errors), errors
    (content / "templates/introduction.md").write_text(pages["templates/introduction.md"].replace(
        " and [nope](methods/nope/)", ""))  # fmt: skip
    result = plan(site)
    files = _files(result)
    canonical = {
        name: json.loads(files[f"/api/v1/content/{name}.json"])["canonical_url"]
        for name in ("home", "methods-page-gitinfo", "methods-page-title", "about-license")
    }
    website = "https://www.python-httpx.org/"
    assert canonical == {
        "home": website,
        "methods-page-gitinfo": website + "methods/page/gitinfo/",
        "methods-page-title": website + "methods/page/page-title/",
        "about-license": website + "license/",
    }
    twin = _twin(result, "templates-introduction")
    assert "/api/v1/content/methods-page-gitinfo.md#x)" in twin
    assert "/api/v1/content/methods-page-title.md)" in twin
    assert "/api/v1/content/templates-menus.md#m)" in twin  # from the page's folder


def test_a_description_is_the_pages_words_not_its_banner_or_a_template(
    tmp_path: Path,
) -> None:
    # encode/starlette and tiangolo/fastapi docs/index.md: logos, badges and
    # "**Documentation**: <a href=...>https://www.starlette.io</a>" above `# Introduction`
    # made the home page's description "Documentation: https://www.starlette.io";
    # pydantic/pydantic docs/index.md: badges, then `{{ version }}.` (mkdocs-macros).
    pages = {
        "index.md": '<p align="center"><em>The little framework.</em></p>\n\n---\n\n'
        '**Documentation**: <a href="https://x.example">https://x.example</a>\n\n---\n\n'
        "# Introduction\n\nStarlette is a lightweight ASGI framework.\n",
        "pydantic.md": "# Pydantic Validation\n\n[![CI](https://img.example/ci.svg)](https://ci.example)\n\n"
        "{{ version }}.\n\nPydantic is the most widely used data validation library.\n",
        "banner-only.md": "Made with care.\n\n# Banner\n\n## Section\n\n```sh\nx\n```\n",
    }
    llms = _files(plan(_site(tmp_path, pages)))["/llms.txt"].decode()
    assert "/home.json): Starlette is a lightweight ASGI framework. (" in llms
    assert "/pydantic.json): Pydantic is the most widely used data validation library. (" in llms
    assert "/banner-only.json): Made with care. (" in llms  # nothing follows its title


def test_a_fence_inside_a_list_item_is_published_byte_for_byte(tmp_path: Path) -> None:
    # vuejs/vitepress docs/en/reference/default-theme-prev-next-links.md: a ```yaml fence
    # inside a list item showing front matter (`---` lines) was published with `\---`;
    # a shell comment or a `###` line in such a fence was escaped or moved down too.
    fence = "```yaml\n---\nprev: false\n---\n```"
    shell = "```bash\n# install it\npip install x\n### not a heading\n```"
    indented = lambda block: "\n".join("    " + line for line in block.split("\n"))  # noqa: E731
    page = (
        f"# Links\n\n## prev\n\n- To hide previous page:\n\n{indented(fence)}\n\n"
        f"1. Install:\n\n{indented(shell)}\n\n> {fence.replace(chr(10), chr(10) + '> ')}\n"
    )
    twin = _twin(plan(_site(tmp_path, {"links.md": page})), "links")
    assert indented(fence) in twin and indented(shell) in twin
    assert "> ```yaml\n> ---\n> prev: false\n> ---\n> ```" in twin


def test_a_partials_links_start_from_the_partials_folder(tmp_path: Path) -> None:
    # reduxjs/redux docs/components/_FundamentalsWarning.mdx, used by six pages of
    # tutorials/fundamentals/: its `../tutorials/fundamentals/part-8-modern-redux.md`
    # starts from components/ (MDX compiles the partial as its own file), and was
    # resolved from each page's folder: 12 broken links.
    site = _redux_site(
        tmp_path,
        {
            "components/_Warning.mdx": "See [part 8](../tutorials/basics/part-8.md#rtk) and "
            "![a diagram](./diagram.png); [install](./installation) is a URL.\n",
            "tutorials/basics/part-1.md": "import Warning from '../../components/_Warning.mdx';"
            "\n\n# Part 1\n\n<Warning />\n",
            "tutorials/basics/part-8.md": "# Part 8\n\nx\n",
            "tutorials/basics/installation.md": "# Installation\n\nx\n",
        },
    )
    twin = _twin(plan(site), "tutorials-basics-part-1")
    assert "/api/v1/content/tutorials-basics-part-8.md#rtk)" in twin
    assert "![a diagram](https://www.python-httpx.org/docs/components/diagram.png)" in twin
    assert "/api/v1/content/tutorials-basics-installation.md)" in twin  # a URL: the page's


def test_a_vitepress_home_pages_hero_and_features_are_its_text(tmp_path: Path) -> None:
    # vuejs/vitepress docs/en/index.md (`layout: home`): the page's words are its front
    # matter's hero and features; its body is empty. It was published as "Home" with an
    # empty section.
    page = (
        "---\nlayout: home\n\nhero:\n  name: VitePress\n  text: Vite & Vue Powered Static Site"
        " Generator\n  tagline: Markdown to beautiful docs in minutes\n  actions:\n"
        "    - theme: brand\n      text: What is VitePress?\n      link: ./guide/what-is\n"
        "    - theme: alt\n      text: GitHub\n      link: https://github.com/vuejs/vitepress\n"
        'features:\n  - icon: <span class="memo"></span>\n    title: Focus on your content\n'
        "    details: Effortlessly create beautiful documentation sites with just markdown.\n"
        "---\n\n<style>\n:root { --x: 1; }\n</style>\n"
    )
    site = _site(tmp_path, {"index.md": page, "guide/what-is.md": "# What is it\n\nx\n"})
    result = plan(site)
    home = json.loads(_files(result)["/api/v1/content/home.json"])
    assert home["title"] == "VitePress"
    twin = _twin(result, "home")
    assert (
        "Vite & Vue Powered Static Site Generator\n\nMarkdown to beautiful docs in minutes" in twin
    )
    assert "[What is VitePress?](https://" in twin and "/api/v1/content/guide-what-is.md)" in twin
    assert "[GitHub](https://github.com/vuejs/vitepress)" in twin
    assert "- **Focus on your content**: Effortlessly create beautiful documentation" in twin
    assert "memo" not in twin


def test_a_github_alert_is_a_bold_title_in_its_quote(tmp_path: Path) -> None:
    # gohugoio/hugoDocs (315 of them) and vuejs/vitepress docs/en/guide/markdown.md:
    # `> [!NOTE]` opens a GitHub-style alert (GitHub, VitePress, Hugo render it titled).
    page = (
        "# Page\n\n> [!NOTE]\n> Highlights information.\n\n> [!warning]\n> Careful.\n\n"
        "> [!NOTE] Hugo modules are Go modules\n> Text.\n"
    )
    twin = _twin(plan(_site(tmp_path, {"page.md": page})), "page")
    assert "> **Note**\n> Highlights information." in twin
    assert "> **Warning**\n> Careful." in twin and "[!" not in twin
    assert "> **Note: Hugo modules are Go modules**\n> Text." in twin


def test_a_hostile_alert_title_builds_in_linear_time(tmp_path: Path) -> None:
    page = "# Page\n\n> [!NOTE] x" + " " * 200_000 + "y\n"
    started = time.perf_counter()
    plan(_site(tmp_path, {"page.md": page}))
    assert time.perf_counter() - started < 5


def test_a_hostile_block_title_builds_in_linear_time(tmp_path: Path) -> None:
    page = "# Page\n\n/// tip | x" + " " * 200_000 + "y\n\nText.\n\n///\n"
    started = time.perf_counter()
    twin = _twin(plan(_site(tmp_path, {"page.md": page})), "page")
    assert time.perf_counter() - started < 5 and "Text." in twin


def test_a_query_only_link_is_the_human_page_with_its_query(tmp_path: Path) -> None:
    # squidfunk/mkdocs-material docs/plugins/search.md: `[searchHighlight](?q=searchHighlight)`
    # links the page itself with a search query; it was a broken link to "index.md".
    page = "# Search\n\nTry [this search](?q=search+su) or [that](?q=%22x%22#results).\n"
    twin = _twin(plan(_site(tmp_path, {"plugins/search.md": page})), "plugins-search")
    assert "[this search](https://www.python-httpx.org/plugins/search?q=search+su)" in twin
    assert "[that](https://www.python-httpx.org/plugins/search?q=%22x%22#results)" in twin


def test_attribute_lists_after_a_reference_link_or_ending_a_paragraph_are_dropped(
    tmp_path: Path,
) -> None:
    # squidfunk/mkdocs-material docs: `[Create reproduction][Create reproduction]{ .md-button
    # .md-button--primary }`, `_Martin, Alex and Kathi_ { .mdx-heart .mdx-insiders }`.
    page = (
        "# Bug\n\n[Create reproduction][repro]{ .md-button .md-button--primary }\n\n"
        "_Martin, Alex and Kathi_ { .mdx-heart .mdx-insiders }\n\nA set {a, b} stays.\n\n"
        "[repro]: https://example.com/repro\n"
    )
    twin = _twin(plan(_site(tmp_path, {"bug.md": page})), "bug")
    assert "[Create reproduction][repro]\n" in twin and "_Martin, Alex and Kathi_\n" in twin
    assert "md-button" not in twin and "mdx-heart" not in twin and "A set {a, b} stays." in twin


def test_a_definition_lists_indented_body_is_text_not_code(tmp_path: Path) -> None:
    # squidfunk/mkdocs-material docs/setup/extensions/*.md (def_list, as Python-Markdown
    # and Hugo read it): `:   text` and its body indented 4, tabs and fences inside; to
    # CommonMark the body after a blank line is indented code, so 63 fences were
    # published inside code blocks.
    page = (
        "# Extensions\n\n`mode`\n\n:   Default `view`. Configure:\n\n"
        '    === "Accept changes"\n\n        ``` yaml\n        markdown_extensions:\n'
        "          - pymdownx.critic:\n              mode: accept\n        ```\n\n"
        "    More text.\n\n`other`\n: One line.\n"
    )
    twin = _twin(plan(_site(tmp_path, {"extensions.md": page})), "extensions")
    fence = "``` yaml\nmarkdown_extensions:\n  - pymdownx.critic:\n      mode: accept\n```"
    assert ":   " not in twin and f"**Accept changes**\n\n{fence}" in twin
    assert "`mode`\n\nDefault `view`. Configure:" in twin and "\nMore text." in twin
    assert "`other`\nOne line." in twin


def test_a_page_hugo_does_not_render_is_not_published(tmp_path: Path) -> None:
    # gohugoio/hugoDocs content/en/_common/_index.md cascades `build: {render: never}` to
    # its snippets (included by a shortcode, never pages): 203 of them were published.
    site = _site(tmp_path, {})
    yaml_text = (site / "site.yaml").read_text().replace("../docs", "../hugo/content/en")
    (site / "site.yaml").write_text(yaml_text)
    content = tmp_path / "hugo" / "content" / "en"
    pages = {
        "_index.md": "---\ntitle: Hugo\n---\nHome.\n",
        "_common/_index.md": "---\ncascade:\n  build:\n    list: never\n    render: never\n"
        "---\n\n<!-- snippets -->\n",
        "_common/menu.md": "---\n---\nA snippet.\n",
        "_common/deeper/table.md": "# Table\n\nAnother snippet.\n",
        "_common/shown.md": "---\nbuild:\n  render: always\n---\n# Shown\n\nIts own wins.\n",
        "guide/_index.md": "+++\ntitle = 'Guide'\n[[cascade]]\n[cascade.build]\nrender = 'link'"
        "\n[cascade.target]\npath = '/nowhere/**'\n+++\nThe guide.\n",
        "guide/kept.md": "# Kept\n\nA target the tree cannot match: not applied.\n",
        "bundle/index.md": "---\nheadless: true\n---\n# Headless\n\nx\n",
        "old.md": "---\n_build:\n  render: false\n---\n# Old\n\nx\n",
        "linked.md": "---\nbuild:\n  render: link\n---\n# Linked\n\nx\n",
        "page.md": "# Page\n\nx\n",
    }
    for rel, text in pages.items():
        (content / rel).parent.mkdir(parents=True, exist_ok=True)
        (content / rel).write_text(text)
    (tmp_path / "hugo" / "hugo.toml").write_text("baseURL = 'https://gohugo.io/'\n")
    index = json.loads(_files(plan(site))["/api/v1/content/index.json"])
    titles = sorted(entry["title"] for entry in index["documents"])
    assert "Page" in titles and "Guide" in titles and "Kept" in titles, titles
    assert "Shown" in titles, "a page's own build options win over a cascade"
    for gone in ("Table", "Headless", "Old", "Linked"):
        assert gone not in titles, titles
    assert not any("snippet" in entry["description"].lower() for entry in index["documents"])


def test_a_bracket_closed_on_a_line_with_no_link_open_is_text(tmp_path: Path) -> None:
    # Interval notation in prose, `(0, 10](x)`: no `[` is open on this line or an earlier
    # one of the paragraph, so `](x)` ends no link. It was taken for the end of a wrapped
    # link and failed the build with "link 'x' does not resolve".
    page = (
        "# Ranges\n\nHalf-open ranges such as (0, 10](x) come from math.\n\n"
        "A [link whose text\nruns over\nthree lines](other.md).\n"
    )
    site = _site(tmp_path, {"ranges.md": page, "other.md": "# O\n\nx\n"})
    twin = _twin(plan(site), "ranges")
    assert "Half-open ranges such as (0, 10](x) come from math." in twin
    assert "three lines](https://" in twin and "/other.md)." in twin


def test_a_bracket_in_a_code_span_neither_opens_nor_closes_a_wrapped_link(
    tmp_path: Path,
) -> None:
    # A code span is literal: `]` in one ("the `]` key") closed the wrapped link's `[`,
    # so its end was published as written, unchecked; `a[` in one opened a link, and
    # interval notation on the next line failed the build as a broken link.
    page = (
        "# Keys\n\nSee [the `]` key and\nits friends](other.md).\n\n"
        "Index with `a[` then\n(0, 10](x) is a range.\n"
    )
    site = _site(tmp_path, {"keys.md": page, "other.md": "# O\n\nx\n"})
    twin = _twin(plan(site), "keys")
    assert "its friends](https://" in twin and "/other.md)." in twin
    assert "(0, 10](x) is a range." in twin


def _hugo_site(tmp_path: Path, pages: dict[str, str], config: tuple[str, str]) -> Path:
    """A site whose docs tree is a Hugo site's content/en, `config` (name, text) beside
    content/."""
    site = _site(tmp_path, {})
    yaml_text = (site / "site.yaml").read_text().replace("../docs", "../hugo/content/en")
    (site / "site.yaml").write_text(yaml_text)
    content = tmp_path / "hugo" / "content" / "en"
    for rel, text in {"_index.md": "---\ntitle: Hugo\n---\nHome.\n", **pages}.items():
        (content / rel).parent.mkdir(parents=True, exist_ok=True)
        (content / rel).write_text(text)
    (tmp_path / "hugo" / config[0]).write_text(config[1])
    return site


def _published_titles(site: Path) -> list[str]:
    index = json.loads(_files(plan(site))["/api/v1/content/index.json"])
    return sorted(entry["title"] for entry in index["documents"])


def test_a_hugo_config_cascade_and_cascade_targets_are_applied(tmp_path: Path) -> None:
    # gohugoio/hugoDocs hugo.toml: `[[cascade]]` maps with `[cascade.target]` (`kind`,
    # `path = '{/functions/**,/methods/**}'`); its content/en/configuration/cascade.md and
    # content-management/build-options.md ("headless section") cascade `build` so. The
    # config's cascade and every targeted cascade were ignored: those pages published.
    config = (
        "baseURL = 'https://example.org/'\n"
        "[[cascade]]\n[cascade.build]\nrender = 'never'\n[cascade.target]\n"
        "path = '{/drafts,/drafts/**}'\n"
        "[[cascade]]\n[cascade.build]\nrender = 'never'\n[cascade.target]\n"
        "kind = 'page'\npath = '/notes/**'\n"
        "[[cascade]]\n[cascade.build]\nrender = 'never'\n[cascade.target]\n"
        "environment = 'development'\n"  # `hugo server` only: a build renders everything
        "[[cascade]]\n[cascade.build]\nrender = 'never'\n[cascade.target]\nlang = 'de'\n"
    )
    pages = {
        "drafts/_index.md": "# Drafts\n\nx\n",
        "drafts/deep/idea.md": "# Idea\n\nx\n",
        "notes/_index.md": "# Notes\n\nThe section is listed.\n",
        "notes/one.md": "# Note one\n\nx\n",
        "notes/own.md": "---\nbuild:\n  render: always\n---\n# Own\n\nIts own wins.\n",
        "draftsman.md": "# Draftsman\n\n`/drafts/**` is not `/drafts*`.\n",
        "guide/_index.md": "+++\ntitle = 'Guide'\n[[cascade]]\n[cascade.build]\nrender = 'never'"
        "\n[cascade.target]\npath = '/guide/internal/**'\n[[cascade]]\n[cascade._build]\n"
        "render = 'link'\n[cascade._target]\nkind = 'page'\npath = '/guide/old-*'\n+++\nx\n",
        "guide/internal/secret.md": "# Secret\n\nx\n",
        "guide/Old Way.md": "# Old way\n\nThe older `_target`, a logical path.\n",
        "guide/kept.md": "# Kept\n\nx\n",
        "guide/internal/_index.md": "---\ncascade:\n  build: {render: always}\n  target:\n"
        "    path: /guide/internal/public\n---\n# Internal\n\nThe closest branch wins.\n",
        "guide/internal/public.md": "# Public\n\nx\n",
    }
    titles = _published_titles(_hugo_site(tmp_path, pages, ("hugo.toml", config)))
    # `/guide/internal/**` is below the section, not the section (`/guide/internal`).
    for kept in ("Notes", "Own", "Draftsman", "Guide", "Kept", "Public", "Hugo", "Internal"):
        assert kept in titles, (kept, titles)
    for gone in ("Drafts", "Idea", "Note one", "Secret", "Old way"):
        assert gone not in titles, (gone, titles)


def test_a_hugo_yaml_config_cascade_a_map_and_an_unreadable_config(tmp_path: Path) -> None:
    # Hugo reads hugo.yaml as hugo.toml ("Configure Hugo"); `cascade` may be one map.
    config = "baseURL: https://example.org/\ncascade:\n  build:\n    render: never\n"
    pages = {"page.md": "# Page\n\nx\n", "shown.md": "---\nbuild: {render: always}\n---\n# Shown\n"}
    site = _hugo_site(tmp_path, pages, ("hugo.yaml", config))
    titles = _published_titles(site)  # the config's cascade reaches the home page too
    assert "Shown" in titles and "Page" not in titles and "Hugo" not in titles, titles
    (tmp_path / "hugo" / "hugo.yaml").unlink()
    (tmp_path / "hugo" / "hugo.toml").write_text("baseURL = \n")  # Hugo would refuse it
    result = plan(site)
    assert any("hugo.toml" in str(w) and "cascade" in str(w) for w in result.site.warnings)
    assert "/api/v1/content/page.json" in _files(result)


def test_a_hugo_config_nested_past_the_parsers_recursion_limit_is_a_warning(
    tmp_path: Path,
) -> None:
    # 100,000 nested arrays: json and tomllib recurse, and the RecursionError crashed the
    # build with a traceback where any other unreadable config is a warning.
    nested = "[" * 100_000 + "]" * 100_000
    for name, text in (
        ("hugo.json", '{"cascade": ' + nested + "}"),
        ("hugo.toml", f"a = {nested}\n"),
    ):
        site = _hugo_site(tmp_path / name, {"page.md": "# Page\n\nx\n"}, (name, text))
        result = plan(site)
        assert any(name in str(w) and "cascade" in str(w) for w in result.site.warnings), name
        assert "/api/v1/content/page.json" in _files(result)


def test_a_hostile_cascade_target_glob_is_not_applied(tmp_path: Path) -> None:
    # A target whose braces expand to 2^30 patterns: refused by the glob library (over
    # 1,000), matched by no page, the build unharmed.
    pattern = "{a,b}" * 30
    cascade = f"cascade:\n  build: {{render: never}}\n  target: {{path: '{pattern}'}}\n"
    pages = {"sec/_index.md": f"---\n{cascade}---\n# Section\n", "sec/page.md": "# Page\n"}
    started = time.perf_counter()
    assert "Page" in _published_titles(_hugo_site(tmp_path, pages, ("hugo.toml", "")))
    assert time.perf_counter() - started < 5


def _fastapi_site(
    tmp_path: Path, page: str, include_root: str | None, base_path: str = "docs"
) -> Path:
    """fastapi/fastapi's layout: docs/en/mkdocs.yml (docs_dir: docs), the examples in
    docs_src/ at the repository's root, outside the docs tree; mdx_include's base_path
    `docs` (as @6d9dc39f) or `.` (its default, FastAPI's now)."""
    site = _site(tmp_path, {})
    text = (site / "site.yaml").read_text().replace("../docs", "../repo/docs/en/docs")
    extra = f"include_root: {include_root}\n" if include_root else ""
    (site / "site.yaml").write_text(text + extra)
    repo = tmp_path / "repo"
    files = {
        # FastAPI writes markdown_extensions as one mapping (mkdocs takes a list too).
        "docs/en/mkdocs.yml": "site_name: FastAPI\ndocs_dir: docs\nmarkdown_extensions:\n"
        f"  mdx_include:\n    base_path: {base_path}\n  markdown_include_variants: null\n",
        "docs/en/docs/tutorial/body.md": page,
        "docs_src/body/tutorial001_py310.py": "from fastapi import FastAPI\n\napp = FastAPI()\n",
        "docs_src/templates/item.html": "<h1>{{ id }}</h1>\n",
        ".git/config": "[http]\n\textraheader = AUTHORIZATION: basic c2VjcmV0\n",
    }
    for rel, body in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(body)
    return site


_FASTAPI_BODY = (
    "# Request Body\n\nDeclare it:\n\n"
    '```Python hl_lines="2"\n{!> ../../../docs_src/body/tutorial001_py310.py!}\n```\n\n'
    "A template:\n\n```jinja\n{!../../../docs_src/templates/item.html!}\n```\n"
)
#: fastapi/fastapi @c3f316b7 docs/en/docs/advanced/additional-responses.md, templates.md:
#: mdx_include's default base path (docs/en, where mkdocs runs), markdown-include-variants.
_FASTAPI_NOW = (
    "# Additional Responses\n\n{* ../../docs_src/body/tutorial001_py310.py hl[18,22] *}\n\n"
    "```jinja\n{!../../docs_src/templates/item.html!}\n```\n"
)


def test_an_include_outside_the_docs_tree_is_warned_and_kept_as_written(tmp_path: Path) -> None:
    # fastapi/fastapi docs/en/docs/tutorial/body.md (@6d9dc39f; 2,000+ such lines then):
    # `{!> ../../../docs_src/body/tutorial001_py310.py!}` in a fence (mdx_include,
    # base_path docs), now `{* ../../docs_src/... hl[2] *}` (markdown-include-variants)
    # and `{!../../docs_src/templates/...!}` (docs/en/docs/advanced/templates.md). The
    # files are outside the tree: published as the include line, without a word.
    result = plan(_fastapi_site(tmp_path, _FASTAPI_BODY, include_root=None))
    twin = _twin(result, "tutorial-body")
    assert "{!> ../../../docs_src/body/tutorial001_py310.py!}" in twin  # kept, not dropped
    warned = [str(w) for w in result.site.warnings if "body.md" in str(w)]
    for line in (6, 12):
        assert any(f"line {line}: include" in w and "include_root" in w for w in warned), warned


def test_an_include_inside_site_yamls_include_root_is_included(tmp_path: Path) -> None:
    # The same pages, their owner naming the repository's root in site.yaml: each include
    # is the file, in its fence; the variants line becomes a ```python fence of the file.
    code = "from fastapi import FastAPI\n\napp = FastAPI()"
    for page, base_path in ((_FASTAPI_BODY, "docs"), (_FASTAPI_NOW, ".")):
        site = _fastapi_site(tmp_path / base_path, page, "../repo", base_path)
        result = plan(site)
        twin = _twin(result, "tutorial-body")
        assert "```jinja\n<h1>{{ id }}</h1>\n```" in twin
        assert "{!" not in twin and "{*" not in twin
        assert not [str(w) for w in result.site.warnings if "body.md" in str(w)]
        if base_path == "docs":
            assert f'```Python hl_lines="2"\n{code}\n```' in twin
        else:
            assert f"```python\n{code}\n```" in twin


def test_an_include_of_a_hidden_file_is_refused_even_inside_include_root(
    tmp_path: Path,
) -> None:
    # As a snippet naming .git/config (session 27): the checkout's token; /etc is outside.
    page = "# Body\n\n```\n{! ../../../.git/config !}\n```\n\n{! /etc/hostname !}\n"
    site = _fastapi_site(tmp_path, page, include_root="../repo")
    errors = plan_errors(site)
    assert any("line 4" in e and "'.git'" in e and "hidden" in e for e in errors), errors
    (tmp_path / "repo/docs/en/docs/tutorial/body.md").write_text(page.split("```\n\n")[1])
    result = plan(site)
    assert "{! /etc/hostname !}" in _twin(result, "tutorial-body")
    assert any("/etc/hostname" in str(w) for w in result.site.warnings)


def test_an_include_reads_no_link_fifo_or_folder_and_stays_within_the_bound(
    tmp_path: Path,
) -> None:
    # As snippets and pages (docs/security.md): a folder linked to one outside include_root
    # leads nowhere, a link is not followed even inside it, a FIFO does not block the
    # build; 40 includes of a 50 KB file stop at the page's 1 MiB bound, each a warning.
    names = ["ld/secret.txt", "inlink.py", "fifo", "body", "big.txt"]
    page = "# Body\n\n" + "".join(f"{{! ../../docs_src/{name} !}}\n\n" for name in names)
    page += "{! ../../docs_src/big.txt !}\n\n" * 39
    site = _fastapi_site(tmp_path, page, include_root="../repo", base_path=".")
    src = tmp_path / "repo" / "docs_src"
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("SECRET\n")
    os.symlink(tmp_path / "outside", src / "ld")
    os.symlink(src / "body" / "tutorial001_py310.py", src / "inlink.py")
    os.mkfifo(src / "fifo")
    (src / "big.txt").write_text("word " * 10_000 + "\n")
    started = time.perf_counter()
    result = plan(site)
    assert time.perf_counter() - started < 10
    twin = _twin(result, "tutorial-body")
    assert "SECRET" not in twin and "app = FastAPI()" not in twin
    for name in names[:4]:
        assert f"{{! ../../docs_src/{name} !}}" in twin  # kept as written
    assert 15 < twin.count("word " * 10_000) < 21  # ~1 MiB of 50 KB includes, no more
    warned = [str(w) for w in result.site.warnings if "body.md" in str(w)]
    assert any("line 3" in w and "outside" in w for w in warned), warned
    assert any("line 5" in w and "symbolic link" in w for w in warned), warned
    assert any("line 7" in w and "FIFO" in w for w in warned), warned
    assert any("line 9" in w and "folder" in w for w in warned), warned
    assert any("more than 1,048,576" in w for w in warned), warned


def test_include_root_must_hold_the_docs_tree(tmp_path: Path) -> None:
    site = _fastapi_site(tmp_path, _FASTAPI_BODY, include_root="../repo/docs_src")
    assert any("include_root" in e and "holding the docs tree" in e for e in plan_errors(site))


def test_hostile_include_lines_build_in_linear_time(tmp_path: Path) -> None:
    # 200 KB lines that open an include and never close it, or close it after blanks.
    lines = ["{!" + " " * 200_000, "{* " + "x" * 200_000, "{!>" + " a" * 100_000 + " !}"]
    site = _fastapi_site(tmp_path, "# Body\n\n" + "\n\n".join(lines) + "\n", "../repo")
    started = time.perf_counter()
    plan(site)
    assert time.perf_counter() - started < 5


def test_init_counts_includes_outside_the_tree_apart_from_broken_links(tmp_path: Path) -> None:
    # `init --docs` on FastAPI's tree listed 446 include warnings as "links that do not
    # resolve" and wrote `broken_links: warn`, which does nothing for them.
    from content_builder.starter import report, survey

    site = _fastapi_site(tmp_path, _FASTAPI_BODY, include_root=None)
    result = survey(site)
    assert len(result.outside_includes) == 2 and not result.broken_links, result
    assert any("include_root" in line for line in report(site / "site.yaml", result))


def test_init_sorts_many_outside_includes_in_linear_time(tmp_path: Path) -> None:
    # Sorting the warnings asked `w not in outside` of each: 15,000 includes outside the
    # tree took ~17 s of CPU in that alone (the whole survey now: ~1.3 s).
    from content_builder.starter import survey

    page = "# Body\n\n" + "".join(f"{{! ../../../out/f{i}.py !}}\n\n" for i in range(15_000))
    site = _fastapi_site(tmp_path, page, include_root=None)
    started = time.process_time()
    assert len(survey(site).outside_includes) == 15_000
    assert time.process_time() - started < 8


def test_listing_the_include_extension_in_mkdocs_yml_reparses_the_page(tmp_path: Path) -> None:
    # The build cache knew the page by its bytes and the files it had read: none, while
    # mkdocs.yml did not list mdx_include; listing it must not leave the line as text.
    site = _fastapi_site(tmp_path, _FASTAPI_BODY, include_root="../repo")
    mkdocs = tmp_path / "repo/docs/en/mkdocs.yml"
    listed = mkdocs.read_text()
    mkdocs.write_text("site_name: FastAPI\ndocs_dir: docs\n")
    assert "{!> ../../../docs_src" in _twin(plan(site), "tutorial-body")  # text: not listed
    mkdocs.write_text(listed)
    assert "{!>" not in _twin(plan(site), "tutorial-body")


def test_a_cascade_of_too_many_maps_is_a_warning_and_not_applied(tmp_path: Path) -> None:
    # Each page walks every cascade map above it: 10,000 maps in the config and in a
    # section's _index.md took seconds per hundred pages (session 28's review). Real
    # sites write a handful (gohugoio/hugoDocs hugo.toml: 12).
    from content_builder.markdown_hugo import MAX_CASCADE_MAPS

    many = 10_000
    config = "[[cascade]]\n[cascade.build]\nrender = 'never'\n[cascade.target]\npath = '/x'\n"
    front = "---\ncascade:\n" + "  - {build: {render: never}, target: {path: /x}}\n" * many
    pages = {"sec/_index.md": front + "---\n# Section\n"}
    pages |= {f"sec/p{i}.md": f"# P{i}\n\nx\n" for i in range(100)}
    site = _hugo_site(tmp_path, pages, ("hugo.toml", config * many))
    started = time.perf_counter()
    result = plan(site)
    assert time.perf_counter() - started < 8
    warnings = [str(w) for w in result.site.warnings]
    over = f"a cascade of {many:,} maps, over {MAX_CASCADE_MAPS}"
    assert any("hugo.toml" in w and over in w for w in warnings), warnings
    assert any("_index.md" in w and over in w and "not applied" in w for w in warnings), warnings
    assert "/api/v1/content/sec-p99.json" in _files(result)


def test_a_cascade_of_too_many_maps_names_the_file_that_holds_it(tmp_path: Path) -> None:
    # With a configuration directory the config is several files: the warning named the
    # last one read (the root's hugo.toml), not config/_default/hugo.toml and its maps.
    from content_builder.markdown_hugo import MAX_CASCADE_MAPS, site_config

    (tmp_path / "content" / "en").mkdir(parents=True)
    (tmp_path / "config" / "_default").mkdir(parents=True)
    maps = "[[cascade]]\n[cascade.build]\nrender = 'never'\n" * (MAX_CASCADE_MAPS + 1)
    holder = tmp_path / "config" / "_default" / "hugo.toml"
    holder.write_text(maps)
    (tmp_path / "hugo.toml").write_text("title = 'X'\n")
    _, unread = site_config(tmp_path / "content" / "en")
    assert unread is not None and unread[0] == holder, unread


def test_serve_watch_watches_a_hugo_trees_site_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The config's cascade decides which pages are published (above): an edit to
    # hugo.toml under `serve --watch` changed nothing until something else was edited.
    import agent_edge.serve

    site = _hugo_site(tmp_path, {"page.md": "# Page\n\nx\n"}, ("hugo.toml", "title = 'X'\n"))
    seen: dict[str, Any] = {}
    monkeypatch.setattr(agent_edge.serve, "serve", lambda *a, **k: seen.update(k) or 0)
    assert run_cli("serve", "--site", site, "--watch").code == 0
    roots = [Path(root).resolve() for root in seen["watch_roots"]]
    assert (tmp_path / "hugo" / "hugo.toml").resolve() in roots, roots


def test_a_hugo_configuration_directory_is_read(tmp_path: Path) -> None:
    # Hugo's "Configuration directory" (thulite/doks and many themes): no hugo.toml at
    # the project's root, config/_default/hugo.toml and one file per root key
    # (cascade.toml), config/production/ over them for a build. The tree was not taken
    # for Hugo's at all (plain Markdown URLs), and its cascade never applied.
    pages = {"drafts/idea.md": "# Idea\n\nx\n", "notes/kept.md": "# Kept\n\nx\n",
             "later/soon.md": "# Soon\n\nx\n"}  # fmt: skip
    site = _hugo_site(tmp_path, pages, ("unused.txt", ""))
    config = tmp_path / "hugo" / "config"
    (config / "_default").mkdir(parents=True)
    (config / "production").mkdir()
    (config / "_default" / "hugo.toml").write_text("baseURL = 'https://example.org/'\n")
    (config / "_default" / "cascade.toml").write_text(
        "[build]\nrender = 'never'\n[target]\npath = '/drafts/**'\n"
    )
    (config / "_default" / "menus.en.toml").write_text("[[main]]\nname = 'x'\n")
    # The production environment's file wins over _default's for a build.
    (config / "production" / "cascade.yaml").write_text(
        "build: {render: never}\ntarget: {path: '/later/**'}\n"
    )
    titles = _published_titles(site)
    assert "Kept" in titles and "Idea" in titles and "Soon" not in titles, titles
    (config / "production" / "cascade.yaml").unlink()
    titles = _published_titles(site)
    assert "Kept" in titles and "Soon" in titles and "Idea" not in titles, titles
    from content_builder.markdown_tree import watch_roots

    assert (config / "_default" / "cascade.toml").resolve() in [
        Path(root).resolve() for root in watch_roots(site)
    ]
