"""checkov (PyPI, pinned in requirements-checkov.txt), a real policy scanner, on what this library
writes itself: the rendered dev stack's Kubernetes objects (the verification namespace,
NetworkPolicy and Jobs; Helm releases are the charts' own objects, not ours), the probe Jobs of the
sharing modes dev does not have (MPS, exclusive), a team's objects and its check Job, and the
GitHub workflows (checkov's GitHub Actions framework).

One scan, once per test process, with no check skipped (tests/test_pod_security.py reads it): a
checkov run costs over two seconds of imports, and four runs cost ten. The Kubernetes
objects are scanned as one cluster would hold them: the probe and team Jobs sit in dev's
verification namespace beside its deny-all NetworkPolicy (checkov's CKV2_K8S_6 looks for it).

checkov is heavy and pins its own dependencies, so it lives in a tool virtualenv of its own,
never in .venv: ``./scripts/test`` creates ``.tools/checkov`` from requirements-checkov.txt, or
point ``GPU_EKS_CHECKOV`` at a checkov executable. Without one a local run skips, saying how to get
it; under CI (``GPU_EKS_REQUIRE_REFERENCE`` set, as .ci/run and the workflows do) it fails.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.support.paths import ROOT
from tests.support.reference import unavailable

#: Checks that do not fit, each with why. Everything else must pass.
SKIPPED_CHECKS = frozenset(
    {
        # "Image Pull Policy should be Always": the image reference names what runs; Always would make
        # every pod of the concurrency Job call the registry inside its 120 s start allowance
        # (jobs.START_ALLOWANCE_SECONDS), a registry hiccup failing the verification, for nothing.
        "CKV_K8S_15",
        # "Image should use digest": KNOWN GAP. The default image is the tag
        # nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0 (config/addons.py); its digest could not be
        # read from any public metadata reachable while this was written, and a digest must not be
        # guessed. A `verification.image` given as name:tag@sha256:… passes. Remove this entry once the
        # default carries its digest.
        "CKV_K8S_43",
    }
)
SCAN_TIMEOUT_SECONDS = 300
VERIFICATION_NAMESPACE = "gpu-timeslicing-check"
PROBE_IMAGE = "public.ecr.aws/docker/library/python:3.12-slim"


def executable() -> str:
    candidates = [os.environ.get("GPU_EKS_CHECKOV", ""), str(ROOT / ".tools" / "checkov" / "bin" / "checkov")]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("checkov")
    if found:
        return found
    message = (
        "checkov is not installed: ./scripts/test creates .tools/checkov from requirements-checkov.txt "
        "(or set GPU_EKS_CHECKOV to a checkov executable)"
    )
    unavailable(message)


# -- what is scanned ----------------------------------------------------------------------------------


@functools.cache
def dev_objects() -> tuple[dict[str, Any], ...]:
    """The dev stack's own Kubernetes objects, as rendered (Helm releases left out)."""
    from tooling import render

    document, _ = render.render_stack_document("dev", ROOT)
    return tuple(
        r["inputs"]
        for r in document["resources"]
        if r["type"].startswith("kubernetes:") and not r["type"].startswith("kubernetes:helm.sh/")
    )


def probe_objects() -> list[dict[str, Any]]:
    """The probe Jobs of an MPS group and of an exclusive group (dev has neither)."""
    from components.check.loading import load_settings
    from components.plan.group import plan_groups
    from components.verification import jobs

    groups = [{"name": "m", "mps": {"replicas": 4}}, {"name": "x", "timeSlicing": {"replicas": 1}}]
    mps, whole = plan_groups(load_settings({"clusterName": "c", "gpuNodeGroups": groups}).gpu_node_groups)
    specs = {
        "mps-check": jobs.concurrent_job_spec(mps, "img", PROBE_IMAGE),
        "exclusive": jobs.exclusive_job_spec(whole, PROBE_IMAGE),
    }
    return [job(name, spec) for name, spec in specs.items()]


def teams_objects() -> list[dict[str, Any]]:
    """Team ``ml`` of the teams' check Job's cluster (tests/data/samples.py CHECKED_TEAMS, which
    tests/test_teams_check.py checks): its check's egress policy, RBAC and Job, and the team's
    namespace, quota, limits and admission policy."""
    from components.check.loading import load_settings
    from components.teams import objects, policy, verification
    from tests.data.samples import CHECKED_TEAMS

    settings = load_settings(CHECKED_TEAMS)
    ml = settings.teams[0]
    return [
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "gpu-eks-team-check-api", "namespace": VERIFICATION_NAMESPACE},
            "spec": verification.API_EGRESS_POLICY_SPEC,
        },
        verification.service_account(ml, VERIFICATION_NAMESPACE),
        verification.role(ml),
        verification.role_binding(ml, VERIFICATION_NAMESPACE),
        job("gpu-eks-team-check-ml", verification.job_spec(ml, settings.plans, PROBE_IMAGE)),
        objects.namespace(ml),
        objects.resource_quota(ml),
        objects.limit_range(ml),
        policy.admission_policy(ml, settings.plans),
        policy.admission_binding(ml),
    ]


def job(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": VERIFICATION_NAMESPACE},
        "spec": spec,
    }


# -- the scan ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Findings:
    """One scanned file's checks, as (check id, resource) pairs."""

    passed: tuple[tuple[str, str], ...]
    failed: tuple[tuple[str, str], ...]

    def failures(self, skipped: Collection[str] = ()) -> list[tuple[str, str]]:
        return sorted(f for f in self.failed if f[0] not in skipped)

    def passes(self) -> set[tuple[str, str]]:
        return set(self.passed)


#: The scanned sets: file name -> its objects (``workflows``: .github/workflows, copied).
SETS = {"dev": dev_objects, "probes": probe_objects, "teams": teams_objects}


@functools.cache
def library_scan() -> dict[str, Findings]:
    """Findings by set (``dev``, ``probes``, ``teams``, ``workflows``) of one checkov run."""
    command = [executable()]
    with tempfile.TemporaryDirectory(prefix="gpu-eks-checkov-") as tmp:
        folder = Path(tmp)
        for name, build in SETS.items():
            (folder / f"{name}.yaml").write_text(yaml.safe_dump_all(list(build()), sort_keys=True))
        shutil.copytree(ROOT / ".github" / "workflows", folder / ".github" / "workflows")
        command += ["-d", str(folder), "--framework", "kubernetes", "github_actions", "--output", "json"]
        # The report in a file of its own (results_json.json): stdout may carry checkov's log lines.
        command += ["--output-file-path", str(folder / "report")]
        # Offline: no Prisma Cloud guideline download, no version check.
        command += ["--skip-download"]
        env = {**os.environ, "CHECKOV_RUN_SCA_PACKAGE_SCAN_V2": "false", "BC_SKIP_MAPPING": "TRUE"}
        done = subprocess.run(command, capture_output=True, text=True, timeout=SCAN_TIMEOUT_SECONDS, env=env)
        # Exit 1 means "a check failed", read below with its id; anything else is a scanner error.
        assert done.returncode in (0, 1), done.stdout[-4000:] + done.stderr[-4000:]
        reports = {r["check_type"]: r for r in json.loads((folder / "report" / "results_json.json").read_text())}
    assert sorted(reports) == ["github_actions", "kubernetes"], sorted(reports)
    found: dict[str, dict[str, list[tuple[str, str]]]] = {}
    for check_type, report in reports.items():
        for outcome in ("passed", "failed"):
            for check in report["results"][f"{outcome}_checks"]:
                name = "workflows" if check_type == "github_actions" else Path(check["file_path"]).stem
                found.setdefault(name, {"passed": [], "failed": []})[outcome].append(
                    (check["check_id"], check["resource"])
                )
    return {name: Findings(tuple(f["passed"]), tuple(f["failed"])) for name, f in found.items()}
