"""The GitHub Actions workflows: valid against GitHub's workflow schema (check-jsonschema's vendored
copy, offline), clean under zizmor (a static analyser for GitHub Actions, run offline), and doing
what docs/ci.md promises (what runs when, with which credentials)."""

from __future__ import annotations

import importlib.resources
import io
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from ruamel.yaml import YAML

from components.__main__ import COMMANDS
from tests.support.paths import ROOT
from tests.support.workflows import load_workflow, zizmor
from tooling.__main__ import COMMANDS as TOOLING_COMMANDS

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    vendored = importlib.resources.files("check_jsonschema.builtin_schemas.vendor") / "github-workflows.json"
    return json.loads(vendored.read_text())


@pytest.fixture(scope="module")
def pr() -> dict[str, Any]:
    return load_workflow(ROOT / ".github" / "workflows" / "pull-request.yml")


@pytest.fixture(scope="module")
def deploy() -> dict[str, Any]:
    return load_workflow(ROOT / ".github" / "workflows" / "deploy.yml")


def steps_using(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [s for s in job["steps"] if str(s.get("uses", "")).startswith(f"{action}@")]


def run_scripts(workflow: dict[str, Any]) -> list[str]:
    return [s["run"] for job in workflow["jobs"].values() for s in job.get("steps", []) if "run" in s]


def test_there_are_workflows():
    assert [p.name for p in WORKFLOWS] == ["deploy.yml", "pull-request.yml", "release.yml"]


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_is_valid_against_the_github_schema(path: Path, schema: dict[str, Any]):
    validator = jsonschema.Draft7Validator(schema)
    errors = sorted(validator.iter_errors(load_workflow(path)), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors)


def test_the_schema_check_rejects_a_broken_workflow(schema: dict[str, Any]):
    # The validation above must be able to fail: a job without runs-on, a step both run and uses.
    broken = {"on": "push", "jobs": {"x": {"steps": [{"run": "true", "uses": "actions/checkout@v4"}]}}}
    assert list(jsonschema.Draft7Validator(schema).iter_errors(broken))


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_run_scripts_are_valid_bash(path: Path):
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    for script in run_scripts(load_workflow(path)):
        # ${{ }} is replaced by GitHub before bash sees the script.
        plain = re.sub(r"\$\{\{.*?\}\}", "x", script)
        done = subprocess.run([bash, "-n"], input=plain, capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{path.name}: bash -n failed:\n{done.stderr}\n{script}"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflows_call_only_existing_commands_and_no_static_keys(path: Path):
    text = path.read_text()
    for package, command in re.findall(r"-m (components|tooling) (\w+)", text):
        known = COMMANDS if package == "components" else TOOLING_COMMANDS
        assert command in known, f"{path.name} runs `python -m {package} {command}`, which does not exist"
    # Credentials come from OIDC role assumption only.
    assert "aws-access-key-id" not in text and "AWS_SECRET_ACCESS_KEY" not in text


def test_pull_requests_run_tests_render_diff_and_previews(pr: dict[str, Any]):
    assert "pull_request" in pr["on"]
    jobs = pr["jobs"]
    assert any("./scripts/test" in s.get("run", "") for s in jobs["test"]["steps"])

    render_diff = jobs["render-diff"]
    (checkout,) = steps_using(render_diff, "actions/checkout")
    assert checkout["with"]["fetch-depth"] == 0
    diff_step = next(s for s in render_diff["steps"] if s.get("id") == "diff")
    assert '-m tooling diff --base "origin/${BASE_REF}" --comment render-impact.md' in diff_step["run"]
    # The comment starts with the impact summary of each stack (written by --comment).
    assert "cat render-impact.md" in diff_step["run"]
    assert diff_step["env"]["BASE_REF"] == "${{ github.base_ref }}"
    assert "GITHUB_STEP_SUMMARY" in diff_step["run"]
    assert steps_using(render_diff, "actions/github-script"), "the diff is also posted as a PR comment"

    preview = jobs["preview"]
    assert preview["strategy"]["matrix"]["stack"] == ["dev", "prod"]
    assert preview["permissions"]["id-token"] == "write"
    (aws,) = steps_using(preview, "aws-actions/configure-aws-credentials")
    # The read-only preview role, never the deploy role.
    assert aws["with"]["role-to-assume"] == "${{ vars.AWS_PREVIEW_ROLE_ARN }}"
    assert preview["env"]["AWS_ROLE_ARN"] == "${{ vars.AWS_PREVIEW_ROLE_ARN }}"
    (pulumi,) = steps_using(preview, "pulumi/actions")
    assert pulumi["with"]["command"] == "preview"
    assert pulumi["with"]["comment-on-pr"] is True and pulumi["with"]["diff"] is True
    runs = [s.get("run", "") for s in preview["steps"]]
    preflight = next(i for i, r in enumerate(runs) if '-m components preflight --stack "$STACK"' in r)
    assert preflight < preview["steps"].index(pulumi), "preflight runs before the preview"


@pytest.mark.parametrize("workflow", ["pr", "deploy"])
def test_cloud_jobs_skip_with_a_note_without_credentials(workflow: str, pr: dict[str, Any], deploy: dict[str, Any]):
    jobs = {"pr": pr, "deploy": deploy}[workflow]["jobs"]
    cloud_jobs = {name: job for name, job in jobs.items() if steps_using(job, "pulumi/actions")}
    assert cloud_jobs
    for name, job in cloud_jobs.items():
        first = job["steps"][0]
        assert first["id"] == "credentials", name
        assert "GITHUB_STEP_SUMMARY" in first["run"] and "skipped" in first["run"]
        assert job["env"]["PULUMI_ACCESS_TOKEN"] == "${{ secrets.PULUMI_ACCESS_TOKEN }}"
        assert job["env"]["PULUMI_BACKEND_URL"] == "${{ vars.PULUMI_BACKEND_URL }}"
        for step in job["steps"][1:]:
            assert str(step.get("if", "")).startswith("steps.credentials.outputs.configured == 'true'"), (name, step)


def test_credentials_check_decides_as_documented(pr: dict[str, Any], tmp_path: Path):
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    script = pr["jobs"]["preview"]["steps"][0]["run"]

    def decide(**env: str) -> tuple[str, str]:
        out, summary = tmp_path / "out", tmp_path / "summary"
        out.write_text("")
        summary.write_text("")
        environ = {
            "PATH": "/usr/bin:/bin",
            "STACK": "dev",
            "GITHUB_OUTPUT": str(out),
            "GITHUB_STEP_SUMMARY": str(summary),
        }
        subprocess.run([bash, "-e", "-c", script], env={**environ, **env}, check=True, capture_output=True)
        return out.read_text().strip(), summary.read_text()

    assert decide(AWS_ROLE_ARN="arn:aws:iam::1:role/r", PULUMI_ACCESS_TOKEN="t")[0] == "configured=true"
    assert decide(AWS_ROLE_ARN="arn:aws:iam::1:role/r", PULUMI_BACKEND_URL="s3://b")[0] == "configured=true"
    decision, summary = decide()  # a fork: no secrets, no variables
    assert decision == "configured=false"
    assert "skipped" in summary and "AWS_PREVIEW_ROLE_ARN" in summary and "PULUMI_ACCESS_TOKEN" in summary
    assert decide(AWS_ROLE_ARN="arn:aws:iam::1:role/r")[0] == "configured=false"


def test_pushes_to_main_deploy_dev_then_prod_behind_an_environment(deploy: dict[str, Any]):
    assert deploy["on"]["push"]["branches"] == ["main"]
    jobs = deploy["jobs"]
    assert jobs["dev"]["needs"] == "test"
    assert jobs["prod"]["needs"] == "dev"
    assert jobs["prod"]["environment"] == "prod"
    groups = set()
    for stack in ("dev", "prod"):
        job = jobs[stack]
        (pulumi,) = steps_using(job, "pulumi/actions")
        assert pulumi["with"]["command"] == "up"
        assert f"'{stack}'" in pulumi["with"]["stack-name"]
        assert job["permissions"]["id-token"] == "write"
        assert job["env"]["STACK"] == stack
        assert job["environment"] == stack, "the deploy role trusts only the environments"
        (aws,) = steps_using(job, "aws-actions/configure-aws-credentials")
        assert aws["with"]["role-to-assume"] == "${{ vars.AWS_DEPLOY_ROLE_ARN }}"
        # Serialized per stack: a second `pulumi up` of the stack waits; none is cancelled halfway.
        assert job["concurrency"]["cancel-in-progress"] is False
        groups.add(job["concurrency"]["group"])
    assert len(groups) == 2, "one concurrency group per stack"
    # The required reviewers live in the repository settings: the file must say so.
    assert "Required reviewers" in (ROOT / ".github" / "workflows" / "deploy.yml").read_text()


def test_yaml_loader_keeps_on_as_a_key():
    assert "on" in json.loads(json.dumps(YAML(typ="safe", pure=True).load(io.StringIO("on: push\n"))))


# ---------------------------------------------------------------------------------------------
# Safe to run on a real account
# ---------------------------------------------------------------------------------------------

PINNED = re.compile(r"^([\w.-]+/[\w./-]+)@([0-9a-f]{40})$")
VERSION_COMMENT = re.compile(r"uses: (\S+) # v\d+\.\d+\.\d+$")


def all_steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for job in workflow["jobs"].values() for s in job.get("steps", [])]


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_actions_are_pinned_to_commits_with_their_version(path: Path):
    workflow = load_workflow(path)
    uses = [s["uses"] for s in all_steps(workflow) if "uses" in s]
    assert uses
    unpinned = [u for u in uses if not PINNED.match(u)]
    assert unpinned == [], f"{path.name}: pin these to a full commit SHA: {unpinned}"
    lines = [line.strip() for line in path.read_text().splitlines() if line.strip().startswith(("uses:", "- uses:"))]
    without_version = [line for line in lines if not VERSION_COMMENT.search(line)]
    assert without_version == [], f"{path.name}: say the version after the SHA (# vX.Y.Z): {without_version}"


def test_each_action_is_pinned_to_one_commit_everywhere():
    pins: dict[str, set[str]] = {}
    for path in WORKFLOWS:
        for line in path.read_text().splitlines():
            if match := re.search(r"uses: ([\w.-]+/[\w./-]+)@([0-9a-f]{40}) # (v[\d.]+)", line):
                pins.setdefault(match.group(1), set()).add(f"{match.group(2)} {match.group(3)}")
    assert {action: len(p) for action, p in pins.items() if len(p) != 1} == {}
    assert sorted(pins) == [
        "actions/checkout",
        "actions/download-artifact",
        "actions/github-script",
        "actions/setup-python",
        "actions/upload-artifact",
        "aws-actions/configure-aws-credentials",
        "pulumi/actions",
        "pypa/gh-action-pypi-publish",
    ]


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_checkouts_do_not_persist_credentials(path: Path):
    for step in all_steps(load_workflow(path)):
        if str(step.get("uses", "")).startswith("actions/checkout@"):
            assert step.get("with", {}).get("persist-credentials") is False, (path.name, step)


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflows_grant_nothing_by_default(path: Path):
    workflow = load_workflow(path)
    assert workflow["permissions"] == {}
    for name, job in workflow["jobs"].items():
        assert "permissions" in job, f"{path.name}: job {name} states its permissions"


def test_the_deploy_role_is_never_used_for_previews_and_the_preview_role_never_deploys(
    pr: dict[str, Any], deploy: dict[str, Any]
):
    pr_text = (ROOT / ".github" / "workflows" / "pull-request.yml").read_text()
    deploy_text = (ROOT / ".github" / "workflows" / "deploy.yml").read_text()
    assert "AWS_DEPLOY_ROLE_ARN" not in pr_text
    assert "AWS_PREVIEW_ROLE_ARN" not in deploy_text
    assert "vars.AWS_ROLE_ARN" not in pr_text + deploy_text, "the single shared role is gone"


def test_contract_tests_are_required_in_every_test_job(pr: dict[str, Any], deploy: dict[str, Any]):
    for workflow in (pr, deploy):
        job = workflow["jobs"]["test"]
        assert job["env"]["GPU_EKS_REQUIRE_REFERENCE"] == "1"
        assert any("./scripts/test" in s.get("run", "") for s in job["steps"])


def test_a_failing_preflight_still_previews_then_fails_the_job(pr: dict[str, Any]):
    steps = pr["jobs"]["preview"]["steps"]
    names = [s.get("id") or s.get("name") or s.get("uses") for s in steps]
    preflight = next(i for i, s in enumerate(steps) if s.get("id") == "preflight")
    preview = next(i for i, s in enumerate(steps) if str(s.get("uses", "")).startswith("pulumi/actions@"))
    final = len(steps) - 1
    assert preflight < preview < final, names
    assert steps[preflight]["continue-on-error"] is True
    assert "GITHUB_STEP_SUMMARY" in steps[preflight]["run"], "the preflight's report is in the job summary"
    assert steps[final]["if"] == (
        "steps.credentials.outputs.configured == 'true' && steps.preflight.outcome == 'failure'"
    )
    assert "exit 1" in steps[final]["run"]


def test_preflight_step_reports_and_keeps_the_exit_status(pr: dict[str, Any], tmp_path: Path):
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    step = next(s for s in pr["jobs"]["preview"]["steps"] if s.get("id") == "preflight")
    # scripts/_bootstrap.sh is replaced by a stub that makes $PY a fake preflight.
    (tmp_path / "scripts").mkdir()
    fake = tmp_path / "fake-python"
    fake.write_text('#!/bin/sh\necho "quota: 0 of 4 vCPUs left for G instances"\nexit 3\n')
    fake.chmod(0o755)
    (tmp_path / "scripts" / "_bootstrap.sh").write_text(f"PY={fake}\n")
    summary = tmp_path / "summary"
    done = subprocess.run(
        [bash, "-e", "-c", step["run"]],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "STACK": "prod", "GITHUB_STEP_SUMMARY": str(summary)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 3
    text = summary.read_text()
    assert "### preflight (prod): FAILED (exit 3)" in text
    assert "quota: 0 of 4 vCPUs left for G instances" in text


def severity(finding: dict[str, Any]) -> str:
    return str(finding["determinations"]["severity"]).lower()


def test_zizmor_reports_nothing_at_medium_or_above():
    _, findings = zizmor(ROOT / ".github" / "workflows")
    serious = [f"{f['ident']} ({severity(f)}): {f['desc']}" for f in findings if severity(f) in {"medium", "high"}]
    assert serious == []


def test_zizmor_check_can_fail(tmp_path: Path):
    bad = tmp_path / ".github" / "workflows" / "bad.yml"
    bad.parent.mkdir(parents=True)
    bad.write_text(
        "on: pull_request\npermissions: {}\njobs:\n  x:\n    runs-on: ubuntu-latest\n    permissions: {}\n"
        "    steps:\n      - uses: actions/checkout@v4\n"
    )
    _, findings = zizmor(bad.parent)
    idents = {f["ident"] for f in findings if severity(f) in {"medium", "high"}}
    assert {"unpinned-uses", "artipacked"} <= idents
