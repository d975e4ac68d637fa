"""The GitHub workflows: valid against the published schema, and saying what they must."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

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


def test_preview_comments_the_diff_on_pull_requests() -> None:
    workflow = load("preview.yml")
    assert "pull_request" in workflow[True]  # PyYAML reads the key `on` as True
    (pulumi,) = [s for s in steps(workflow) if s.get("uses", "").startswith("pulumi/actions@")]
    assert pulumi["with"]["command"] == "preview"
    assert pulumi["with"]["comment-on-pr"] is True
    assert pulumi["with"]["diff"] is True


def test_deploy_runs_up_then_verifies_against_the_build() -> None:
    workflow = load("deploy.yml")
    assert workflow[True]["push"]["branches"] == ["main"]
    ordered = steps(workflow)
    up_index = next(i for i, s in enumerate(ordered) if s.get("with", {}).get("command") == "up")
    verify = [s for s in ordered[up_index:] if "content_builder verify" in s.get("run", "")]
    assert verify and "--expect-from dist" in verify[0]["run"]
    assert "--retry-for" in verify[0]["run"]
    assert verify[0]["env"]["BASE_URL"] == "${{ steps.up.outputs.base_url }}"
    assert workflow["concurrency"]["cancel-in-progress"] is False


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
    needs_aws = [
        s for s in steps(workflow)
        if "configure-aws-credentials" in s.get("uses", "") or "pulumi/actions" in s.get("uses", "")
    ]  # fmt: skip
    assert len(needs_aws) == 2
    for step in needs_aws:
        assert step["if"] == "github.event.pull_request.head.repo.full_name == github.repository"
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
