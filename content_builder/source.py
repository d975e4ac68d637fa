"""Pydantic models of what authors write in site_data/ (docs/site-data-format.md).

They are stricter than the published models: unknown keys are errors, text may not be
blank, ids are path-safe slugs. architecture.yaml and on-site-agent.yaml are published
as written, so they are validated with the published models themselves.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)

from agent_contract import search_terms
from agent_contract.models import ContentType, Url
from agent_contract.uri import url_problem
from content_builder.text_rules import require_one_line

#: Ids become file names (/api/v1/faq/<id>.json): no `/`, no `..`, no upper case.
ID_PATTERN = r"^[a-z0-9][a-z0-9-]*$"
Slug = Annotated[str, StringConstraints(pattern=ID_PATTERN, max_length=80)]
#: Text that may span lines (a body, an answer, a code example): written as a block.
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
#: Text written inside a line (a title, a name, a description, a keyword): one line only
#: (text_rules.require_one_line; control characters are refused in every field on read).
Line = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1), AfterValidator(require_one_line)
]
LanguageCode = Annotated[str, StringConstraints(pattern=r"^[a-z]{2}$")]
SemVer = Annotated[str, StringConstraints(pattern=r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$")]


def _require_https_origin(value: str) -> str:
    if not value.startswith("https://"):
        raise ValueError(
            f"expected an https:// URL (the API is served over HTTPS only), got {value!r}"
        )
    if value.endswith("/"):
        raise ValueError(f"expected no trailing slash, got {value!r}")
    if _BEYOND_ORIGIN.search(value.removeprefix("https://")):
        # Every published path starts at the origin: /.well-known/ must be there (RFC
        # 8615), and the CDN's routes, the edge and the MCP manifest name paths from /.
        raise ValueError(
            "expected an origin only, like https://agents.example.com: the API is "
            "published at the root of its host, so a path, query or fragment is not "
            f"supported, got {value!r}"
        )
    return value


_BEYOND_ORIGIN = re.compile(r"[/?#]")


#: The brand names the Agent Skill too (render/skill.py: its folder and `name`), so it
#: is an Agent Skills name (agentskills.io): 1-64 of a-z and 0-9, single hyphens between.
SKILL_NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
SKILL_NAME_MAX = 64


def _require_free_brand(value: str) -> str:
    # The discovery document is /.well-known/<brand>.json; mcp.json is the MCP manifest.
    if value == "mcp":
        raise ValueError("'mcp' is reserved: /.well-known/mcp.json is the MCP manifest")
    # Checked here, with the brand's other rules, not when the skill is rendered: a brand
    # the loader accepted must build (hypothesis found `a-` accepted, then refused).
    if len(value) > SKILL_NAME_MAX or not SKILL_NAME.fullmatch(value):
        raise ValueError(
            f"names the Agent Skill too, so it must be 1-{SKILL_NAME_MAX} of a-z, 0-9 and "
            f"single hyphens between them (agentskills.io), found {value!r}"
        )
    return value


_EMAIL = re.compile(r"^[^@\s<>()\[\],;:\"]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$")


def _require_contact(value: str) -> str:
    # OpenAPI's info.contact takes an e-mail address or a URL (render/openapi.py picks
    # which by the `@`), so anything else would publish an invalid description.
    if "@" in value and not value.startswith(("http://", "https://")):
        if not _EMAIL.fullmatch(value):
            raise ValueError(f"expected an e-mail address like agents@example.com, got {value!r}")
        return value
    if url_problem(value) is not None:
        raise ValueError(
            "expected an e-mail address (agents@example.com) or an absolute http(s) URL "
            f"(https://example.com/contact), got {value!r}"
        )
    return value


def _require_major_one(value: str) -> str:
    # The path prefix is /api/v1/; a 2.x api_version would contradict every URL.
    if not value.startswith("1."):
        raise ValueError(f"expected a 1.x version to match the /api/v1/ path prefix, got {value!r}")
    return value


class SourceModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


Fraction = Annotated[float, Field(ge=0.0, le=1.0)]


class SearchEvalSettings(SourceModel):
    """Floors for site_data/search-questions.yaml; the owner decides whether a drop fails."""

    recall_at_1: Fraction = 0.0
    recall_at_3: Fraction = 0.0
    fail_below: bool = False


def _one_search_word(word: str) -> str:
    """The word as the index holds it (folded), when it is one word search can match."""
    found = search_terms.words(word)
    if found != [search_terms.fold(word).strip()]:
        raise ValueError(
            f"{word!r} is not one search word (a word of letters or digits, not a stop "
            "word): a synonym is matched word by word, phrases are not"
        )
    return found[0]


SearchWord = Annotated[str, AfterValidator(_one_search_word)]


def _distinct_group(words: list[str]) -> list[str]:
    group = list(dict.fromkeys(words))
    if len(group) < 2:
        raise ValueError(f"a synonym group names at least two different words: {words}")
    return group


#: Bounds on what the owner declares: the term map, which every query reads first,
#: carries all of it, and each query word of a group is looked up as each of its words.
MAX_SYNONYM_WORDS = 20
MAX_SYNONYM_GROUPS = 200
SynonymGroup = Annotated[
    list[SearchWord], Field(max_length=MAX_SYNONYM_WORDS), AfterValidator(_distinct_group)
]


class SearchSettings(SourceModel):
    """How the sharded search index matches queries (docs/site-data-format.md, "site.yaml")."""

    #: Groups of words that mean the same on this site ("routes", "endpoints"): a query
    #: word of a group is also looked up as the group's other words. Published in the
    #: term map, applied when a query is answered (search_shards.PROCEDURE).
    synonyms: list[SynonymGroup] = Field(default=[], max_length=MAX_SYNONYM_GROUPS)

    @model_validator(mode="after")
    def _each_word_in_one_group(self) -> SearchSettings:
        # A query word is matched to its group by its stem: two groups sharing a stem
        # would make a word mean two things.
        seen: dict[str, int] = {}
        for number, group in enumerate(self.synonyms):
            for word in group:
                other = seen.setdefault(search_terms.stem(word), number)
                if other != number:
                    raise ValueError(
                        f"{word!r} (or a form of it) is in two synonym groups: "
                        f"{self.synonyms[other]} and {group}; merge them"
                    )
        return self


def _yes_or_no(value: object) -> object:
    # YAML 1.1 (PyYAML) reads an unquoted yes/no as a boolean: both spellings mean the same.
    if value is True:
        return "yes"
    if value is False:
        return "no"
    return value


YesNo = Annotated[Literal["yes", "no"], BeforeValidator(_yes_or_no)]


class ContentSignals(SourceModel):
    """The owner's content signals (contentsignals.org), published in robots.txt. A signal
    left out is not declared: it neither grants nor restricts that use."""

    search: YesNo | None = None
    ai_input: YesNo | None = Field(None, alias="ai-input")
    ai_train: YesNo | None = Field(None, alias="ai-train")

    def declared(self) -> list[tuple[str, str]]:
        """(signal, yes/no) of each declared signal, in the policy's order."""
        values = (("search", self.search), ("ai-input", self.ai_input), ("ai-train", self.ai_train))
        return [(name, value) for name, value in values if value is not None]


class SiteSource(SourceModel):
    """Identity keys (name, description, website, base_url, contact) are required; the
    rest have defaults a new site can live with (issue 23)."""

    brand: Annotated[
        str, StringConstraints(pattern=r"^[a-z][a-z0-9-]*$"), AfterValidator(_require_free_brand)
    ] = "service"
    name: Line
    description: Line
    #: The paragraph llms.txt and llms-full.txt open with; the description when unset.
    about: Line
    website: Url
    base_url: Annotated[Url, AfterValidator(_require_https_origin)]
    api_version: Annotated[SemVer, AfterValidator(_require_major_one)] = "1.0.0"
    language: LanguageCode = "en"
    contact: Annotated[Line, AfterValidator(_require_contact)]
    search_eval: SearchEvalSettings = SearchEvalSettings()
    search: SearchSettings = SearchSettings()
    # A Markdown docs tree (docs/site-data-format.md, "Markdown pages"): its folder,
    # relative to site.yaml (it may lie outside the site folder: `../docs`).
    docs_dir: Line | None = None
    #: A folder holding the docs tree (the repository's root), relative to site.yaml, whose
    #: files `{! file !}` / `{* file *}` lines may include (markdown_includes.py).
    include_root: Line | None = None
    #: The human pages' base URL (canonical_url = docs_url + the page's path); `website`
    #: when not set.
    docs_url: Url | None = None
    #: How the docs tool spells a page's URL: `directory` (mkdocs: guide/ssr/), `clean`
    #: (VitePress, Docusaurus: guide/ssr), `html` (guide/ssr.html); found when not set.
    docs_url_style: Literal["directory", "clean", "html"] | None = None
    #: What a relative link to a page that does not exist is: an error, or a warning.
    broken_links: Literal["error", "warn"] = "error"
    # Default: none declared (the owner decides; robots.txt then says nothing of it).
    content_signals: ContentSignals = ContentSignals()

    @model_validator(mode="before")
    @classmethod
    def _about_defaults_to_description(cls, data: Any) -> Any:
        if isinstance(data, dict) and "about" not in data and "description" in data:
            return {**data, "about": data["description"]}
        return data


#: Sections of one page at most: ~5x the most real docs pages have (FastAPI's release notes,
#: 916 headings; Docusaurus' and VitePress' changelogs, 530-650), and a page of 113,000
#: headings (1 MiB of `# h1` lines) took 12 s of CPU to build (docs/decisions.md, session 28).
MAX_SECTIONS = 5_000


class SectionSource(SourceModel):
    title: Line
    body: Text
    code_example: Text | None = None


class PageContentSource(SourceModel):
    headline: Line
    sections: Annotated[list[SectionSource], Field(min_length=1, max_length=MAX_SECTIONS)]


class MarkdownSectionSource(SourceModel):
    """A section of a Markdown page: its body is CommonMark Markdown (fenced code kept
    inside it as a fence with its info string), empty when the heading has no text."""

    title: Line
    body: str


class MarkdownPageSource(SourceModel):
    """The page body of a Markdown page (markdown_page.py): no code_example."""

    headline: Line
    sections: Annotated[list[MarkdownSectionSource], Field(min_length=1, max_length=MAX_SECTIONS)]


class CapabilitySource(SourceModel):
    title: Line
    description: Line
    endpoints: list[Url]


CapabilityName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9_]+$")]


class FeatureContentSource(SourceModel):
    headline: Line
    summary: Text
    capabilities: Annotated[dict[CapabilityName, CapabilitySource], Field(min_length=1)]
    for_agent_developers: Text


#: Which body shape each content_type has (the spec's observed page and feature shapes).
CONTENT_SHAPES: dict[str, type[SourceModel]] = {
    "page": PageContentSource,
    "faq": PageContentSource,
    "product": PageContentSource,
    "feature": FeatureContentSource,
}

Keywords = list[Line]


class DocumentSource(SourceModel):
    id: Slug
    title: Line
    content_type: ContentType
    description: Line
    canonical_url: Url
    order: int = 100
    language: LanguageCode | None = None
    version: SemVer | None = None
    keywords: Keywords = []
    # Validated against CONTENT_SHAPES[content_type] by the loader, so that the error
    # names `content.<field>` of the right shape instead of a union of both.
    content: dict[str, Any]


class FaqSource(SourceModel):
    id: Slug
    question: Line
    answer: Text
    canonical_url: Url | None = None
    keywords: Keywords = []
