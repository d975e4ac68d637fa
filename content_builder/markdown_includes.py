"""Files a page includes by name with mdx_include / markdown-include (`{! file !}`) and
markdown-include-variants (`{* file hl[2] *}`, FastAPI's), when mkdocs.yml lists them.

FastAPI keeps its examples beside the docs, not in them (docs/en/docs/*.md include
`../../docs_src/x.py`): the names are relative to the extension's `base_path` (`.` by
default), itself relative to the folder mkdocs runs in, mkdocs.yml's (FastAPI's
scripts/docs.py runs it there). A file is included when it lies inside what the owner
made the tree's: mkdocs.yml's folder, or site.yaml's `include_root` (a folder holding
the tree, such as the repository's root); when it is a regular UTF-8 file (no link
followed, none hidden: `.git/config`, `.env` are refused as snippets are, an error);
and within the page's 1 MiB include bound (markdown_page.MAX_INCLUDED_CHARS). Any other
include is a warning naming the page and line, and its line is published as written:
nothing is dropped silently, nothing read outside those folders. Sources: mdx_include's
and markdown-include's READMEs (`base_path`, "relative to the location from which
Markdown is being called"); markdown-include-variants' preprocessor (a ```python fence
around `{!file!}`).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from content_builder.errors import SiteDataError
from content_builder.site_files import read_site_file
from content_builder.text_rules import FORBIDDEN

#: Ends the warning of an include outside the folders it may read (`init` counts them).
OUTSIDE_HINT = (
    "site.yaml's include_root names a folder holding the docs tree, such as the "
    "repository's root, whose files may be included"
)
#: mkdocs.yml `markdown_extensions` names of the two syntaxes.
_INCLUDE_EXTENSIONS = ("mdx_include", "markdown_include.include")
_VARIANTS_EXTENSION = "markdown_include_variants"
#: `{! path !}`, `{!> path !}`, `{!+ path | utf-8 !}` alone on its line; its parts are
#: split in Python (one pattern with a lazy name before blanks took quadratic time).
_INCLUDE_LINE = re.compile(r"^([ \t]*)\{!(.*)!\}[ \t]*$")
#: `{* path hl[2] ln[1:5] *}` alone on its line (markdown-include-variants' own rule).
_VARIANTS_LINE = re.compile(r"^\{\*(.*)\*\}[ \t]*$")


@dataclass(frozen=True)
class Includes:
    base: str  # the folder names are relative to
    include: bool  # mdx_include or markdown-include (`{! name !}`) is listed
    variants: bool  # markdown-include-variants (`{* name *}`) is listed
    roots: tuple[str, ...]  # folders files may be included from (absolute, no link)


def configured(settings: dict[str, Any], folder: Path, include_root: Path | None) -> Includes:
    """What mkdocs.yml (`settings`, in `folder`) makes of include lines."""
    extensions = settings.get("markdown_extensions")
    # A list of names and {name: options}, or one mapping of them (FastAPI's).
    found: dict[str, Any] = dict(extensions) if isinstance(extensions, dict) else {}
    for entry in extensions if isinstance(extensions, list) else ():
        if isinstance(entry, str):
            found[entry] = None
        elif isinstance(entry, dict):
            found.update(entry)
    named = [name for name in _INCLUDE_EXTENSIONS if name in found]
    options = found[named[0]] if named and isinstance(found[named[0]], dict) else {}
    path = options.get("base_path", ".")
    base = os.path.normpath(folder / (path if isinstance(path, str) else "."))
    roots = (str(folder), *([str(include_root)] if include_root is not None else []))
    return Includes(base, bool(named), _VARIANTS_EXTENSION in found, roots)


def include_name(line: str) -> tuple[str, str] | None:
    """(indent, file name) of an mdx_include / markdown-include line."""
    match = _INCLUDE_LINE.match(line)
    if match is None:
        return None
    name = match.group(2).lstrip("+->").split("|", 1)[0].strip()
    return (match.group(1), name) if name else None


def variants_name(line: str) -> str | None:
    """The file a markdown-include-variants line names (its `hl[...]`, `ln[...]` dropped)."""
    match = _VARIANTS_LINE.match(line)
    parts = match.group(1).split() if match else []
    return parts[0] if parts else None


def read_include(includes: Includes, name: str) -> tuple[str | None, str | None, str | None]:
    """(key, text, None) of an included file; (key, None, warning) when it is not
    included (its line kept as written); (None, None, error) for a hidden file."""
    candidate = os.path.normpath(os.path.join(includes.base, os.path.expanduser(name)))
    root = next((r for r in includes.roots if candidate.startswith(os.path.join(r, ""))), None)
    real = os.path.realpath(candidate)
    if root is None or not real.startswith(real_folder(root)):
        where = " or ".join(includes.roots)
        message = f"include {name!r} is outside {where}: kept as written ({OUTSIDE_HINT})"
        return f"kept\0{name}", None, message
    hidden = hidden_part(candidate, root) or hidden_part(real, real_folder(root))
    if hidden:
        # As snippets: a checkout's .git/config holds the CI's token, .env its secrets.
        return None, None, (f"include {name!r} is inside {hidden!r}, a hidden file or folder: "
                            "those (.git, .env, ...) are never included")  # fmt: skip
    if not os.path.lexists(candidate):
        return f"kept\0{name}", None, f"include {name!r} not found: kept as written"
    try:
        data = read_site_file(candidate, candidate)
        text = data.decode("utf-8")
    except SiteDataError as error:
        reason = error.problems[0].message
        return f"kept\0{name}", None, f"include {name!r}: {reason}; kept as written"
    except UnicodeDecodeError:
        return f"kept\0{name}", None, f"include {name!r} is not UTF-8 text: kept as written"
    if FORBIDDEN.search(text) is not None:
        return f"kept\0{name}", None, (
            f"include {name!r} holds control characters, bidirectional overrides or tag "
            "characters: kept as written"
        )  # fmt: skip
    return candidate + "\0" + hashlib.sha256(data).hexdigest(), text, None


def hidden_part(path: str, folder: str) -> str | None:
    """The first part of `path` below `folder` whose name starts with a dot, if any."""
    return next((part for part in os.path.relpath(path, folder).split(os.sep)
                 if part.startswith(".") and part not in (".", "..")), None)  # fmt: skip


@lru_cache(maxsize=16)
def real_folder(folder: str) -> str:
    return os.path.join(os.path.realpath(folder), "")
