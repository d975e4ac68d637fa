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
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

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


class MemoryFiles:
    def __init__(self, files: Mapping[str, bytes], label: str = "in-memory build") -> None:
        self._files = dict(files)
        self.label = label

    def read(self, path: str) -> bytes:
        try:
            return self._files[path]
        except KeyError:
            raise MissingFile(path) from None


class DirectoryFiles:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.label = str(root)

    def read(self, path: str) -> bytes:
        if not path.startswith("/"):
            raise MissingFile(path, "not an absolute URL path")
        target = (self.root / path.lstrip("/")).resolve()
        # A crafted path ("/../x") must not read outside the published folder.
        if not target.is_relative_to(self.root) or not target.is_file():
            raise MissingFile(path)
        return target.read_bytes()


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
        url = self.base_url + path
        request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                body = response.read()
        except urllib.error.HTTPError as error:
            if error.code in (403, 404):  # S3 behind CloudFront answers 403 for a missing key
                raise MissingFile(path, f"HTTP {error.code} from {url}") from None
            raise SourceError(f"{url}: HTTP {error.code}") from None
        except (urllib.error.URLError, OSError) as error:
            raise SourceError(f"{url}: cannot connect ({error})") from None
        with self._lock:
            self._cache[path] = body
        return body


def build_in_memory(site_dir: Path, base_url: str | None = None) -> MemoryFiles:
    """Build `site_dir` for `base_url` with the builder's public entry point, in memory."""
    from content_builder.build import plan

    result = plan(site_dir, base_url)
    return MemoryFiles(
        {artifact.path: artifact.body for artifact in result.artifacts},
        label=f"{site_dir} (built in memory for {result.site.base_url})",
    )
