"""Issue 26 beyond the headers: content signals in robots.txt, the Agent Skill and its
well-known index, on the spec fixture, a generated site and the sample."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
import yaml

from agent_contract import paths
from agent_contract.artifacts import Artifact
from agent_contract.models import LegacySkillsIndex, SkillsIndex
from content_builder.build import plan
from content_builder.errors import SiteDataError
from content_builder.loader import load_site
from tests.conftest import REPO, SPEC_SITE, TEST_BASE_URL
from tests.sites import Shape, make_site

SKILL = "/.well-known/agent-skills/service/SKILL.md"
SKILLS_INDEX = "/.well-known/agent-skills/index.json"
SKILL_V0_1 = "/.well-known/skills/service/SKILL.md"
SKILLS_INDEX_V0_1 = "/.well-known/skills/index.json"


def copy_site(tmp_path: Path, source: Path = SPEC_SITE) -> Path:
    site = tmp_path / "site"
    shutil.copytree(source, site)
    return site


def with_site_yaml(site: Path, extra: str) -> Path:
    path = site / "site.yaml"
    path.write_text(path.read_text(encoding="utf-8") + extra, encoding="utf-8")
    return site


def files_of(site: Path) -> dict[str, Artifact]:
    return {a.path: a for a in plan(site, TEST_BASE_URL).artifacts}


def robots(site: Path) -> str:
    return files_of(site)[paths.ROBOTS_TXT].body.decode("utf-8")


# --- content signals ------------------------------------------------------------------


def test_no_content_signal_is_declared_by_default(tmp_path: Path) -> None:
    for site in (SPEC_SITE, REPO / "site_data", make_site(tmp_path / "gen", Shape(3, 2))):
        text = robots(site)
        assert "Content-Signal" not in text and "content signals" not in text, site
        assert "User-agent: *\nAllow: /" in text


@pytest.mark.parametrize(
    ("declared", "line"),
    [
        (
            "  search: yes\n  ai-input: yes\n  ai-train: no\n",
            "search=yes, ai-input=yes, ai-train=no",
        ),
        # The policy's order, whatever the owner's; quoted and unquoted yes/no alike.
        ('  ai-train: "no"\n  search: "yes"\n', "search=yes, ai-train=no"),
        ("  ai-input: no\n", "ai-input=no"),
    ],
)
def test_declared_signals_are_one_line_in_the_group_after_the_policy(
    tmp_path: Path, declared: str, line: str
) -> None:
    site = with_site_yaml(copy_site(tmp_path), "content_signals:\n" + declared)
    text = robots(site)
    lines = text.split("\n")
    assert (
        lines[0]
        == "# As a condition of accessing this website, you agree to abide by the following"
    )
    assert "# ai-train: training or fine-tuning AI models." in lines
    assert [entry for entry in lines if entry.startswith("Content-Signal")] == [
        f"Content-Signal: {line}"
    ]
    group = lines.index("User-agent: *")
    assert lines[group + 1] == f"Content-Signal: {line}" and lines[group + 2] == "Allow: /"
    # Every policy line is a comment or blank: a robots.txt parser reads only the group.
    policy = lines[:group]
    assert all(entry.startswith("#") or not entry for entry in policy)


@pytest.mark.parametrize(
    ("declared", "field"),
    [
        ("  ai-train: maybe\n", "content_signals.ai-train"),
        ("  ai_train: no\n", "content_signals.ai_train"),  # the policy's spelling only
        ("  search: 1\n", "content_signals.search"),
    ],
)
def test_a_bad_signal_names_the_file_and_field(tmp_path: Path, declared: str, field: str) -> None:
    site = with_site_yaml(copy_site(tmp_path), "content_signals:\n" + declared)
    with pytest.raises(SiteDataError) as raised:
        plan(site, TEST_BASE_URL)
    message = str(raised.value)
    assert "site.yaml" in message and f"field '{field}'" in message, message


# --- the Agent Skill ------------------------------------------------------------------


def front_matter(text: str) -> dict[str, object]:
    assert text.startswith("---\n")
    head, _, _ = text[4:].partition("\n---\n")
    return yaml.safe_load(head)


def test_the_generated_skill_follows_the_format_and_uses_this_sites_urls(tmp_path: Path) -> None:
    for site in (SPEC_SITE, make_site(tmp_path / "gen", Shape(3, 2))):
        files = files_of(site)
        text = files[SKILL].body.decode("utf-8")
        meta = front_matter(text)
        assert set(meta) == {"name", "description"} and meta["name"] == "service"
        assert isinstance(meta["description"], str) and 0 < len(meta["description"]) <= 1024
        body = text.split("\n---\n", 1)[1]
        # How to find and read the content: each interface it names is published here.
        for path in (
            paths.discovery("service"), paths.CONTENT_INDEX, paths.SEARCH_INDEX,
            paths.LLMS_TXT, paths.MCP_MANIFEST, paths.CHANGES,
        ):  # fmt: skip
            assert TEST_BASE_URL + path in body and path in files, path
        # The site's own examples: real Markdown twins of real entries.
        examples = [line for line in body.split("\n") if line.startswith("- [")]
        assert examples
        for line in examples:
            url = line.split("](", 1)[1].split(")", 1)[0]
            assert url.removeprefix(TEST_BASE_URL) in files, url


def test_the_skills_index_names_the_skill_with_correct_digests() -> None:
    files = files_of(SPEC_SITE)
    raw = json.loads(files[SKILLS_INDEX].body)
    assert list(raw) == ["$schema", "skills"]  # the RFC's key, by its alias
    index = SkillsIndex.model_validate(raw)
    [skill] = index.skills
    body = files[SKILL].body
    assert (skill.name, skill.type, skill.url) == ("service", "skill-md", SKILL)
    assert skill.description == front_matter(body.decode("utf-8"))["description"]
    assert skill.digest == "sha256:" + hashlib.sha256(body).hexdigest()
    # The v0.1.0 copy: the same bytes where its index's name leads.
    legacy = LegacySkillsIndex.model_validate_json(files[SKILLS_INDEX_V0_1].body)
    [old] = legacy.skills
    assert (old.name, old.description, old.files) == (skill.name, skill.description, ["SKILL.md"])
    assert files[SKILL_V0_1].body == body


def test_the_owners_skill_replaces_the_generated_one(tmp_path: Path) -> None:
    site = copy_site(tmp_path)
    own = b'---\nname: service\ndescription: "Our own words: read the docs."\n---\n\n# Ours\n'
    (site / "SKILL.md").write_bytes(own)
    files = files_of(site)
    assert files[SKILL].body == own and files[SKILL_V0_1].body == own
    index = json.loads(files[SKILLS_INDEX].body)
    assert index["skills"][0]["description"] == "Our own words: read the docs."
    assert index["skills"][0]["digest"] == "sha256:" + hashlib.sha256(own).hexdigest()
    legacy = json.loads(files[SKILLS_INDEX_V0_1].body)
    assert legacy["skills"][0]["description"] == "Our own words: read the docs."


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("# no front matter\n", None),
        ("---\nname: other\ndescription: x\n---\n", "name"),
        ("---\nname: service\n---\n", "description"),
        ("---\nname: service\ndescription: [1, 2]\n---\n", "description"),
    ],
)
def test_a_bad_owners_skill_names_the_file_and_field(
    tmp_path: Path, text: str, field: str | None
) -> None:
    site = copy_site(tmp_path)
    (site / "SKILL.md").write_text(text, encoding="utf-8")
    with pytest.raises(SiteDataError) as raised:
        plan(site, TEST_BASE_URL)
    message = str(raised.value)
    assert "SKILL.md" in message, message
    if field:
        assert f"'{field}'" in message, message


def test_author_text_cannot_forge_the_front_matter(tmp_path: Path) -> None:
    """Quotes, colons and a would-be closing fence in the site's name and description stay
    text: the front matter parses to exactly its two fields."""
    site = copy_site(tmp_path)
    path = site / "site.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["name"] = 'Evil" --- name: x'
    data["description"] = 'Say "hi": ---\\nname: forged. More text here.'
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    text = files_of(site)[SKILL].body.decode("utf-8")
    meta = front_matter(text)
    assert set(meta) == {"name", "description"} and meta["name"] == "service"
    assert 'Evil" --- name: x' in str(meta["description"])


@pytest.mark.parametrize("brand", ["a--b", "a-", "a" * 65])
def test_a_brand_that_is_no_skill_name_is_refused_naming_the_field(
    tmp_path: Path, brand: str
) -> None:
    site = copy_site(tmp_path)
    path = site / "site.yaml"
    path.write_text(
        path.read_text(encoding="utf-8").replace("brand: service", f"brand: {brand}"), "utf-8"
    )
    if f"brand: {brand}" not in path.read_text(encoding="utf-8"):
        with_site_yaml(site, f"brand: {brand}\n")
    with pytest.raises(SiteDataError) as raised:
        load_site(site)  # refused as site.yaml is read, not later while rendering
    assert "site.yaml" in str(raised.value) and "brand" in str(raised.value)
    assert "Agent Skill" in str(raised.value)
