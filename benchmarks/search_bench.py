"""Issue 11 target 5: what search costs an agent, and what it finds.

- *Client*: `agent_client.AgentClient` against `content_builder serve` of a site on
  127.0.0.1 (a child process, as `make serve` runs it, without --watch): the first
  `search()` downloads, parses and prepares search-index.json; each of the next `queries`
  searches costs a conditional GET (answered 304: the index did not change) and the
  ranking. The median of those is the figure; the first is reported beside it. The
  queries are FAQ questions spread over the site, so each one has an answer to find.
- *Quality*: recall@1 and recall@3 of the spec's naive client (`search_eval.naive_rank`)
  and of the project's client on the sample site's questions
  (`site_data/search-questions.yaml`), each set on its own, the held-out set included;
  the site's own floors are those of `site.yaml` (`search_eval`).

The bytes of search-index.json per entry, raw and gzipped, come from the build scaling
runs (`build_bench`), which have each N's output at hand.

    python -m benchmarks.search_bench SITE [--queries 5]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from benchmarks.watch_bench import Server, faq_files, first_answer, free_port, serve_command

REPO = Path(__file__).resolve().parents[1]
SAMPLE_SITE = REPO / "site_data"


@dataclass(frozen=True)
class ClientResult:
    n: int
    first_search_seconds: float  # download, parse and prepare, then rank
    query_seconds: float  # median of the later searches
    query_runs: list[float]
    not_modified: int  # conditional GETs answered 304 during the later searches
    hits: list[int]  # how many entries each later search returned
    #: Per later search: its FAQ entry (the one its question was taken from) in the TOP
    #: first results.
    found: list[bool] = field(default_factory=list)
    first_found: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Recall:
    question_set: str
    questions: int
    client: str  # "naive" (the spec's) or "client" (agent_client)
    recall_at_1: float
    recall_at_3: float


def questions_of(site: Path, count: int) -> list[tuple[str, str]]:
    """`count` (FAQ id, its question) spread over the site (a quarter, a half, ... in)."""
    files = sorted(faq_files(site).items())
    if len(files) < count:
        raise ValueError(f"{site} has {len(files)} FAQ entries, {count} queries asked")
    chosen = [files[(index + 1) * len(files) // (count + 1)] for index in range(count)]
    return [
        (faq_id, str(yaml.safe_load(path.read_text(encoding="utf-8"))["question"]))
        for faq_id, path in chosen
    ]


#: A timed query counts as answered when the FAQ entry it was written from is among
#: this many first results: a fast search that finds the wrong entries is no search.
TOP = 3


def found_in_top(hits: Sequence[str], intended: str, top: int = TOP) -> bool:
    return intended in hits[:top]


def measure_client(
    site: Path, n: int, work: Path, queries: int = 5, timeout: float = 300.0
) -> ClientResult:
    from agent_client.client import AgentClient

    asked = questions_of(site, queries + 1)
    work.mkdir(parents=True, exist_ok=True)
    cache = work / "search-cache"
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir()
    port = free_port()
    server = Server(serve_command(site, port, watch=False), work / "search-server.log", cache, port)
    try:
        first_answer(server, timeout)
        client = AgentClient(f"http://127.0.0.1:{port}", timeout=timeout)
        started = time.perf_counter()
        # The spec's search over search-index.json (the sharded index: shard_bench.py).
        first_hits = client.keyword_search(asked[0][1])
        first = time.perf_counter() - started
        if not first_hits:
            raise server.failure(f"the first search ({asked[0][1]!r}) found nothing")
        first_found = found_in_top([hit.id for hit in first_hits], asked[0][0])
        before = client.requests.get(304, 0)
        runs, hits, found = [], [], []
        for faq_id, query in asked[1:]:
            started = time.perf_counter()
            results = client.keyword_search(query)
            runs.append(time.perf_counter() - started)
            hits.append(len(results))
            found.append(found_in_top([hit.id for hit in results], faq_id))
        not_modified = client.requests.get(304, 0) - before
    finally:
        server.stop()
        shutil.rmtree(cache, ignore_errors=True)
    return ClientResult(
        n, first, statistics.median(runs), runs, not_modified, hits, found, first_found
    )


def measure_quality(site: Path = SAMPLE_SITE) -> dict[str, Any]:
    """Recall per question set and client on `site`'s questions, scored as `check` scores
    them (`search_eval.usable_questions`: only the ids the site still has); no questions
    file, nothing measured (the build treats the file as optional too)."""
    from agent_contract import paths
    from agent_contract.models import SearchIndex
    from content_builder.build import plan
    from content_builder.search_eval import (
        QUESTIONS_FILE,
        RANKERS,
        evaluate,
        load_question_sets,
        usable_questions,
    )

    if not (site / QUESTIONS_FILE).is_file():
        return {"recalls": []}
    result = plan(site, frozen=True)
    body = next(a.body for a in result.artifacts if a.path == paths.SEARCH_INDEX)
    index = SearchIndex.model_validate_json(body)
    known = {entry.id for entry in index.entries}
    recalls = []
    for name, questions in load_question_sets(site / QUESTIONS_FILE).items():
        usable = usable_questions(questions, known)
        if not usable:
            continue
        for client, ranker in RANKERS.items():
            scores = evaluate(index, usable, ranker)
            recalls.append(
                Recall(name, len(usable), client, scores.recall_at_1, scores.recall_at_3)
            )
    return {"recalls": [asdict(recall) for recall in recalls]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="client.search() cost; sample-site recall")
    parser.add_argument("site", type=Path, help="a site_data folder (benchmarks.sitegen)")
    parser.add_argument("--n", type=int, default=0, help="its N, for the report")
    parser.add_argument("--queries", type=int, default=5)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="search-bench-"))
    try:
        client = measure_client(args.site, args.n, work, args.queries)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({"client": client.as_dict(), "quality": measure_quality()}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
