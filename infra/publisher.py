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
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_contract.manifest import Files, entry_signature
from agent_contract.paths import ROOT_OBJECT
from agent_contract.routes import PublishTier, rule_for

#: Metadata key holding the file's sha256 on every object (x-amz-meta-sha256).
SHA256_METADATA = "sha256"
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
class PublishPlan:
    uploads: tuple[tuple[str, ...], ...]  # one tuple of paths per publish tier, in order
    deletions: tuple[str, ...]
    files: dict[str, dict[str, Any]]  # the manifest being published

    @property
    def upload_paths(self) -> list[str]:
        return [path for tier in self.uploads for path in tier]

    @property
    def changed_paths(self) -> list[str]:
        return sorted([*self.upload_paths, *self.deletions])

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
    return PublishPlan(tiers, deletions, {path: dict(entry) for path, entry in current.items()})


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

    def upload(self, path: str, entry: Mapping[str, Any]) -> None:
        self.clients.s3.put_object(
            Bucket=self.bucket,
            Key=key_of(path),
            Body=self._read_body(path, entry),
            ContentType=entry["media_type"],
            CacheControl=entry["cache_control"],
            Metadata={SHA256_METADATA: entry["sha256"]},
        )

    def upload_tier(self, paths: tuple[str, ...], files: Files) -> None:
        if not paths:
            return
        with ThreadPoolExecutor(max_workers=min(UPLOAD_WORKERS, len(paths))) as pool:
            futures = {path: pool.submit(self.upload, path, files[path]) for path in paths}
        failures = {path: f.exception() for path, f in futures.items() if f.exception()}
        if failures:
            first_path, first_error = next(iter(sorted(failures.items())))
            raise PublishError(
                f"upload failed for {len(failures)} file(s), first {first_path}: {first_error}; "
                "nothing that links to them was published and nothing was deleted"
            ) from first_error

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
        for tier_paths in plan.uploads:
            self.upload_tier(tier_paths, plan.files)
        if plan.deletions:
            self.delete(plan.deletions)
        paths = invalidation_paths(plan.changed_paths)
        invalidation_id = self.invalidate(paths, reference)
        return {
            "uploaded": plan.upload_paths,
            "deleted": list(plan.deletions),
            "invalidated": paths,
            "invalidation_id": invalidation_id or "",
        }

    def bucket_exists(self) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.clients.s3.head_bucket(Bucket=self.bucket)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("404", "NoSuchBucket", "NotFound"):
                return False
            raise
        return True

    def read_state(self, files: Files) -> dict[str, dict[str, Any]]:
        """What the bucket holds for `files`: a missing object is left out, an object whose
        body or headers were changed outside this publisher shows what it holds now."""
        from botocore.exceptions import ClientError

        observed: dict[str, dict[str, Any]] = {}
        for path, entry in sorted(files.items()):
            try:
                head = self.clients.s3.head_object(Bucket=self.bucket, Key=key_of(path))
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                    continue
                raise
            observed[path] = {
                **entry,
                "sha256": head.get("Metadata", {}).get(SHA256_METADATA, "unknown"),
                "size": head.get("ContentLength", entry.get("size")),
                "media_type": head.get("ContentType", ""),
                "cache_control": head.get("CacheControl", ""),
            }
        return observed
