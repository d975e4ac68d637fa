"""SiteContent: a Pulumi dynamic resource whose provider is the publisher.

Its input is the build manifest (path -> sha256, size, media type, Cache-Control), as
one JSON object in one string (`encode_input`): the Pulumi SDK serializes a string in
one piece, where a map costs futures per value (flat preview time at any site size),
and the CLI decodes a JSON string on both sides of a diff and shows the objects' diff,
so `pulumi preview --diff` still lists, file by file, what a pull request changes
(docs/decisions.md, "Preview at any size"). The provider is serialized with dill and
run by the engine in another process: it lives in this importable module, creates its
boto3 clients inside each method and holds no state.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

# json.dumps' own C escaper for a str (ensure_ascii), used to write the input by hand.
from json.encoder import encode_basestring_ascii as _quote
from pathlib import Path
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, ResourceProvider, UpdateResult
from pulumi.runtime import rpc

from agent_contract import manifest as build_manifest
from infra import publisher

#: Inputs whose change means the content lives somewhere else: publish afresh there.
_LOCATION = ("bucket", "region")


def _is_unknown(value: Any) -> bool:
    return isinstance(value, str) and value == rpc.UNKNOWN


def encode_input(files: build_manifest.Files) -> str:
    """The `files` input: a JSON object, path -> `build_manifest.encode_entry` line, in
    path order, one file per line (so a line-based diff of the state, say of `pulumi
    stack export`, reads file by file too)."""
    return encode_input_and_summary(files)[0]


def encode_input_and_summary(files: build_manifest.Files) -> tuple[str, int, str]:
    """(`encode_input`, file count, `build_manifest.files_digest`) in one pass: the
    program exports the count and the digest of what it registers, without parsing the
    string back (docs/decisions.md, "Preview at any size")."""
    # The digest's text (`<path>\t<line>\n` per file) is made once and is also where the
    # JSON is written from, by three whole-text replacements, when no path or line
    # needs more escaping than `"`; else per file, with json's own C escaper.
    listing = build_manifest.entries_listing(files)
    text = _json_from_listing(listing, len(files))
    if text is None:
        text = _json_per_file(build_manifest.encode_files(files))
    return text, len(files), build_manifest.listing_digest(listing)


#: The bytes json.dumps (ensure_ascii) writes inside a string as they are: printable
#: ASCII but the backslash (DEL is escaped too, `\u007f`). `"` is among them: it is
#: escaped by a replacement, below.
_VERBATIM = bytes(range(0x20, 0x7F)).replace(b"\\", b"")


def _json_from_listing(listing: str, count: int) -> str | None:
    """`_json_per_file` of the same files, from `files_listing`'s text, or None when a
    path or line holds a byte outside `_VERBATIM` (a tab or newline of its own would
    also make the listing's separators ambiguous). Equal, byte for byte, by
    construction and tested (tests/test_infra_preview.py): each item is
    `"<path>": "<line>"` with `"` escaped as `\\"`, joined by `,\n`."""
    if not count:
        return "{}"
    # One C pass over the bytes: what is left after deleting the verbatim bytes must be
    # exactly the separators, a tab and a newline per file, in that order.
    if not listing.isascii() or listing.encode("ascii").translate(None, _VERBATIM) != (
        b"\t\n" * count
    ):
        return None
    body = listing[:-1].replace('"', '\\"').replace("\t", '": "').replace("\n", '",\n"')
    return '{"' + body + '"}'


def _json_per_file(entries: dict[str, str]) -> str:
    """json.dumps(entries, separators=(",\n", ": ")), written with the same C string
    escaper: a third faster at 40,000 files (tests/test_infra_preview.py)."""
    items = [f"{_quote(path)}: {_quote(line)}" for path, line in entries.items()]
    return "{" + ",\n".join(items) + "}"


def input_entries(value: Any) -> dict[str, str]:
    """path -> encoded entry, from the `files` input or output in any form a stack may
    hold: the JSON string (this version), or the map of one string per file that the
    previous version wrote into every stack's state (or a map of manifest entries, the
    one before); None or empty for a resource that has none."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        value = json.loads(value)
        if isinstance(value, dict):
            return value  # written by encode_input: path -> line already
    if not isinstance(value, Mapping):
        raise TypeError(f"SiteContent files: expected a JSON object or a map, got {value!r:.80}")
    return {
        path: entry if isinstance(entry, str) else build_manifest.encode_entry(entry)
        for path, entry in value.items()
    }


def decode_input(value: Any) -> dict[str, build_manifest.ManifestEntry]:
    """The manifest files from the `files` input or output, in any form (input_entries)."""
    return build_manifest.decode_files(input_entries(value))


def input_summary(value: Any) -> tuple[int, str]:
    """(file count, `build_manifest.files_digest`) of the files, whatever form they are
    stored in: the same figures for the same files before and after the input changed
    form. One decode for both stack outputs."""
    entries = input_entries(value)
    return len(entries), build_manifest.files_digest(entries)


def input_digest(value: Any) -> str:
    return input_summary(value)[1]


def _files(props: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return decode_input(props.get("files"))


def _files_changed(old: Any, new: Any) -> bool:
    """Whether publishing `new` over `old` would upload or delete anything: exactly
    `not plan_publish(decode_input(old), decode_input(new)).is_empty` (tested), without
    decoding 40,000 entries twice and planning, which `pulumi preview` runs on every
    SiteContent. The same string is the same files; else the one-line entries are
    compared, and only those that differ are decoded, for their publish signature
    (bytes, media type, Cache-Control)."""
    if isinstance(old, str) and old == new:
        return False
    before, after = input_entries(old), input_entries(new)
    if before.keys() != after.keys():
        return True  # a file to upload or to delete
    signature, decode = build_manifest.entry_signature, build_manifest.decode_entry
    return any(
        line != before[path] and signature(decode(line)) != signature(decode(before[path]))
        for path, line in after.items()
    )


def encode_etags(files: Mapping[str, Any], etags: Mapping[str, str]) -> str:
    """The `etags` output: the ETag of each file, one a line, in path order (the paths are
    the `files` output's: 33 bytes a file, not a second copy of every path)."""
    return "\n".join(etags.get(path, "") for path in sorted(files))


def decode_etags(value: Any, files: Mapping[str, Any]) -> dict[str, str]:
    """path -> ETag from the `etags` output beside `files`; empty for a state written
    before ETags were recorded, or one whose lines do not match its files (then a
    refresh compares sizes only, and the next publish compares with the build)."""
    if not isinstance(value, str) or not value:
        return {}
    lines = value.split("\n")
    paths = sorted(files)
    if len(lines) != len(paths):
        return {}
    return {path: etag for path, etag in zip(paths, lines, strict=True) if etag}


def _publisher(props: dict[str, Any]) -> publisher.Publisher:
    return publisher.Publisher(
        clients=publisher.clients(props.get("region")),
        bucket=props["bucket"],
        distribution_id=props.get("distribution_id"),
        source_dir=Path(props["source_dir"]),
    )


class SiteContentProvider(ResourceProvider):
    # The inputs hold no secrets; keeping the provider readable keeps previews diffable.
    serialize_as_secret_always = False

    def create(self, props: dict[str, Any]) -> CreateResult:
        files = _files(props)
        plan = publisher.plan_publish({}, files)
        resource_id = f"{props['bucket']}-content"
        site = _publisher(props)
        last = site.publish(plan, publisher.caller_reference(resource_id, 1, plan.changed_paths))
        return CreateResult(
            resource_id,
            {
                **props,
                "generation": 1,
                "last_publish": last,
                "etags": encode_etags(files, site.etags),
            },
        )

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        if any(_is_unknown(value) for value in news.values()):
            # In a preview, inputs computed from resources not yet created (a new
            # distribution's domain, hence the manifest) are unknown: say "will change".
            return DiffResult(changes=True)
        replaces = [name for name in _LOCATION if olds.get(name) != news.get(name)]
        changed = (
            bool(replaces)
            or any(olds.get(name) != news.get(name) for name in ("distribution_id",))
            or _files_changed(olds.get("files"), news.get("files"))
        )
        # A new build folder alone (another machine, another checkout) is not a change.
        return DiffResult(changes=changed, replaces=replaces, delete_before_replace=False)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        # The publish also puts back what the bucket lost or altered since (issue 24):
        # with `pulumi up --refresh` `olds` is what read() found, without it what the
        # state believes, and the publish's own listing finds the rest.
        files = _files(news)
        plan = publisher.plan_publish(_files(olds), files)
        generation = int(olds.get("generation") or 1) + 1
        site = _publisher(news)
        last = site.publish(plan, publisher.caller_reference(_id, generation, plan.changed_paths))
        return UpdateResult(
            {
                **news,
                "generation": generation,
                "last_publish": last,
                "etags": encode_etags(files, site.etags),
            }
        )

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """The refresh (`pulumi up --refresh` in deploy.yml): the files as the bucket holds
        them, from one listing. A file deleted outside Pulumi drops out and one whose
        size or ETag changed reads as other bytes, so the engine's diff against the
        program's manifest shows them and update() publishes them again, even when the
        build did not change."""
        site = _publisher(props)
        files = _files(props)
        try:
            observed = site.read_state(files, decode_etags(props.get("etags"), files))
        except publisher.BucketMissing:
            # An empty id tells the engine the resource is gone (refresh drops it).
            return ReadResult("", {})
        return ReadResult(
            id_,
            {
                **props,
                "files": encode_input(observed),
                "etags": encode_etags(observed, site.etags),
            },
        )

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        site = _publisher(props)
        site.delete(sorted(_files(props)))
        site.invalidate(["/*"], publisher.caller_reference(_id, -1, ["/*"]))


class SiteContent(pulumi.dynamic.Resource, module="agent-access", name="SiteContent"):
    """The published files of one build, in one bucket, behind one distribution."""

    files: pulumi.Output[str]  # encode_input(...); a map in state from earlier versions
    last_publish: pulumi.Output[dict[str, Any]]

    def __init__(
        self,
        name: str,
        *,
        bucket: pulumi.Input[str],
        distribution_id: pulumi.Input[str],
        region: pulumi.Input[str],
        source_dir: pulumi.Input[str],
        files: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(
            SiteContentProvider(),
            name,
            {
                "bucket": bucket,
                "distribution_id": distribution_id,
                "region": region,
                "source_dir": source_dir,
                "files": files,
                "generation": None,
                "last_publish": None,
            },
            opts,
        )
