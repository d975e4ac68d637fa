"""Publish a build to S3 and invalidate CloudFront: only what changed, in an order that
never lets a published file point at one that is not there yet.

Usable without Pulumi (the dynamic provider in site_content.py is a thin wrapper):

    plan = plan_publish(previous_files, manifest["files"])
    Publisher(clients("eu-west-1"), bucket, distribution_id, Path("dist")).publish(plan, ref)

An entry changes when its bytes (sha256) or its headers (media type, Cache-Control)
change; upload order follows the route table's publish tiers (documents and FAQ,
then aggregates, then discovery, llms.txt and the MCP manifests); deletions happen
only after every upload succeeded; the invalidation lists exactly the changed and
deleted paths, collapsed to wildcards past a threshold.

Drift is repaired on every publish (issue 24): one paginated ListObjectsV2 pass over
the bucket finds the files of the manifest that are missing or hold other bytes (another
size, or an ETag that is not the built file's MD5), and they are uploaded again with the
changed ones, in the same tiers, and invalidated with them. `read_state` (the provider's
refresh) reports the same listing, so `pulumi up --refresh` on an unchanged manifest
sees a deleted file and publishes it again (docs/decisions.md, "Issue 24: drift
repaired on every deploy").
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_contract.directives import object_metadata
from agent_contract.manifest import Files, entry_signature
from agent_contract.paths import ROOT_OBJECT
from agent_contract.routes import PublishTier, rule_for

#: Metadata key holding the file's sha256 on every object (x-amz-meta-sha256).
SHA256_METADATA = "sha256"
#: What `read_state` reports as the sha256 of an object that holds other bytes than the
#: ones published: a listing tells that they differ (size, ETag), not what they are.
UNKNOWN_SHA256 = "unknown"
#: Past this many paths, an invalidation is collapsed to wildcards. CloudFront allows
#: 3,000 file paths but only 15 wildcard paths in progress per distribution, and bills
#: paths past 1,000 a month; a wildcard counts as one path.
INVALIDATION_PATH_LIMIT = 100
#: CloudFront's limit on wildcard paths in progress; past it, one `/*` does the job.
WILDCARD_LIMIT = 15
THROTTLING_CODES = frozenset(
    {
        "TooManyInvalidationsInProgress",
        "Throttling",
        "ThrottlingException",
        "RequestLimitExceeded",
        "SlowDown",
        "ServiceUnavailable",
    }
)
UPLOAD_WORKERS = 8
#: How long a publish keeps retrying an invalidation CloudFront refuses for load
#: (TooManyInvalidationsInProgress: 3,000 file paths or 15 wildcard paths already in
#: progress, https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/InvalidationLimits.html).
#: Those slots free up only as earlier invalidations complete; AWS's own waiter for that
#: gives up after 30 polls 20 s apart, 10 minutes
#: (https://docs.aws.amazon.com/cli/latest/reference/cloudfront/wait/invalidation-completed.html),
#: so the budget is longer than that: 15 minutes of waiting, then a clear error.
INVALIDATION_RETRY_BUDGET = 900.0
INVALIDATION_MAX_DELAY = 60.0


class PublishError(Exception):
    pass


class BucketMissing(PublishError):
    """The bucket itself is gone (a refresh then drops the resource from the state)."""


def publish_summary(last: Mapping[str, Any] | None) -> dict[str, Any]:
    """The last publish in counts (its lists stay in the resource's state)."""
    last = last or {}
    return {
        "uploaded": len(last.get("uploaded") or []),
        "deleted": len(last.get("deleted") or []),
        "invalidated": len(last.get("invalidated") or []),
        "invalidation_id": str(last.get("invalidation_id") or ""),
    }


def key_of(path: str) -> str:
    return path.lstrip("/")


@dataclass(frozen=True)
class Stored:
    """One object as a ListObjectsV2 page describes it."""

    size: int
    etag: str  # without its quotes


@dataclass(frozen=True)
class PublishPlan:
    uploads: tuple[tuple[str, ...], ...]  # one tuple of paths per publish tier, in order
    deletions: tuple[str, ...]
    files: dict[str, dict[str, Any]]  # the manifest being published
    #: Unchanged entries uploaded again because the bucket lost or altered them (also in
    #: `uploads`, in their tier).
    repaired: tuple[str, ...] = ()
    #: Paths the previous manifest did not have.
    added: frozenset[str] = frozenset()

    def with_repairs(self, paths: Iterable[str]) -> PublishPlan:
        """This plan, also uploading `paths` (each in its tier, leaves first as ever)."""
        repaired = tuple(sorted(set(paths) - set(self.upload_paths)))
        if not repaired:
            return self
        tiers = tuple(
            tuple(sorted([*tier, *(p for p in repaired if rule_for(p).tier == kind)]))
            for kind, tier in zip(PublishTier, self.uploads, strict=True)
        )
        return PublishPlan(tiers, self.deletions, self.files, repaired, self.added)

    @property
    def upload_paths(self) -> list[str]:
        return [path for tier in self.uploads for path in tier]

    @property
    def changed_paths(self) -> list[str]:
        return sorted([*self.upload_paths, *self.deletions])

    @property
    def stale_paths(self) -> list[str]:
        """What the CDN may hold stale: `changed_paths` less the paths named by their
        content (an immutable route: search shards) that were added or deleted. A name
        never served needs no eviction; a deleted one's bytes stay right for its name, and
        the edge keeps serving them to readers of an older term map."""
        return [
            path
            for path in self.changed_paths
            if not (
                (path in self.added or path in self.deletions) and rule_for(path).cache.immutable
            )
        ]

    @property
    def is_empty(self) -> bool:
        return not self.upload_paths and not self.deletions


def plan_publish(previous: Files | None, current: Files) -> PublishPlan:
    """What to upload (new or changed entries, by tier) and delete (entries that went away)."""
    previous = previous or {}
    changed = sorted(
        path
        for path, entry in current.items()
        if path not in previous or entry_signature(previous[path]) != entry_signature(entry)
    )
    tiers = tuple(
        tuple(path for path in changed if rule_for(path).tier == tier) for tier in PublishTier
    )
    deletions = tuple(sorted(path for path in previous if path not in current))
    added = frozenset(path for path in changed if path not in previous)
    files = {path: dict(entry) for path, entry in current.items()}
    return PublishPlan(tiers, deletions, files, (), added)


def invalidation_paths(paths: Iterable[str], limit: int = INVALIDATION_PATH_LIMIT) -> list[str]:
    """The paths to invalidate: exact up to `limit`, then one wildcard per folder, then `/*`.

    `/` is added whenever the root object (llms.txt) changes, because CloudFront caches
    the default root object under `/`, not under `/llms.txt`.
    """
    exact = sorted(set(paths))
    if ROOT_OBJECT in exact:
        exact = sorted({"/", *exact})
    if len(exact) <= limit:
        return exact
    folders = sorted({path.rsplit("/", 1)[0] + "/*" for path in exact if path != "/"})
    if "/*" in folders or len(folders) > WILDCARD_LIMIT:
        return ["/*"]
    return ["/", *folders] if "/" in exact else folders


def caller_reference(scope: str, generation: int, paths: list[str]) -> str:
    """Deterministic per publish, so a retried request cannot create a second invalidation,
    and different for every publish, so CloudFront never mistakes a new one for an old one."""
    digest = hashlib.sha256("\n".join(paths).encode()).hexdigest()[:16]
    return f"{scope}-{generation}-{digest}"


@dataclass(frozen=True)
class Clients:
    s3: Any
    cloudfront: Any


def clients(region: str | None, endpoint_url: str | None = None) -> Clients:
    """boto3 clients with botocore's standard retry mode (throttling, 5xx, timeouts).

    `endpoint_url` sends both clients to another endpoint (a local S3/CloudFront
    emulator such as moto's server: the benchmarks and tests use it); by default
    they talk to AWS.
    """
    import boto3
    from botocore.config import Config

    config = Config(retries={"mode": "standard", "max_attempts": 8})
    session = boto3.session.Session(region_name=region)
    # CloudFront is global; its API lives in us-east-1 whatever the bucket's region.
    return Clients(
        s3=session.client("s3", config=config, endpoint_url=endpoint_url),
        cloudfront=session.client(
            "cloudfront", region_name="us-east-1", config=config, endpoint_url=endpoint_url
        ),
    )


@dataclass
class Publisher:
    clients: Clients
    bucket: str
    distribution_id: str | None
    source_dir: Path
    sleep: Callable[[float], None] = time.sleep
    invalidation_budget: float = INVALIDATION_RETRY_BUDGET
    log: list[str] = field(default_factory=list)
    #: Keys per ListObjectsV2 page; None is S3's own maximum, 1,000 (tests page smaller).
    list_page_size: int | None = None
    #: path -> ETag of each file as the last `publish` or `read_state` found it in the
    #: bucket (PutObject's answer, or the listing's): kept in the resource's state, so a
    #: refresh sees an edit that keeps an object's size.
    etags: dict[str, str] = field(default_factory=dict)

    # --- S3 --------------------------------------------------------------------------

    def _read_body(self, path: str, entry: Mapping[str, Any]) -> bytes:
        file = self.source_dir / key_of(path)
        try:
            body = file.read_bytes()
        except OSError as error:
            raise PublishError(f"{file}: cannot read the built file ({error.strerror})") from error
        if hashlib.sha256(body).hexdigest() != entry["sha256"]:
            raise PublishError(
                f"{file}: does not match the manifest (rebuilt since the preview?); "
                "run the build again"
            )
        return body

    def upload(self, path: str, entry: Mapping[str, Any]) -> str:
        """PUT the built file with its headers; its ETag, as S3 answers it."""
        response = self.clients.s3.put_object(
            Bucket=self.bucket,
            Key=key_of(path),
            Body=self._read_body(path, entry),
            ContentType=entry["media_type"],
            CacheControl=entry["cache_control"],
            # The edge's metadata (a Markdown twin's token estimate) depends only on the
            # path and the size, so it changes exactly when the bytes do.
            Metadata={
                SHA256_METADATA: entry["sha256"],
                **object_metadata(path, int(entry["size"])),
            },
        )
        return str((response or {}).get("ETag") or "").strip('"')

    def upload_tier(self, paths: tuple[str, ...], files: Files) -> dict[str, str]:
        """Upload one tier on UPLOAD_WORKERS threads; path -> ETag of each upload."""
        if not paths:
            return {}
        with ThreadPoolExecutor(max_workers=min(UPLOAD_WORKERS, len(paths))) as pool:
            futures = {path: pool.submit(self.upload, path, files[path]) for path in paths}
        failures = {path: f.exception() for path, f in futures.items() if f.exception()}
        if failures:
            first_path, first_error = next(iter(sorted(failures.items())))
            raise PublishError(
                f"upload failed for {len(failures)} file(s), first {first_path}: {first_error}; "
                "nothing that links to them was published and nothing was deleted"
            ) from first_error
        return {path: future.result() for path, future in futures.items()}

    def delete(self, paths: Iterable[str]) -> None:
        keys = [key_of(path) for path in paths]
        for start in range(0, len(keys), 1000):  # DeleteObjects takes at most 1,000 keys
            batch = keys[start : start + 1000]
            response = self.clients.s3.delete_objects(
                Bucket=self.bucket,
                Delete={"Objects": [{"Key": key} for key in batch], "Quiet": True},
            )
            errors = response.get("Errors") or []
            if errors:
                raise PublishError(f"delete failed for {errors[0].get('Key')}: {errors[0]}")

    # --- CloudFront -----------------------------------------------------------------

    def invalidate(self, paths: list[str], reference: str) -> str | None:
        if not paths or not self.distribution_id:
            return None
        from botocore.exceptions import ClientError

        delay, waited = 1.0, 0.0
        while True:
            try:
                response = self.clients.cloudfront.create_invalidation(
                    DistributionId=self.distribution_id,
                    InvalidationBatch={
                        "Paths": {"Quantity": len(paths), "Items": paths},
                        "CallerReference": reference,
                    },
                )
                return str(response["Invalidation"]["Id"])
            except ClientError as error:
                code = error.response.get("Error", {}).get("Code", "")
                if code not in THROTTLING_CODES or waited + delay > self.invalidation_budget:
                    raise PublishError(
                        f"invalidation of {len(paths)} path(s) failed after {waited:.0f}s "
                        f"of retries: {error}. The files are published; invalidate "
                        f"{paths[:3]}... by hand or run `pulumi up` again."
                    ) from error
                self.log.append(f"invalidation throttled ({code}), retry in {delay:.0f}s")
                self.sleep(delay)
                waited += delay
                delay = min(delay * 2, INVALIDATION_MAX_DELAY)

    # --- the whole publish ---------------------------------------------------------

    def publish(self, plan: PublishPlan, reference: str) -> dict[str, Any]:
        """Upload, delete and invalidate what `plan` says, and repair on the way every
        file of the manifest the bucket lost or altered since it was published."""
        uploading = set(plan.upload_paths)
        # A first publish uploads every file: nothing in the bucket to compare with.
        stored = self.inventory() if any(p not in uploading for p in plan.files) else {}
        plan = plan.with_repairs(self.drifted(plan, stored))
        if plan.repaired:
            # The reference must name the paths it invalidates: an engine retry of this
            # update, finding nothing left to repair, then asks for another batch
            # instead of colliding with this one (InvalidationBatchAlreadyExists).
            reference = f"{reference}-r{_digest(plan.repaired)}"
        # What every file of the manifest holds once this publish is done: the listing's
        # ETag for a file left alone (drifted() found it equal to the build's MD5), the
        # PUT's answer for a file uploaded.
        self.etags = {
            path: stored[key_of(path)].etag for path in plan.files if key_of(path) in stored
        }
        for tier_paths in plan.uploads:
            self.etags.update(self.upload_tier(tier_paths, plan.files))
        if plan.deletions:
            self.delete(plan.deletions)
        paths = invalidation_paths(plan.stale_paths)
        invalidation_id = self.invalidate(paths, reference)
        return {
            "uploaded": plan.upload_paths,
            "deleted": list(plan.deletions),
            "repaired": list(plan.repaired),
            "invalidated": paths,
            "invalidation_id": invalidation_id or "",
        }

    # --- drift: one listing, not a request per file ----------------------------------

    def inventory(self) -> dict[str, Stored]:
        """Every object in the bucket, key -> size and ETag, from one ListObjectsV2 pass.

        S3 answers at most 1,000 keys a page; the paginator follows each page's
        continuation token to the last. 40,000 files are 40 requests, where a HEAD per
        file would be 40,000.
        """
        from botocore.exceptions import ClientError

        paginator = self.clients.s3.get_paginator("list_objects_v2")
        config = {"PageSize": self.list_page_size} if self.list_page_size else {}
        stored: dict[str, Stored] = {}
        try:
            for page in paginator.paginate(Bucket=self.bucket, PaginationConfig=config):
                for item in page.get("Contents") or []:
                    etag = str(item["ETag"]).strip('"')
                    stored[item["Key"]] = Stored(int(item["Size"]), etag)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "NoSuchBucket":
                raise BucketMissing(f"bucket {self.bucket} does not exist") from error
            raise
        return stored

    def drifted(self, plan: PublishPlan, stored: Mapping[str, Stored]) -> list[str]:
        """The manifest's files this publish would not upload whose object is missing from
        `stored` (the inventory) or holds other bytes than the built file: another size,
        or an ETag that is not the built file's MD5.

        The ETag of an object written by a single PutObject to a bucket encrypted with
        SSE-S3 is the MD5 of its bytes (the bucket's encryption is pinned to SSE-S3 by
        infra/aws_rules.py, rule `etag-is-md5`); any other ETag (SSE-KMS, a multipart
        upload by hand) compares unequal, which uploads the file again: never wrong,
        at worst a PUT too many.
        """
        uploading = set(plan.upload_paths)
        return [
            path
            for path in plan.files
            if path not in uploading
            and (
                (item := stored.get(key_of(path))) is None
                or item.size != plan.files[path]["size"]
                or item.etag != self._md5(path)  # the file is read only when the size agrees
            )
        ]

    def _md5(self, path: str) -> str:
        """The MD5 of the built file, what S3 reports as the ETag of its single PUT
        (compared, never trusted for integrity: the sha256 is checked on upload)."""
        file = self.source_dir / key_of(path)
        try:
            return hashlib.md5(file.read_bytes(), usedforsecurity=False).hexdigest()
        except OSError:
            return ""  # no built file to compare: the upload names the problem

    def read_state(
        self, files: Files, etags: Mapping[str, str] | None = None
    ) -> dict[str, dict[str, Any]]:
        """What the bucket holds for `files`, from one listing (BucketMissing when the
        bucket itself is gone). A missing object is left out; an object of another size,
        or whose ETag differs from the one recorded when it was published (`etags`, when
        the state has them), is reported with sha256 UNKNOWN_SHA256, so the engine's
        diff shows it and the update uploads it again. `self.etags` becomes the listing's
        ETag of each file that had one recorded: an ETag nobody compared with the build
        (a state from before issue 24) is not written down as the published one.

        A listing carries no headers: an object whose Content-Type or Cache-Control alone
        was edited in place is reported as published. `verify --expect-from dist`, after
        every deploy, compares both headers of every file (docs/decisions.md, "Issue 24").
        """
        stored = self.inventory()
        etags = etags or {}
        observed: dict[str, dict[str, Any]] = {}
        self.etags = {}
        for path, entry in sorted(files.items()):
            item = stored.get(key_of(path))
            if item is None:
                continue
            recorded = etags.get(path)
            if recorded:
                self.etags[path] = item.etag
            if item.size != entry["size"] or (recorded and recorded != item.etag):
                observed[path] = {**entry, "sha256": UNKNOWN_SHA256, "size": item.size}
            else:
                observed[path] = dict(entry)
        return observed


def _digest(paths: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(paths).encode()).hexdigest()[:16]
