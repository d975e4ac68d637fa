"""The Agent Skill as the discovery RFC's clients read it (issue 26), over HTTP from the
local edge: on the sample site, a generated site, a Markdown docs tree and an owner's own
SKILL.md.

The checks restate the RFC (github.com/cloudflare/agent-skills-discovery-rfc, v0.2.0 and
its v0.1.0 draft) rather than the builder's models, so a shape the models allow but the
RFC does not still fails here.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.error import HTTPError
from urllib.parse import urljoin, urlsplit

import yaml

from tests.conftest import SITE_DATA, SPEC_SITE, running_server
from tests.sites import Shape, make_site

FIXTURES = Path(__file__).parent / "fixtures"
SCHEMA_0_2_0 = "https://schemas.agentskills.io/discovery/0.2.0/schema.json"
#: "1-64 characters; lowercase alphanumeric and hyphens only; MUST NOT start or end with
#: a hyphen; MUST NOT contain consecutive hyphens".
NAME = re.compile(r"(?!.*--)[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?")
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
#: v0.1.0's files: relative, `/`-separated, no `..`, printable ASCII without `\?#[]`.
V0_1_FILE = re.compile(r"[\x20-\x7e]+")


def get(url: str, method: str = "GET") -> tuple[int, str, bytes]:
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.headers.get("Content-Type", ""), answer.read()
    except HTTPError as error:
        return error.code, error.headers.get("Content-Type", ""), b""


def front_matter(body: bytes) -> dict[str, object]:
    """SKILL.md "MUST contain YAML frontmatter with `name` and `description`"."""
    text = body.decode("utf-8").replace("\r\n", "\n")
    assert text.startswith("---\n"), text[:80]
    head, fence, _ = text[4:].partition("\n---\n")
    assert fence, "the front matter is closed"
    data = yaml.safe_load(head)
    assert isinstance(data, dict)
    return data


def fetch_json(url: str) -> dict[str, object]:
    status, media, body = get(url)
    assert status == 200, url
    # "Serve /.well-known/agent-skills/index.json with application/json content type".
    assert media.split(";")[0].strip() == "application/json", (url, media)
    data = json.loads(body)
    assert isinstance(data, dict)
    return data


def fetch_skill_md(url: str) -> bytes:
    status, media, body = get(url)
    assert status == 200, url
    # "Serve SKILL.md files with text/markdown or text/plain content type".
    assert media.split(";")[0].strip() in {"text/markdown", "text/plain"}, (url, media)
    # "Support GET and HEAD methods".
    assert get(url, "HEAD")[0] == 200, url
    return body


def check_v0_2_0(origin: str) -> dict[str, bytes]:
    """The index a v0.2.0 client reads, checked field by field; returns name -> the
    SKILL.md bytes its `url` serves."""
    index_url = origin + "/.well-known/agent-skills/index.json"
    index = fetch_json(index_url)
    assert index.get("$schema") == SCHEMA_0_2_0
    skills = index.get("skills")
    assert isinstance(skills, list) and skills
    found: dict[str, bytes] = {}
    for skill in skills:
        assert isinstance(skill, dict)
        for field in ("name", "type", "description", "url", "digest"):
            assert isinstance(skill.get(field), str) and skill[field], (field, skill)
        name, description = skill["name"], skill["description"]
        assert len(name) <= 64 and NAME.fullmatch(name), name
        assert skill["type"] == "skill-md"  # SKILL.md alone: "SHOULD use type: skill-md"
        assert len(description) <= 1024
        assert DIGEST.fullmatch(skill["digest"]), skill["digest"]
        # "URLs are resolved per RFC 3986 Section 5 using the index URL as the base URI".
        url = urljoin(index_url, skill["url"])
        assert urlsplit(url).netloc == urlsplit(origin).netloc, url
        body = fetch_skill_md(url)
        # "the SHA-256 of the SKILL.md file's raw bytes", as `sha256:{hex}`.
        assert skill["digest"] == "sha256:" + hashlib.sha256(body).hexdigest()
        meta = front_matter(body)
        assert meta.get("name") == name
        assert meta.get("description") == description  # "SHOULD match"
        found[name] = body
    # The conventional location is where this site puts it.
    assert all(
        urljoin(index_url, s["url"]) == f"{origin}/.well-known/agent-skills/{s['name']}/SKILL.md"
        for s in skills
    )
    return found


def check_v0_1_0(origin: str, artifacts: dict[str, bytes]) -> None:
    """The index at the old location, as a v0.1.0 client reads it: no `$schema` (so read
    as v0.1.0), `name`, `description`, `files`; each file at
    `/.well-known/skills/{name}/{file}`, SKILL.md the very bytes v0.2.0 pins."""
    index = fetch_json(origin + "/.well-known/skills/index.json")
    assert "$schema" not in index and "version" not in index
    skills = index.get("skills")
    assert isinstance(skills, list)
    assert sorted(skill["name"] for skill in skills) == sorted(artifacts)
    for skill in skills:
        assert set(skill) == {"name", "description", "files"}, skill
        name, description, files = skill["name"], skill["description"], skill["files"]
        assert len(name) <= 64 and NAME.fullmatch(name), name
        assert isinstance(description, str) and 0 < len(description) <= 1024
        assert isinstance(files, list) and files and files[0] == "SKILL.md"
        for file in files:
            assert isinstance(file, str) and V0_1_FILE.fullmatch(file), file
            assert not file.startswith("/") and ".." not in file.split("/")
            assert not set(file) & set("\\?#[]"), file
        body = fetch_skill_md(f"{origin}/.well-known/skills/{name}/SKILL.md")
        assert body == artifacts[name]
        assert front_matter(body).get("description") == description


@contextmanager
def serving(site: Path) -> Iterator[str]:
    with running_server(site) as server:
        yield server.base_url


def check_site(site: Path) -> dict[str, bytes]:
    with serving(site) as origin:
        artifacts = check_v0_2_0(origin)
        check_v0_1_0(origin, artifacts)
        # "Return 404 Not Found for skills or files that do not exist".
        assert get(origin + "/.well-known/agent-skills/nope/SKILL.md")[0] == 404
    return artifacts


def test_the_sample_sites_skill_is_published_as_the_rfc_says(tmp_path: Path) -> None:
    shutil.copytree(SITE_DATA, tmp_path / "site")
    check_site(tmp_path / "site")


def test_a_generated_sites_skill_is_published_as_the_rfc_says(tmp_path: Path) -> None:
    site = make_site(tmp_path / "site", Shape(4, 3, brand="docs-hub", unicode=True))
    [name] = check_site(site)
    assert name == "docs-hub"


def test_a_markdown_docs_trees_skill_is_published_as_the_rfc_says(tmp_path: Path) -> None:
    for name in ("httpx", "httpx-site"):  # site.yaml names ../httpx/docs
        shutil.copytree(FIXTURES / name, tmp_path / name)
    check_site(tmp_path / "httpx-site")


def test_an_owners_skill_is_pinned_byte_for_byte(tmp_path: Path) -> None:
    """The owner's file, CRLF line ends and all: the digest is over its raw bytes."""
    site = tmp_path / "site"
    shutil.copytree(SPEC_SITE, site)
    own = (
        b"---\r\nname: service\r\ndescription: 'Our own words: read the docs.'\r\n---\r\n\r\n"
        b"# Ours\r\n"
    )
    (site / "SKILL.md").write_bytes(own)
    assert check_site(site) == {"service": own}
