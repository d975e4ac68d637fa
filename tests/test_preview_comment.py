"""The pull-request preview comment: short at any site size, naming what changes.

The digests here follow what `pulumi preview --json` prints (pulumi/pulumi
pkg/display/json.go PreviewDigest/PreviewStep, pkg/backend/display/json.go
ShowPreviewDigest): `steps` (not `same` ones, bar the root stack), each with `op`, `urn`,
`oldState`/`newState` (apitype.ResourceV3: `type`, `inputs`, `outputs`), `diffReasons`,
`detailedDiff`; `changeSummary` (op -> count); `diagnostics`. The `files` values are
written by the program's own `encode_input`.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_contract import manifest as build_manifest
from infra import preview_comment
from infra.preview_comment import (
    DEFAULT_BUDGET,
    MARKER,
    SITE_CONTENT_TYPE,
    UNKNOWN,
    comment_length,
    file_changes,
    load_digest,
    render_comment,
)
from infra.site_content import decode_input, encode_input
from tests.conftest import REPO

GITHUB_LIMIT = 65_536  # "Body is too long (maximum is 65536 characters)"
PREFIX = "urn:pulumi:dev::agent-access::"
CONTENT_URN = f"{PREFIX}{SITE_CONTENT_TYPE}::agent-access-files"
STACK_STEP = {
    "op": "same",
    "urn": f"{PREFIX}pulumi:pulumi:Stack::agent-access-dev",
    "detailedDiff": None,
}
MEDIA = {"json": "application/json", "txt": "text/plain; charset=utf-8"}


def manifest_entry(path: str, version: str = "1") -> dict[str, Any]:
    content = f"{path} v{version}".encode()
    return build_manifest.entry(
        hashlib.sha256(content).hexdigest(),
        len(content) * 37,
        MEDIA[path.rsplit(".", 1)[-1]],
        "public, max-age=300",
    )


def grown_site(documents: int) -> dict[str, dict[str, Any]]:
    """`documents` content documents and as many FAQ entries, two files each, plus the
    aggregates: the shape of a benchmarks/sitegen.py site (40,176 files at 10,000)."""
    paths = [f"/api/v1/content/doc-{i:05d}.json" for i in range(documents)]
    paths += [f"/api/v1/content/doc-{i:05d}.txt" for i in range(documents)]
    paths += [f"/api/v1/faq/faq-{i:05d}.json" for i in range(documents)]
    paths += [f"/api/v1/faq/faq-{i:05d}.txt" for i in range(documents)]
    paths += ["/api/v1/index.json", "/api/v1/search-index.json", "/llms.txt", "/llms-full.txt"]
    return {path: manifest_entry(path) for path in paths}


def content_step(op: str, old: Any, new: Any, **inputs: Any) -> dict[str, Any]:
    base = {"bucket": "agent-access-bucket-0a1b2c3", "region": "eu-west-1", **inputs}
    step: dict[str, Any] = {"op": op, "urn": CONTENT_URN, "detailedDiff": None}
    if old is not None:
        step["oldState"] = {
            "urn": CONTENT_URN, "custom": True, "type": SITE_CONTENT_TYPE,
            "inputs": {**base, "files": old}, "outputs": {**base, "files": old},
        }  # fmt: skip
    if new is not None:
        step["newState"] = {
            "urn": CONTENT_URN, "custom": True, "type": SITE_CONTENT_TYPE,
            "inputs": {**base, "files": new},
        }  # fmt: skip
    # No diffReasons: a Python dynamic provider's Diff sends no changed keys (pulumi/pulumi
    # sdk/python/lib/pulumi/dynamic/__main__.py), and the engine fills them in only when
    # the provider says DiffUnknown (pkg/resource/deploy/step_generator.go:2996-3005).
    return step


def digest(*steps: dict[str, Any], same: int = 14, **summary: int) -> dict[str, Any]:
    return {
        "config": {"aws:region": "eu-west-1", "agent-access:mcpOriginSecret": "[secret]"},
        "steps": [STACK_STEP, *steps],
        "changeSummary": {"same": same, **summary},
    }


def render(value: dict[str, Any] | None, **options: Any) -> str:
    body = render_comment(value, stack="dev", succeeded=True, **options)
    assert comment_length(body) <= options.get("budget", DEFAULT_BUDGET) < GITHUB_LIMIT
    return body


def test_forty_thousand_files_and_three_changes_give_a_short_comment_naming_them() -> None:
    old = grown_site(10_000)
    assert len(old) == 40_004
    new = dict(old)
    new["/api/v1/faq/faq-00042.json"] = manifest_entry("/api/v1/faq/faq-00042.json", "2")
    new["/api/v1/content/doc-10000.json"] = manifest_entry("/api/v1/content/doc-10000.json")
    del new["/api/v1/content/doc-00007.txt"]
    old_input, new_input = encode_input(old), encode_input(new)
    assert len(old_input) > 4_000_000, "what --diff prints key by key, unchanged paths too"

    body = render(digest(content_step("update", old_input, new_input), update=1))

    assert body.startswith(MARKER + "\n")
    assert "**Resources:** 1 to update; 14 unchanged." in body
    assert "40,004 -> 40,004 files; 1 added, 1 changed, 1 removed." in body
    lines = body.splitlines()
    assert "- /api/v1/content/doc-00007.txt" in lines
    (changed,) = [line for line in lines if line.startswith("~ /api/v1/faq/faq-00042.json")]
    assert "new bytes" in changed or "->" in changed
    (added,) = [line for line in lines if line.startswith("+ /api/v1/content/doc-10000.json")]
    assert "application/json" in added
    assert "/api/v1/faq/faq-00041.json" not in body, "unchanged files are not listed"
    assert "more (`make preview`" not in body, "nothing left out"
    assert len(body) < 3_000


def test_no_change_says_so_and_lists_nothing() -> None:
    body = render(digest(same=15))
    assert "**No changes.** 15 resources unchanged." in body
    assert "```" not in body and "| resource |" not in body


def test_a_removed_file_is_named() -> None:
    old = grown_site(3)
    new = {p: e for p, e in old.items() if p != "/api/v1/faq/faq-00001.txt"}
    body = render(digest(content_step("update", encode_input(old), encode_input(new)), update=1))
    assert "0 added, 0 changed, 1 removed." in body
    assert [line for line in body.splitlines() if line.startswith(("- /", "+ /", "~ /"))] == [
        "- /api/v1/faq/faq-00001.txt"
    ]


def test_a_change_outside_site_content_is_a_table_row_and_no_file_list() -> None:
    urn = f"{PREFIX}aws:cloudfront/distribution:Distribution::agent-access-cdn"
    step = {
        "op": "update", "urn": urn, "diffReasons": ["defaultCacheBehavior", "priceClass"],
        "oldState": {"type": "aws:cloudfront/distribution:Distribution",
                     "inputs": {"priceClass": "PriceClass_100"}},
        "newState": {"type": "aws:cloudfront/distribution:Distribution",
                     "inputs": {"priceClass": "PriceClass_All"}},
        "detailedDiff": None,
    }  # fmt: skip
    body = render(digest(step, update=1))
    assert (
        "| ~ update | `agent-access-cdn` | `aws:cloudfront/distribution:Distribution` "
        "| `defaultCacheBehavior`, `priceClass` |" in body.splitlines()
    )
    assert "published files" not in body
    lines = body.splitlines()
    assert '    priceClass: "PriceClass_100" -> "PriceClass_All"' in lines
    assert "    defaultCacheBehavior: null -> null" in lines  # not in the fixture's inputs


def test_long_input_values_are_cut_and_secrets_stay_masked() -> None:
    urn = f"{PREFIX}aws:iam/policy:Policy::deploy"
    step = {
        "op": "update", "urn": urn, "diffReasons": ["policy", "tags"],
        "oldState": {"inputs": {"policy": "p" * 5_000, "tags": {"t": "1"}}},
        "newState": {"inputs": {"policy": "q" * 5_000, "tags": "[secret]"}},
    }  # fmt: skip
    body = render(digest(step, update=1))
    (policy,) = [line for line in body.splitlines() if line.startswith("    policy: ")]
    assert len(policy) < 700 and policy.count(" ...") == 2
    assert '    tags: {"t":"1"} -> "[secret]"' in body.splitlines()


def test_config_and_unchanged_values_stay_out_of_the_comment() -> None:
    old = grown_site(2)
    new = {**old, "/llms.txt": manifest_entry("/llms.txt", "2")}
    step = content_step("update", encode_input(old), encode_input(new), distribution_id="[secret]")
    body = render(digest(step, update=1))
    assert "[secret]" not in body and "agent-access-bucket-0a1b2c3" not in body
    assert "eu-west-1" not in body and old["/llms.txt"]["sha256"] not in body


def test_a_first_publish_of_a_grown_site_is_cut_with_and_n_more() -> None:
    files = encode_input(grown_site(10_000))
    body = render(digest(content_step("create", None, files), create=1, same=0))
    assert "0 -> 40,004 files; 40,004 added" in body
    listed = [line for line in body.splitlines() if line.startswith("+ /")]
    assert 100 < len(listed) < 40_004
    assert f"... and {40_004 - len(listed):,} more" in body
    assert comment_length(body) > DEFAULT_BUDGET * 0.8, "the budget is used, not wasted"


def test_a_large_group_cannot_hide_a_small_one() -> None:
    old = grown_site(5_000)
    new = {p: manifest_entry(p, "2") for p in old if p.endswith(".txt")}  # .json removed
    new.update({f"/api/v1/new/n-{i:05d}.json": manifest_entry("x.json") for i in range(9_000)})
    body = render(
        digest(content_step("update", encode_input(old), encode_input(new)), update=1),
        budget=20_000,
    )
    lines = body.splitlines()
    for marker in ("- /", "~ /", "+ /"):
        assert sum(line.startswith(marker) for line in lines) > 20, marker
    assert "more (`make preview` locally lists every file)" in body


def test_state_in_the_previous_map_form_diffs_against_the_string() -> None:
    old = grown_site(3)
    new = {**old, "/api/v1/index.json": manifest_entry("/api/v1/index.json", "2")}
    old_map = {p: build_manifest.encode_entry(e) for p, e in old.items()}
    for old_form in (old_map, dict(old)):  # one line per file; manifest entries before that
        changes = file_changes(old_form, encode_input(new))
        assert (changes.added, changes.removed) == ({}, {})
        assert list(changes.changed) == ["/api/v1/index.json"]


def test_files_known_only_at_update_time_are_said_to_be() -> None:
    body = render(digest(content_step("update", encode_input(grown_site(1)), UNKNOWN), update=1))
    assert "known only when the update runs" in body


def test_a_failed_preview_shows_its_errors_within_the_budget() -> None:
    failed = digest(same=0)
    failed["diagnostics"] = [
        {"message": "debug chatter", "severity": "info"},
        {"urn": CONTENT_URN, "message": "error: AccessDenied on s3:ListBucket\n" + "x" * 90_000,
         "severity": "error"},
        *({"message": f"warning {i}: " + "w" * 3_000, "severity": "warning"} for i in range(40)),
    ]  # fmt: skip
    body = render_comment(failed, stack="dev", succeeded=False, run_url="https://run/1")
    assert comment_length(body) <= DEFAULT_BUDGET
    assert "on stack `dev`: failed" in body and "AccessDenied on s3:ListBucket" in body
    assert "debug chatter" not in body
    assert "more (see the run log)" in body and "[Run log](https://run/1)" in body


def test_no_digest_at_all_still_gives_a_comment() -> None:
    assert load_digest("") is None and load_digest("panic: something\n") is None
    body = render_comment(None, stack="dev", succeeded=False)
    assert body.startswith(MARKER) and "printed no JSON digest" in body


def test_a_path_with_backticks_cannot_close_the_code_block() -> None:
    old = grown_site(1)
    new = {**old, "/api/v1/content/a````b.json": manifest_entry("/x.json")}
    body = render(digest(content_step("update", encode_input(old), encode_input(new)), update=1))
    fence = next(line for line in body.splitlines() if set(line) == {"`"})
    assert len(fence) == 5


def test_the_command_line_writes_the_body_and_the_gh_payload(tmp_path: Path) -> None:
    old = grown_site(2)
    new = {**old, "/llms.txt": manifest_entry("/llms.txt", "2")}
    printed = tmp_path / "preview.json"
    # The CLI prints the digest with four-space indentation (json.MarshalIndent).
    printed.write_text(json.dumps(digest(content_step(
        "update", encode_input(old), encode_input(new)), update=1), indent=4) + "\n")  # fmt: skip
    body, payload = tmp_path / "comment.md", tmp_path / "comment.json"
    code = preview_comment.main([
        str(printed), "--stack", "prod", "--outcome", "success", "--run-url", "https://r/2",
        "--body", str(body), "--payload", str(payload),
    ])  # fmt: skip
    assert code == 0
    assert json.loads(payload.read_text()) == {"body": body.read_text()}
    assert "`pulumi preview` on stack `prod`" in body.read_text()
    assert "~ /llms.txt" in body.read_text()


def test_the_type_and_input_match_what_the_program_registers(tmp_path: Path) -> None:
    """The fixtures above assume the type token and the `files` form; the program under
    mocks registers exactly those, and one edited file is the only line listed."""
    from tests.pulumi_harness import run_program
    from tests.test_infra import make_config

    run = run_program(make_config(tmp_path), preview=True)
    (content,) = [r for r in run.mocks.resources if r.typ == SITE_CONTENT_TYPE]
    registered = content.inputs["files"]
    assert isinstance(registered, str)
    files = decode_input(registered)
    path = sorted(files)[len(files) // 2]
    edited = {**files, path: {**files[path], "sha256": "0" * 64, "size": files[path]["size"] + 1}}
    body = render(digest(content_step("update", registered, encode_input(edited)), update=1))
    listed = [line for line in body.splitlines() if line.startswith(("- /", "+ /", "~ /"))]
    assert listed == [f"~ {path}  ({files[path]['size']:,} -> {files[path]['size'] + 1:,} B)"]


@pytest.mark.parametrize("budget", [2_000, 10_000])
def test_any_budget_is_held(budget: int) -> None:
    files = encode_input(grown_site(1_000))
    render(digest(content_step("create", None, files), create=1), budget=budget)


def test_a_large_change_is_also_counted_per_folder() -> None:
    files = encode_input(grown_site(1_000))
    body = render(digest(content_step("create", None, files), create=1, same=0))
    lines = body.splitlines()
    assert "| `/api/v1/content/` | 2,000 | 0 | 0 |" in lines
    assert "| `/api/v1/faq/` | 2,000 | 0 | 0 |" in lines
    assert "| `/` | 2 | 0 | 0 |" in lines
    small = render(digest(content_step("create", None, encode_input(grown_site(2))), create=1))
    assert "| folder |" not in small, "a short list needs no table"


def test_the_script_needs_only_the_standard_library_and_the_contract() -> None:
    """It runs in CI on what the CLI printed: no Pulumi SDK, no builder, no AWS."""
    probe = (
        f"import sys; sys.path.insert(0, {str(REPO)!r}); import infra.preview_comment\n"
        "loaded = {m.split('.')[0] for m in sys.modules} - {'__main__'}\n"
        "print(sorted(loaded - set(sys.stdlib_module_names)))"
    )
    completed = subprocess.run(
        [sys.executable, "-S", "-E", "-c", probe], cwd=REPO,
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert completed.stdout.split() == ["['agent_contract',", "'infra']"]


def test_a_site_content_under_the_component_is_found_by_its_own_type() -> None:
    """The program registers SiteContent as a child of the AgentSite component, so its
    URN's type is qualified by the parent's (`parent$child`)."""
    old = grown_site(1)
    new = {**old, "/llms.txt": manifest_entry("/llms.txt", "2")}
    step = content_step("update", encode_input(old), encode_input(new))
    step["urn"] = f"{PREFIX}agent-access:index:AgentSite${SITE_CONTENT_TYPE}::site-files"
    body = render(digest(step, update=1))
    assert "**site-files** (published files)" in body and "~ /llms.txt" in body
    assert f"| ~ update | `site-files` | `{SITE_CONTENT_TYPE}` |  |" in body.splitlines()
