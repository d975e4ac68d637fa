"""Markdown mirrors of documents and FAQ entries (issue 14): `{id}.md` beside `{id}.json`.

Rendered from the same models as the JSON, losslessly: every field a client reads from
the JSON is in the Markdown, verbatim (tests/test_extensions.py checks each one). The
first line points to /llms.txt, the map of everything else, as llms.txt v2 advises for
per-page Markdown. A code example keeps its text exactly, in a fence longer than any
run of backticks inside it; the spec's section shape has no language field, so the
fence has no info string rather than a guessed one (docs/decisions.md).
"""

from __future__ import annotations

import re
from functools import lru_cache

from agent_contract import paths
from agent_contract.models import ContentDocument, FAQEntry, FeatureContent
from content_builder.render.escape import block, code_fence, one_line, paragraph


def _pointer(base_url: str) -> str:
    # One line, first (issue 26): the directive Mintlify and Fern put atop every page.
    return (
        f"> Agents: fetch the index of this site, {base_url}{paths.LLMS_TXT}, to find every "
        "other document before exploring further."
    )


def _fence(code: str) -> list[str]:
    fence = code_fence(code)
    return [fence, code.rstrip("\n"), fence]


def twin_links(base_url: str, text: str) -> str:
    """A Markdown page's body with its links to other documents' JSON (as the JSON holds
    them, markdown_tree.py) pointing at their Markdown twins: the twin from a twin."""
    if paths.API_PREFIX not in text:
        return text
    return _document_json(base_url).sub(lambda match: match.group(1) + ".md", text)


@lru_cache(maxsize=4)
def _document_json(base_url: str) -> re.Pattern[str]:
    head, _, tail = paths.document("\0").partition("\0")
    return re.compile(
        "("
        + re.escape(base_url + head)
        + r"[a-z0-9][a-z0-9-]*)"
        + re.escape(tail)
        + r"(?=[#)\s>\"]|$)",
        re.MULTILINE,
    )


def document_markdown(
    base_url: str, document: ContentDocument, description: str, markdown_source: bool = False
) -> str:
    lines = [
        _pointer(base_url),
        "",
        f"# {one_line(document.title)}",
        "",
        paragraph(description),
        "",
        f"- id: {document.id}",
        f"- content_type: {document.content_type}",
        f"- canonical_url: {document.canonical_url}",
        f"- updated_at: {document.updated_at}",
        f"- language: {document.language}",
        f"- content_version: {document.metadata.content_version}",
        f"- content_hash: {document.metadata.content_hash}",
        f"- json: {base_url}{paths.document(document.id)}",
        "",
    ]
    body = document.content
    if isinstance(body, FeatureContent):
        # Author text as text: one-line fields as paragraphs, bodies as blocks (escape.py).
        lines += [paragraph(body.headline), "", block(body.summary), "", "## Capabilities", ""]
        for name, capability in body.capabilities.items():
            lines += [f"### {one_line(capability.title)}", "", f"Capability: {name}", ""]
            lines += [paragraph(capability.description), ""]
            lines += [f"- {endpoint}" for endpoint in capability.endpoints]
            lines.append("")
        lines += ["## For agent developers", "", block(body.for_agent_developers), ""]
    else:
        # A Markdown page's headline is its title (markdown_page.py): the `# ` line says it.
        if not (markdown_source and body.headline == document.title):
            lines += [paragraph(body.headline), ""]
        for section in body.sections:
            if markdown_source:  # its deeper headings kept, its links to twins
                text = block(twin_links(base_url, section.body), deeper=0)
            else:
                text = block(section.body)
            lines += [f"## {one_line(section.title)}", "", text, ""]
            if section.code_example is not None:
                lines += [*_fence(section.code_example), ""]
        lines += [f"Contact: {body.contact}", "", f"API base: {body.api_base}", ""]
    return "\n".join(lines)


def faq_markdown(base_url: str, faq: FAQEntry) -> str:
    return "\n".join(
        [
            _pointer(base_url),
            "",
            f"# {one_line(faq.question)}",
            "",
            f"- id: {faq.id}",
            f"- json: {base_url}{paths.faq(faq.id)}",
            "",
            block(faq.answer),
            "",
        ]
    )
