"""Where the published files come from: URL path -> bytes, and nothing else.

The MCP server reads the API exactly as an agent would, so it depends on the published
files only, never on how the builder makes them. Three sources, one interface:

- `MemoryFiles`: a build held in memory (`--site DIR`, `serve`), from the builder's public
  entry point `content_builder.build.plan`, taking each artifact's path and body;
- `DirectoryFiles`: a build on disk (`dist/`, or the files packaged beside the Lambda handler);
- `HttpFiles`: a live deployment over HTTP(S) (`--from URL`), read once per path.
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

USER_AGENT = "agent-access-mcp/1.0"


class MissingFile(LookupError):
    """The source publishes no file at this path."""

    def __init__(self, path: str, detail: str = "not published") -> None:
        super().__init__(f"{path}: {detail}")
        self.path = path


class SourceError(RuntimeError):
    """The source could not be read at all (network down, HTTP 5xx, unreadable folder)."""


class FileSource(Protocol):
    #: Where the files live, for messages ("https://agents.example.com", "dist/").
    label: str

    def read(self, path: str) -> bytes:
        """The published bytes at URL path `path` (starting with "/"); raises MissingFile."""
        ...


class RangedSource(FileSource, Protocol):
    """A source that can also tell a file's size and read part of it: what paging a file
    of tens of MB (llms-full.txt) needs without reading it whole (agent_mcp.paging)."""

    def size(self, path: str) -> int: ...

    def read_range(self, path: str, start: int, end: int) -> bytes:
        """Bytes [start, end) of the file at `path`; raises MissingFile."""
        ...


def size_of(source: FileSource, path: str) -> int:
    """The file's size, from the source's own `size` when it has one."""
    sized = getattr(source, "size", None)
    return sized(path) if callable(sized) else len(source.read(path))


def read_range(source: FileSource, path: str, start: int, end: int) -> bytes:
    ranged = getattr(source, "read_range", None)
    if callable(ranged):
        return ranged(path, start, end)
    return source.read(path)[start:end]


class MemoryFiles:
    def __init__(self, files: Mapping[str, bytes], label: str = "in-memory build") -> None:
        self._files = dict(files)
        self.label = label

    def read(self, path: str) -> bytes:
        try:
            return self._files[path]
        except KeyError:
            raise MissingFile(path) from None

    def size(self, path: str) -> int:
        return len(self.read(path))

    def read_range(self, path: str, start: int, end: int) -> bytes:
        return self.read(path)[start:end]


class DirectoryFiles:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.label = str(root)

    def _file(self, path: str) -> Path:
        if not path.startswith("/"):
            raise MissingFile(path, "not an absolute URL path")
        target = (self.root / path.lstrip("/")).resolve()
        # A crafted path ("/../x") must not read outside the published folder.
        if not target.is_relative_to(self.root) or not target.is_file():
            raise MissingFile(path)
        return target

    def read(self, path: str) -> bytes:
        return self._file(path).read_bytes()

    def size(self, path: str) -> int:
        return self._file(path).stat().st_size

    def read_range(self, path: str, start: int, end: int) -> bytes:
        with self._file(path).open("rb") as file:
            file.seek(start)
            return file.read(max(0, end - start))


#: A whole answer must come within this many request timeouts: `timeout` bounds each
#: read, and a deployment sending a byte before each one expires never ended (as
#: agent_client.client.read_within, which this package may not import).
ANSWER_TIMEOUTS = 3
#: The most an answer may hold (as agent_client.client.MAX_ANSWER_BYTES).
MAX_ANSWER_BYTES = 64 << 20


def _read_within(response: Any, deadline: float) -> bytes:
    body = bytearray()
    while chunk := response.read1(65536):
        body += chunk
        if len(body) > MAX_ANSWER_BYTES:
            raise SourceError(f"the answer is too large (over {MAX_ANSWER_BYTES:,} bytes)")
        if time.monotonic() > deadline:
            raise TimeoutError("the answer did not end in time")
    return bytes(body)


class HttpFiles:
    """A deployment read over HTTP(S), one GET per path, kept for the process's life.

    Kept, not re-read: a stdio server lives as long as one agent session, and the files
    change only on a publish; restart the server to see a new publish.
    """

    def __init__(self, base_url: str, timeout: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.label = self.base_url
        self.timeout = timeout
        self._cache: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def read(self, path: str) -> bytes:
        with self._lock:
            if path in self._cache:
                return self._cache[path]
        _, body = self._request(path)
        with self._lock:
            self._cache[path] = body
        return body

    def _request(
        self, path: str, method: str = "GET", headers: dict[str, str] | None = None
    ) -> tuple[Any, bytes]:
        url = self.base_url + path
        request = urllib.request.Request(
            url, method=method, headers={"User-Agent": USER_AGENT, **(headers or {})}
        )
        deadline = time.monotonic() + ANSWER_TIMEOUTS * self.timeout
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response, _read_within(response, deadline)
        except urllib.error.HTTPError as error:
            if error.code in (403, 404):  # S3 behind CloudFront answers 403 for a missing key
                raise MissingFile(path, f"HTTP {error.code} from {url}") from None
            raise SourceError(f"{url}: HTTP {error.code}") from None
        except (urllib.error.URLError, OSError) as error:
            raise SourceError(f"{url}: cannot connect ({error})") from None

    def size(self, path: str) -> int:
        with self._lock:
            if path in self._cache:
                return len(self._cache[path])
        response, _ = self._request(path, "HEAD")
        length = response.headers.get("Content-Length")
        return int(length) if length and length.isdigit() else len(self.read(path))

    def read_range(self, path: str, start: int, end: int) -> bytes:
        """One ranged GET (RFC 9110 14.2), not kept: a part of a file too large to keep.
        A server that ignores Range answers the whole file (200), sliced here."""
        with self._lock:
            if path in self._cache:
                return self._cache[path][start:end]
        if end <= start:
            return b""
        response, body = self._request(path, headers={"Range": f"bytes={start}-{end - 1}"})
        return body if response.status == 206 else body[start:end]


def build_in_memory(site_dir: Path, base_url: str | None = None) -> MemoryFiles:
    """Build `site_dir` for `base_url` with the builder's public entry point, in memory."""
    from content_builder.build import plan

    result = plan(site_dir, base_url)
    return MemoryFiles(
        {artifact.path: artifact.body for artifact in result.artifacts},
        label=f"{site_dir} (built in memory for {result.site.base_url})",
    )
