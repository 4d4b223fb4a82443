"""A newcomer's first ten minutes: what a fresh clone, the README and a consumer project run into
(the requirements split, a Python without the dependencies, unknown keys, stack files, preflight's
output), each with a literal expectation."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from components.check.loading import load_settings
from components.config import stackfile
from components.config.errors import ConfigError
from tests.support.paths import ROOT
from tests.support.preflight import preflight_config, preflight_env, run_preflight

# --- Requirements: the runtime set and the development set -----------------------------------


def requirement_names(path: Path) -> list[str]:
    lines = [line.strip() for line in path.read_text().splitlines()]
    return [line.split("==")[0].split("[")[0] for line in lines if line and not line.startswith("#")]


def test_requirements_split_runtime_from_development():
    """requirements.txt (./scripts/run, the plugin, consumers) holds only what the program and the
    render import; the test tools are in requirements-dev.txt, which includes the runtime set."""
    assert requirement_names(ROOT / "requirements.txt") == [
        "pulumi",
        "pulumi-aws",
        "pulumi-awsx",
        "pulumi-eks",
        "pulumi-kubernetes",
        "pydantic",
        "PyYAML",
        "boto3",
        "botocore",
    ]
    dev = requirement_names(ROOT / "requirements-dev.txt")
    assert dev[0] == "-r requirements.txt"
    assert {"pytest", "moto", "ruff", "zizmor", "kubernetes-validate", "setuptools"} <= set(dev)
    assert requirement_names(ROOT / "requirements-checkov.txt") == ["checkov"]
    assert (ROOT / "plugin" / "requirements.txt").read_text().strip().splitlines()[-1] == "-r ../requirements.txt"


def test_the_scripts_install_the_set_they_need_and_show_progress():
    bootstrap = (ROOT / "scripts" / "_bootstrap.sh").read_text()
    assert 'REQUIREMENTS="${REQUIREMENTS:-requirements.txt}"' in bootstrap
    # pip's own progress, not -q: a first install takes a minute or two.
    assert "pip install --disable-pip-version-check --progress-bar on -r" in bootstrap
    assert " -q " not in bootstrap
    test = (ROOT / "scripts" / "test").read_text()
    assert "REQUIREMENTS=requirements-dev.txt" in test
    assert "ensure_venv .tools/checkov requirements-checkov.txt" in test
    assert "REQUIREMENTS" not in (ROOT / "scripts" / "run").read_text()


# --- A Python without the dependencies ----------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "module"),
    [(["tooling", "render"], "yaml"), (["components", "preflight"], "botocore")],
)
def test_a_python_without_the_dependencies_says_what_to_do(argv: list[str], module: str):
    # -S: no site-packages, as a system Python without the requirements.
    done = subprocess.run(
        [sys.executable, "-S", "-m", *argv], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and "ModuleNotFoundError" not in done.stderr
    assert done.stderr == (
        f"error: python -m {argv[0]} {argv[1]}: this Python ({sys.executable}) does not have the package "
        f"'{module}'.\n"
        "Run it with the project's virtual environment: `source .venv/bin/activate` first (a checkout's\n"
        "./scripts/run creates .venv and renders the dev stack), or install the requirements into this\n"
        "Python: `python -m pip install -r requirements.txt`.\n"
    )


# --- Unknown keys: nested typos and snake_case -----------------------------------------------------


def problems(raw: dict) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_settings(raw)
    return [str(p) for p in info.value.problems]


def test_a_nested_typo_gets_a_suggestion():
    assert problems({"clusterName": "c", "systemNodeGroup": {"instanceType": ["t3.large"]}}) == [
        'gpu-eks:systemNodeGroup.instanceType: received ["t3.large"]; expected no such key; did you mean '
        "instanceTypes? (see the configuration reference, docs/configuration.md)"
    ]
    groups = [{"name": "t4", "instanceTypes": ["g4dn.xlarge"], "timeSlicing": {"replica": 2}}]
    assert problems({"clusterName": "c", "gpuNodeGroups": groups}) == [
        "gpu-eks:gpuNodeGroups[0].timeSlicing.replica: received 2; expected no such key; did you mean replicas? "
        "(see the configuration reference, docs/configuration.md)"
    ]


def test_an_unknown_key_like_no_other_gets_no_suggestion():
    assert problems({"clusterName": "c", "systemNodeGroup": {"colour": "blue"}}) == [
        'gpu-eks:systemNodeGroup.colour: received "blue"; expected no such key (a typo? see the configuration '
        "reference, docs/configuration.md)"
    ]


def test_snake_case_keys_are_refused_naming_the_camel_case_key():
    """One spelling per key (the README's, the stack file's, the component package's): a snake_case
    key used to be accepted silently, at any depth."""
    assert problems({"cluster_name": "c", "systemNodeGroup": {"instance_types": ["t3.large"]}}) == [
        "gpu-eks:clusterName: received nothing; expected a value",
        'gpu-eks:systemNodeGroup.instance_types: received ["t3.large"]; expected no such key; did you mean '
        "instanceTypes? (keys are camelCase) (see the configuration reference, docs/configuration.md)",
        'gpu-eks:cluster_name: received "c"; expected no such key; did you mean clusterName? (keys are camelCase) '
        "(see the configuration reference, docs/configuration.md)",
    ]
    # Python code building the models directly keeps the field names.
    assert load_settings({"clusterName": "c"}).cluster_name == "c"


# --- Stack files: YAML errors name the file; the project's stackConfigDir -------------------------


def test_a_yaml_error_names_the_stack_file(tmp_path: Path):
    (tmp_path / "Pulumi.yaml").write_text("name: gpu-eks\nruntime: python\nstackConfigDir: stacks\n")
    (tmp_path / "stacks").mkdir()
    path = tmp_path / "stacks" / "Pulumi.dev.yaml"
    path.write_text("config:\n  gpu-eks:clusterName: [unclosed\n")
    with pytest.raises(yaml.YAMLError) as info:
        stackfile.read_stack_config("dev", tmp_path)
    assert f'in "{path}", line 3' in str(info.value) or f'in "{path}", line 2' in str(info.value)
    assert "<unicode string>" not in str(info.value)


def test_stack_files_are_found_in_the_projects_stack_config_dir(tmp_path: Path):
    """Pulumi.yaml's stackConfigDir, else the project folder (the Pulumi CLI's default)."""
    (tmp_path / "Pulumi.yaml").write_text("name: consumer\nruntime: python\n")
    (tmp_path / "Pulumi.dev.yaml").write_text("config: {}\n")
    assert stackfile.stack_file("dev", tmp_path) == tmp_path.resolve() / "Pulumi.dev.yaml"
    assert stackfile.available_stacks(tmp_path) == ["dev"]
    (tmp_path / "Pulumi.yaml").write_text("name: consumer\nruntime: python\nstackConfigDir: config/stacks\n")
    (tmp_path / "config" / "stacks").mkdir(parents=True)
    (tmp_path / "config" / "stacks" / "Pulumi.prod.yaml").write_text("config: {}\n")
    assert stackfile.stack_file("prod", tmp_path) == tmp_path.resolve() / "config" / "stacks" / "Pulumi.prod.yaml"
    assert stackfile.available_stacks(tmp_path) == ["prod"]


def test_preflight_reads_a_consumer_projects_stack_file_and_prints_json_when_it_cannot_run(tmp_path: Path):
    """A consumer project with its stack files beside Pulumi.yaml (no stackConfigDir): preflight
    reads them; with --json, a run that cannot go on still prints a JSON object on stdout."""
    (tmp_path / "Pulumi.yaml").write_text("name: consumer\nruntime: python\n")
    config = {k: v for k, v in preflight_config().items() if k != "aws:region"}
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump({"config": config}, sort_keys=False))
    env = {k: v for k, v in preflight_env(tmp_path, None).items() if k not in ("AWS_REGION", "AWS_DEFAULT_REGION")}

    done = run_preflight(tmp_path, "dev", env, "--json")

    message = (
        f"no AWS region for stack 'dev': received no aws:region in {path.resolve()} and no AWS_REGION or "
        "AWS_DEFAULT_REGION; expected one of them"
    )
    assert done.returncode == 2, done.stderr
    assert json.loads(done.stdout) == {"error": message, "exitCode": 2}
    assert done.stderr == f"python -m components preflight: {message}\n"


def test_preflight_json_names_an_unknown_stack(tmp_path: Path):
    (tmp_path / "Pulumi.yaml").write_text("name: consumer\nruntime: python\n")
    done = run_preflight(tmp_path, "dev", preflight_env(tmp_path, None), "--json")
    assert done.returncode == 2
    error = json.loads(done.stdout)
    assert error["exitCode"] == 2
    assert (
        error["error"] == f"unknown stack 'dev': no stack file {tmp_path.resolve()}/Pulumi.dev.yaml (stacks here: none)"
    )
