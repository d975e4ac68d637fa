"""The site's Agent Skill (issue 26): `/.well-known/agent-skills/{brand}/SKILL.md` and the
discovery index beside it, `/.well-known/agent-skills/index.json`, with the same SKILL.md
and a v0.1.0 index at the old `/.well-known/skills/` for the clients that read only it.

SKILL.md is the Agent Skills format (https://agentskills.io/specification): YAML front
matter with `name` (1-64 of a-z, 0-9 and single inner hyphens, the skill's folder name)
and `description` (at most 1,024 characters), then Markdown instructions. Generated from
the site: what the product is, then how to find and read its content through this API
(discovery, index, search, fetch, MCP), with the site's own entries as examples. An owner
who writes `SKILL.md` in the site folder gets theirs published instead, checked the same
way. The indexes are the Agent Skills discovery RFC's
(https://github.com/cloudflare/agent-skills-discovery-rfc): v0.2.0 names the one
`skill-md` artifact by URL and the sha256 of its raw bytes; v0.1.0 lists its files.
"""

from __future__ import annotations

import hashlib
import json
import re

from agent_contract import paths
from agent_contract.directives import TOKEN_METHOD
from agent_contract.endpoints import ENDPOINT
from agent_contract.models import (
    SKILL_DESCRIPTION_MAX,
    SKILLS_SCHEMA_URI,
    LegacySkillsIndex,
    SkillsIndex,
)
from content_builder.errors import SiteDataError
from content_builder.loaded import Site
from content_builder.loader import SKILL_FILE
from content_builder.render.catalog import Catalog
from content_builder.render.documents import summarize
from content_builder.render.escape import link_text, paragraph
from content_builder.yaml_io import read_yaml_mapping

_FRONT_MATTER = re.compile(r"---\n(.*?\n)---\n", re.DOTALL)


def skill_name(site: Site) -> str:
    """The skill's name: the site's brand, which names its folder (and the discovery
    document), so one agent can hold several sites' skills side by side. A valid skill
    name by the loader's rule (source.py `SKILL_NAME`)."""
    return site.config.brand


def _description(site: Site) -> str:
    name = " ".join(site.config.name.split())
    text = (
        f"Find and read {name}'s own content (documents and FAQ) through its read-only "
        f"agent-access API: discovery, index, keyword search, JSON or Markdown per entry, MCP. "
        f"Use when a task needs facts about {name}: "
    )
    return text + summarize(site.config.description, limit=SKILL_DESCRIPTION_MAX - len(text))


def generated_skill(site: Site, catalog: Catalog, mcp_endpoint: str | None) -> str:
    """SKILL.md written from the site: author text only as escaped paragraphs and link
    text (escape.py), the front matter's strings as JSON strings (valid YAML scalars)."""
    base, brand = site.base_url, site.config.brand
    name = " ".join(site.config.name.split())

    def url(path: str) -> str:
        return base + path

    lines = [
        "---",
        f"name: {skill_name(site)}",
        # A JSON string is a YAML double-quoted scalar; ASCII-only, so no character of
        # the author's can end it or the front matter.
        f"description: {json.dumps(_description(site))}",
        "---",
        "",
        f"# {paragraph(name)}",
        "",
        paragraph(" ".join(site.config.description.split())),
        "",
        "## Find and read the content",
        "",
        f"Everything is a static file under {base}: GET only, no authentication, CORS open.",
        "",
        f"1. Start at the discovery document, {url(paths.discovery(brand))}: it lists every "
        "interface by URL.",
        f"2. List the entries: {url(paths.CONTENT_INDEX)} gives each document and FAQ entry "
        "with its `api_url`, `updated_at` and `size` (bytes and estimated tokens, "
        f"{TOKEN_METHOD}); check the size against your fetch tool's limit first.",
        f"3. Search: fetch {url(paths.SEARCH_INDEX)}, lowercase the question, split it into "
        "words and rank entries by how many distinct words match their `keywords`.",
        "4. Read an entry: GET its `api_url` for JSON, or the same URL ending in `.md` (or "
        "`Accept: text/markdown`) for Markdown. Every answer's `Link` header names "
        "llms.txt and the discovery document; an entry's names its other format.",
        f"5. For a whole-site overview, read {url(paths.LLMS_TXT)}; "
        f"{url(paths.LLMS_FULL_TXT)} holds every entry as plain text (large).",
        f"6. MCP: the manifest is {url(paths.MCP_MANIFEST)}"
        + (f"; a live MCP server answers at {mcp_endpoint}." if mcp_endpoint else "."),
        "7. Stay current: send back the `ETag` in `If-None-Match` (a 304 costs nothing), or "
        f"follow {url(paths.CHANGES)} for what changed.",
        "",
    ]
    examples = [
        (entry.title, url(paths.document_markdown(entry.id)))
        for entry in _titled(site, catalog, "documents")
    ] + [
        (entry.title, url(paths.faq_markdown(entry.id))) for entry in _titled(site, catalog, "faqs")
    ]
    if examples:
        lines += ["## Examples from this site", ""]
        lines += [f"- [{link_text(title)}]({link}) (Markdown)" for title, link in examples]
        lines.append("")
    return "\n".join(lines)


class _Titled:
    __slots__ = ("id", "title")

    def __init__(self, entry_id: str, title: str) -> None:
        self.id, self.title = entry_id, " ".join(title.split()).replace("[", "(").replace("]", ")")


def _titled(site: Site, catalog: Catalog, kind: str) -> list[_Titled]:
    """Entries with a one-line title, read from the index pieces the catalog holds."""
    entries = catalog.documents if kind == "documents" else catalog.faqs
    found = []
    for entry in entries[:2]:  # the examples: never the whole site's pieces
        piece = json.loads(entry.index_entry)
        found.append(_Titled(entry.id, piece["title"]))
    return found


def skill_markdown(site: Site, catalog: Catalog, mcp_endpoint: str | None) -> bytes:
    """The published SKILL.md: the owner's when the site folder has one, else generated."""
    if site.skill_md is None:
        return generated_skill(site, catalog, mcp_endpoint).encode("utf-8")
    front_matter(site, site.skill_md)
    return site.skill_md


def front_matter(site: Site, body: bytes) -> dict[str, object]:
    """The owner's SKILL.md front matter, checked as the Agent Skills format asks; every
    problem names the file and the field."""
    display = site.display(SKILL_FILE)
    try:
        text = body.decode("utf-8").replace("\r\n", "\n")
    except UnicodeDecodeError as error:
        raise SiteDataError.single(display, None, f"not UTF-8 text ({error.reason})") from error
    found = _FRONT_MATTER.match(text)
    if found is None:
        raise SiteDataError.single(
            display, None, "must open with YAML front matter between two '---' lines"
        )
    data = read_yaml_mapping(site.root / SKILL_FILE, display, found.group(1).encode("utf-8"))
    name, description = data.get("name"), data.get("description")
    if name != skill_name(site):
        raise SiteDataError.single(
            display,
            "name",
            f"must be the site's brand, {site.config.brand!r} (the skill's folder), found {name!r}",
        )
    if not isinstance(description, str) or not 1 <= len(description) <= SKILL_DESCRIPTION_MAX:
        raise SiteDataError.single(
            display,
            "description",
            f"a string of 1 to {SKILL_DESCRIPTION_MAX} characters is required",
        )
    return data


def skill_description(site: Site, skill: bytes) -> str:
    """The description both indexes give: SKILL.md's own (the RFC: it "SHOULD match the
    `description` field in the skill's `SKILL.md` frontmatter")."""
    if site.skill_md is None:
        return _description(site)
    return str(front_matter(site, skill)["description"])


def skill_path(site: Site) -> str:
    """SKILL.md's path at the RFC's v0.2.0 location (its `url` convention)."""
    return ENDPOINT["skill"].resolve(skill_name(site))


def skills_index(site: Site, skill: bytes) -> SkillsIndex:
    """The v0.2.0 index: the one `skill-md` skill, its URL path-absolute as the RFC's
    convention writes it (any host serving the site resolves it to its own SKILL.md),
    and `sha256:{hex}` of the very bytes published there."""
    return SkillsIndex.model_validate(
        {
            "$schema": SKILLS_SCHEMA_URI,
            "skills": [
                {
                    "name": skill_name(site),
                    "type": "skill-md",
                    "description": skill_description(site, skill),
                    "url": skill_path(site),
                    "digest": "sha256:" + hashlib.sha256(skill).hexdigest(),
                }
            ],
        }
    )


def legacy_skills_index(site: Site, skill: bytes) -> LegacySkillsIndex:
    """The v0.1.0 index: clients fetch `/.well-known/skills/{name}/{file}` for each file."""
    return LegacySkillsIndex.model_validate(
        {
            "skills": [
                {
                    "name": skill_name(site),
                    "description": skill_description(site, skill),
                    # The file's name as the v0.1.0 row publishes it, beside the index.
                    "files": [ENDPOINT["skill_v0_1"].path.rsplit("/", 1)[1]],
                }
            ]
        }
    )
