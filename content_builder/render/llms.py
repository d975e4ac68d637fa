"""llms.txt (a linked guide) and llms-full.txt (everything, as plain text).

llms.txt keeps to the narrow form the reference parser (`llms_txt.parse_llms_file`)
reads correctly: H1, a one-line `>` summary, one paragraph, then `##` sections that
hold only `- [title](url): note` lines. Link titles may not contain brackets and
notes may not span lines, or the parser silently mangles them.
"""

from __future__ import annotations

import re

from agent_contract import paths, search_shards
from agent_contract.directives import TOKEN_METHOD
from agent_contract.endpoints import Endpoint, llms_section
from agent_contract.models import ContentDocument, EntrySize, FAQEntry, FeatureContent
from content_builder.loaded import LoadedDocument, LoadedFaq, Site
from content_builder.render.catalog import Catalog
from content_builder.render.documents import summarize
from content_builder.render.escape import (
    block,
    code_fence,
    link_text,
    link_url,
    one_line,
    paragraph,
)
from content_builder.render.indexes import faq_canonical_url
from content_builder.render.markdown import twin_links
from content_builder.site_files import MARKDOWN_SUFFIXES


def _link(title: str, url: str, note: str | None = None) -> str:
    safe_title = link_text(one_line(title).replace("[", "(").replace("]", ")"))
    line = f"- [{safe_title}]({link_url(url)})"
    return f"{line}: {one_line(note)}" if note else line


#: AFDocs-style checks pass an llms.txt under 50,000 characters; the fetch tools agents use
#: cut at 5,000 to 100,000 (issue 14). llms.txt and each of its parts stay under it.
LLMS_TXT_BUDGET = 50_000


def _with_twin(site: Site, note: str, path: str, size: EntrySize) -> str:
    # Each entry names its Markdown twin by a real URL (a template in a Markdown link
    # would be a dead link to any reader that follows it), and both files' sizes, so an
    # agent can tell what fits its fetch tool before fetching (issue 26).
    twin = paths.markdown_twin(path)
    sizes = (
        f"JSON {size.json_bytes:,} bytes ~{size.json_tokens:,} tokens; "
        f"Markdown {size.markdown_bytes:,} bytes ~{size.markdown_tokens:,} tokens"
    )
    if not twin:
        return f"{note.rstrip()} ({sizes})"
    return f"{note.rstrip()} (Markdown: {site.base_url}{twin}; {sizes})"


def document_link(
    site: Site, loaded: LoadedDocument, document: ContentDocument, size: EntrySize
) -> str:
    """The document's line of llms.txt (or of its part)."""
    path = paths.document(document.id)
    return _link(
        document.title,
        site.base_url + path,
        _with_twin(site, loaded.source.description, path, size),
    )


def faq_link(site: Site, faq: FAQEntry, size: EntrySize) -> str:
    """The FAQ entry's line of llms.txt (or of its part)."""
    path = paths.faq(faq.id)
    note = _with_twin(site, summarize(faq.answer), path, size)
    return _link(faq.question, site.base_url + path, note)


def _directive(site: Site) -> str:
    """llms.txt's one-line directive to the machine-readable index (issue 26). The H1
    stays the first line (llmstxt.org), so it follows the summary."""
    return (
        f"Agents: the index of every entry is {site.base_url}{paths.CONTENT_INDEX} and every "
        f"interface is listed in {site.base_url}{paths.discovery(site.config.brand)}; sizes "
        f"below are UTF-8 bytes and estimated tokens ({TOKEN_METHOD})."
    )


def _entry_links(site: Site, catalog: Catalog) -> dict[str, list[str]]:
    """The links of each section: Documents, each nav group of the Markdown pages
    (site.groups, in nav order: the llms.txt convention's one `##` per group), FAQ."""
    sections: dict[str, list[str]] = {"Documents": []}
    sections.update((group, []) for group in site.group_order)
    for entry in catalog.documents:
        sections[site.groups.get(entry.id, "Documents")].append(entry.llms_link)
    sections["FAQ"] = [entry.llms_link for entry in catalog.faqs]
    return sections


def _part_name(section: str, number: int) -> str:
    return f"{_SLUG_RUN.sub('-', section.lower()).strip('-') or 'group'}-{number}"


_SLUG_RUN = re.compile(r"[^a-z0-9]+")


def _head(site: Site) -> list[str]:
    return [
        f"# {one_line(site.config.name)}",
        f"> {paragraph(summarize(site.config.description, limit=300))}",
        paragraph(one_line(site.config.about)),
    ]


def _part_text(site: Site, section: str, number: int, total: int, lines: list[str]) -> str:
    head = _head(site)
    head[0] += f": {section}, part {number} of {total}"
    head[2] = f"Part of {site.base_url}{paths.LLMS_TXT}, which links every part."
    return "\n\n".join([*head, f"## {section}\n\n" + "\n".join(lines)])


def _chunks(site: Site, section: str, lines: list[str]) -> list[list[str]]:
    """Consecutive runs of links, each part's text under the budget (with room for the
    longest heading a part can get)."""
    room = LLMS_TXT_BUDGET - len(_part_text(site, section, 99999, 99999, [])) - 1
    chunks: list[list[str]] = [[]]
    size = 0
    for line in lines:
        if chunks[-1] and size + len(line) + 1 > room:
            chunks.append([])
            size = 0
        chunks[-1].append(line)
        size += len(line) + 1
    return chunks if lines else []


def _parts(site: Site, catalog: Catalog) -> tuple[tuple[str, str, str], ...]:
    """(part name, section, text) of every part, in order. Found once per catalog:
    llms.txt, the parts themselves and OpenAPI's enum all need them (6 renders took 1.9 s
    of a 10,000-entry build)."""
    known = catalog.derived.get(_PARTS)
    if known is not None:
        return known  # type: ignore[no-any-return]
    found: list[tuple[str, str, str]] = []
    names: set[str] = set()
    for section, lines in _entry_links(site, catalog).items():
        chunks = _chunks(site, section, lines)
        for number, chunk in enumerate(chunks, 1):
            text = _part_text(site, section, number, len(chunks), chunk)
            name = _part_name(section, number)
            while name in names:  # two groups of one slug ("A B", "A-B")
                name = _part_name(section + "-x", number)
                section += "-x"
            names.add(name)
            found.append((name, section, text))
    catalog.derived[_PARTS] = parts = tuple(found)
    return parts


_PARTS = "llms_parts"


def llms_parts(site: Site, catalog: Catalog) -> list[tuple[str, str]]:
    """Nested llms.txt files (llms.txt v2: "most specific file wins"): the Documents and
    FAQ links in parts under LLMS_TXT_BUDGET characters, published at any size so an
    agent can rely on them; llms.txt lists them instead of the links once it would
    pass the budget itself."""
    return [(name, text) for name, _, text in _parts(site, catalog)]


def row_has_files(endpoint: Endpoint, site: Site, catalog: Catalog) -> bool:
    """Whether a row publishes anything on this site: a template (per entry, per part)
    is only linked when some file matches it, or the link would dangle."""
    if endpoint.parameter is None:
        return True
    name = endpoint.parameter.name
    if name == "document_id":
        return bool(catalog.documents)
    if name == "faq_id":
        return bool(catalog.faqs)
    return bool(catalog.documents or catalog.faqs)  # a part per section with entries


def _searching(site: Site) -> list[str]:
    """How to search at any size with GETs alone: the sharded index, with a worked example."""
    return [
        "Searching: the sharded search index answers a query in a few small GETs at any "
        f"size. {search_shards.PROCEDURE} With curl and jq:",
        "```sh\n" + search_shards.curl_example(site.base_url) + "\n```",
    ]


def llms_txt(site: Site, catalog: Catalog) -> str:
    def url(path: str) -> str:
        return site.base_url + path

    def listed(section: str) -> list[str]:
        return [
            _link(endpoint.llms.title, url(endpoint.resolve(site.config.brand)), endpoint.llms.note)
            for endpoint in llms_section(section)
            if endpoint.llms and row_has_files(endpoint, site, catalog)
        ]

    def assemble(sections: dict[str, list[str]]) -> str:
        head = _head(site)
        blocks = [
            *head[:2],
            _directive(site),
            *head[2:],
            *_searching(site),
            "## Interfaces\n\n" + "\n".join(listed("Interfaces")),
            # A section with nothing to list (a site without FAQ) is left out, not empty.
            *(f"## {name}\n\n" + "\n".join(lines) for name, lines in sections.items() if lines),
            "## Optional\n\n" + "\n".join(listed("Optional")),
        ]
        return "\n\n".join(blocks)

    sections = _entry_links(site, catalog)
    flat = assemble(sections)
    if len(flat) < LLMS_TXT_BUDGET:
        return flat
    nested: dict[str, list[str]] = {section: [] for section in sections}
    for name, section, text in _parts(site, catalog):
        first = text.split("\n- [", 1)[1].split("]", 1)[0]
        last = text.rsplit("\n- [", 1)[1].split("]", 1)[0]
        count = text.count("\n- [")
        if section in ("Documents", "FAQ"):
            title = name.replace("-", " part ").capitalize()
        else:
            title = f"{section} part {name.rsplit('-', 1)[1]}"
        nested.setdefault(section, []).append(
            _link(title, url(paths.llms_part(name)), f"{count} links, {first} … {last}")
        )
    return assemble(nested)


def document_block(site: Site, loaded: LoadedDocument, document: ContentDocument) -> str:
    """The document's block of llms-full.txt."""
    lines = [
        f"## {document.title}",
        "",
        f"Source: {site.base_url}{paths.document(document.id)}",
        f"Page: {document.canonical_url}",
        f"Updated: {document.updated_at} (version {document.metadata.content_version})",
        "",
        paragraph(loaded.source.description),
        "",
    ]
    # Author text as text: one-line fields as paragraphs, bodies as blocks (escape.py).
    body = document.content
    if isinstance(body, FeatureContent):
        lines += [paragraph(body.headline), "", block(body.summary), ""]
        for capability in body.capabilities.values():
            lines += [f"### {capability.title}", "", paragraph(capability.description), ""]
            lines += [f"- {endpoint}" for endpoint in capability.endpoints]
            lines.append("")
        lines += ["### For agent developers", "", block(body.for_agent_developers), ""]
    else:
        lines += [paragraph(body.headline), ""]
        markdown_source = loaded.file.endswith(MARKDOWN_SUFFIXES)
        for section in body.sections:
            if markdown_source:  # one level deeper than in the twin: below `### title`
                text = block(twin_links(site.base_url, section.body), deeper=1)
            else:
                text = block(section.body)
            lines += [f"### {section.title}", "", text, ""]
            if section.code_example:
                # A fence longer than any run of backticks in the code: "```" in it
                # would close the block and let the rest be read as structure.
                fence = code_fence(section.code_example)
                lines += [fence, section.code_example, fence, ""]
    return "\n".join(lines).rstrip()


def faq_block(site: Site, loaded: LoadedFaq, faq: FAQEntry) -> str:
    """The FAQ entry's block of llms-full.txt."""
    page = faq_canonical_url(site, faq.id, loaded.source.canonical_url)
    return (
        f"## FAQ: {one_line(faq.question)}\n\n"
        f"Source: {site.base_url}{paths.faq(faq.id)}\nPage: {page}\n\n{block(faq.answer)}"
    )


def llms_full_txt(site: Site, catalog: Catalog) -> bytes:
    """llms-full.txt, as `text_body` would encode its text: joined as UTF-8 bytes from the
    entries' blocks, kept encoded (at 10,000 entries the text is 86 MB: as one str it was
    decoded from the cache, joined, stripped, extended and encoded, five copies instead of
    two). UTF-8 writes a newline as the byte 0x0A and no other character holds that byte,
    so stripping newlines from the bytes strips them from the text."""
    head = [
        f"# {one_line(site.config.name)}",
        f"> {paragraph(one_line(site.config.description))}",
        paragraph(site.config.about),
        f"Discovery document: {site.base_url}{paths.discovery(site.config.brand)}",
    ]
    blocks = [block.encode("utf-8") for block in head]
    return joined_text_body([*blocks, *(entry.llms_full_block for entry in catalog.entries)])


def joined_text_body(blocks: list[bytes]) -> bytes:
    """`text_body` of the blocks decoded and joined by a blank line, on the bytes.

    One join, no copy after it: the newlines the text would end with are those of its
    last blocks that hold nothing else, the blank lines between them and the end of the
    last block that holds something else; that block is stripped and given the one
    newline before the join (stripping and extending the joined 86 MB of a 10,000-entry
    site copied it twice more, 0.06 s and 21,000 page faults)."""
    last = len(blocks)
    while last and not blocks[last - 1].rstrip(b"\n"):
        last -= 1
    if not last:
        return b"\n"
    return b"\n\n".join([*blocks[: last - 1], blocks[last - 1].rstrip(b"\n") + b"\n"])
