"""Synthetic site_data: N content documents and N FAQ entries of realistic size.

Deterministic: the same (n, seed) always writes the same bytes. Bodies are pseudo-text
from a seeded generator over a fixed vocabulary with a Zipf-like word distribution
(what the search index sees in real prose), a few links between entries (what the link
checker sees) and an occasional code example. Sizes follow the real site_data:
documents of three to six sections of 100-300 words (about 6 KB of YAML), FAQ
answers of two or three paragraphs (about 2 KB). site.yaml and architecture.yaml are
copied from the real site_data; on-site-agent.yaml too, with its knowledge sources
pointed at generated entries. The lock is written with the builder's own code, dated
SOURCE_DATE_EPOCH (default 2025-01-01), so a generated site builds with `--frozen`.

    python -m benchmarks.sitegen OUT_DIR --n 1000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
REAL_SITE_DATA = REPO / "site_data"
DEFAULT_EPOCH = 1735689600  # 2025-01-01T00:00:00Z
BASE_URL_TOKEN = "{base_url}"
WRAP = 76

# Domain words first: rank decides frequency (Zipf), so the first words are the common ones.
_VOCABULARY = """
content agent agents document site data page api search index file files request
response cache header version update build publish deploy query client server endpoint
model manifest protocol json text schema link links field fields value values token
tokens user users team product service feature features answer answers question
questions source sources release change changes owner owners console report reports
browser network edge origin bucket object objects policy policies rule rules route
routes format formats support supports language languages section sections title titles
summary description example examples error errors status code codes time times freshness
hash hashes timestamp timestamps catalog catalogs entry entries keyword keywords context
window windows prompt prompts retrieval grounding citation citations visitor visitors
traffic telemetry privacy consent retention aggregate aggregates analytics dashboard
metric metrics trend trends topic topics gap gaps coverage conversion latency throughput
bandwidth storage invalidation distribution certificate domain domains redirect
redirects compression encoding charset utf8 unicode ascii integration integrations
webhook webhooks pipeline pipelines workflow workflows staging preview production
rollback history audit audits review reviews approval checklist checklists template
templates component components module modules package packages library libraries
framework frameworks runtime runtimes container containers function functions handler
handlers resource resources provider providers stack stacks region regions account
accounts role roles permission permissions credential credentials secret secrets
token-based rate limit limits quota quotas throttling retry retries backoff timeout
timeouts failure failures incident incidents alert alerts monitor monitoring log logs
trace traces span spans sample samples benchmark benchmarks measurement measurements
baseline baselines regression regressions pricing plan plans invoice invoices billing
subscription subscriptions trial trials customer customers partner partners reseller
resellers enterprise onboarding migration migrations import imports export exports
backup backups restore snapshot snapshots replica replicas shard shards partition
partitions queue queues stream streams event events message messages notification
notifications channel channels accessible accessibility readable structured typed
validated strict stable cheap precise current citable static public private open closed
secure encrypted signed verified trusted reliable consistent predictable deterministic
reproducible incremental atomic parallel sequential concurrent lightweight portable
compatible quickly safely clearly exactly rarely usually always automatically explicitly
publishes publishing published renders rendering rendered validates validating checks
checking checked compares comparing compared uploads uploading uploaded invalidates
invalidating invalidated serves serving served reads reading read writes writing written
answers answering answered cites citing cited measures measuring measured tracks
tracking tracked explains explaining explained describes describing described lists
listing listed links linking linked groups grouping grouped developer developers
engineer engineers editor editors author authors marketer marketers analyst analysts
operator operators administrator administrators
""".split()  # noqa: SIM905 - a word list reads best as text

_FILLER = """
the a of to and in for with that is on by as from this it are be can at or an which each
every when how what more than into only also not its their they your you
""".split()  # noqa: SIM905 - a word list reads best as text

_ZIPF = list(accumulate(1.0 / (rank + 1) ** 0.9 for rank in range(len(_VOCABULARY))))
_FILLER_WEIGHTS = list(accumulate(1.0 / (rank + 1) for rank in range(len(_FILLER))))
# A few real-world spellings the builder must fold for the search index.
_ACCENTED = ["café", "naïve", "façade", "déjà", "résumé", "Zürich", "São Paulo"]


@dataclass(frozen=True)
class GeneratedSite:
    root: Path
    document_ids: tuple[str, ...]
    faq_ids: tuple[str, ...]

    @property
    def entries(self) -> int:
        return len(self.document_ids) + len(self.faq_ids)


class _Text:
    """Seeded pseudo-prose: sentences of 8-22 words, mostly domain words, some filler."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def words(self, count: int) -> list[str]:
        rng = self.rng
        domain = rng.choices(_VOCABULARY, cum_weights=_ZIPF, k=count)
        filler = rng.choices(_FILLER, cum_weights=_FILLER_WEIGHTS, k=count)
        return [f if rng.random() < 0.35 else d for d, f in zip(domain, filler, strict=True)]

    def sentence(self, low: int = 8, high: int = 22) -> str:
        words = self.words(self.rng.randint(low, high))
        if self.rng.random() < 0.02:
            words[self.rng.randrange(len(words))] = self.rng.choice(_ACCENTED)
        if len(words) > 10 and self.rng.random() < 0.3:
            words[len(words) // 2] += ","
        return words[0].capitalize() + " " + " ".join(words[1:]) + "."

    def paragraph(self, low_words: int, high_words: int, extra: list[str] | None = None) -> str:
        target = self.rng.randint(low_words, high_words)
        sentences: list[str] = []
        count = 0
        while count < target:
            sentence = self.sentence()
            sentences.append(sentence)
            count += sentence.count(" ") + 1
        for item in extra or []:
            sentences.insert(self.rng.randrange(len(sentences) + 1), item)
        return " ".join(sentences)

    def title(self, low: int = 3, high: int = 7) -> str:
        words = self.rng.choices(_VOCABULARY, cum_weights=_ZIPF, k=self.rng.randint(low, high))
        return " ".join([words[0].capitalize(), *words[1:]])


def _wrap(text: str, indent: str) -> str:
    """Folded-scalar lines of at most WRAP characters (words are never split)."""
    lines: list[str] = []
    current: list[str] = []
    length = 0
    for word in text.split(" "):
        if current and length + 1 + len(word) > WRAP:
            lines.append(indent + " ".join(current))
            current, length = [], 0
        length += len(word) + (1 if current else 0)
        current.append(word)
    if current:
        lines.append(indent + " ".join(current))
    return "\n".join(lines)


def _folded(key: str, text: str, indent: str) -> str:
    return f"{indent}{key}: >-\n{_wrap(text, indent + '  ')}"


def _literal(key: str, paragraphs: list[str], indent: str) -> str:
    body = "\n\n".join(_wrap(paragraph, indent + "  ") for paragraph in paragraphs)
    return f"{indent}{key}: |\n{body}"


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a YAML double-quoted scalar


def _document_url(document_id: str) -> str:
    return f"{BASE_URL_TOKEN}/api/v1/content/{document_id}.json"


def _faq_url(faq_id: str) -> str:
    return f"{BASE_URL_TOKEN}/api/v1/faq/{faq_id}.json"


def _slug(text: _Text, count: int = 2) -> str:
    words = text.rng.choices(_VOCABULARY[:200], cum_weights=_ZIPF[:200], k=count)
    return "-".join(words)


def _links(text: _Text, document_ids: list[str], faq_ids: list[str]) -> list[str]:
    """Zero to two sentences linking other entries (the link checker must resolve them)."""
    links = []
    for _ in range(text.rng.choice((0, 0, 0, 1, 1, 2))):
        if text.rng.random() < 0.6:
            target = _document_url(text.rng.choice(document_ids))
        else:
            target = _faq_url(text.rng.choice(faq_ids))
        links.append(f"See {target} for the details.")
    return links


def _keywords(text: _Text) -> list[str]:
    count = text.rng.choice((0, 2, 4, 6, 8))
    return sorted(set(text.rng.choices(_VOCABULARY, k=count)))


def _page_document(
    text: _Text, document_id: str, order: int, document_ids: list[str], faq_ids: list[str]
) -> str:
    rng = text.rng
    content_type = "product" if rng.random() < 0.12 else "page"
    lines = [
        f"id: {document_id}",
        f"title: {_quoted(text.title())}",
        f"content_type: {content_type}",
        _folded("description", text.paragraph(25, 45), ""),
        f"canonical_url: https://www.parlance.example/docs/{document_id}",
        f"order: {order}",
    ]
    keywords = _keywords(text)
    if keywords:
        lines.append("keywords:")
        lines += [f"  - {keyword}" for keyword in keywords]
    lines += ["content:", f"  headline: {_quoted(text.title(5, 10))}", "  sections:"]
    for _ in range(rng.randint(3, 6)):
        lines.append(f"    - title: {_quoted(text.title(2, 5))}")
        body = text.paragraph(100, 300, _links(text, document_ids, faq_ids))
        lines.append(_folded("body", body, "      "))
        if rng.random() < 0.2:
            target = rng.choice(document_ids)
            lines.append("      code_example: |")
            lines.append(f"        curl -s {_document_url(target)} \\")
            lines.append("          -H 'If-None-Match: \"etag-from-last-read\"' | jq .title")
    return "\n".join(lines) + "\n"


def _feature_document(
    text: _Text, document_id: str, order: int, document_ids: list[str], faq_ids: list[str]
) -> str:
    rng = text.rng
    lines = [
        f"id: {document_id}",
        f"title: {_quoted(text.title())}",
        "content_type: feature",
        _folded("description", text.paragraph(25, 45), ""),
        f"canonical_url: https://www.parlance.example/features/{document_id}",
        f"order: {order}",
        "content:",
        f"  headline: {_quoted(text.title(5, 10))}",
        _folded("summary", text.paragraph(80, 160), "  "),
        "  capabilities:",
    ]
    names: set[str] = set()
    for _ in range(rng.randint(2, 4)):
        name = _slug(text).replace("-", "_")
        if name in names:
            continue
        names.add(name)
        lines.append(f"    {name}:")
        lines.append(f"      title: {_quoted(text.title(2, 5))}")
        lines.append(_folded("description", text.paragraph(60, 140), "      "))
        lines.append("      endpoints:")
        for target in rng.sample(document_ids, k=min(2, len(document_ids))):
            lines.append(f'        - "{_document_url(target)}"')
        lines.append(f'        - "{_faq_url(rng.choice(faq_ids))}"')
    lines.append(_folded("for_agent_developers", text.paragraph(60, 140), "  "))
    return "\n".join(lines) + "\n"


def _faq(text: _Text, faq_id: str, document_ids: list[str], faq_ids: list[str]) -> str:
    rng = text.rng
    question = text.sentence(6, 14).rstrip(".") + "?"
    paragraphs = [text.paragraph(60, 140) for _ in range(rng.randint(2, 3))]
    paragraphs[-1] += " " + " ".join(_links(text, document_ids, faq_ids))
    lines = [
        f"id: {faq_id}",
        f"question: {_quoted(question)}",
        _literal("answer", [p.rstrip() for p in paragraphs], ""),
    ]
    keywords = _keywords(text)
    if keywords:
        lines.append("keywords:")
        lines += [f"  - {keyword}" for keyword in keywords]
    return "\n".join(lines) + "\n"


def _site_document(text: _Text, document_ids: list[str], faq_ids: list[str]) -> str:
    """The `site` overview (the MCP manifest's content/site resource links it)."""
    body = _page_document(text, "site", 1, document_ids, faq_ids)
    return body.replace("content_type: product", "content_type: page", 1)


def _ids(n: int, rng: random.Random) -> tuple[list[str], list[str]]:
    text = _Text(rng)
    documents = ["site"] + [f"{_slug(text)}-{index:05d}" for index in range(1, n)]
    faqs = [f"q{index:05d}-{_slug(text)}" for index in range(1, n + 1)]
    return documents, faqs


def _on_site_agent(document_ids: list[str], faq_ids: list[str]) -> str:
    data = yaml.safe_load((REAL_SITE_DATA / "on-site-agent.yaml").read_text(encoding="utf-8"))
    data["configuration"]["knowledge_sources"] = [
        f"{BASE_URL_TOKEN}/api/v1/content/index.json",
        f"{BASE_URL_TOKEN}/api/v1/content/search-index.json",
        *(_document_url(document_id) for document_id in document_ids[:4]),
        *(_faq_url(faq_id) for faq_id in faq_ids[:3]),
        f"{BASE_URL_TOKEN}/api/v1/architecture.json",
    ]
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=88)


@contextmanager
def source_date_epoch(epoch: int) -> Iterator[None]:
    previous = os.environ.get("SOURCE_DATE_EPOCH")
    os.environ["SOURCE_DATE_EPOCH"] = str(epoch)
    try:
        yield
    finally:
        if previous is None:
            del os.environ["SOURCE_DATE_EPOCH"]
        else:
            os.environ["SOURCE_DATE_EPOCH"] = previous


def refresh_lock(root: Path, epoch: int | None = None) -> int:
    """Write content.lock.json for the content in `root`, as `build` would, dated
    `epoch` (default: SOURCE_DATE_EPOCH, else 2025-01-01). Returns the number of changes."""
    from content_builder.loader import LOCK_FILE, load_site
    from content_builder.lock import lock_body, read_lock, resolve
    from content_builder.render.documents import tracked

    if epoch is None:
        epoch = int(os.environ.get("SOURCE_DATE_EPOCH") or DEFAULT_EPOCH)
    site = load_site(root)
    with source_date_epoch(epoch):
        lock, changes = resolve(read_lock(root / LOCK_FILE, LOCK_FILE), tracked(site))
    if changes:
        (root / LOCK_FILE).write_bytes(lock_body(lock))
    return len(changes)


def generate(root: Path, n: int, seed: int = 6, epoch: int | None = None) -> GeneratedSite:
    """Write a valid site_data folder with n documents (one of them `site`) and n FAQ entries."""
    if n < 2:
        raise ValueError("n must be at least 2 (the `site` document and one more)")
    if root.exists():
        shutil.rmtree(root)
    (root / "content").mkdir(parents=True)
    (root / "faq").mkdir()
    for name in ("site.yaml", "architecture.yaml"):
        shutil.copyfile(REAL_SITE_DATA / name, root / name)
    rng = random.Random(seed)
    document_ids, faq_ids = _ids(n, rng)
    (root / "on-site-agent.yaml").write_text(_on_site_agent(document_ids, faq_ids), "utf-8")
    text = _Text(rng)
    (root / "content" / "site.yaml").write_text(
        _site_document(text, document_ids, faq_ids), "utf-8"
    )
    for order, document_id in enumerate(document_ids[1:], start=2):
        render = _feature_document if rng.random() < 0.1 else _page_document
        body = render(text, document_id, order * 10, document_ids, faq_ids)
        (root / "content" / f"{document_id}.yaml").write_text(body, "utf-8")
    for faq_id in faq_ids:
        (root / "faq" / f"{faq_id}.yaml").write_text(
            _faq(text, faq_id, document_ids, faq_ids), "utf-8"
        )
    refresh_lock(root, epoch)
    return GeneratedSite(root, tuple(document_ids), tuple(faq_ids))


def generate_with_sample(
    root: Path, n: int, seed: int = 6, epoch: int | None = None
) -> GeneratedSite:
    """`generate(root, n)` with the sample site's entries inside: its documents (its
    `site` overview replacing the generated one), FAQ entries and search questions, so
    that the sample's questions can be asked of a large site (issue 25: recall at size).
    The sample's ids and the generated ones never meet (five-digit suffixes)."""
    generated = generate(root, n, seed, epoch)
    sample_ids: dict[str, list[str]] = {}
    for folder in ("content", "faq"):
        sample_ids[folder] = []
        for path in sorted((REAL_SITE_DATA / folder).glob("*.yaml")):
            shutil.copyfile(path, root / folder / path.name)
            if path.stem != "site":
                sample_ids[folder].append(path.stem)
    shutil.copyfile(REAL_SITE_DATA / "search-questions.yaml", root / "search-questions.yaml")
    refresh_lock(root, epoch)
    return GeneratedSite(
        root,
        (*generated.document_ids, *sample_ids["content"]),
        (*generated.faq_ids, *sample_ids["faq"]),
    )


def edit_document(root: Path, document_id: str, sentence: str) -> Path:
    """Append one sentence to the first section of a page document (scenario: one edit)."""
    path = root / "content" / f"{document_id}.yaml"
    text = path.read_text(encoding="utf-8")
    marker = "      body: >-\n"
    start = text.index(marker) + len(marker)
    ends = [text.find(mark, start) for mark in ("\n    - title:", "\n      code_example:")]
    end = min([index for index in ends if index != -1] or [len(text.rstrip("\n"))])
    path.write_text(text[:end] + "\n        " + sentence + text[end:], encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--seed", type=int, default=6)
    args = parser.parse_args(argv)
    site = generate(args.out, args.n, args.seed)
    size = sum(p.stat().st_size for p in site.root.rglob("*.yaml"))
    print(f"{site.root}: {len(site.document_ids)} documents, {len(site.faq_ids)} FAQ entries, "
          f"{size / 1e6:.1f} MB of YAML")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
