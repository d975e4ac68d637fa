"""The pull-request comment for `pulumi preview --json`: short at any site size.

`pulumi preview --diff` prints SiteContent's `files` input key by key, unchanged paths
too (about 9 MB at 40,000 files), far over GitHub's 65,536-character comment limit. This
module reads the preview digest that `pulumi preview --json` prints instead (one JSON
object: `steps`, `changeSummary`, `diagnostics`; pulumi/pulumi
pkg/backend/display/json.go, ShowPreviewDigest) and writes a Markdown comment: the
resource counts, one line per resource that changes, and for SiteContent only the files
an update would add, change or remove, listed under a character budget with "and N more"
(docs/decisions.md, "The pull-request preview comment at any size").

Pure core (`render_comment`), thin shell (`main`: read a file, write the body and the
JSON payload `gh api --input` posts). Standard library and the contract only: it runs in
CI beside the program, and its inputs come from the CLI, not from Pulumi's SDK.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_contract import manifest as build_manifest

#: The first line of every comment this writes: the workflow finds its own comment by
#: it and edits that one instead of adding a comment per push.
MARKER = "<!-- agent-access: pulumi preview comment -->"
#: GitHub refuses a comment body over 65,536 characters ("Body is too long (maximum is
#: 65536 characters)", pulumi/actions#482); this stays well below it, room for any
#: difference in how a character is counted.
DEFAULT_BUDGET = 60_000
#: The type token the Python SDK gives `SiteContent` (dynamic.py: `pulumi-python:` +
#: `dynamic/<module>:<name>`); tests check it against what the program registers.
SITE_CONTENT_TYPE = "pulumi-python:dynamic/agent-access:SiteContent"
#: What `stack.SerializeResource` writes for a value not known until the update runs
#: (pulumi/pulumi pkg/resource/stack/deployment.go, computedValuePlaceholder).
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
#: The operations a preview digest can hold for a resource that does not change.
_UNCHANGED_OPS = frozenset({"same", "read", "refresh"})
_SYMBOL = {"create": "+", "update": "~", "delete": "-", "replace": "+-", "import": "="}
#: A change to more files than this gets a per-folder count table above the file list.
_FOLDERS_FROM = 50
_FOLDERS = 30
#: Each input value shown old -> new is cut to this (a policy document can be long).
_VALUE_CHARS = 300
#: Diagnostics are the CLI's words (errors from providers, warnings); each is cut to this.
_DIAGNOSTIC_CHARS = 2_000


@dataclass(frozen=True)
class FileChanges:
    """What a SiteContent step publishes: path -> encoded entry (`encode_entry` line)."""

    added: dict[str, str] = field(default_factory=dict)
    changed: dict[str, tuple[str, str]] = field(default_factory=dict)
    removed: dict[str, str] = field(default_factory=dict)
    old_count: int = 0
    new_count: int = 0

    @property
    def total(self) -> int:
        return len(self.added) + len(self.changed) + len(self.removed)


class UnknownFiles(Exception):
    """The `files` input is not known until the update runs."""


def files_of(value: Any) -> dict[str, str]:
    """path -> `encode_entry` line from the `files` input in any form a stack holds:
    the JSON string (this version), a map of one line per file, or a map of manifest
    entries (earlier versions; see infra/site_content.py `input_entries`)."""
    if value is None or value == "":
        return {}
    if value == UNKNOWN:
        raise UnknownFiles
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, Mapping):
        raise ValueError(f"SiteContent files: expected a JSON object or a map, got {value!r:.80}")
    return {
        str(path): entry if isinstance(entry, str) else build_manifest.encode_entry(entry)
        for path, entry in value.items()
    }


def file_changes(old_value: Any, new_value: Any) -> FileChanges:
    old, new = files_of(old_value), files_of(new_value)
    return FileChanges(
        added={path: line for path, line in new.items() if path not in old},
        changed={
            path: (old[path], line)
            for path, line in new.items()
            if path in old and old[path] != line
        },
        removed={path: line for path, line in old.items() if path not in new},
        old_count=len(old),
        new_count=len(new),
    )


def _inputs(state: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (state or {}).get("inputs") or {}


def _name_and_type(step: Mapping[str, Any]) -> tuple[str, str]:
    # urn:pulumi:<stack>::<project>::<qualified type>::<name>; a name may hold "::".
    parts = str(step.get("urn", "")).split("::", 3)
    if len(parts) == 4:
        return parts[3], parts[2].rsplit("$", 1)[-1]
    return str(step.get("urn", "?")), "?"


def _is_root_stack(step: Mapping[str, Any]) -> bool:
    return _name_and_type(step)[1] == "pulumi:pulumi:Stack"


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _entry_note(line: str) -> str:
    try:
        entry = build_manifest.decode_entry(line)
    except ValueError:
        return ""
    return f"{entry['size']:,} B, {entry['media_type']}"


def _change_note(old_line: str, new_line: str) -> str:
    try:
        old, new = build_manifest.decode_entry(old_line), build_manifest.decode_entry(new_line)
    except ValueError:
        return "changed"
    notes = []
    if old["size"] != new["size"]:
        notes.append(f"{old['size']:,} -> {new['size']:,} B")
    elif old["sha256"] != new["sha256"]:
        notes.append(f"{new['size']:,} B, new bytes")
    for key, label in (("media_type", "type"), ("cache_control", "Cache-Control")):
        if old[key] != new[key]:
            notes.append(f"{label} {old[key]} -> {new[key]}")
    return ", ".join(notes) or "changed"


def _fence(lines: Sequence[str]) -> str:
    """A code fence longer than any run of backticks in the lines (a path may hold some)."""
    ticks = 3
    for line in lines:
        run = 0
        for char in line:
            run = run + 1 if char == "`" else 0
            ticks = max(ticks, run + 1)
    return "`" * ticks


def _file_lines(changes: FileChanges, budget: int) -> tuple[list[str], int]:
    """Diff-style lines, removed first, then changed, then added (what a reviewer most
    needs to see first), each group in path order; taken in turn one line from each
    group until `budget` characters are used, so a large group cannot hide a small one.
    Returns (lines in display order, how many were left out)."""
    groups = [
        [f"- {path}" for path in sorted(changes.removed)],
        [f"~ {path}  ({_change_note(*changes.changed[path])})" for path in sorted(changes.changed)],
        [f"+ {path}  ({_entry_note(changes.added[path])})" for path in sorted(changes.added)],
    ]
    taken = [0, 0, 0]
    used = 0
    progressing = True
    while progressing:
        progressing = False
        for index, group in enumerate(groups):
            if taken[index] < len(group):
                cost = len(group[taken[index]]) + 1
                if used + cost > budget:
                    continue
                used += cost
                taken[index] += 1
                progressing = True
    lines = [line for index, group in enumerate(groups) for line in group[: taken[index]]]
    return lines, changes.total - len(lines)


def _site_content_section(step: Mapping[str, Any], name: str, budget: int) -> list[str]:
    try:
        changes = file_changes(
            _inputs(step.get("oldState")).get("files"), _inputs(step.get("newState")).get("files")
        )
    except UnknownFiles:
        return [f"**{name}**: the published files are known only when the update runs."]
    except (ValueError, TypeError) as error:
        return [f"**{name}**: the `files` input could not be read ({error!s:.200})."]
    head = (
        f"**{name}** (published files): {changes.old_count:,} -> {changes.new_count:,} files; "
        f"{len(changes.added):,} added, {len(changes.changed):,} changed, "
        f"{len(changes.removed):,} removed."
    )
    if not changes.total:
        return [head + " No file changes (the update is in its other inputs)."]
    folders = _folder_lines(changes) if changes.total > _FOLDERS_FROM else []
    lines, left_out = _file_lines(changes, budget - sum(len(line) + 1 for line in folders))
    fence = _fence(lines)
    section = [head, *folders, "", "<details open><summary>Files</summary>", "", fence, *lines]
    section.append(fence)
    if left_out:
        section += ["", f"... and {left_out:,} more (`make preview` locally lists every file)."]
    return [*section, "", "</details>"]


def _folder_lines(changes: FileChanges) -> list[str]:
    """Counts per folder: the shape of a large change at a glance (a first publish, a
    template edit that touches every document)."""
    counts: dict[str, list[int]] = {}
    for index, paths in enumerate((changes.added, changes.changed, changes.removed)):
        for path in paths:
            counts.setdefault(path.rsplit("/", 1)[0] + "/", [0, 0, 0])[index] += 1
    rows = sorted(counts.items(), key=lambda item: (-sum(item[1]), item[0]))
    lines = ["", "| folder | added | changed | removed |", "|---|--:|--:|--:|"]
    lines += [f"| `{folder}` | {a:,} | {c:,} | {r:,} |" for folder, (a, c, r) in rows[:_FOLDERS]]
    if len(rows) > _FOLDERS:
        lines.append(f"| ... {len(rows) - _FOLDERS:,} more folders | | | |")
    return lines


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return text if len(text) <= _VALUE_CHARS else text[:_VALUE_CHARS] + " ..."


def _input_changes(changing: Sequence[Mapping[str, Any]], budget: int) -> list[str]:
    """Old -> new value of each input that differs, for updates and replacements (a
    create's inputs are all new; SiteContent's `files` has its own section). Values as
    the CLI printed them: secrets are "[secret]" already (json.go, stateForJSONOutput)."""
    lines: list[str] = []
    left_out = 0
    for step in changing:
        if step.get("op") not in ("update", "replace"):
            continue
        name, type_ = _name_and_type(step)
        olds, news = _inputs(step.get("oldState")), _inputs(step.get("newState"))
        keys = [
            k for k in step.get("diffReasons") or []
            if not (k == "files" and type_ == SITE_CONTENT_TYPE)
        ]  # fmt: skip
        block = [f"~ {name}"] + [
            f"    {key}: {_short(olds.get(key))} -> {_short(news.get(key))}" for key in keys
        ]
        if len(block) == 1:
            continue
        if sum(len(line) + 1 for line in [*lines, *block]) > budget:
            left_out += 1
            continue
        lines += block
    if not lines:
        return []
    fence = _fence(lines)
    section = ["", "<details><summary>Inputs that differ, old -> new</summary>", ""]
    section += [fence, *lines, fence]
    if left_out:
        section += ["", f"... and {left_out:,} more resources (see `make preview`)."]
    return [*section, "", "</details>"]


def _summary_line(digest: Mapping[str, Any]) -> str:
    summary: Mapping[str, int] = digest.get("changeSummary") or {}
    parts = [
        f"{count:,} to {op}" for op, count in summary.items() if op not in _UNCHANGED_OPS and count
    ]
    unchanged = sum(count for op, count in summary.items() if op in _UNCHANGED_OPS)
    if not parts:
        return f"**No changes.** {_count(unchanged, 'resource')} unchanged."
    return f"**Resources:** {', '.join(parts)}; {unchanged:,} unchanged."


def _diagnostics(digest: Mapping[str, Any], budget: int) -> list[str]:
    wanted = [
        d for d in digest.get("diagnostics") or []
        if d.get("severity") in ("error", "warning")
    ]  # fmt: skip
    if not wanted:
        return []
    lines = ["", f"**Diagnostics** ({len(wanted):,}):", ""]
    used = 0
    for shown, diagnostic in enumerate(wanted):
        text = str(diagnostic.get("message", "")).strip()
        if len(text) > _DIAGNOSTIC_CHARS:
            text = text[:_DIAGNOSTIC_CHARS] + " ..."
        block = [
            f"- {diagnostic['severity']}:",
            "",
            *(f"      {line}" for line in text.splitlines()),
        ]
        cost = sum(len(line) + 1 for line in block)
        if used + cost > budget:
            lines.append(f"- ... and {len(wanted) - shown:,} more (see the run log).")
            break
        used += cost
        lines += block
    return lines


def render_comment(
    digest: Mapping[str, Any] | None,
    *,
    stack: str,
    succeeded: bool,
    run_url: str = "",
    budget: int = DEFAULT_BUDGET,
) -> str:
    """The comment body for one preview digest (None: the CLI printed none), never over
    `budget` characters."""
    title = f"#### `pulumi preview` on stack `{stack}`" + ("" if succeeded else ": failed")
    footer = ["", f"[Run log]({run_url})" if run_url else ""]
    body = [MARKER, title, ""]
    if digest is None:
        body.append("The preview printed no JSON digest; the run log says why.")
        return _fit("\n".join([*body, *footer]), budget)
    body.append(_summary_line(digest))
    steps = [s for s in digest.get("steps") or [] if not _is_root_stack(s)]
    changing = [s for s in steps if s.get("op") not in _UNCHANGED_OPS]
    if changing:
        body += ["", "| | resource | type | inputs that differ |", "|---|---|---|---|"]
        for step in changing[:100]:
            name, type_ = _name_and_type(step)
            reasons = ", ".join(f"`{r}`" for r in (step.get("diffReasons") or [])[:20])
            op = str(step.get("op"))
            body.append(f"| {_SYMBOL.get(op, op)} {op} | `{name}` | `{type_}` | {reasons} |")
        if len(changing) > 100:
            body.append(f"\n... and {len(changing) - 100:,} more resources.")
    # Whatever the lines above left: a quarter for input values, a quarter of the rest
    # for diagnostics, the rest for the files.
    remaining = budget - len("\n".join([*body, *footer])) - 500
    values = _input_changes(changing, remaining // 4)
    body += values
    remaining -= sum(len(line) + 1 for line in values)
    diagnostics = _diagnostics(digest, remaining // 4)
    remaining -= sum(len(line) + 1 for line in diagnostics)
    contents = [
        (s, _name_and_type(s)[0]) for s in changing if _name_and_type(s)[1] == SITE_CONTENT_TYPE
    ]
    for step, name in contents:
        body += ["", *_site_content_section(step, name, max(remaining // len(contents), 0))]
    return _fit("\n".join([*body, *diagnostics, *footer]) + "\n", budget)


def _fit(text: str, budget: int) -> str:
    # A last guard, never reached by the budgets above: a comment GitHub refuses shows nothing.
    if comment_length(text) <= budget:
        return text
    return text[: budget - 60] + "\n\n... (cut to fit a pull-request comment)\n"


def comment_length(text: str) -> int:
    """Characters as GitHub may count them: code points, or UTF-16 units if more."""
    return max(len(text), len(text.encode("utf-16-le")) // 2)


def load_digest(text: str) -> dict[str, Any] | None:
    """The digest from what `pulumi preview --json` printed; None if there is none (the
    CLI failed before printing it)."""
    start = text.find("{")
    if start < 0:
        return None
    try:
        value = json.loads(text[start:])
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("preview", type=Path, help="what `pulumi preview --json` printed")
    parser.add_argument("--stack", required=True)
    parser.add_argument("--outcome", default="success", help="the preview step's outcome")
    parser.add_argument("--run-url", default="")
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET)
    parser.add_argument("--body", type=Path, required=True, help="write the Markdown here")
    parser.add_argument("--payload", type=Path, help='write {"body": ...} here, for gh api')
    args = parser.parse_args(None if argv is None else list(argv))
    text = args.preview.read_text(encoding="utf-8") if args.preview.exists() else ""
    body = render_comment(
        load_digest(text),
        stack=args.stack,
        succeeded=args.outcome == "success",
        run_url=args.run_url,
        budget=args.budget,
    )
    args.body.write_text(body, encoding="utf-8")
    if args.payload:
        args.payload.write_text(json.dumps({"body": body}), encoding="utf-8")
    print(f"comment: {comment_length(body):,} characters", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
