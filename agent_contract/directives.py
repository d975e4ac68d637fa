"""What points an agent at the agent interfaces (issue 26), as one table the local edge,
the CloudFront program and its function, and `verify` all read.

- Every answer, errors included, carries one `Link` header naming the API catalog
  (RFC 9727), llms.txt (`rel="llms-txt"`, the de facto relation Mintlify and Fern send)
  and the discovery document (`rel="describedby"`, RFC 8288's registry: "a resource
  providing information about the link's context"). On CloudFront it is a response
  headers policy custom header: a fixed string.
- An answer for a document or FAQ entry (below status 400) also names its other
  representation: the JSON answer its Markdown twin, the Markdown answer its JSON
  (`rel="alternate"` with the media type). On CloudFront a viewer-response function
  appends it to the policy's `Link` (CloudFront runs no viewer-response function on an
  answer of 400 or above: the rule here says so, so both edges agree).
- A Markdown answer (200) carries its estimated token count in `X-Markdown-Tokens`, the
  header Cloudflare's Markdown for Agents sends; on AWS the count travels as S3 user
  metadata (`x-amz-meta-markdown-tokens`) and the function renames it.

The estimate: ceil(UTF-8 bytes / 4). About four characters of English prose per token is
the usual rule of thumb; counting bytes rather than characters over-estimates non-ASCII
text, the safe side for an agent deciding whether a file fits its fetch tool's cap.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_contract import paths
from agent_contract.endpoints import JSON_MEDIA, MARKDOWN_MEDIA

#: The estimate's divisor, stated wherever a size is published (index, llms.txt, header).
BYTES_PER_TOKEN = 4
TOKEN_METHOD = f"ceil(UTF-8 bytes / {BYTES_PER_TOKEN})"
#: The header a Markdown answer carries its estimate in (Cloudflare's name for it).
MARKDOWN_TOKENS_HEADER = "X-Markdown-Tokens"
#: The S3 user metadata key the publisher stores the estimate under on every `.md`
#: object; S3 answers user metadata as `x-amz-meta-<key>` headers.
MARKDOWN_TOKENS_METADATA = "markdown-tokens"
#: An answer at or above this status names no other representation: CloudFront invokes
#: no viewer-response function for an origin status of 400 or higher.
ALTERNATE_BELOW_STATUS = 400


def estimated_tokens(size: int) -> int:
    """The estimated token count of a file of `size` bytes."""
    return -(-size // BYTES_PER_TOKEN)


@dataclass(frozen=True)
class AgentLink:
    """One link of the `Link` header every answer carries."""

    target: str  # a path; `{brand}` is the site's brand
    rel: str
    media_type: str | None = None

    def value(self, discovery_path: str) -> str:
        target = discovery_path if "{brand}" in self.target else self.target
        typed = f'; type="{self.media_type}"' if self.media_type else ""
        return f'<{target}>; rel="{self.rel}"{typed}'


EVERY_ANSWER: tuple[AgentLink, ...] = (
    AgentLink(paths.API_CATALOG, "api-catalog"),
    AgentLink(paths.LLMS_TXT, "llms-txt"),
    AgentLink(paths.discovery("{brand}"), "describedby", JSON_MEDIA),
)


def every_answer_link(discovery_path: str) -> str:
    """The `Link` value every answer carries (RFC 8288: one comma-separated list)."""
    return ", ".join(link.value(discovery_path) for link in EVERY_ANSWER)


def json_twin(markdown_path: str) -> str | None:
    """The JSON path of a document's or FAQ entry's Markdown twin, if it is one."""
    if not markdown_path.endswith(".md"):
        return None
    candidate = markdown_path[: -len(".md")] + ".json"
    return candidate if paths.markdown_twin(candidate) == markdown_path else None


def alternate_link(path: str, markdown_answer: bool) -> str | None:
    """The link naming the other representation of an entry's answer at `path` (its JSON
    URL, answered with JSON or with negotiated Markdown, or its `.md` URL), else None."""
    json_path = json_twin(path) or (path if paths.markdown_twin(path) else None)
    if json_path is None:
        return None
    if markdown_answer:
        return f'<{json_path}>; rel="alternate"; type="{JSON_MEDIA}"'
    return f'<{paths.markdown_twin(json_path)}>; rel="alternate"; type="{MARKDOWN_MEDIA}"'


def answer_links(discovery_path: str, path: str, markdown_answer: bool, status: int) -> str:
    """The whole `Link` value of one answer: every answer's links, then the alternate."""
    links = [every_answer_link(discovery_path)]
    alternate = alternate_link(path, markdown_answer) if status < ALTERNATE_BELOW_STATUS else None
    return ", ".join([*links, alternate] if alternate else links)


def edge_function_table() -> dict[str, object]:
    """What the CloudFront Function (infra/edge_functions/markdown_negotiation.js) needs
    of this table and of paths.py, as the JSON object infra/ writes into its source: the
    function restates nothing (tests/test_edge_function.py runs the substituted code)."""
    heads = [json_template.split("{", 1)[0] for json_template, _ in paths.TWIN_TEMPLATES]
    return {
        "twinPrefixes": heads,
        "notEntries": list(paths.NOT_ENTRY_IDS),
        "markdown": MARKDOWN_MEDIA,
        "json": JSON_MEDIA,
        "tokensHeader": MARKDOWN_TOKENS_HEADER.lower(),
        "tokensMetadata": "x-amz-meta-" + MARKDOWN_TOKENS_METADATA,
        "alternateBelow": ALTERNATE_BELOW_STATUS,
    }


def object_metadata(path: str, size: int) -> dict[str, str]:
    """The S3 user metadata a published file carries for the edge (besides its sha256):
    an entry's Markdown twin its token estimate, which CloudFront answers as an
    `x-amz-meta-` header and the viewer-response function renames."""
    if json_twin(path) is None:
        return {}
    return {MARKDOWN_TOKENS_METADATA: str(estimated_tokens(size))}
