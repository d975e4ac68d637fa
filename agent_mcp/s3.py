"""The published files read from the S3 bucket on demand: the MCP Lambda's source.

The function packages no content (issue 25): it works at any site size, and a publish
changes the bucket, not the function. Each read is one GetObject; a body already held
is revalidated with If-None-Match, so an unchanged file costs a 304 and no transfer,
and a changed one is seen at once (S3 is strongly consistent for reads after writes).
Bodies are kept in a least-recently-used cache bounded in bytes (`max_bytes`), files
larger than `max_object` are not kept at all, and a ranged read (a part of
llms-full.txt) is never kept. A missing key is MissingFile: with s3:ListBucket on the
bucket S3 answers 404 NoSuchKey (without it, 403, which is read the same way).

Sources for every S3 behaviour relied on are in docs/decisions.md ("MCP answers sized for
agents, the Lambda reading the bucket, the server card", issue 25).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from agent_mcp.sources import MissingFile, SourceError

#: Bytes of bodies the cache keeps (the function has 512 MB; the parsed index and the
#: SDK take the rest) and the largest body it keeps.
CACHE_BYTES = 128 * 1024 * 1024
OBJECT_BYTES = 16 * 1024 * 1024
#: Codes S3 answers for a key that is not there: 404 NoSuchKey with s3:ListBucket, 403
#: AccessDenied without it.
_MISSING = {"NoSuchKey", "404", "NotFound", "AccessDenied", "403"}


def key_of(path: str) -> str:
    """URL path -> object key, as the publisher writes them ("/llms.txt" -> "llms.txt")."""
    return path.lstrip("/")


class S3Files:
    """One bucket's published files; thread-safe (tool calls run on several threads)."""

    def __init__(
        self,
        bucket: str,
        client: Any = None,
        max_bytes: int = CACHE_BYTES,
        max_object: int = OBJECT_BYTES,
    ) -> None:
        if client is None:
            import boto3  # in the Lambda runtime; imported only when a bucket is read

            client = boto3.client("s3")
        self.bucket = bucket
        self.label = f"s3://{bucket}"
        self.client = client
        self.max_bytes = max_bytes
        self.max_object = max_object
        self._cache: OrderedDict[str, tuple[str, bytes]] = OrderedDict()  # key -> etag, body
        self._held = 0
        self._lock = threading.Lock()
        #: GetObject requests made and how many of them a 304 answered (for tests, logs).
        self.requests = 0
        self.not_modified = 0

    def _error(self, error: Exception, path: str) -> Exception:
        response = getattr(error, "response", None) or {}
        code = str(response.get("Error", {}).get("Code", ""))
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code in _MISSING or status in (403, 404):
            return MissingFile(path, f"{code or status} from {self.label}")
        return SourceError(f"{self.label}/{key_of(path)}: {code or error}")

    def read(self, path: str) -> bytes:
        key = key_of(path)
        with self._lock:
            held = self._cache.get(key)
            self.requests += 1
        arguments = {"Bucket": self.bucket, "Key": key}
        if held is not None:
            arguments["IfNoneMatch"] = held[0]
        try:
            response = self.client.get_object(**arguments)
        except Exception as error:  # botocore's ClientError, without importing botocore
            response_meta = getattr(error, "response", None) or {}
            status = response_meta.get("ResponseMetadata", {}).get("HTTPStatusCode")
            code = str(response_meta.get("Error", {}).get("Code", ""))
            if held is not None and (status == 304 or code in ("304", "NotModified")):
                with self._lock:
                    self.not_modified += 1
                    if key in self._cache:
                        self._cache.move_to_end(key)
                return held[1]
            raise self._error(error, path) from None
        body = response["Body"].read()
        self._keep(key, response.get("ETag", ""), body)
        return body

    def _keep(self, key: str, etag: str, body: bytes) -> None:
        with self._lock:
            old = self._cache.pop(key, None)
            if old is not None:
                self._held -= len(old[1])
            if not etag or len(body) > self.max_object:
                return
            self._cache[key] = (etag, body)
            self._held += len(body)
            while self._held > self.max_bytes and self._cache:
                _, (_, dropped) = self._cache.popitem(last=False)
                self._held -= len(dropped)

    def size(self, path: str) -> int:
        try:
            return int(
                self.client.head_object(Bucket=self.bucket, Key=key_of(path))["ContentLength"]
            )
        except Exception as error:
            raise self._error(error, path) from None

    def read_range(self, path: str, start: int, end: int) -> bytes:
        if end <= start:
            return b""
        try:
            response = self.client.get_object(
                Bucket=self.bucket, Key=key_of(path), Range=f"bytes={start}-{end - 1}"
            )
        except Exception as error:
            raise self._error(error, path) from None
        return response["Body"].read()

    def etag(self, path: str) -> str | None:
        """The ETag of the body held for `path` after a read (None if not held)."""
        with self._lock:
            held = self._cache.get(key_of(path))
        return held[0] if held else None

    @property
    def held_bytes(self) -> int:
        return self._held


class Snapshot:
    """The bucket as one generation of published files: what one Catalog is built over.

    A catalog parses the manifest and the content index once; after a publish that
    changes either, the Lambda handler makes a new Snapshot (a new identity, so
    agent_mcp.http builds a new server for it) over the same S3Files and its cache.
    """

    def __init__(self, files: S3Files, generation: tuple[str | None, ...]) -> None:
        self.files = files
        self.generation = generation
        self.label = files.label

    def read(self, path: str) -> bytes:
        return self.files.read(path)

    def size(self, path: str) -> int:
        return self.files.size(path)

    def read_range(self, path: str, start: int, end: int) -> bytes:
        return self.files.read_range(path, start, end)
