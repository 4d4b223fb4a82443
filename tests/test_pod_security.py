"""A real policy scanner on what this library writes itself: checkov's one scan (tests/support/tools/checkov.py)
of the rendered dev stack's Kubernetes objects, the probe Jobs of MPS and exclusive groups, a
team's objects and its check Job, and the GitHub workflows. Every test reading the scan is here, so
one test process runs it (./scripts/test distributes whole modules)."""

from __future__ import annotations

import yaml

from tests.support.tools import checkov
from tests.support.tools.checkov import SKIPPED_CHECKS, library_scan


def test_the_scanned_objects_are_the_ones_this_library_writes():
    # Through YAML, as the scanner reads them.
    documents = yaml.safe_load_all(yaml.safe_dump_all(list(checkov.dev_objects()), sort_keys=True))
    kinds = [(o["kind"], o["metadata"]["name"]) for o in documents]
    assert kinds == [
        ("Namespace", "gpu-operator"),
        ("ConfigMap", "gpu-eks-dcgm-metrics"),
        ("Namespace", "gpu-timeslicing-check"),
        ("NetworkPolicy", "deny-all"),
        ("Job", "ts-warmup-t4-3d8fde30"),
        ("Job", "isolation-t4-f2c68900"),
        ("Job", "ts-check-t4-ee28b0f5"),
    ]


def test_the_verification_objects_pass_checkov():
    dev = library_scan()["dev"]
    assert dev.failures(SKIPPED_CHECKS) == []
    # The scanner really looked at the Jobs (a run that parsed nothing passes trivially).
    passed = dev.passes()
    job = "Job.gpu-timeslicing-check.ts-warmup-t4-3d8fde30"
    for check in (
        "CKV_K8S_23",  # root containers (runAsNonRoot)
        "CKV_K8S_20",  # allowPrivilegeEscalation false
        "CKV_K8S_22",  # read-only root filesystem
        "CKV_K8S_28",  # NET_RAW dropped
        "CKV_K8S_31",  # seccomp RuntimeDefault
        "CKV_K8S_37",  # capabilities dropped
        "CKV_K8S_38",  # no service-account token
        "CKV_K8S_40",  # a high UID
        "CKV_K8S_13",  # memory limits
    ):
        assert (check, job) in passed, check


def test_the_mps_and_exclusive_probe_jobs_pass_checkov():
    """The probe pods of MPS and exclusive groups (not in dev) meet the same checks."""
    probes = library_scan()["probes"]
    assert probes.failures(SKIPPED_CHECKS) == []
    passed = probes.passes()
    for job in ("Job.gpu-timeslicing-check.mps-check", "Job.gpu-timeslicing-check.exclusive"):
        for check in ("CKV_K8S_23", "CKV_K8S_22", "CKV_K8S_28", "CKV_K8S_38", "CKV_K8S_13"):
            assert (check, job) in passed, (check, job)
    # Beside dev's deny-all NetworkPolicy, as in every stack (CKV2_K8S_6 looks for it).
    assert ("CKV2_K8S_6", "Pod.gpu-timeslicing-check.mps-check.app.kubernetes.io/name-timeslicing-check-m") in passed


def test_the_teams_objects_pass_checkov():
    """A team's objects and its check (tests/test_teams_check.py's team ``ml``); one failure, by
    design: the check Job mounts its service-account token (CKV_K8S_38), the one thing it needs to
    ask the API server."""
    teams = library_scan()["teams"]
    job = "Job.gpu-timeslicing-check.gpu-eks-team-check-ml"
    assert teams.failures(SKIPPED_CHECKS) == [("CKV_K8S_38", job)]
    passed = teams.passes()
    for check in ("CKV_K8S_23", "CKV_K8S_20", "CKV_K8S_22", "CKV_K8S_28", "CKV_K8S_31", "CKV_K8S_37", "CKV_K8S_13"):
        assert (check, job) in passed, check
    # Its RBAC, read by checkov's graph checks (escalation, nodes/proxy, impersonation, secrets).
    for check in ("CKV2_K8S_1", "CKV2_K8S_2", "CKV2_K8S_3", "CKV2_K8S_4", "CKV2_K8S_5"):
        assert (check, "RoleBinding.ml.gpu-eks-team-check-ml") in passed, check


def test_the_skip_list_is_needed():
    """Each skipped check fails without its skip: an entry that no longer applies is removed."""
    assert {check for check, _ in library_scan()["dev"].failures()} == SKIPPED_CHECKS


def test_the_workflows_pass_checkov():
    workflows = library_scan()["workflows"]
    assert workflows.failures() == []
    assert len(workflows.passed) >= 100
