"""The GitHub Actions workflows: valid against GitHub's workflow schema (check-jsonschema's vendored
copy, offline), and doing what docs/render.md promises (what runs when, with which credentials)."""

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
from tests.support import ROOT
from tooling.__main__ import COMMANDS as TOOLING_COMMANDS

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def load_workflow(path: Path) -> dict[str, Any]:
    # YAML 1.2 (as GitHub reads it): PyYAML would turn the key `on:` into True.
    data = YAML(typ="safe", pure=True).load(path.read_text())
    return json.loads(json.dumps(data))


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
    assert [p.name for p in WORKFLOWS] == ["deploy.yml", "pull-request.yml"]


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
    assert '-m tooling diff --base "origin/${BASE_REF}"' in diff_step["run"]
    assert diff_step["env"]["BASE_REF"] == "${{ github.base_ref }}"
    assert "GITHUB_STEP_SUMMARY" in diff_step["run"]
    assert steps_using(render_diff, "actions/github-script"), "the diff is also posted as a PR comment"

    preview = jobs["preview"]
    assert preview["strategy"]["matrix"]["stack"] == ["dev", "prod"]
    assert preview["permissions"]["id-token"] == "write"
    (aws,) = steps_using(preview, "aws-actions/configure-aws-credentials")
    assert aws["with"]["role-to-assume"] == "${{ vars.AWS_ROLE_ARN }}"
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
            assert step.get("if") == "steps.credentials.outputs.configured == 'true'", (name, step)


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
    assert "skipped" in summary and "AWS_ROLE_ARN" in summary and "PULUMI_ACCESS_TOKEN" in summary
    assert decide(AWS_ROLE_ARN="arn:aws:iam::1:role/r")[0] == "configured=false"


def test_pushes_to_main_deploy_dev_then_prod_behind_an_environment(deploy: dict[str, Any]):
    assert deploy["on"]["push"]["branches"] == ["main"]
    jobs = deploy["jobs"]
    assert jobs["dev"]["needs"] == "test"
    assert jobs["prod"]["needs"] == "dev"
    assert jobs["prod"]["environment"] == "prod"
    for stack in ("dev", "prod"):
        (pulumi,) = steps_using(jobs[stack], "pulumi/actions")
        assert pulumi["with"]["command"] == "up"
        assert f"'{stack}'" in pulumi["with"]["stack-name"]
        assert jobs[stack]["permissions"]["id-token"] == "write"
        assert jobs[stack]["env"]["STACK"] == stack
    assert deploy["concurrency"]["cancel-in-progress"] is False
    # The required reviewers live in the repository settings: the file must say so.
    assert "Required reviewers" in (ROOT / ".github" / "workflows" / "deploy.yml").read_text()


def test_yaml_loader_keeps_on_as_a_key():
    assert "on" in json.loads(json.dumps(YAML(typ="safe", pure=True).load(io.StringIO("on: push\n"))))
