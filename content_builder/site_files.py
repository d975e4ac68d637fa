"""What the builder may read of a site folder: regular files inside it, nothing else.

site_data/ comes from authors and from contributors' pull requests (docs/security.md).
A symbolic link would ship whatever it points at (a file outside the tree, another
folder) in llms.txt, the indexes and the search index; a FIFO would block the build
forever on open(); a device or a socket has no text to publish. So every file the build
reads, and the folders holding them, must be what they look like: the site's own files
and folders are looked at with lstat (no link followed, nothing opened), entries of
content/ and faq/ by their directory entry (no system call), and every read opens with
O_NOFOLLOW | O_NONBLOCK and checks what it opened (a file swapped meanwhile can neither
block nor lead elsewhere). The site folder itself, named by the user, may be a link.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

from content_builder.errors import Problem, SiteDataError

#: A site file larger than this is refused before it is read: an entry's own files must
#: stay under 100,000 characters anyway (budgets.ENTRY_BUDGET), and a file of gigabytes
#: would be read whole before anything could refuse it.
MAX_FILE_BYTES = 1 << 20

_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)  # the last component: a link fails with ELOOP
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO opens at once instead of waiting for a writer
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


def kind(mode: int) -> str:
    """What a file that is not regular is, in words."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _refusal(what: str, expected: str) -> str:
    return (
        f"is {what}, not {expected}: the build reads only regular files and folders inside "
        "the site folder (docs/security.md)"
    )


def irregular(
    root: Path,
    files: tuple[str, ...],
    folders: tuple[str, ...],
    display_path: Callable[[Path], str],
) -> list[Problem]:
    """The site's own files (site.yaml, the lock, ...) and folders (content/, faq/) that
    exist but are not a regular file or a real folder: a link, a FIFO, a device. Missing
    ones are the loader's to report (some are optional)."""
    found: list[Problem] = []
    for names, expected, is_expected in (
        (files, "a regular file", stat.S_ISREG),
        (folders, "a folder", stat.S_ISDIR),
    ):
        for name in names:
            try:
                mode = os.lstat(root / name).st_mode
            except OSError:
                continue
            if not is_expected(mode):
                found.append(
                    Problem(display_path(root / name), None, _refusal(kind(mode), expected))
                )
    return found


#: What a Markdown page's file name ends with (Docusaurus writes .mdx as well).
MARKDOWN_SUFFIXES = (".md", ".mdx")


def has_markdown(folder: Path) -> bool:
    """Whether `folder` (a site's content/) holds a Markdown page."""
    return folder.is_dir() and any(name.endswith(MARKDOWN_SUFFIXES) for name in os.listdir(folder))


def yaml_names(folder: Path, display: str, problems: list[Problem]) -> list[str]:
    """The names of the folder's .yaml files, sorted, that are regular files; any other
    `.yaml` or `.yml` entry (a link, a FIFO, a folder) is a problem. Other names are not
    read, so not looked at. The type comes from the directory entry (no system call on
    Linux): 20,000 entries are listed in ~8 ms."""
    files: list[str] = []
    with os.scandir(folder) as found:
        entries = sorted(found, key=lambda entry: entry.name)
    for entry in entries:
        name = entry.name
        extension = os.path.splitext(name)[1]
        if extension not in (".yaml", ".yml"):
            continue
        if not entry.is_file(follow_symlinks=False):
            mode = entry.stat(follow_symlinks=False).st_mode
            where = name if display == os.curdir else os.path.join(display, name)
            problems.append(Problem(where, None, _refusal(kind(mode), "a regular file")))
        elif extension == ".yml":
            where = name if display == os.curdir else os.path.join(display, name)
            problems.append(Problem(where, None, "use the .yaml extension"))
        elif name.endswith(".yaml"):  # as glob("*.yaml")
            files.append(name)
    return files


def read_site_file(path: Path | str, display: str) -> bytes:
    """The bytes of a regular file of the site, refusing anything else without blocking
    on it or following a link, and a file over MAX_FILE_BYTES without reading it."""
    try:
        descriptor = os.open(path, _OPEN_FLAGS)
    except OSError as error:
        if error.errno == errno.ELOOP:  # O_NOFOLLOW's answer for a link
            raise SiteDataError.single(
                display, None, _refusal("a symbolic link", "a regular file")
            ) from error
        raise SiteDataError.single(display, None, f"cannot read: {error.strerror}") from error
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise SiteDataError.single(
                display, None, _refusal(kind(status.st_mode), "a regular file")
            )
        if status.st_size > MAX_FILE_BYTES:
            raise too_large(display, status.st_size)
        chunks = []
        left = MAX_FILE_BYTES + 1  # a file that grew since fstat is still cut off
        while left > 0:
            chunk = os.read(descriptor, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as error:
        raise SiteDataError.single(display, None, f"cannot read: {error.strerror}") from error
    finally:
        os.close(descriptor)
    data = b"".join(chunks)
    if len(data) > MAX_FILE_BYTES:
        raise too_large(display, len(data))
    return data


def too_large(display: str, size: int) -> SiteDataError:
    return SiteDataError.single(
        display,
        None,
        f"is {size:,} bytes, over the limit of {MAX_FILE_BYTES:,} for one site file "
        "(an entry's Markdown mirror must stay under 100,000 characters); split it",
    )
