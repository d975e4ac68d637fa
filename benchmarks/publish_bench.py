"""Publish efficiency against moto: the publisher vs `aws s3 sync`, same builds, same server.

One moto server (ThreadedMotoServer on 127.0.0.1) holds one versioned bucket and one
CloudFront distribution per contender, so their counts cannot mix:

- ``publisher``: infra.publisher (plan_publish + Publisher), the previous manifest
  kept in memory exactly as Pulumi keeps it in the stack state;
- ``sync``: the deploy script a user of `aws s3 sync` writes (one `sync --delete` per
  header group, so every object gets the same Content-Type and Cache-Control as ours,
  which the benchmark checks), then `aws cloudfront create-invalidation --paths "/*"`,
  what CDK's BucketDeployment does by default;
- ``sync-size-only``: the same script with `--size-only`, the usual attempt to stop
  sync from re-uploading unchanged files after a rebuild.

Every contender first publishes build 0 in full, then each scenario rebuilds the site
from scratch (new files, new mtimes, as CI does) and publishes: (a) nothing changed,
(b) one document edited, (c) Cache-Control of one route (the FAQ entries) changed.

Counting treats all contenders identically, on the server side:
- a WSGI middleware around moto counts every request (method, service; copies,
  multipart parts) and the payload bytes of every upload
  (`x-amz-decoded-content-length` for aws-chunked bodies, else Content-Length);
- the buckets are versioned: each object written creates one version, so "objects
  written" is the number of new versions (and their bytes must equal the payload);
- invalidation paths are read back from the distribution (ListInvalidations);
- after every publish, every object is compared with the build (bytes via ETag/MD5,
  Content-Type, Cache-Control): "stale" counts objects a viewer would get wrong.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import hashlib
import json
import os
import shutil
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_contract import routes

REPO = Path(__file__).resolve().parents[1]
AWSCLI_VENV = REPO / "benchmarks" / ".venv-awscli"
REGION = "eu-west-1"
BASE_URL = "https://d111111abcdef8.cloudfront.net"
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
}
SCENARIOS = ("initial", "a", "b", "c")
SCENARIO_TITLES = {
    "initial": "first publish (everything)",
    "a": "(a) nothing changed",
    "b": "(b) one document edited",
    "c": "(c) Cache-Control of one route changed",
    "c-fix": "(c) + the fix a user must run",
}
#: The files that hold a document's content or date besides its own (the content index
#: lists its updated_at, the search index its words, llms-full.txt its text). The
#: discovery document, llms.txt, the MCP manifests and OpenAPI list only ids and titles.
AGGREGATES_OF_A_DOCUMENT = (
    "api/v1/content/index.json",
    "api/v1/content/search-index.json",
    "llms-full.txt",
    "api/v1/changes.json",  # issue 14: a new generation and the document's hash
    "sitemap.xml",  # its lastmod
)
#: The route whose Cache-Control scenario (c) changes, and the new value.
CHANGED_ROUTE = "/api/v1/faq/*.json"
CHANGED_CACHE = routes.CacheClass(7200, routes.DAY, 600, routes.DAY)


def aws_executable() -> Path | None:
    aws = AWSCLI_VENV / "bin" / "aws"
    return aws if aws.exists() else None


# --- moto, with every request counted ---------------------------------------------------


@dataclass
class Traffic:
    """Requests seen by the server, by (service, method); copies and payload bytes."""

    requests: Counter[tuple[str, str]] = field(default_factory=Counter)
    copies: int = 0
    parts: int = 0
    payload_bytes: int = 0

    def snapshot(self) -> Traffic:
        return Traffic(Counter(self.requests), self.copies, self.parts, self.payload_bytes)

    def since(self, before: Traffic) -> Traffic:
        return Traffic(
            self.requests - before.requests,
            self.copies - before.copies,
            self.parts - before.parts,
            self.payload_bytes - before.payload_bytes,
        )

    @property
    def s3_puts(self) -> int:
        return self.requests[("s3", "PUT")]

    @property
    def other_requests(self) -> int:
        return sum(self.requests.values()) - self.s3_puts


def _service(environ: dict[str, Any]) -> str:
    authorization = environ.get("HTTP_AUTHORIZATION", "")
    if "Credential=" in authorization:
        scope = authorization.split("Credential=", 1)[1].split(",", 1)[0].split("/")
        if len(scope) >= 4:
            return scope[3]
    return "unknown"


class CountingMotoServer:
    """moto's ThreadedMotoServer with a counting WSGI middleware in front of the app."""

    def __init__(self) -> None:
        from moto.moto_server.threaded_moto_server import ThreadedMotoServer

        self.traffic = Traffic()
        self._lock = threading.Lock()
        outer = self

        class _Server(ThreadedMotoServer):
            def _server_entry(self) -> None:
                from moto.moto_server.werkzeug_app import (
                    DomainDispatcherApplication,
                    MotoRequestHandler,
                    create_backend_app,
                )
                from werkzeug.serving import make_server

                app = outer._count(DomainDispatcherApplication(create_backend_app))
                self._server = make_server(
                    self._ip_address, self._port, app, True, request_handler=MotoRequestHandler
                )
                self._server_ready_event.set()
                self._server.serve_forever()

        self._server = _Server(ip_address="127.0.0.1", port=0, verbose=False)

    def _count(self, app: Callable[..., Any]) -> Callable[..., Any]:
        def counted(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
            service, method = _service(environ), environ["REQUEST_METHOD"]
            with self._lock:
                self.traffic.requests[(service, method)] += 1
                if service == "s3" and method == "PUT" and "/" in environ["PATH_INFO"][1:]:
                    if environ.get("HTTP_X_AMZ_COPY_SOURCE"):
                        self.traffic.copies += 1
                    else:
                        if "partNumber=" in environ.get("QUERY_STRING", ""):
                            self.traffic.parts += 1
                        self.traffic.payload_bytes += int(
                            environ.get("HTTP_X_AMZ_DECODED_CONTENT_LENGTH")
                            or environ.get("CONTENT_LENGTH")
                            or 0
                        )
            return app(environ, start_response)

        return counted

    def __enter__(self) -> CountingMotoServer:
        import logging

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"
        return self

    def __exit__(self, *_: object) -> None:
        self._server.stop()


@contextlib.contextmanager
def aws_environment() -> Iterator[None]:
    """Fake credentials for boto3 in this process (and the CLI's environment)."""
    saved = {name: os.environ.get(name) for name in CREDENTIALS}
    os.environ.update(CREDENTIALS)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _distribution_config(reference: str) -> dict[str, Any]:
    origin = {
        "Id": "o",
        "DomainName": "b.s3.amazonaws.com",
        "S3OriginConfig": {"OriginAccessIdentity": ""},
    }
    return {
        "CallerReference": reference,
        "Comment": reference,
        "Enabled": True,
        "Origins": {"Quantity": 1, "Items": [origin]},
        "DefaultCacheBehavior": {
            "TargetOriginId": "o",
            "ViewerProtocolPolicy": "https-only",
            "MinTTL": 0,
            "ForwardedValues": {"QueryString": False, "Cookies": {"Forward": "none"}},
        },
    }


@dataclass
class Target:
    """One contender's bucket and distribution."""

    name: str
    bucket: str
    distribution_id: str


class Cloud:
    """boto3 clients on the moto server, for setting up and reading back (not publishing)."""

    def __init__(self, endpoint: str) -> None:
        import boto3

        self.s3 = boto3.client("s3", region_name=REGION, endpoint_url=endpoint)
        self.cloudfront = boto3.client("cloudfront", region_name="us-east-1", endpoint_url=endpoint)
        # (Content-Type, Cache-Control) last read per bucket and key: headers change only
        # when an object is written, so only written keys are read again.
        self._headers: dict[str, dict[str, tuple[str | None, str | None]]] = {}

    def target(self, name: str) -> Target:
        bucket = f"bench-{name}"
        self.s3.create_bucket(
            Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION}
        )
        self.s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
        distribution = self.cloudfront.create_distribution(
            DistributionConfig=_distribution_config(name)
        )
        return Target(name, bucket, distribution["Distribution"]["Id"])

    def versions(self, bucket: str) -> dict[tuple[str, str], int]:
        """(key, version id) -> size of every object version (delete markers excluded)."""
        found: dict[tuple[str, str], int] = {}
        for page in self.s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
            for version in page.get("Versions", []):
                found[(version["Key"], version["VersionId"])] = version["Size"]
        return found

    def delete_markers(self, bucket: str) -> set[tuple[str, str]]:
        found: set[tuple[str, str]] = set()
        for page in self.s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
            found |= {(m["Key"], m["VersionId"]) for m in page.get("DeleteMarkers", [])}
        return found

    def invalidations(self, distribution_id: str) -> dict[str, list[str]]:
        listing = self.cloudfront.list_invalidations(DistributionId=distribution_id)
        ids = [item["Id"] for item in listing["InvalidationList"].get("Items", [])]
        return {
            invalidation_id: self.cloudfront.get_invalidation(
                DistributionId=distribution_id, Id=invalidation_id
            )["Invalidation"]["InvalidationBatch"]["Paths"].get("Items", [])
            for invalidation_id in ids
        }

    def stale(
        self, bucket: str, dist: Path, files: dict[str, dict[str, Any]], written: set[str]
    ) -> dict[str, int]:
        """Objects a viewer would get wrong: missing, other bytes, other headers, extra.
        `written`: the keys written since the last call (their headers are read again)."""
        counts = {"missing": 0, "bytes": 0, "headers": 0, "extra": 0}
        headers = self._headers.setdefault(bucket, {})
        listing: dict[str, str] = {}
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            listing |= {item["Key"]: item["ETag"].strip('"') for item in page.get("Contents", [])}
        for path, entry in files.items():
            key = path.lstrip("/")
            if key not in listing:
                counts["missing"] += 1
                continue
            local = (dist / key).read_bytes()
            etag = listing[key]
            if "-" in etag:  # multipart upload: the ETag is not the MD5 of the body
                same = self.s3.get_object(Bucket=bucket, Key=key)["Body"].read() == local
            else:
                same = etag == hashlib.md5(local, usedforsecurity=False).hexdigest()
            if not same:
                counts["bytes"] += 1
            if key in written or key not in headers:
                head = self.s3.head_object(Bucket=bucket, Key=key)
                headers[key] = (head.get("ContentType"), head.get("CacheControl"))
            if headers[key] != (entry["media_type"], entry["cache_control"]):
                counts["headers"] += 1
        keys = {path.lstrip("/") for path in files}
        counts["extra"] = len(set(listing) - keys)
        return counts


# --- the contenders ------------------------------------------------------------------------


@dataclass
class PublisherTool:
    """infra.publisher, with the last published manifest kept as Pulumi keeps it."""

    target: Target
    endpoint: str
    previous: dict[str, dict[str, Any]] | None = None
    generation: int = 0
    last_plan_seconds: float = 0.0

    name = "publisher"

    def publish(self, dist: Path, files: dict[str, dict[str, Any]]) -> None:
        from infra import publisher

        start = time.perf_counter()
        plan = publisher.plan_publish(self.previous, files)
        self.last_plan_seconds = time.perf_counter() - start
        self.generation += 1
        site = publisher.Publisher(
            publisher.clients(REGION, endpoint_url=self.endpoint),
            self.target.bucket,
            self.target.distribution_id,
            dist,
        )
        site.publish(plan, publisher.caller_reference("bench", self.generation, plan.changed_paths))
        self.previous = files


def sync_groups(faq_cache_control: str | None = None) -> list[tuple[list[str], str, str]]:
    """The user's deploy script: (aws filters, Cache-Control, Content-Type) per `sync` run,
    leaves first, entry points last. aws filters: later ones win, `*` crosses `/`."""
    document, aggregate = routes.DOCUMENT_CACHE.cache_control, routes.AGGREGATE_CACHE.cache_control
    leaves = ["api/v1/content/*", "api/v1/architecture.json", "api/v1/on-site-agent.json"]
    if faq_cache_control is None:
        leaves.append("api/v1/faq/*")
    not_leaves = ["api/v1/content/index.json", "api/v1/content/search-index.json"]

    def only(include: list[str], exclude: list[str] | None = None) -> list[str]:
        return ["--exclude", "*", *(f for p in include for f in ("--include", p)),
                *(f for p in exclude or [] for f in ("--exclude", p))]  # fmt: skip

    markdown = ["api/v1/content/*.md", "api/v1/faq/*.md"]
    groups = [(only(leaves, [*not_leaves, *markdown]), document, routes.JSON)]
    if faq_cache_control is not None:
        groups.append((only(["api/v1/faq/*"], markdown), faq_cache_control, routes.JSON))
    groups += [
        (only(markdown), document, routes.MARKDOWN),
        (only(["errors/*"]), routes.ERROR_CACHE.cache_control, routes.JSON),
        (only([*not_leaves, "api/v1/openapi.json", "api/v1/changes.json",
               "api/v1/search/entries/*", "api/v1/search/terms.json"]), aggregate,
         routes.JSON),
        # The sharded search index's shards, named by their content: cached a year.
        (only(["api/v1/search/shards/*"]), routes.IMMUTABLE_CACHE.cache_control, routes.JSON),
        (only(["llms-full.txt", "llms/*", "robots.txt"]), aggregate, routes.TEXT),
        (only(["sitemap.xml"]), aggregate, routes.XML),
        (only([".well-known/*", "api/v1/mcp.json"],
              [".well-known/api-catalog", ".well-known/*/SKILL.md"]), aggregate,
         routes.JSON),
        # The Agent Skill at both discovery RFC versions' locations (agent-skills/, skills/).
        (only([".well-known/*/SKILL.md"]), aggregate, routes.MARKDOWN),
        (only([".well-known/api-catalog"]), aggregate, routes.API_CATALOG),
        (only(["llms.txt"]), aggregate, routes.TEXT),
    ]  # fmt: skip
    return groups


def aws_filter_selects(filters: list[str], key: str) -> bool:
    """aws CLI filter semantics: everything is included, the last matching filter wins."""
    selected = True
    for flag, pattern in zip(filters[::2], filters[1::2], strict=True):
        if fnmatch.fnmatchcase(key, pattern):
            selected = flag == "--include"
    return selected


def sync_script_problems(
    files: dict[str, dict[str, Any]], faq_cache_control: str | None = None
) -> list[str]:
    """Every published file must be synced by exactly one group, with the manifest's headers
    (so the comparison is with a correct deployment, not a sloppy one)."""
    problems = []
    groups = sync_groups(faq_cache_control)
    for path, entry in sorted(files.items()):
        key = path.lstrip("/")
        chosen = [(cache, media) for filters, cache, media in groups
                  if aws_filter_selects(filters, key)]  # fmt: skip
        if len(chosen) != 1:
            problems.append(f"{key}: synced by {len(chosen)} groups")
        elif chosen[0] != (entry["cache_control"], entry["media_type"]):
            problems.append(f"{key}: the script sets {chosen[0]}, the manifest says "
                            f"{(entry['cache_control'], entry['media_type'])}")  # fmt: skip
    return problems


@dataclass
class SyncTool:
    """`aws s3 sync` per header group, then a `/*` invalidation."""

    target: Target
    endpoint: str
    aws: Path
    size_only: bool = False
    faq_cache_control: str | None = None
    commands: list[list[str]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return "sync-size-only" if self.size_only else "sync"

    def _run(self, *args: str) -> None:
        command = [str(self.aws), "--endpoint-url", self.endpoint, *args]
        self.commands.append(command)
        environment = {
            **os.environ,
            **CREDENTIALS,
            "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        }
        completed = subprocess.run(command, capture_output=True, text=True, env=environment)
        if completed.returncode != 0:
            raise RuntimeError(f"{' '.join(command)}\n{completed.stderr[-2000:]}")

    def publish(self, dist: Path, files: dict[str, dict[str, Any]]) -> None:
        for filters, cache_control, content_type in sync_groups(self.faq_cache_control):
            self._run(
                "s3", "sync", str(dist), f"s3://{self.target.bucket}", "--delete",
                "--only-show-errors", *(["--size-only"] if self.size_only else []), *filters,
                "--cache-control", cache_control, "--content-type", content_type,
            )  # fmt: skip
        self.invalidate_everything()

    def invalidate_everything(self) -> None:
        self._run(
            "cloudfront", "create-invalidation",
            "--distribution-id", self.target.distribution_id, "--paths", "/*",
        )  # fmt: skip

    def fix_headers(self, prefix: str, cache_control: str, content_type: str) -> None:
        """What a user must run when only headers changed: copy every object onto itself."""
        self._run(
            "s3", "cp", f"s3://{self.target.bucket}/{prefix}", f"s3://{self.target.bucket}/{prefix}",
            "--recursive", "--only-show-errors", "--metadata-directive", "REPLACE",
            "--cache-control", cache_control, "--content-type", content_type,
        )  # fmt: skip
        self.invalidate_everything()


# --- scenarios -------------------------------------------------------------------------------


@contextlib.contextmanager
def route_cache_changed(pattern: str, cache: routes.CacheClass) -> Iterator[None]:
    """Give one route rule another Cache-Control while building (scenario c)."""
    saved = routes.ROUTE_RULES
    routes.ROUTE_RULES = tuple(
        dataclasses.replace(rule, cache=cache) if rule.pattern == pattern else rule
        for rule in saved
    )
    try:
        yield
    finally:
        routes.ROUTE_RULES = saved


@dataclass
class Row:
    scenario: str
    tool: str
    put_requests: int  # HTTP PUTs to S3: objects, multipart parts, server-side copies
    objects_written: int  # new object versions
    bytes_uploaded: int  # payload of uploads (server-side copies upload nothing)
    deletes: int  # delete markers created
    other_requests: int  # GET, HEAD, LIST, POST (invalidations, DeleteObjects) ...
    invalidation_paths: list[str]
    files_invalidated: int
    stale: dict[str, int]
    seconds: float
    expected: list[str] | None = None  # for the publisher: the exact keys it must write
    written_keys: list[str] = field(default_factory=list)

    @property
    def stale_total(self) -> int:
        return sum(self.stale.values())


def files_invalidated(paths: list[str], files: dict[str, Any]) -> int:
    """How many published files the invalidation paths evict from the CDN."""
    covered: set[str] = set()
    for path in paths:
        if path.endswith("*"):
            covered |= {f for f in files if f.startswith(path[:-1])}
        elif path in files:
            covered.add(path)
    return len(covered)


@dataclass
class Rebuilt:
    dist: Path
    files: dict[str, dict[str, Any]]
    changed: list[str]  # paths whose bytes or headers differ from the previous build


class Site:
    """The generated site, rebuilt from scratch into the same dist/ for every scenario."""

    def __init__(self, root: Path, work: Path) -> None:
        self.root, self.dist = root, work / "dist"
        self.files: dict[str, dict[str, Any]] = {}
        self.epoch = int(os.environ.get("SOURCE_DATE_EPOCH") or 1735689600)

    def rebuild(self, frozen: bool = True) -> Rebuilt:
        from benchmarks.sitegen import source_date_epoch
        from content_builder.build import build
        from content_builder.writer import manifest

        with source_date_epoch(self.epoch):
            result, _ = build(self.root, self.dist, BASE_URL, frozen=frozen)
        files = manifest(result.artifacts, BASE_URL)["files"]
        changed = sorted(path for path, entry in files.items() if self.files.get(path) != entry)
        self.files = files
        return Rebuilt(self.dist, files, changed)


def _measure(
    scenario: str,
    tool: Any,
    target: Target,
    cloud: Cloud,
    server: CountingMotoServer,
    build: Rebuilt,
    action: Callable[[], None],
) -> Row:
    versions = cloud.versions(target.bucket)
    markers = cloud.delete_markers(target.bucket)
    invalidations = cloud.invalidations(target.distribution_id)
    before = server.traffic.snapshot()
    start = time.perf_counter()
    action()
    seconds = time.perf_counter() - start
    traffic = server.traffic.snapshot().since(before)
    new_versions = {k: v for k, v in cloud.versions(target.bucket).items() if k not in versions}
    paths = [
        path
        for invalidation_id, items in cloud.invalidations(target.distribution_id).items()
        if invalidation_id not in invalidations
        for path in items
    ]
    if traffic.copies == 0 and sum(new_versions.values()) != traffic.payload_bytes:
        raise AssertionError(
            f"{tool.name} {scenario}: versions hold {sum(new_versions.values())} bytes, "
            f"requests carried {traffic.payload_bytes}"
        )
    row = Row(
        scenario=scenario,
        tool=tool.name,
        put_requests=traffic.s3_puts,
        objects_written=len(new_versions),
        bytes_uploaded=traffic.payload_bytes,
        deletes=len(cloud.delete_markers(target.bucket) - markers),
        other_requests=traffic.other_requests,
        invalidation_paths=sorted(paths),
        files_invalidated=files_invalidated(paths, build.files),
        stale=cloud.stale(target.bucket, build.dist, build.files, {k for k, _ in new_versions}),
        seconds=seconds,
        written_keys=sorted(key for key, _ in new_versions),
    )
    # moto keeps every model instance it ever made (for its dashboard), old object
    # versions and per-request copies included: drop those references, or a run at
    # N = 1,000 grows past 5 GB. The backends keep what they hold.
    from moto.core.model_instances import reset_model_data

    reset_model_data()
    return row


@dataclass
class PublishResult:
    n: int
    files: int
    rows: list[Row]
    plan_seconds: dict[str, float]
    edited: str
    expected: dict[str, list[str]]  # scenario -> the keys the publisher must write
    #: The llms.txt files whose line for the edited document carries its sizes (issue 26):
    #: llms.txt while it lists the entries itself, and the part that holds the line.
    edited_llms: list[str] = dataclasses.field(default_factory=list)

    def row(self, scenario: str, tool: str) -> Row:
        return next(r for r in self.rows if (r.scenario, r.tool) == (scenario, tool))

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "files": self.files,
            "edited": self.edited,
            "plan_seconds": self.plan_seconds,
            "expected": self.expected,
            "rows": [
                {**dataclasses.asdict(row), "written_keys": len(row.written_keys)}
                for row in self.rows
            ],
        }


def _wait_for_a_newer_second(since: float) -> None:
    """`aws s3 sync` compares whole-second times: make a rebuild visibly newer than the
    previous upload, as it always is in CI."""
    remaining = 1.1 - (time.time() - since)
    if remaining > 0:
        time.sleep(remaining)


def run(site_root: Path, n: int, work: Path, with_awscli: bool = True) -> PublishResult:
    """Publish the scenarios with every contender; `with_awscli=False` runs the publisher
    only (the smoke test in `make test`, which must not need the awscli venv)."""
    from benchmarks.sitegen import edit_document

    aws = aws_executable() if with_awscli else None
    if with_awscli and aws is None:
        raise RuntimeError(f"no aws CLI in {AWSCLI_VENV}: run `make bench` (it installs it)")
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    rows: list[Row] = []
    expected: dict[str, list[str]] = {}
    edited_llms: list[str] = []
    plan_seconds: dict[str, float] = {}
    with aws_environment(), CountingMotoServer() as server:
        cloud = Cloud(server.endpoint)
        tools: list[Any] = [PublisherTool(cloud.target("publisher"), server.endpoint)]
        if aws is not None:
            tools.append(SyncTool(cloud.target("sync"), server.endpoint, aws))
            tools.append(SyncTool(cloud.target("sync-size-only"), server.endpoint, aws, True))
        site = Site(site_root, work)
        edited = _editable_document(site_root)
        last_upload = 0.0
        for scenario in SCENARIOS:
            _wait_for_a_newer_second(last_upload)
            if scenario == "b":
                edit_document(site_root, edited, "Benchmarked zyzzyva deployments stay cheap.")
                site.epoch += 86400  # edited a day later: the lock dates the change
                build = site.rebuild(frozen=False)
            elif scenario == "c":
                with route_cache_changed(CHANGED_ROUTE, CHANGED_CACHE):
                    build = site.rebuild()
            else:
                build = site.rebuild()
            expected[scenario] = [path.lstrip("/") for path in build.changed]
            if scenario == "b":
                line = f"/api/v1/content/{edited}.json)"
                edited_llms = [
                    key
                    for key in (
                        "llms.txt",
                        *sorted(f"llms/{p.name}" for p in (build.dist / "llms").iterdir()),
                    )
                    if line in (build.dist / key).read_text(encoding="utf-8")
                ]
            if aws is not None:
                faq_cache = CHANGED_CACHE.cache_control if scenario == "c" else None
                problems = sync_script_problems(build.files, faq_cache)
                if problems:
                    raise RuntimeError("the aws s3 sync script is wrong: " + "; ".join(problems))
            for tool in tools:
                if isinstance(tool, SyncTool) and scenario == "c":
                    tool.faq_cache_control = CHANGED_CACHE.cache_control
                row = _measure(
                    scenario, tool, tool.target, cloud, server, build,
                    lambda tool=tool, build=build: tool.publish(build.dist, build.files),
                )  # fmt: skip
                if isinstance(tool, PublisherTool):
                    row.expected = expected[scenario]
                    plan_seconds[scenario] = tool.last_plan_seconds
                rows.append(row)
            last_upload = time.time()
            if scenario == "c":
                for tool in tools:
                    if isinstance(tool, SyncTool) and tool.size_only:
                        rows.append(
                            _measure(
                                "c-fix", tool, tool.target, cloud, server, build,
                                lambda tool=tool: tool.fix_headers(
                                    "api/v1/faq/", CHANGED_CACHE.cache_control, routes.JSON
                                ),
                            )
                        )  # fmt: skip
    return PublishResult(n, len(site.files), rows, plan_seconds, edited, expected, edited_llms)


def _editable_document(root: Path) -> str:
    """A page document other than `site` (its first section body gets a sentence)."""
    for path in sorted((root / "content").glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        if path.stem != "site" and "content_type: page" in text:
            return path.stem
    raise RuntimeError("the generated site has no page document to edit")


_SHARDS = "api/v1/search/shards/"


def _few_shards(search_written: list[str], initial: Iterable[str]) -> bool:
    """The term map and a few shards: at most a tenth of them (or eight), never the index."""
    shards = sum(key.startswith(_SHARDS) for key in initial)
    written = [key for key in search_written if key.startswith(_SHARDS)]
    return "api/v1/search/terms.json" in search_written and len(written) <= max(8, shards // 10)


def check_targets(result: PublishResult) -> dict[str, bool]:
    """The issue's targets, on the publisher's rows."""
    a, b, c = (result.row(s, "publisher") for s in ("a", "b", "c"))
    edited_and_aggregates = [
        f"api/v1/content/{result.edited}.json",
        f"api/v1/content/{result.edited}.md",  # its Markdown mirror (issue 14)
        *AGGREGATES_OF_A_DOCUMENT,
        *result.edited_llms,
    ]
    # llms.txt is also `/`, CloudFront's root object: invalidated with it.
    root = ["/"] if "llms.txt" in b.written_keys else []
    faq_keys = sorted(
        path.lstrip("/") for path in result.expected["c"] if path.startswith("api/v1/faq/")
    )
    faq_folder = [key for key in result.expected["initial"] if key.startswith("api/v1/faq/")]
    # The sharded search index (issue 25): its term map and the shards of the edited words.
    search_written = [key for key in result.expected["b"] if key.startswith("api/v1/search/")]
    return {
        "(a) 0 PUTs and 0 invalidation paths": a.put_requests == 0 and not a.invalidation_paths,
        "(b) only the edited file and the aggregates that contain it": (
            b.written_keys
            == sorted(result.expected["b"])
            == sorted([*edited_and_aggregates, *search_written])
            and _few_shards(search_written, result.expected["initial"])
            # New search shards are named by their bytes: never served, never invalidated.
            and b.invalidation_paths
            == sorted(
                [*root, *("/" + key for key in b.written_keys if not key.startswith(_SHARDS))]
            )
        ),
        # A CloudFront invalidation path may only end in `*` (no `/api/v1/faq/*.json`):
        # past the publisher's exact-path limit, the narrowest it can evict is the folder,
        # whose FAQ Markdown mirrors (issue 14) share it with the JSON.
        "(c) exactly the files of that route re-uploaded, the narrowest invalidation": (
            bool(faq_keys)
            and c.written_keys == faq_keys == sorted(result.expected["c"])
            and c.put_requests == len(faq_keys)
            and (
                c.files_invalidated == len(faq_keys)  # exact paths
                or (
                    c.invalidation_paths == ["/api/v1/faq/*"]
                    and c.files_invalidated == len(faq_folder)
                )
            )
        ),
        "no stale object after any publisher run": all(
            row.stale_total == 0 for row in result.rows if row.tool == "publisher"
        ),
    }


def main() -> int:
    import argparse
    import tempfile

    from benchmarks.sitegen import generate

    parser = argparse.ArgumentParser(description="publish scenarios on moto, as JSON")
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--publisher-only", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        generate(root / "site_data", args.n)
        result = run(root / "site_data", args.n, root / "work", not args.publisher_only)
    print(json.dumps({**result.as_dict(), "targets": check_targets(result)}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
