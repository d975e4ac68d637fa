"""`init --docs DIR` (issue 23 item 7): a starter site.yaml beside an existing docs tree,
and a survey of what a build finds there, on real trees (tests/fixtures) and made ones."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from agent_contract import paths
from content_builder.build import plan
from tests.conftest import REPO, run_cli, tree_digest

FIXTURES = REPO / "tests" / "fixtures"


def _copy(tree: str, tmp_path: Path) -> Path:
    """A copy of a fixture's project folder (its docs/ and, for mkdocs, mkdocs.yml)."""
    return Path(shutil.copytree(FIXTURES / tree, tmp_path / tree))


def test_init_on_an_mkdocs_tree_guesses_from_mkdocs_yml_and_builds(tmp_path: Path) -> None:
    project = _copy("httpx", tmp_path)
    mkdocs = yaml.load((project / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    result = run_cli("init", "--docs", project / "docs")
    assert result.code == 0, result.err
    config = yaml.safe_load((project / "site.yaml").read_text(encoding="utf-8"))
    assert config["name"] == mkdocs["site_name"]
    assert config["description"] == mkdocs["site_description"]
    assert config["website"] == mkdocs["site_url"].rstrip("/")
    assert config["docs_dir"] == "docs"  # beside the tree, as mkdocs.yml is
    assert config["base_url"].endswith(".invalid")  # a placeholder, never a guess
    pages = sorted(p for p in (project / "docs").rglob("*.md"))
    assert f"pages: {len(pages)}" in result.out.splitlines()
    groups = [  # a nav entry whose value is a list is a group; a page alone is not
        key
        for item in mkdocs["nav"]
        if isinstance(item, dict)
        for key, value in item.items()
        if isinstance(value, list)
    ]
    listed = next(line for line in result.out.splitlines() if line.startswith("nav groups: "))
    assert [part.rsplit(" (", 1)[0] for part in listed[12:].split(", ")][1:] == groups
    assert "links that do not resolve: 0" in result.out
    # The starter is a site: every page published.
    built = {a.path for a in plan(project).artifacts}
    assert len([p for p in built if p.startswith("/api/v1/content/") and p.endswith(".md")]) == (
        len(pages) + 1  # and the generated site overview
    )


def test_init_with_a_site_folder_elsewhere_points_docs_dir_at_the_tree(tmp_path: Path) -> None:
    project = _copy("vite", tmp_path)
    site = tmp_path / "agents" / "site"
    result = run_cli("init", "--docs", project / "docs", "--site", site)
    assert result.code == 0, result.err
    config = yaml.safe_load((site / "site.yaml").read_text(encoding="utf-8"))
    assert config["docs_dir"] == "../../vite/docs"
    assert "TODO" in (site / "site.yaml").read_text()  # no mkdocs.yml: guesses are marked
    assert f"pages: {len(list((project / 'docs').rglob('*.md')))}" in result.out
    assert paths.document("guide-ssr") in {a.path for a in plan(site).artifacts}


def test_init_lists_links_that_do_not_resolve_and_the_starter_still_builds(
    tmp_path: Path,
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [setup](./setup.md).\n\nAnd [gone](./gone.md).\n")
    (docs / "setup.md").write_text("# Setup\n\nRun it.\n")
    result = run_cli("init", "--docs", docs)
    assert result.code == 0, result.err
    assert "links that do not resolve: 1" in result.out
    (listed,) = [line for line in result.out.splitlines() if "gone.md" in line]
    assert "docs/index.md: line 5: relative link to './gone.md'" in listed
    text = (tmp_path / "site.yaml").read_text()
    assert "broken_links: warn  # TODO: 1 links do not resolve" in text
    plan(tmp_path)  # builds, the link reported as a warning


def test_a_clean_tree_keeps_broken_links_an_error(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nWords.\n")
    assert run_cli("init", "--docs", docs).code == 0
    assert "broken_links" not in (tmp_path / "site.yaml").read_text()


def test_init_never_overwrites_a_site_yaml(tmp_path: Path) -> None:
    project = _copy("httpx", tmp_path)
    (project / "site.yaml").write_text("name: mine\n")
    before = tree_digest(project)
    result = run_cli("init", "--docs", project / "docs")
    assert result.code == 1
    assert "site.yaml: already exists" in result.err
    assert tree_digest(project) == before


def test_init_refuses_what_is_not_a_docs_tree(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("no pages here")
    result = run_cli("init", "--docs", tmp_path / "empty")
    assert result.code == 1 and "holds no Markdown page" in result.err
    result = run_cli("init", "--docs", tmp_path / "missing")
    assert result.code == 1 and "not a folder" in result.err
    assert not (tmp_path / "site.yaml").exists()


def test_hostile_mkdocs_values_are_written_as_data(tmp_path: Path) -> None:
    """A site_name with YAML syntax, quotes and a line break cannot add a key."""
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    (project / "docs" / "index.md").write_text("# Home\n\nWords.\n")
    (project / "mkdocs.yml").write_text(
        'site_name: "Evil: \\"x\\"\\nbase_url: https://evil.example"\n'
        "site_url: 'javascript:alert(1)'\n"
    )
    result = run_cli("init", "--docs", project / "docs")
    assert result.code == 0, result.err
    config = yaml.safe_load((project / "site.yaml").read_text(encoding="utf-8"))
    assert config["name"] == 'Evil: "x" base_url: https://evil.example'
    assert config["base_url"].endswith(".invalid")
    assert config["website"].endswith(".invalid")  # not a URL: not taken
