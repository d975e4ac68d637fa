"""Issue 25: what the sharded search index costs an agent, finds, and publishes per edit.

For one site (the sample, or a generated one with the sample's entries inside,
`sitegen.generate_with_sample`), built in memory by the builder (`plan`):

- *bytes per query*: every file the query procedure (agent_contract/search_shards.py,
  what the client and the MCP server run) reads to answer one question with a page of
  10 hits, term map included, summed; raw and gzipped (`gzip -6`, what CDNs use by
  default; CloudFront's own level is not documented). Median and largest over the
  sample's questions, each asked by a fresh reader (nothing cached between questions);
- *recall*: recall@1 and @3 of the sample's question sets (`questions`, `held_out`),
  ranked by the same procedure, on the ids the site has;
- *one-entry edit*: a sentence appended to one generated page document (the sitegen
  edit the publish benchmark makes) and the lock refreshed as `build` would: the files
  whose bytes differ or that are new, how many of them are the sharded index's, bytes.

    python -m benchmarks.shard_bench SITE [--edit]
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agent_contract import search_query, search_shards

PAGE = 10
SEARCH_PREFIX = "/api/v1/search/"
#: Issue 25's targets: bytes an agent transfers per query at N = 10,000, and how far
#: recall@3 with the sample inside may fall below the sample alone.
BYTES_TARGET = 300_000
RECALL_DROP = 0.05


@dataclass(frozen=True)
class QueryBytes:
    questions: int
    raw_median: int
    raw_max: int
    gzip_median: int
    gzip_max: int
    files_median: float
    files_max: int


@dataclass(frozen=True)
class EditCost:
    files: int  # files the edit publishes (added or changed)
    bytes: int
    search_files: int  # of which the sharded index's
    search_bytes: int
    paths: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SiteResult:
    entries: int
    build_seconds: float
    shard_files: int
    shard_bytes: int
    term_map_bytes: int
    query_bytes: QueryBytes
    recall: dict[str, dict[str, float]]  # set -> {recall_at_1, recall_at_3, questions}
    edit: EditCost | None = None
    n: int = 0  # the generated site's N (0: the sample alone)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _gzip_size(body: bytes) -> int:
    return len(gzip.compress(body, compresslevel=6, mtime=0))


def _plan(site: Path) -> dict[str, bytes]:
    from content_builder.build import plan

    return {artifact.path: artifact.body for artifact in plan(site).artifacts}


def measure(site: Path, edit: str | None = None) -> SiteResult:
    from content_builder.search_eval import (
        QUESTIONS_FILE,
        evaluate_with,
        load_question_sets,
        usable_questions,
    )

    started = time.perf_counter()
    files = _plan(site)
    seconds = time.perf_counter() - started
    search = {path: body for path, body in files.items() if path.startswith(SEARCH_PREFIX)}
    entries = json.loads(files[search_shards.TERM_MAP_PATH])["entries"]
    sizes: dict[str, tuple[int, int]] = {}

    def size(path: str) -> tuple[int, int]:
        if path not in sizes:
            sizes[path] = (len(files[path]), _gzip_size(files[path]))
        return sizes[path]

    sets = load_question_sets(site / QUESTIONS_FILE)
    known = {json.loads(files[path])["id"] for path in files if _is_entry_json(path)}
    raw, zipped, counts = [], [], []
    recall: dict[str, dict[str, float]] = {}
    for name, questions in sets.items():
        usable = usable_questions(questions, known)
        if not usable:
            continue

        def ranked(query: str) -> list[str]:
            found = search_query.query(files.__getitem__, query, limit=PAGE)
            raw.append(sum(size(path)[0] for path in found.files))
            zipped.append(sum(size(path)[1] for path in found.files))
            counts.append(len(found.files))
            return [hit.id for hit in found.hits]

        scores = evaluate_with(usable, ranked)
        recall[name] = {
            "questions": len(usable),
            "recall_at_1": round(scores.recall_at_1, 3),
            "recall_at_3": round(scores.recall_at_3, 3),
        }
    query_bytes = QueryBytes(
        len(raw),
        int(statistics.median(raw)),
        max(raw),
        int(statistics.median(zipped)),
        max(zipped),
        statistics.median(counts),
        max(counts),
    )
    edited = _edit_cost(site, files, edit) if edit else None
    return SiteResult(
        entries,
        round(seconds, 2),
        len(search),
        sum(map(len, search.values())),
        len(files[search_shards.TERM_MAP_PATH]),
        query_bytes,
        recall,
        edited,
    )


def _is_entry_json(path: str) -> bool:
    return (
        (path.startswith(("/api/v1/content/", "/api/v1/faq/")))
        and path.endswith(".json")
        and (path.rsplit("/", 1)[1] not in ("index.json", "search-index.json"))
    )


def _edit_cost(site: Path, before: dict[str, bytes], document_id: str) -> EditCost:
    from benchmarks import sitegen

    path = site / "content" / f"{document_id}.yaml"
    original = path.read_bytes()
    lock = site / "content.lock.json"
    original_lock = lock.read_bytes()
    try:
        sitegen.edit_document(site, document_id, "Edited for the shard benchmark: quokka.")
        sitegen.refresh_lock(site)
        after = _plan(site)
    finally:
        path.write_bytes(original)
        lock.write_bytes(original_lock)
    published = sorted(p for p, body in after.items() if before.get(p) != body)
    search = [p for p in published if p.startswith(SEARCH_PREFIX)]
    return EditCost(
        len(published),
        sum(len(after[p]) for p in published),
        len(search),
        sum(len(after[p]) for p in search),
        published,
    )


def page_document(root: Path) -> str:
    """A generated page document (the sitegen edit appends to its first section)."""
    for path in sorted((root / "content").glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        if path.stem[-5:].isdigit() and "content_type: page" in text and "body: >-" in text:
            return path.stem
    raise RuntimeError(f"{root} has no generated page document")


def measure_sizes(sizes: list[int], work: Path) -> dict[str, Any]:
    """The sample alone, and a generated site with the sample inside at each N."""
    from dataclasses import replace

    from benchmarks import sitegen

    sites = []
    for n in sizes:
        site = sitegen.generate_with_sample(work / f"mixed-{n}", n)
        result = measure(site.root, edit=page_document(site.root))
        sites.append(replace(result, n=n).as_dict())
    sample = measure(Path(__file__).resolve().parents[1] / "site_data").as_dict()
    return {"sample": sample, "sites": sites}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("site", type=Path)
    parser.add_argument("--edit", help="a page document id to edit once")
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.site, args.edit).as_dict(), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
