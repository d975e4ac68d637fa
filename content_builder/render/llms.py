"""llms.txt (a linked guide) and llms-full.txt (everything, as plain text).

llms.txt keeps to the narrow form the reference parser (`llms_txt.parse_llms_file`)
reads correctly: H1, a one-line `>` summary, one paragraph, then `##` sections that
hold only `- [title](url): note` lines. Link titles may not contain brackets and
notes may not span lines, or the parser silently mangles them.
"""

from __future__ import annotations

from agent_contract import paths
from agent_contract.endpoints import llms_section
from agent_contract.models import FeatureContent
from content_builder.loader import Site
from content_builder.render.documents import Catalog, summarize
from content_builder.render.indexes import faq_canonical_url


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _link(title: str, url: str, note: str | None = None) -> str:
    safe_title = _one_line(title).replace("[", "(").replace("]", ")")
    line = f"- [{safe_title}]({url})"
    return f"{line}: {_one_line(note)}" if note else line


def llms_txt(site: Site, catalog: Catalog) -> str:
    def url(path: str) -> str:
        return site.base_url + path

    def listed(section: str) -> list[str]:
        return [
            _link(endpoint.llms.title, url(endpoint.resolve(site.config.brand)), endpoint.llms.note)
            for endpoint in llms_section(section)
            if endpoint.llms
        ]

    documents = [
        _link(document.title, url(paths.document(document.id)), loaded.source.description)
        for loaded, document in catalog.documents
    ]
    faqs = [
        _link(faq.question, url(paths.faq(faq.id)), summarize(faq.answer))
        for _, faq in catalog.faqs
    ]
    blocks = [
        f"# {_one_line(site.config.name)}",
        f"> {summarize(site.config.description, limit=300)}",
        _one_line(site.config.about),
        "## Interfaces\n\n" + "\n".join(listed("Interfaces")),
        "## Documents\n\n" + "\n".join(documents),
        "## FAQ\n\n" + "\n".join(faqs),
        "## Optional\n\n" + "\n".join(listed("Optional")),
    ]
    return "\n\n".join(blocks)


def _document_block(site: Site, catalog: Catalog, index: int) -> str:
    loaded, document = catalog.documents[index]
    lines = [
        f"## {document.title}",
        "",
        f"Source: {site.base_url}{paths.document(document.id)}",
        f"Page: {document.canonical_url}",
        f"Updated: {document.updated_at} (version {document.metadata.content_version})",
        "",
        loaded.source.description,
        "",
    ]
    body = document.content
    if isinstance(body, FeatureContent):
        lines += [body.headline, "", body.summary, ""]
        for capability in body.capabilities.values():
            lines += [f"### {capability.title}", "", capability.description, ""]
            lines += [f"- {endpoint}" for endpoint in capability.endpoints]
            lines.append("")
        lines += ["### For agent developers", "", body.for_agent_developers, ""]
    else:
        lines += [body.headline, ""]
        for section in body.sections:
            lines += [f"### {section.title}", "", section.body, ""]
            if section.code_example:
                lines += ["```", section.code_example, "```", ""]
    return "\n".join(lines).rstrip()


def llms_full_txt(site: Site, catalog: Catalog) -> str:
    blocks = [
        f"# {_one_line(site.config.name)}",
        f"> {_one_line(site.config.description)}",
        site.config.about,
        f"Discovery document: {site.base_url}{paths.discovery(site.config.brand)}",
    ]
    blocks += [_document_block(site, catalog, index) for index in range(len(catalog.documents))]
    for loaded, faq in catalog.faqs:
        page = faq_canonical_url(site, faq.id, loaded.source.canonical_url)
        blocks.append(
            f"## FAQ: {_one_line(faq.question)}\n\n"
            f"Source: {site.base_url}{paths.faq(faq.id)}\nPage: {page}\n\n{faq.answer}"
        )
    return "\n\n".join(blocks)
