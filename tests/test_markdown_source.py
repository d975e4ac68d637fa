"""Markdown pages as a source (issue 23), through the public build: three real docs trees
(tests/fixtures/httpx: mkdocs-material; tests/fixtures/vite: VitePress;
tests/fixtures/docusaurus: Docusaurus, MDX), checked into
the repository with zero edits, and small trees made here for each rule and each
hostile case."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from agent_contract import paths
from agent_contract.models import SearchIndex
from content_builder import search_eval
from content_builder.build import Plan, plan
from content_builder.errors import SiteDataError
from tests.conftest import catalogs_built, plan_errors, run_cli

FIXTURES = Path(__file__).parent / "fixtures"
TREES = {
    "httpx": FIXTURES / "httpx" / "docs",
    "vite": FIXTURES / "vite" / "docs",
    "docusaurus": FIXTURES / "docusaurus" / "docs",
}
SITES = {
    "httpx": FIXTURES / "httpx-site",
    "vite": FIXTURES / "vite-site",
    "docusaurus": FIXTURES / "docusaurus-site",
}
COMMONMARK = MarkdownIt("commonmark").enable("table")


@pytest.fixture(scope="module")
def fixture_plans() -> dict[str, Plan]:
    return {name: plan(site) for name, site in SITES.items()}


def _files(result: Plan) -> dict[str, bytes]:
    return {artifact.path: artifact.body for artifact in result.artifacts}


def _pages(tree: Path) -> list[str]:
    # Docusaurus: a name starting with `_` is a partial, not a page.
    partials = tree == TREES["docusaurus"]
    return sorted(
        path.relative_to(tree).as_posix()
        for path in (*tree.rglob("*.md"), *tree.rglob("*.mdx"))
        if not any(
            part.startswith(".") or (partials and part.startswith("_"))
            for part in path.relative_to(tree).parts
        )
    )


def _expected_id(rel: str, tree: Path | None = None) -> str:
    # docs/site-data-format.md, "Markdown pages": the path less `.md` and a last
    # `index`/`README`, `/` -> `-`, lower case; the root's index is `home`. In a
    # Docusaurus tree, front matter `id` names the last part (`i18n/tutorial`).
    stem = re.sub(r"\.mdx?$", "", rel)
    if tree == TREES["docusaurus"]:
        text = (tree / rel).read_text(encoding="utf-8")
        front = re.match(r"^---\n(.*?)\n---\n", text, re.DOTALL)
        chosen = (yaml.safe_load(front.group(1)) or {}).get("id") if front else None
        if chosen:
            stem = "/".join([*stem.split("/")[:-1], str(chosen)])
    stem = re.sub(r"(^|/)(index|README)$", "", stem)
    return re.sub(r"[^a-z0-9]+", "-", stem.replace("/", "-").lower()).strip("-") or "home"


# --- the real trees ----------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(TREES))
def test_every_page_of_a_real_tree_is_published_with_its_twin(
    name: str, fixture_plans: dict[str, Plan]
) -> None:
    files = _files(fixture_plans[name])
    pages = _pages(TREES[name])
    assert 15 <= len(pages) <= 90
    for rel in pages:
        document = paths.document(_expected_id(rel, TREES[name]))
        assert document in files, rel
        assert paths.markdown_twin(document) in files, rel
        assert json.loads(files[document])["content"]["sections"], rel


def _source_fences(text: str) -> list[tuple[str, str]]:
    """Every fenced block of a page as its author wrote it: (info string, content), the
    fence's own indentation removed from its lines (CommonMark), found line by line
    without the product's parser."""
    found = []
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        opened = re.match(r"^( *)(`{3,}|~{3,})(.*)$", lines[index])
        index += 1
        if not opened or (opened.group(2)[0] == "`" and "`" in opened.group(3)):
            continue
        indent, fence, info = len(opened.group(1)), opened.group(2), opened.group(3).strip()
        content = []
        while index < len(lines):
            closing = re.match(r"^ *(`{3,}|~{3,}) *$", lines[index])
            if closing and closing.group(1)[0] == fence[0] and len(closing.group(1)) >= len(fence):
                break
            line = lines[index]
            content.append(line[min(indent, len(line) - len(line.lstrip(" "))) :])
            index += 1
        index += 1
        found.append((info, "\n".join(content) + "\n" if content else ""))
    return found


def _twin_fences(twin: str) -> list[tuple[str, str]]:
    return [
        (token.info.strip(), token.content)
        for token in COMMONMARK.parse(twin)
        if token.type == "fence"
    ]


@pytest.mark.parametrize("name", sorted(TREES))
def test_every_fenced_block_is_byte_identical_in_the_twin(
    name: str, fixture_plans: dict[str, Plan]
) -> None:
    files = _files(fixture_plans[name])
    checked = 0
    for rel in _pages(TREES[name]):
        source = (TREES[name] / rel).read_text(encoding="utf-8")
        twin = files[paths.markdown_twin(paths.document(_expected_id(rel, TREES[name])))].decode()
        published = _twin_fences(twin)
        fences = _source_fences(source)
        while fences:
            fence = fences.pop(0)
            if fence[0] == "mdx-code-block":
                # Docusaurus renders its content as MDX, not code: unwrapped on purpose,
                # and the fences inside it are fences of the page.
                assert fence not in published, (rel, fence)
                fences += _source_fences(fence[1])
                continue
            assert fence in published, (rel, fence)
            checked += 1
    assert checked > 50  # every tree is full of code


@pytest.mark.parametrize("name", sorted(TREES))
def test_relative_links_are_rewritten_and_resolve(
    name: str, fixture_plans: dict[str, Plan]
) -> None:
    result = fixture_plans[name]
    files = _files(result)
    base = result.site.base_url
    rewritten = 0
    for rel in _pages(TREES[name]):
        document = paths.document(_expected_id(rel, TREES[name]))
        twin = paths.markdown_twin(document)
        for path, extension in ((twin, ".md"), (document, ".json")):
            body = files[path].decode()
            texts = (
                [s["body"] for s in json.loads(body)["content"]["sections"]]
                if extension == ".json"
                else [body]
            )
            for text in texts:
                for href in _hrefs(text):
                    assert re.match(r"^(https?:|mailto:|#)", href), (rel, href)
                    if href.startswith(base + paths.API_PREFIX + "/content/"):
                        target = href.split("#")[0]
                        # The twin links twins, the JSON links JSON.
                        assert target.endswith(extension), (rel, href)
                        assert target.removeprefix(base) in files, (rel, href)
                        rewritten += 1
    assert rewritten > 20


def _hrefs(markdown: str) -> list[str]:
    found = []
    for token in COMMONMARK.parse(markdown):
        for child in token.children or ():
            if child.type == "link_open":
                found.append(str(child.attrGet("href")))
    return found


def _llms_sections(text: str) -> list[str]:
    return re.findall(r"^## (.+)$", text, re.MULTILINE)


def test_llms_txt_has_a_section_per_mkdocs_nav_group_in_nav_order(
    fixture_plans: dict[str, Plan],
) -> None:
    llms = _files(fixture_plans["httpx"])[paths.LLMS_TXT].decode()
    sections = _llms_sections(llms)
    nav_groups = ["Advanced", "Guides", "API Reference", "Community"]  # mkdocs.yml
    # "Documents": the generated site overview (no FAQ: the site has none).
    assert sections == ["Interfaces", "Documents", *nav_groups, "Optional"]
    advanced = llms.split("## Advanced\n", 1)[1].split("\n## ", 1)[0]
    titles = re.findall(r"^- \[([^\]]+)\]", advanced, re.MULTILINE)
    assert titles[:3] == ["Clients", "Authentication", "SSL"]  # nav order; SSL: its nav title


def test_llms_txt_of_a_tree_without_nav_is_grouped_by_folder(
    fixture_plans: dict[str, Plan],
) -> None:
    llms = _files(fixture_plans["vite"])[paths.LLMS_TXT].decode()
    sections = _llms_sections(llms)
    for folder in ("Blog", "Changes", "Config", "Guide", "Plugins"):
        assert folder in sections
    guide = llms.split("## Guide\n", 1)[1].split("\n## ", 1)[0]
    assert guide.split("\n")[1].startswith("- [Getting Started]")  # index first


def test_canonical_urls_follow_each_tools_url_style(fixture_plans: dict[str, Plan]) -> None:
    httpx = json.loads(_files(fixture_plans["httpx"])["/api/v1/content/advanced-ssl.json"])
    assert httpx["canonical_url"] == "https://www.python-httpx.org/advanced/ssl/"  # mkdocs
    vite = json.loads(_files(fixture_plans["vite"])["/api/v1/content/guide-ssr.json"])
    assert vite["canonical_url"] == "https://vite.dev/guide/ssr"  # VitePress clean URLs
    home = json.loads(_files(fixture_plans["vite"])["/api/v1/content/guide.json"])
    assert home["canonical_url"] == "https://vite.dev/guide/"


def test_docs_tool_syntax_degrades_to_text(fixture_plans: dict[str, Plan]) -> None:
    files = _files(fixture_plans["vite"])
    twin = files["/api/v1/content/guide.md"].decode()
    assert "::: " not in twin and "<ScrimbaLink" not in twin
    assert "**Tip: Compatibility Note**" in twin  # `::: tip Compatibility Note`
    assert "Learn Vite through interactive tutorials on Scrimba" in twin  # a component's words
    thanks = files["/api/v1/content/acknowledgements.md"].decode()
    assert "<template" not in thanks and "{{ " not in thanks  # `v-if="i < n"`, Vue's data
    httpx = files = _files(fixture_plans["httpx"])
    home = httpx["/api/v1/content/home.md"].decode()
    assert "\n\n---\n\n" in home and "\\---" not in home  # the page's rules, as rules
    clients = httpx["/api/v1/content/advanced-clients.md"].decode()
    assert "!!! " not in clients and "**Hint**" in clients


#: recall@3 on each tree's ten questions: the issue's target, 0.9 (measured in session 22:
#: httpx 1.0 and vite 0.9, for the keyword client and the sharded index alike; vite was 0.8
#: before keyword choice put prose before code, issue 23 item 8).
CLIENT_RECALL_AT_3 = {"httpx": 0.9, "vite": 0.9, "docusaurus": 0.9}
#: The sharded index's: docusaurus 0.8 in session 23 ("translate my site into another
#: language" ranks i18n-crowdin third, "redirect old urls" misses the redirects plugin's
#: page), measured, not tuned: docs/decisions.md, "Docusaurus trees".
SHARDS_RECALL_AT_3 = {**CLIENT_RECALL_AT_3, "docusaurus": 0.8}


@pytest.mark.parametrize("name", sorted(SITES))
def test_search_recall_on_the_owners_questions(name: str, fixture_plans: dict[str, Plan]) -> None:
    """Ten questions per tree, written before its index was looked at (issue 23)."""
    result = fixture_plans[name]
    body = _files(result)[paths.SEARCH_INDEX]
    index = SearchIndex.model_validate_json(body)
    questions = search_eval.load_question_sets(SITES[name] / "search-questions.yaml")
    assert len(questions["questions"]) == 10
    scores = search_eval.evaluate(index, questions["questions"], search_eval.RANKERS["client"])
    assert scores.recall_at_3 >= CLIENT_RECALL_AT_3[name], scores.misses
    # The agent client's own search, through the sharded index (issue 25).
    ranked = search_eval.shard_ranker(_files(result))
    scores = search_eval.evaluate_with(questions["questions"], ranked)
    assert scores.recall_at_3 >= SHARDS_RECALL_AT_3[name], scores.misses


# --- small trees, one rule each ------------------------------------------------------------


def _site(tmp_path: Path, pages: dict[str, str], extra: str = "") -> Path:
    """A site folder whose docs tree (../docs) holds `pages`."""
    site = tmp_path / "site"
    shutil.copytree(SITES["httpx"], site, ignore=shutil.ignore_patterns("search-questions.yaml"))
    text = (site / "site.yaml").read_text().replace("../httpx/docs", "../docs")
    (site / "site.yaml").write_text(text + extra)
    docs = tmp_path / "docs"
    for rel, body in pages.items():
        (docs / rel).parent.mkdir(parents=True, exist_ok=True)
        (docs / rel).write_text(body, encoding="utf-8")
    return site


def _twin(result: Plan, document_id: str) -> str:
    return _files(result)[paths.markdown_twin(paths.document(document_id))].decode()


def test_front_matter_title_description_and_sections(tmp_path: Path) -> None:
    site = _site(
        tmp_path,
        {
            "guide/setup.md": "---\ntitle: Setting up\nunknown_key: [1, 2]\nsidebar_position: 2\n"
            "---\n# Ignored H1\n\nOpening text.\n\n## First\n\nOne.\n\n### Deeper\n\nTwo.\n"
            "\n## Second\n\nThree.\n",
            "guide/index.md": "# Guide\n\nThe guide's first paragraph. Its second sentence.\n",
            "guide/alpha.md": "---\nsidebar_position: 1\n---\n\n# Alpha\n\nA.\n",
            "guide/draft.md": "---\ndraft: true\n---\n# Draft\n\nNot yet.\n",
        },
    )
    result = plan(site)
    files = _files(result)
    setup = json.loads(files["/api/v1/content/guide-setup.json"])
    assert setup["title"] == "Setting up"
    sections = setup["content"]["sections"]
    assert [s["title"] for s in sections] == ["Setting up", "First", "Second"]
    assert sections[0]["body"] == "Opening text."
    assert sections[1]["body"] == "One.\n\n### Deeper\n\nTwo."
    assert "code_example" not in sections[1]
    guide = json.loads(files["/api/v1/content/guide.json"])
    assert guide["title"] == "Guide"
    assert "/api/v1/content/guide-draft.json" not in files
    # Order: the folder's index, then sidebar_position.
    order = [d.id for d in result.site.documents]
    assert order.index("guide") < order.index("guide-alpha") < order.index("guide-setup")
    # H3 stays below its H2: in the twin as written, one level down in llms-full.txt.
    twin = _twin(result, "guide-setup")
    assert "## First\n\nOne.\n\n### Deeper\n\nTwo." in twin
    full = files[paths.LLMS_FULL_TXT].decode()
    assert "### First\n\nOne.\n\n#### Deeper\n\nTwo." in full


def test_ids_that_collide_are_one_error_naming_both_files(tmp_path: Path) -> None:
    site = _site(tmp_path, {"a/b.md": "# B\n\nx\n", "a-b.md": "# AB\n\nx\n"})
    errors = [e for e in plan_errors(site) if "a-b" in e]
    assert len(errors) == 1
    assert "a-b.md" in errors[0] and os.path.join("a", "b.md") in errors[0]


def test_ids_equal_after_case_folding_collide(tmp_path: Path) -> None:
    site = _site(
        tmp_path, {"one.md": "---\nid: shared\n---\n# One\n\nx\n", "two.md": "# Two\n\nx\n"}
    )
    (tmp_path / "docs" / "two.md").write_text("---\nid: SHARED\n---\n# Two\n\nx\n")
    errors = plan_errors(site)
    assert any("one.md" in e and "two.md" in e for e in errors), errors


def test_a_relative_link_to_a_missing_page_names_file_and_line(tmp_path: Path) -> None:
    site = _site(
        tmp_path,
        {"guide.md": "# Guide\n\nFine [link](./other.md).\n\nBroken [link](./nope.md#x).\n",
         "other.md": "# Other\n\nx\n"},
    )  # fmt: skip
    errors = plan_errors(site)
    assert any("guide.md" in e and "line 5" in e and "nope.md" in e for e in errors), errors


def test_a_page_past_the_entry_budget_is_published_whole_with_a_warning(
    tmp_path: Path,
) -> None:
    """A docs tree is published as written (issue 23): a long changelog is not an error,
    as an authored YAML entry past the budget is (test_extensions)."""
    releases = "".join(
        f"## Version 1.{number}\n\n" + "Fixed a bug in the connection pool handling. " * 30 + "\n\n"
        for number in range(90)
    )
    site = _site(tmp_path, {"changelog.md": "# Changelog\n\n" + releases})
    result = plan(site)
    twin = _twin(result, "changelog")
    assert len(twin) > 100_000 and "## Version 1.89" in twin, "published whole"
    warned = [str(w) for w in result.site.warnings if "changelog" in str(w)]
    assert warned and "100,000" in warned[0] and "changelog.md" in warned[0]
    outcome = run_cli("build", "--site", site, "--out", tmp_path / "out")
    assert outcome.code == 0 and "changelog.md" in outcome.err and "100,000" in outcome.err


@pytest.mark.parametrize(
    "front",
    [
        "search:\n  exclude: true\n",  # mkdocs-material
        "search: false\n",  # VitePress
        "unlisted: true\n",  # Docusaurus
    ],
)
def test_a_page_its_front_matter_keeps_out_of_search_is_published_but_not_found(
    front: str, tmp_path: Path
) -> None:
    from agent_contract import search_query

    site = _site(
        tmp_path,
        {
            "hidden.md": f"---\n{front}---\n# Hidden page\n\nThe quokkaflange setting.\n",
            "shown.md": "# Shown page\n\nThe wombatgrommet setting.\n",
        },
    )
    files = _files(plan(site))
    assert "quokkaflange" in _twin(plan(site), "hidden"), "published all the same"
    index = json.loads(files[paths.CONTENT_INDEX])
    assert "hidden" in {entry["id"] for entry in index["documents"]}
    searched = {entry["id"] for entry in json.loads(files[paths.SEARCH_INDEX])["entries"]}
    assert "shown" in searched and "hidden" not in searched
    assert not search_query.query(files.__getitem__, "quokkaflange", limit=3).hits
    found = search_query.query(files.__getitem__, "wombatgrommet", limit=3)
    assert [hit.id for hit in found.hits] == ["shown"]


def test_broken_links_warn_builds_and_keeps_the_link(tmp_path: Path) -> None:
    site = _site(tmp_path, {"guide.md": "# Guide\n\nBroken [link](./nope.md).\n"},
                 extra="broken_links: warn\n")  # fmt: skip
    result = plan(site)
    assert any("nope.md" in str(w) for w in result.site.warnings)
    assert "[link](./nope.md)" in _twin(result, "guide")


def test_links_every_way_docs_tools_write_them(tmp_path: Path) -> None:
    site = _site(
        tmp_path,
        {
            "guide/index.md": "# Guide\n\n[a](./ssr) [b](../config/) [c](ssr.md#anchor) "
            "[d](/config/build-options#out-dir) [e](ssr.html) [img](../img/x.png)\n\n"
            "![Alt text](../img/x.png)\n\n[ref]: ./ssr.md\n",
            "guide/ssr.md": "# SSR\n\nx\n",
            "config/index.md": "# Config\n\nx\n",
            "config/build-options.md": "# Build options\n\nx\n",
        },
    )
    result = plan(site)
    base = result.site.base_url + "/api/v1/content/"
    twin = _twin(result, "guide")
    for expected in (
        f"[a]({base}guide-ssr.md)",
        f"[b]({base}config.md)",
        f"[c]({base}guide-ssr.md#anchor)",
        f"[d]({base}config-build-options.md#out-dir)",
        f"[e]({base}guide-ssr.md)",
        "[img](https://www.python-httpx.org/img/x.png)",
        "![Alt text](https://www.python-httpx.org/img/x.png)",
        f"[ref]: {base}guide-ssr.md",
    ):
        assert expected in twin
    body = json.loads(_files(result)["/api/v1/content/guide.json"])["content"]["sections"][0]
    assert f"[a]({base}guide-ssr.json)" in body["body"]


def test_snippets_inside_the_tree_are_included_and_outside_refused(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("SECRET\n")
    site = _site(
        tmp_path,
        {"page.md": '# Page\n\n--8<-- "parts/part.md"\n', "parts/part.md": "Included text.\n"},
    )
    assert "Included text." in _twin(plan(site), "page")
    (tmp_path / "docs" / "page.md").write_text('# Page\n\n--8<-- "../secret.txt"\n')
    errors = plan_errors(site)
    assert any("page.md" in e and "outside the docs tree" in e for e in errors), errors
    assert not any("SECRET" in e for e in errors)


def test_tokens_in_prose_only(tmp_path: Path) -> None:
    site = _site(
        tmp_path,
        {
            "page.md": "# Page\n\nWelcome to {name}, see {base_url}/llms.txt and "
            "`{name} @ {url}`.\n"
            "Literal {{name} and {LAMBDA_TASK_ROOT} stay.\n\n"
            "```dockerfile\nCOPY app ${LAMBDA_TASK_ROOT}/{name}\nRUN curl http://127.0.0.1:8000/?token=x\n```\n",
        },
    )
    result = plan(site)
    body = json.loads(_files(result)["/api/v1/content/page.json"])["content"]["sections"][0]["body"]
    assert "Welcome to HTTPX, see https://agents.python-httpx.example/llms.txt" in body
    assert "`{name} @ {url}`" in body  # a code span: as written
    assert "Literal {name} and {LAMBDA_TASK_ROOT} stay." in body
    assert "COPY app ${LAMBDA_TASK_ROOT}/{name}\nRUN curl http://127.0.0.1:8000/?token=x" in body


def test_a_near_miss_of_a_token_is_an_error(tmp_path: Path) -> None:
    site = _site(tmp_path, {"page.md": "# Page\n\nSee {baseurl}/llms.txt.\n"})
    errors = plan_errors(site)
    assert any("page.md" in e and "line 3" in e and "{base_url}" in e for e in errors), errors


def test_mkdocs_yml_tags_are_read_without_running_anything(tmp_path: Path) -> None:
    site = _site(tmp_path, {"index.md": "# Home\n\nx\n", "b.md": "# B\n\nx\n"})
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: X\nmarkdown_extensions:\n  - pymdownx.emoji:\n"
        "      emoji_index: !!python/name:os.system\n"
        "      generator: !!python/object/apply:os.system ['touch PWNED']\n"
        "extra:\n  key: !ENV [HOME]\nnav:\n  - Home: index.md\n  - Part:\n    - The B: b.md\n"
    )
    result = plan(site)
    assert not Path("PWNED").exists() and not (tmp_path / "PWNED").exists()
    llms = _files(result)[paths.LLMS_TXT].decode()
    assert "## Part" in llms
    assert _files(result)["/api/v1/content/b.json"]
    canonical = json.loads(_files(result)["/api/v1/content/b.json"])["canonical_url"]
    assert canonical == "https://www.python-httpx.org/b/"  # mkdocs directory URLs


# --- hostile input -------------------------------------------------------------------------


def _headings(markdown: str) -> list[tuple[str, str]]:
    tokens = COMMONMARK.parse(markdown)
    return [
        (token.tag, tokens[index + 1].content)
        for index, token in enumerate(tokens)
        if token.type == "heading_open"
    ]


def test_a_page_cannot_forge_structure_outside_its_section(tmp_path: Path) -> None:
    hostile = (
        "# Safe\n\nText.\n\n## Real\n\n> ## Forged in a quote\n\n- # Forged in a list\n\n"
        "<div>\n\n## Forged after HTML\n\n</div>\n\n<!--\n## Forged in a comment\n-->\n\n"
        "```\nopen fence never closed\n## Forged in code\n"
    )
    site = _site(tmp_path, {"page.md": hostile, "next.md": "# Next\n\nx\n"})
    result = plan(site)
    twin = _twin(result, "page")
    assert [h for h in _headings(twin) if h[0] in ("h1", "h2")] == [
        ("h1", "Safe"),
        ("h2", "Safe"),
        ("h2", "Real"),
        ("h2", "Forged after HTML"),
    ]  # the last: a real section heading of the page (the <div> is dropped)
    full = _files(result)[paths.LLMS_FULL_TXT].decode()
    h2 = [text for tag, text in _headings(full) if tag == "h2"]
    assert "Next" in h2 and not any("Forged in" in text for text in h2)


def test_a_title_with_a_line_break_or_a_control_character_is_refused(tmp_path: Path) -> None:
    site = _site(tmp_path, {"page.md": '---\ntitle: "One\\nTwo"\n---\n# X\n\ny\n'})
    assert any("page.md" in e and "title" in e for e in plan_errors(site))
    (tmp_path / "docs" / "page.md").write_text("# X\n\nA bell \x07 here.\n")
    errors = plan_errors(site)
    assert any("page.md" in e and "line 3" in e and "U+0007" in e for e in errors), errors


def test_a_linked_page_is_refused(tmp_path: Path) -> None:
    (tmp_path / "outside.md").write_text("# Outside\n\nsecret\n")
    site = _site(tmp_path, {"page.md": "# Page\n\nx\n"})
    (tmp_path / "docs" / "link.md").symlink_to(tmp_path / "outside.md")
    errors = plan_errors(site)
    assert any("link.md" in e and "symbolic link" in e for e in errors), errors


def test_front_matter_aliases_are_refused(tmp_path: Path) -> None:
    site = _site(tmp_path, {"page.md": "---\na: &x [1]\nb: *x\n---\n# Page\n\nx\n"})
    assert any("page.md" in e for e in plan_errors(site))


# --- the cache and the watcher --------------------------------------------------------------


def test_an_edit_renders_one_page_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Markdown pages go through the per-entry build cache: an unchanged tree renders
    nothing again, an edit renders the edited page only."""
    from content_builder import build as pipeline

    catalogs = catalogs_built(monkeypatch)
    site = _site(tmp_path, {f"p{n}.md": f"# Page {n}\n\nText {n}.\n" for n in range(5)})
    pipeline.build(site, tmp_path / "out")
    pipeline.build(site, tmp_path / "out")
    (tmp_path / "docs" / "p3.md").write_text("# Page 3\n\nEdited.\n")
    pipeline.build(site, tmp_path / "out")
    assert [catalog.rendered_now for catalog in catalogs[1:]] == [0, 1]
    assert "Edited." in (tmp_path / "out" / "api/v1/content/p3.md").read_text()


def test_serve_watch_watches_a_docs_tree_outside_the_site(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = _site(tmp_path, {"page.md": "# Page\n\nx\n"})
    seen: dict[str, object] = {}

    def fake_serve(*args: object, **kwargs: object) -> int:
        seen.update(kwargs)
        return 0

    import agent_edge.serve

    monkeypatch.setattr(agent_edge.serve, "serve", fake_serve)
    assert run_cli("serve", "--site", site, "--watch").code == 0
    roots = [Path(root) for root in seen["watch_roots"]]  # type: ignore[attr-defined]
    assert site in roots and (tmp_path / "docs").resolve() in [r.resolve() for r in roots]
    # The mkdocs.yml beside the tree (its nav) is watched too, once: not inside a root.
    (tmp_path / "mkdocs.yml").write_text("site_name: X\nnav:\n  - page.md\n")
    assert run_cli("serve", "--site", site, "--watch").code == 0
    roots = [Path(root).resolve() for root in seen["watch_roots"]]  # type: ignore[attr-defined]
    assert roots[1:] == [(tmp_path / "docs").resolve(), (tmp_path / "mkdocs.yml").resolve()]
    (tmp_path / "mkdocs.yml").rename(tmp_path / "docs" / "mkdocs.yml")  # inside the tree
    assert run_cli("serve", "--site", site, "--watch").code == 0
    roots = [Path(root).resolve() for root in seen["watch_roots"]]  # type: ignore[attr-defined]
    assert roots[1:] == [(tmp_path / "docs").resolve()]


def test_the_worked_example_of_the_format_document(tmp_path: Path) -> None:
    """docs/site-data-format.md, "Markdown pages": the example, as it says."""
    page = (
        "---\ntitle: Install\nsidebar_position: 1\nunknown: ignored\n---\n# Installing {name}\n\n"
        "Install it with pip; see the [quick start](../index.md#start).\n\n"
        '!!! tip "Upgrading"\n    Add `--upgrade` to upgrade.\n\n## From PyPI\n\n'
        "```sh\npip install example  # {name} is not replaced here\n```\n\n"
        "### Behind a proxy\n\nSet `HTTPS_PROXY`.\n"
    )
    site = _site(tmp_path, {"index.md": "# Home\n\n## Start\n\nx\n", "guide/install.md": page})
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: Example\nnav:\n  - Home: index.md\n  - Guide:\n    - guide/install.md\n"
    )
    (site / "site.yaml").write_text(
        (site / "site.yaml")
        .read_text()
        .replace("https://www.python-httpx.org", "https://example.com")
    )
    result = plan(site)
    files = _files(result)
    document = json.loads(files["/api/v1/content/guide-install.json"])
    base = result.site.base_url
    assert document["title"] == "Install"
    assert document["canonical_url"] == "https://example.com/guide/install/"
    index = json.loads(files[paths.CONTENT_INDEX])
    entry = next(e for e in _index_entries(index) if e["id"] == "guide-install")
    assert entry["description"] == "Install it with pip; see the quick start."
    sections = document["content"]["sections"]
    assert [s["title"] for s in sections] == ["Install", "From PyPI"]
    assert f"({base}/api/v1/content/home.json#start)" in sections[0]["body"]
    assert "**Tip: Upgrading**\n\nAdd `--upgrade` to upgrade." in sections[0]["body"]
    assert sections[1]["body"] == (
        "```sh\npip install example  # {name} is not replaced here\n```\n\n"
        "### Behind a proxy\n\nSet `HTTPS_PROXY`."
    )
    assert f"({base}/api/v1/content/home.md#start)" in _twin(result, "guide-install")
    llms = files[paths.LLMS_TXT].decode()
    assert "guide-install.json" in llms.split("## Guide\n", 1)[1].split("\n## ", 1)[0]


def _index_entries(index: dict[str, object]) -> list[dict[str, str]]:
    for value in index.values():
        if isinstance(value, list) and value and isinstance(value[0], dict) and "id" in value[0]:
            return value  # type: ignore[return-value]
    raise AssertionError(index.keys())


def test_md_pages_in_content_beside_yaml_documents(tmp_path: Path) -> None:
    site = _site(tmp_path, {"a.md": "# A\n\nx\n"})
    (site / "content").mkdir()
    (site / "content" / "site.yaml").write_text(
        "id: site\ntitle: Overview\ncontent_type: page\ndescription: What it is.\n"
        "canonical_url: https://www.python-httpx.org/\n"
        "content:\n  headline: Overview\n  sections:\n    - title: About\n      body: Words.\n"
    )
    (site / "content" / "notes.md").write_text(
        "---\ndescription: Notes of the team.\n---\n# Notes\n\nSee [the other](./more.md).\n"
    )
    (site / "content" / "more.md").write_text("# More\n\nx\n")
    result = plan(site)
    files = _files(result)
    notes = json.loads(files["/api/v1/content/notes.json"])
    assert notes["canonical_url"] == "https://www.python-httpx.org/notes"
    assert "/api/v1/content/more.json)" in notes["content"]["sections"][0]["body"]
    site_document = json.loads(files["/api/v1/content/site.json"])  # the YAML one beside them
    assert site_document["title"] == "Overview"


def test_a_snippet_block_is_included(tmp_path: Path) -> None:
    site = _site(
        tmp_path,
        {
            "page.md": "# Page\n\n--8<--\nparts/one.md\nparts/two.md\n--8<--\n\n"
            '```\n--8<-- "parts/one.md"\n```\n',
            "parts/one.md": "First part.\n",
            "parts/two.md": "Second part.\n",
        },
    )
    twin = _twin(plan(site), "page")
    assert "First part.\n\nSecond part." in twin
    assert '```\n--8<-- "parts/one.md"\n```' in twin  # in code: as written


def test_llms_txt_splits_each_group_under_its_budget(tmp_path: Path) -> None:
    description = "A description long enough to fill llms.txt quickly with words. " * 3
    pages = {
        f"group-{n % 3}/page-{n:03d}.md": f"---\ndescription: {description.strip()}\n---\n"
        f"# Page {n}\n\nx\n"
        for n in range(330)
    }
    result = plan(_site(tmp_path, pages))
    files = _files(result)
    llms = files[paths.LLMS_TXT].decode()
    assert len(llms) < 50_000
    assert _llms_sections(llms)[2:5] == ["Group 0", "Group 1", "Group 2"]
    parts = sorted(path for path in files if path.startswith("/llms/group-"))
    assert parts and all(len(files[path].decode()) < 50_000 for path in parts)
    linked = sum(files[path].decode().count("\n- [") for path in parts)
    assert linked == 330
    assert all(result.site.base_url + path in llms for path in parts)


def test_a_broken_link_warning_is_printed_by_build(tmp_path: Path) -> None:
    site = _site(tmp_path, {"guide.md": "# Guide\n\n[x](./nope.md)\n"}, "broken_links: warn\n")
    result = run_cli("build", "--site", site, "--out", tmp_path / "out")
    assert result.code == 0
    assert "warning:" in result.err and "nope.md" in result.err


def test_a_missing_snippet_is_an_error_or_under_warn_skipped(tmp_path: Path) -> None:
    site = _site(tmp_path, {"page.md": '# Page\n\nBefore.\n\n--8<-- "generated.md"\n\nAfter.\n'})
    assert any("page.md" in e and "line 5" in e and "generated.md" in e for e in plan_errors(site))
    text = (site / "site.yaml").read_text()
    (site / "site.yaml").write_text(text + "broken_links: warn\n")
    result = plan(site)
    assert any("generated.md" in str(w) for w in result.site.warnings)
    assert "Before.\n\nAfter." in _twin(result, "page")


def test_docusaurus_mdx_and_hugo_conventions(tmp_path: Path) -> None:
    site = _site(
        tmp_path,
        {
            "intro.mdx": "---\nslug: /\nsidebar_position: 1\n---\n"
            "import Tabs from '@theme/Tabs';\nimport TabItem from '@theme/TabItem';\n\n"
            '# Intro\n\n{/* a note for editors */}Welcome.\n\n<Tabs>\n<TabItem value="a" '
            'label="npm">\n\n```bash\nnpm i x\n```\n\n</TabItem>\n</Tabs>\n\n'
            "See [setup](./setup) and [notes](./notes/).\n",
            "setup.md": "---\nslug: getting-set-up\n---\n# Setup\n\nx\n",
            "notes/_index.md": "# Notes\n\nx\n",
        },
    )
    result = plan(site)
    files = _files(result)
    intro = json.loads(files["/api/v1/content/intro.json"])
    assert intro["canonical_url"] == "https://www.python-httpx.org/"  # slug: /
    body = intro["content"]["sections"][0]["body"]
    assert "import " not in body and "{/*" not in body and "<Tabs" not in body
    assert "Welcome." in body and "```bash\nnpm i x\n```" in body
    base = result.site.base_url + "/api/v1/content/"
    assert f"[setup]({base}setup.json)" in body and f"[notes]({base}notes.json)" in body
    setup = json.loads(files["/api/v1/content/setup.json"])
    assert setup["canonical_url"] == "https://www.python-httpx.org/getting-set-up"


def test_the_cache_follows_what_a_page_depends_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page is rendered again exactly when its bytes, a snippet it includes or where
    one of its links leads changes: adding an unrelated page renders that page only."""
    from content_builder import build as pipeline

    catalogs = catalogs_built(monkeypatch)
    pages = {f"p{n}.md": f"# Page {n}\n\nText {n}.\n" for n in range(5)}
    pages["linking.md"] = '# Linking\n\nSee [target](./target.md).\n\n--8<-- "part.txt"\n'
    pages["target.md"] = "# Target\n\nx\n"
    pages["part.txt"] = "Part one.\n"
    site = _site(tmp_path, pages)
    docs, out = tmp_path / "docs", tmp_path / "out"

    def build() -> str:
        pipeline.build(site, out)
        return (out / "api/v1/content/linking.md").read_text()

    build()
    (docs / "p9.md").write_text("# Page 9\n\nNew.\n")
    build()
    assert catalogs[-1].rendered_now == 1  # the new page only
    (docs / "target.md").write_text("---\nid: renamed\n---\n# Target\n\nx\n")
    assert "/api/v1/content/renamed.md)" in build()
    assert catalogs[-1].rendered_now == 2  # the target and the page linking to it
    (docs / "part.txt").write_text("Part two.\n")
    assert "Part two." in build()
    assert catalogs[-1].rendered_now == 1


@pytest.mark.parametrize("name", sorted(SITES))
def test_llms_txt_of_a_docs_tree_reads_with_the_reference_parser(
    name: str, fixture_plans: dict[str, Plan]
) -> None:
    from llms_txt import parse_llms_file

    llms = _files(fixture_plans[name])[paths.LLMS_TXT].decode()
    parsed = parse_llms_file(llms)
    linked = sum(len(links) for links in parsed["sections"].values())
    assert linked >= len(_pages(TREES[name]))
    assert list(parsed["sections"]) == _llms_sections(llms)


def test_front_matter_canonical_url_overrides_the_path(tmp_path: Path) -> None:
    site = _site(
        tmp_path,
        {"page.md": "---\ncanonical_url: https://docs.example.org/p\n---\n# Page\n\nx\n"},
        "docs_url: https://docs.example.com/v2\n",
    )
    (tmp_path / "docs" / "other.md").write_text("# Other\n\nx\n")
    files = _files(plan(site))
    assert json.loads(files["/api/v1/content/page.json"])["canonical_url"] == (
        "https://docs.example.org/p"
    )
    assert json.loads(files["/api/v1/content/other.json"])["canonical_url"] == (
        "https://docs.example.com/v2/other"
    )


_PIECES = [
    "# ", "## ", "### ", "\n", "\n\n", "```", "~~~", "    ", "!!! note", '=== "T"', "::: tip",
    ":::", "<div>", "</div>", "<!--", "-->", "[a](", ")", "](./x.md)", "{name}", "{{", "`",
    "- ", "> ", "|a|b|\n|-|-|", "--8<--", "---", "===", "text ", "é", "\t", "<script>",
    "![i](i.png)", "[r]: ./x.md", "\\", "{#id}", "import X from 'y'", "{/* c */}", "Forged",
]  # fmt: skip


@settings(
    max_examples=int(os.environ.get("HOSTILE_EXAMPLES", "20")),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(parts=st.lists(st.sampled_from(_PIECES), min_size=1, max_size=50))
def test_any_markdown_builds_or_is_refused_and_forges_no_heading(
    parts: list[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Whatever a page holds: a build, or errors naming the page (never a traceback);
    and the twin's `#`/`##` headings are the page's title and its sections' titles."""
    tmp_path = tmp_path_factory.mktemp("page")
    site = _site(
        tmp_path, {"x.md": "# X\n\nx\n", "page.md": "".join(parts)}, "broken_links: warn\n"
    )
    try:
        result = plan(site)
    except SiteDataError as error:
        assert all("page.md" in problem.file for problem in error.problems), error.problems
        return
    document = json.loads(_files(result)["/api/v1/content/page.json"])
    titles = [section["title"] for section in document["content"]["sections"]]
    found = [text for tag, text in _headings(_twin(result, "page")) if tag in ("h1", "h2")]
    # Exactly the title and one heading per section: none forged by the page's text.
    assert len(found) == 1 + len(titles), (found, titles)


def test_headings_are_prose_outside_their_code_spans(tmp_path: Path) -> None:
    site = _site(tmp_path, {"page.md": "# Page\n\n## The `<div>` and `{name}` of {name}\n\nx\n"})
    document = json.loads(_files(plan(site))["/api/v1/content/page.json"])
    assert document["content"]["sections"][0]["title"] == "The `<div>` and `{name}` of HTTPX"
    (tmp_path / "docs" / "page.md").write_text("# Page\n\nx\n\n## About {baseurl}\n\ny\n")
    assert any("page.md" in e and "line 5" in e and "{baseurl}" in e for e in plan_errors(site))


def test_a_served_docs_tree_passes_verify() -> None:
    """The whole API of a real docs tree, served, walked as an agent would: every link
    (the twins' links to twins, with their anchors), every header, every body."""
    from agent_client.verify import verify
    from tests.conftest import running_server

    with running_server(SITES["vite"]) as server:
        report = verify(server.base_url)
    failed = [f"{f.subject}: {f.message}" for f in report.failures]
    assert not failed, failed
    assert len(report.findings) > 1000


def test_a_site_path_that_is_no_page_links_the_human_site(tmp_path: Path) -> None:
    site = _site(tmp_path, {"page.md": "# Page\n\n[blog](/blog/) [up](../../outside.png)\n"})
    twin = _twin(plan(site), "page")
    assert "[blog](https://www.python-httpx.org/blog/)" in twin
    assert "[up](../../outside.png)" in twin  # outside the tree: kept as written
    (tmp_path / "docs" / "page.md").write_text("# Page\n\n[gone](/guide/gone.md)\n")
    assert any("page.md" in e and "line 3" in e and "gone.md" in e for e in plan_errors(site))


def test_a_front_matter_error_names_the_page_and_its_line(tmp_path: Path) -> None:
    site = _site(tmp_path, {"page.md": "---\ndescription: x\ntitle: A\ntitle: B\n---\n# X\n\ny\n"})
    errors = plan_errors(site)
    assert any("page.md" in e and "duplicate key 'title'" in e and "line 4" in e for e in errors)


def test_a_pages_title_is_its_heading_once_not_a_bare_line_too(tmp_path: Path) -> None:
    """A Markdown page's headline is its title: the twin says it in its `# ` line, not
    again as a paragraph of its own (tokens an agent would pay twice)."""
    site = _site(tmp_path, {"guide.md": "# Getting Started\n\nFirst words.\n\n## Next\n\nMore.\n"})
    twin = _twin(plan(site), "guide")
    assert twin.count("Getting Started") == 2, twin  # the `# ` heading and the opening section's
    assert "\n\nGetting Started\n\n" not in twin
    assert json.loads(_files(plan(site))[paths.document("guide")])["content"]["headline"] == (
        "Getting Started"  # the JSON keeps the field
    )
