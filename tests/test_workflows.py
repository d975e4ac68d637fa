"""The GitHub workflows: valid against the published schema, and saying what they must."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from infra.preview_comment import MARKER
from tests.conftest import REPO

WORKFLOWS = REPO / ".github" / "workflows"
# zizmor ships a binary in its wheel (no Python module): the venv's scripts folder has it.
ZIZMOR = str(Path(sys.executable).with_name("zizmor"))


def load(name: str) -> dict:
    return yaml.safe_load((WORKFLOWS / name).read_text())


def steps(workflow: dict) -> list[dict]:
    return [step for job in workflow["jobs"].values() for step in job["steps"]]


def test_workflows_validate_against_the_github_schema() -> None:
    files = sorted(str(path) for path in WORKFLOWS.glob("*.yml"))
    assert len(files) == 2
    completed = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows",
         *files],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_check_jsonschema_rejects_a_broken_workflow(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text("on: push\njobs:\n  x:\n    steps: []\n")  # no runs-on
    completed = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows",
         str(broken)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert completed.returncode != 0


@pytest.mark.parametrize("name", ["preview.yml", "deploy.yml"])
def test_aws_credentials_come_from_oidc_not_stored_keys(name: str) -> None:
    workflow = load(name)
    assert workflow["permissions"] == {}, "nothing granted at the workflow level"
    (job,) = workflow["jobs"].values()
    assert job["permissions"]["id-token"] == "write"
    text = (WORKFLOWS / name).read_text()
    assert "aws-access-key-id" not in text and "AWS_SECRET_ACCESS_KEY" not in text
    (credentials,) = [
        s for s in steps(workflow) if "configure-aws-credentials" in s.get("uses", "")
    ]
    assert "role-to-assume" in credentials["with"]
    assert any(s.get("run") == "make test" for s in steps(workflow))


SAME_REPO = "github.event.pull_request.head.repo.full_name == github.repository"


def named(workflow: dict, prefix: str) -> dict:
    (step,) = [s for s in steps(workflow) if s.get("name", "").startswith(prefix)]
    return step


def test_preview_comments_a_summary_from_the_json_preview_not_the_diff() -> None:
    """The action's own comment is the whole `--diff` text cut at 64,000 characters
    (pulumi/actions v6.6.1 src/libs/pr.ts): at real site sizes, unchanged paths only. So
    the action only installs the CLI, the preview is `--json`, and our script writes the
    comment (docs/decisions.md, "The pull-request preview comment at any size")."""
    workflow = load("preview.yml")
    assert "pull_request" in workflow[True]  # PyYAML reads the key `on` as True
    ordered = steps(workflow)
    (cli,) = [s for s in ordered if s.get("uses", "").startswith("pulumi/actions@")]
    assert "command" not in cli.get("with", {}), "install-only mode: the action runs nothing"
    assert "comment-on-pr" not in cli.get("with", {})

    preview = named(workflow, "pulumi preview")
    assert preview["id"] == "preview" and preview["continue-on-error"] is True
    login, command = " ".join(preview["run"].replace("\\\n", " ").split()).split(" pulumi ", 1)
    assert login == "pulumi login --non-interactive"
    assert command.startswith('preview --stack "$PULUMI_STACK" --json')
    assert "--diff" not in command and command.endswith('> "$RUNNER_TEMP/preview.json"')
    assert preview["env"] == {"PULUMI_ACCESS_TOKEN": "${{ secrets.PULUMI_ACCESS_TOKEN }}"}

    comment, post, fail = (named(workflow, n) for n in ("Comment body", "Post or", "Fail if"))
    assert '-m infra.preview_comment "$RUNNER_TEMP/preview.json"' in comment["run"]
    assert comment["env"]["OUTCOME"] == "${{ steps.preview.outcome }}"
    assert '--payload "$RUNNER_TEMP/comment.json"' in comment["run"]
    assert '--input "$RUNNER_TEMP/comment.json"' in post["run"]
    assert "steps.preview.outcome != 'skipped'" in comment["if"] == post["if"]
    assert fail["if"] == "steps.preview.outcome == 'failure'" and "exit 1" in fail["run"]
    positions = [ordered.index(s) for s in (cli, preview, comment, post, fail)]
    assert positions == sorted(positions), "install, preview, comment, post, then fail"


def test_only_the_posting_step_holds_the_github_token() -> None:
    workflow = load("preview.yml")
    (job,) = workflow["jobs"].values()
    assert job["permissions"] == {
        "contents": "read", "id-token": "write", "pull-requests": "write"
    }  # fmt: skip
    holders = [s["name"] for s in steps(workflow) if "GITHUB_TOKEN" in json.dumps(s)]
    assert holders == ["Post or update the preview comment"]
    assert named(workflow, "Post or")["env"]["GH_TOKEN"] == "${{ secrets.GITHUB_TOKEN }}"


def test_the_posting_step_finds_the_comment_by_the_scripts_marker() -> None:
    post = named(load("preview.yml"), "Post or")["run"]
    assert f'startswith("{MARKER}")' in post
    assert 'select(.user.login == "github-actions[bot]")' in post


def _run_posting_step(tmp_path: Path, existing_ids: str) -> list[list[str]]:
    """The step's own shell, with a `gh` on PATH that records its arguments and answers
    the comment listing with `existing_ids` (what `--jq` would print)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "gh.log"
    fake = bin_dir / "gh"
    fake.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        f"open({str(log)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
        f"if '--paginate' in sys.argv: print({existing_ids!r}, end='')\n"
    )
    fake.chmod(0o755)
    (tmp_path / "comment.json").write_text('{"body": "x"}')
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin", "RUNNER_TEMP": str(tmp_path),
        "GITHUB_REPOSITORY": "owner/site", "PR_NUMBER": "42", "GH_TOKEN": "t",
    }  # fmt: skip
    run = named(load("preview.yml"), "Post or")["run"]
    completed = subprocess.run(
        ["bash", "-e", "-c", run], env=env, capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_the_posting_step_creates_a_comment_when_there_is_none(tmp_path: Path) -> None:
    calls = _run_posting_step(tmp_path, "")
    assert calls[0][:3] == ["api", "--paginate", "repos/owner/site/issues/42/comments"]
    assert calls[1][:4] == ["api", "--method", "POST", "repos/owner/site/issues/42/comments"]
    assert calls[1][calls[1].index("--input") + 1] == str(tmp_path / "comment.json")
    assert len(calls) == 2


def test_the_posting_step_edits_its_earlier_comment(tmp_path: Path) -> None:
    calls = _run_posting_step(tmp_path, "1001\n1002\n")
    assert calls[1][:4] == ["api", "--method", "PATCH", "repos/owner/site/issues/comments/1001"]
    assert len(calls) == 2, "one comment edited, none added"


@pytest.mark.parametrize("printed", ["", '{"steps": [], "changeSummary": {"same": 15}}'])
def test_the_comment_step_writes_the_payload_and_the_step_summary(
    tmp_path: Path, printed: str
) -> None:
    """The step's own shell (the venv's interpreter swapped for this one): what the
    preview printed, even nothing at all, becomes a comment and a step summary."""
    (tmp_path / "preview.json").write_text(printed)
    summary = tmp_path / "summary.md"
    env = {
        "PATH": "/usr/bin:/bin", "RUNNER_TEMP": str(tmp_path), "GITHUB_STEP_SUMMARY": str(summary),
        "PULUMI_STACK": "dev", "OUTCOME": "success" if printed else "failure",
        "RUN_URL": "https://github.com/owner/site/actions/runs/7",
    }  # fmt: skip
    run = named(load("preview.yml"), "Comment body")["run"]
    assert run.startswith(".venv/bin/python -m infra.preview_comment")
    completed = subprocess.run(
        ["bash", "-e", "-c", run.replace(".venv/bin/python", sys.executable, 1)], cwd=REPO,
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    body = json.loads((tmp_path / "comment.json").read_text())["body"]
    assert body == summary.read_text() == (tmp_path / "comment.md").read_text()
    assert body.startswith(MARKER)
    assert ("**No changes.**" in body) if printed else ("printed no JSON digest" in body)


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq (as gh --jq runs it) not installed")
def test_the_comment_filter_picks_only_the_bots_preview_comment() -> None:
    post = named(load("preview.yml"), "Post or")["run"]
    expression = re.search(r"--jq '([^']*)'", post, re.S)
    assert expression
    comments = [
        {"id": 1, "user": {"login": "someone"}, "body": f"{MARKER}\nquoted by a person"},
        {"id": 2, "user": {"login": "github-actions[bot]"}, "body": "another workflow's"},
        {"id": 3, "user": {"login": "github-actions[bot]"}, "body": f"{MARKER}\n#### ..."},
    ]
    completed = subprocess.run(
        ["jq", "-r", expression.group(1)], input=json.dumps(comments),
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    assert completed.stdout.split() == ["3"]


def test_deploy_runs_up_in_its_own_step_then_verifies_against_the_build() -> None:
    """`command: up` set the whole stdout of `pulumi up` as a step output (pulumi/actions
    v6.6.1 src/main.ts:130), and GitHub caps a job's outputs at 1 MB: the action only
    installs the CLI, our step runs what it ran, and only three short stack outputs become
    step outputs (docs/decisions.md, "The deploy at any size")."""
    workflow = load("deploy.yml")
    assert workflow[True]["push"]["branches"] == ["main"]
    assert workflow["concurrency"]["cancel-in-progress"] is False
    (job,) = workflow["jobs"].values()
    assert job["environment"] == "production"
    assert job["permissions"] == {"contents": "read", "id-token": "write"}
    ordered = steps(workflow)
    (cli,) = [s for s in ordered if s.get("uses", "").startswith("pulumi/actions@")]
    # Install-only mode: no command, nothing run by the action; only the CLI's version.
    assert set(cli.get("with", {})) == {"pulumi-version"}, cli

    up = named(workflow, "pulumi up")
    assert up["id"] == "up" and "continue-on-error" not in up
    login, command = " ".join(up["run"].split()).split(" pulumi ", 1)
    assert login == "pulumi login --non-interactive"
    assert command == 'up --stack "$PULUMI_STACK" --refresh --yes --skip-preview --non-interactive'
    assert ">" not in up["run"] and "GITHUB_OUTPUT" not in up["run"], "the log keeps it"
    assert up["env"] == {"PULUMI_ACCESS_TOKEN": "${{ secrets.PULUMI_ACCESS_TOKEN }}"}

    stack = named(workflow, "Stack outputs")
    assert stack["id"] == "stack" and "steps.up.outcome != 'skipped'" in stack["if"]
    wait = named(workflow, "Wait for the CloudFront")
    assert wait["env"] == {
        "DISTRIBUTION_ID": "${{ steps.stack.outputs.distribution_id }}",
        "INVALIDATION_ID": "${{ steps.stack.outputs.invalidation_id }}",
    }
    verify = named(workflow, "Smoke test")
    assert "--expect-from dist" in verify["run"] and "--retry-for" in verify["run"]
    assert verify["env"]["BASE_URL"] == "${{ steps.stack.outputs.base_url }}"
    assert "steps.up.outputs" not in (WORKFLOWS / "deploy.yml").read_text()
    positions = [ordered.index(s) for s in (cli, up, stack, wait, verify)]
    assert positions == sorted(positions), "install, up, outputs, wait, then verify"


def test_every_deploy_refreshes_before_it_updates() -> None:
    """Drift is repaired on every deploy (issue 24): `pulumi up --refresh` reads the bucket
    first (the SiteContent provider's read: one listing), so a file deleted outside Pulumi
    shows as missing and the same update publishes it again, even when the build is
    unchanged. Without the refresh the engine diffs the program against the state it
    believes, finds nothing, and never calls the provider. The pinned action's own
    `refresh` input adds the same flag (pulumi/actions v6.6.1 action.yml:85-88); the
    action only installs the CLI here, so the flag is on our command line."""
    workflow = load("deploy.yml")
    up = named(workflow, "pulumi up")
    commands = [
        line.strip().split()
        for step in steps(workflow)
        for line in step.get("run", "").splitlines()
        if line.strip().startswith("pulumi ")
    ]
    updates = [words for words in commands if words[1] in ("up", "update")]
    assert len(updates) == 1, "one update, in the `pulumi up` step"
    assert updates[0] == up["run"].splitlines()[-1].split()
    assert "--refresh" in updates[0] and "--refresh=false" not in updates[0]
    # Nor does the action run an update of its own, unrefreshed.
    (cli,) = [s for s in steps(workflow) if s.get("uses", "").startswith("pulumi/actions@")]
    assert "command" not in cli.get("with", {})


def _pulumi_stand_in(tmp_path: Path, outputs: object, history: object) -> dict[str, str]:
    """A `pulumi` on PATH that records its arguments, prints 3 MB for `up` (what a large
    site's update could print) and answers `stack output` / `stack history` with JSON."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "answer-output.json").write_text(json.dumps(outputs))
    (tmp_path / "answer-history.json").write_text(json.dumps(history))
    fake = bin_dir / "pulumi"
    fake.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        f"open({str(tmp_path / 'pulumi.log')!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
        "if sys.argv[1] == 'up':\n"
        "    sys.stdout.write(('  ~ SiteContent site-files' * 40 + '\\n') * 3000)\n"
        "if sys.argv[1:3] == ['stack', 'output']:\n"
        f"    print(open({str(tmp_path / 'answer-output.json')!r}).read())\n"
        "if sys.argv[1:3] == ['stack', 'history']:\n"
        f"    print(open({str(tmp_path / 'answer-history.json')!r}).read())\n"
    )
    fake.chmod(0o755)
    for name in ("output.env", "summary.md"):
        (tmp_path / name).write_text("")
    return {
        "PATH": f"{bin_dir}:/usr/bin:/bin", "RUNNER_TEMP": str(tmp_path), "PULUMI_STACK": "dev",
        "GITHUB_OUTPUT": str(tmp_path / "output.env"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "PULUMI_ACCESS_TOKEN": "t", "UP_OUTCOME": "success",
    }  # fmt: skip


def _run_deploy_step(prefix: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The step's own shell (the venv's interpreter swapped for this one), as the runner
    runs it (`bash -e`)."""
    run = named(load("deploy.yml"), prefix)["run"]
    return subprocess.run(
        ["bash", "-e", "-c", run.replace(".venv/bin/python", sys.executable)], cwd=REPO,
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


SMALL_OUTPUTS = {
    "base_url": "https://d111111abcdef8.cloudfront.net",
    "distribution_id": "E2QWRUHAPOMQZL",
    "bucket_name": "agent-access-site-1a2b3c",
    "file_count": 40176,
    "files_digest": "9f" * 32,
    "last_publish": {"deleted": 0, "invalidated": 3, "invalidation_id": "I2J0I21PCUYOIK",
                     "uploaded": 3},
    "invalidation_id": "I2J0I21PCUYOIK",
}  # fmt: skip
HISTORY = [
    {"version": 42, "kind": "update", "result": "succeeded",
     "resourceChanges": {"same": 20, "update": 1}},
]  # fmt: skip


def test_the_up_step_sends_megabytes_of_output_to_the_log_only(tmp_path: Path) -> None:
    env = _pulumi_stand_in(tmp_path, SMALL_OUTPUTS, HISTORY)
    completed = _run_deploy_step("pulumi up", env)
    assert completed.returncode == 0, completed.stderr
    assert len(completed.stdout) > 3_000_000, "the whole output reaches the log"
    assert (tmp_path / "output.env").read_text() == "", "and no step output"
    calls = [json.loads(line) for line in (tmp_path / "pulumi.log").read_text().splitlines()]
    assert calls == [
        ["login", "--non-interactive"],
        ["up", "--stack", "dev", "--refresh", "--yes", "--skip-preview", "--non-interactive"],
    ]


def test_the_outputs_step_writes_three_short_outputs_and_a_summary(tmp_path: Path) -> None:
    env = _pulumi_stand_in(tmp_path, SMALL_OUTPUTS, HISTORY)
    completed = _run_deploy_step("Stack outputs", env)
    assert completed.returncode == 0, completed.stderr
    assert (tmp_path / "output.env").read_text().splitlines() == [
        "base_url=https://d111111abcdef8.cloudfront.net",
        "distribution_id=E2QWRUHAPOMQZL",
        "invalidation_id=I2J0I21PCUYOIK",
    ]
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("### pulumi up on `dev`: success\n")
    assert "Update 42, result succeeded." in summary
    assert "| update | 1 |" in summary and "| same | 20 |" in summary
    assert "| file_count | 40176 |" in summary
    assert f"| files_digest | {'9f' * 32} |" in summary
    assert '"uploaded": 3' in summary
    calls = [json.loads(line) for line in (tmp_path / "pulumi.log").read_text().splitlines()]
    assert calls == [
        ["stack", "output", "--stack", "dev", "--json"],
        ["stack", "history", "--stack", "dev", "--json", "--page-size", "1"],
    ]


def test_the_summary_stays_small_whatever_an_output_holds(tmp_path: Path) -> None:
    """Were a per-file map exported again (it was once: ~2 MB at 10,000 files), the
    summary would still be a few kilobytes, and no step output would carry it."""
    outputs = {**SMALL_OUTPUTS, "files": {f"/docs/{i}.json": {"size": i} for i in range(40_000)}}
    env = _pulumi_stand_in(tmp_path, outputs, [])
    env["UP_OUTCOME"] = "failure"
    completed = _run_deploy_step("Stack outputs", env)
    assert completed.returncode == 0, completed.stderr
    summary = (tmp_path / "summary.md").read_text()
    assert len(summary) < 4_000
    assert "| files | {" in summary and "characters) |" in summary
    assert "Update ?, result unknown." in summary and ": failure" in summary
    assert len((tmp_path / "output.env").read_text()) < 200


@pytest.mark.parametrize(
    "base_url", ["https://a.example\ninjected=1", "https://" + "a" * 3000, {"not": "text"}]
)
def test_the_outputs_step_refuses_an_output_that_is_not_one_short_line(
    tmp_path: Path, base_url: object
) -> None:
    env = _pulumi_stand_in(tmp_path, {**SMALL_OUTPUTS, "base_url": base_url}, HISTORY)
    completed = _run_deploy_step("Stack outputs", env)
    assert completed.returncode != 0
    assert "stack output base_url: expected one line" in completed.stderr
    assert "injected" not in (tmp_path / "output.env").read_text()


@pytest.mark.parametrize("name", ["preview.yml", "deploy.yml"])
def test_every_action_is_pinned_to_a_commit_and_checkouts_keep_no_token(name: str) -> None:
    text = (WORKFLOWS / name).read_text()
    uses = re.findall(r"uses:\s*(\S+)(.*)", text)
    assert uses
    for reference, comment in uses:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", reference), reference
        assert re.search(r"# v\d+\.\d+\.\d+", comment), f"{reference}: version comment"
    for step in steps(load(name)):
        if step.get("uses", "").startswith("actions/checkout@"):
            assert step["with"]["persist-credentials"] is False
        assert "${{" not in step.get("run", ""), "expressions reach run: through env:"


def test_fork_pull_requests_skip_the_preview_instead_of_failing() -> None:
    workflow = load("preview.yml")
    # Everything after the tests needs credentials, secrets or the preview they give.
    needs_aws = [
        s for s in steps(workflow)
        if "configure-aws-credentials" in s.get("uses", "") or "pulumi/actions" in s.get("uses", "")
        or "secrets." in json.dumps(s) or "pulumi " in s.get("run", "")
        or "steps.preview" in s.get("if", "")
    ]  # fmt: skip
    assert len(needs_aws) == 6
    for step in needs_aws:
        # A fork's preview step is skipped, so the steps gated on its outcome skip too.
        assert SAME_REPO in step["if"] or step["if"] == "steps.preview.outcome == 'failure'"
    assert any(s.get("run") == "make test" for s in steps(workflow) if "if" not in s)


def test_zizmor_finds_nothing_in_the_workflows() -> None:
    completed = subprocess.run(
        [ZIZMOR, "--offline", "--persona=auditor", str(WORKFLOWS)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_zizmor_would_catch_an_unpinned_action(tmp_path: Path) -> None:
    text = (WORKFLOWS / "deploy.yml").read_text()
    (tmp_path / "deploy.yml").write_text(
        re.sub(r"actions/checkout@[0-9a-f]{40}", "actions/checkout@v4", text)
    )
    completed = subprocess.run(
        [ZIZMOR, "--offline", str(tmp_path / "deploy.yml")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert completed.returncode != 0
    assert "unpinned-uses" in completed.stdout + completed.stderr


@pytest.mark.parametrize("name", ["preview.yml", "deploy.yml"])
def test_the_pulumi_cli_is_the_version_of_the_pinned_sdk(name: str) -> None:
    """pulumi/actions installs the newest 3.x unless told (`pulumi-version`, default "^3");
    the CLI and the Python SDK are released together under one version, and a CLI that
    outgrew the SDK fails in ways tests never see. `make lock` moving the SDK fails this
    test until the workflows follow."""
    pinned = re.search(r"^pulumi==(\S+)$", (REPO / "constraints.txt").read_text(), re.MULTILINE)
    assert pinned, "constraints.txt pins pulumi"
    installs = [s for s in steps(load(name)) if s.get("uses", "").startswith("pulumi/actions@")]
    assert len(installs) == 1
    assert installs[0].get("with", {}).get("pulumi-version") == pinned.group(1), (
        f"{name}: the Pulumi CLI step must install pulumi-version {pinned.group(1)}, "
        "the SDK version constraints.txt pins"
    )
