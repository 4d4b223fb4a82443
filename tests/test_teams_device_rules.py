"""The teams' policy against the two ways around the node's isolation (issue 40, section 3 "Team
isolation"), EVALUATED with CEL as tests/test_teams_policy.py does: a container the toolkit treats as
privileged (``CAP_SYS_ADMIN`` in its bounding set: privileged.go) and a ``/dev/null`` mount under
``/var/run/nvidia-container-devices`` (a device request: cuda_image.go ``requestsFromMounts``). What
each gets on a node is shown by the toolkit's compiled decision in tests/test_device_lists.py
(``CAP_SYS_ADMIN only``, ``hostPath /dev/null``); here: the policy refuses them in a team's
namespace, in every kind of container, whatever the namespace's Pod Security level (the policy is
the same object for every level), and admits what is harmless."""

from __future__ import annotations

from typing import Any

import pytest

from components.check.loading import load_settings
from components.teams import policy
from components.teams import verification as team_check
from tests.support.teams import cpu, cpu_pod, debug, gpu, gpu_pod, refused_by

PRIVILEGED = "team ml: rule privileged:"
DEVICE_MOUNTS = "team ml: rule device mounts:"
ROOT = "/var/run/nvidia-container-devices"
DEV_NULL = [{"name": "null", "hostPath": {"path": "/dev/null"}}]


def caps(*add: str) -> dict[str, Any]:
    return {"securityContext": {"capabilities": {"add": list(add)}}}


def mounted(path: str, name: str = "null") -> dict[str, Any]:
    return {"volumeMounts": [{"name": name, "mountPath": path}]}


def rules(messages: list[str]) -> list[str]:
    return [next(r for r in (PRIVILEGED, DEVICE_MOUNTS) if m.startswith(r)) for m in messages]


@pytest.mark.parametrize(
    ("name", "obj", "expected"),
    [
        (
            "a GPU pod's sidecar adding SYS_ADMIN",
            gpu_pod(containers=[gpu(), cpu(name="side", **caps("SYS_ADMIN"))]),
            [PRIVILEGED],
        ),
        ("lower case", cpu_pod(containers=[cpu(**caps("sys_admin"))]), [PRIVILEGED]),
        ("with the CAP_ prefix", cpu_pod(containers=[cpu(**caps("CAP_SYS_ADMIN"))]), [PRIVILEGED]),
        ("every capability", cpu_pod(containers=[cpu(**caps("NET_ADMIN", "ALL"))]), [PRIVILEGED]),
        ("an init container", gpu_pod(initContainers=[cpu(name="init", **caps("SYS_ADMIN"))]), [PRIVILEGED]),
        ("privileged", gpu_pod(containers=[gpu(securityContext={"privileged": True})]), [PRIVILEGED]),
        (
            "hostPath /dev/null at the device root, asking for every GPU",
            gpu_pod(containers=[gpu(), cpu(name="side", **mounted(f"{ROOT}/all"))], volumes=DEV_NULL),
            [DEVICE_MOUNTS],
        ),
        ("a GPU's UUID", cpu_pod(containers=[cpu(**mounted(f"{ROOT}/GPU-1"))], volumes=DEV_NULL), [DEVICE_MOUNTS]),
        (
            "the root's name run on (the toolkit's prefix test takes 'all')",
            cpu_pod(containers=[cpu(**mounted(f"{ROOT}all"))], volumes=DEV_NULL),
            [DEVICE_MOUNTS],
        ),
        (
            "another spelling of the path",
            cpu_pod(containers=[cpu(**mounted(f"/var//run/./{ROOT.rsplit('/', 1)[1]}/all"))], volumes=DEV_NULL),
            [DEVICE_MOUNTS],
        ),
        (
            "another spelling of /dev/null, in an init container",
            cpu_pod(
                initContainers=[cpu(name="init", **mounted(f"{ROOT}/all"))],
                volumes=[{"name": "null", "hostPath": {"path": "/dev//null"}}],
            ),
            [DEVICE_MOUNTS],
        ),
        (
            "both",
            cpu_pod(containers=[cpu(**caps("SYS_ADMIN"), **mounted(f"{ROOT}/all"))], volumes=DEV_NULL),
            [PRIVILEGED, DEVICE_MOUNTS],
        ),
    ],
)
def test_pods_around_the_isolation_are_refused(name, obj, expected):
    assert rules(refused_by(obj)) == expected, name


@pytest.mark.parametrize(
    ("name", "obj"),
    [
        ("another capability", cpu_pod(containers=[cpu(**caps("NET_ADMIN", "SYS_PTRACE"))])),
        ("privileged: false", gpu_pod(containers=[gpu(securityContext={"privileged": False})])),
        ("capabilities dropped", cpu_pod(containers=[cpu(securityContext={"capabilities": {"drop": ["ALL"]}})])),
        ("hostPath /dev/null elsewhere", cpu_pod(containers=[cpu(**mounted("/dev/null"))], volumes=DEV_NULL)),
        (
            "a volume under /var/run",
            cpu_pod(containers=[cpu(**mounted("/var/run/app", "data"))], volumes=[{"name": "data", "emptyDir": {}}]),
        ),
    ],
)
def test_what_is_harmless_is_admitted(name, obj):
    assert refused_by(obj) == [], name


def test_an_ephemeral_container_may_not_be_privileged_nor_mount_the_device_root():
    running = gpu_pod(volumes=DEV_NULL)
    sysadmin = debug(running, securityContext={"privileged": True})
    assert rules(refused_by(sysadmin, operation="UPDATE", sub="ephemeralcontainers")) == [PRIVILEGED]
    mount = debug(running, volumeMounts=[{"name": "null", "mountPath": f"{ROOT}/all"}])
    assert rules(refused_by(mount, operation="UPDATE", sub="ephemeralcontainers")) == [DEVICE_MOUNTS]


def test_the_rules_are_the_same_whatever_the_pod_security_level():
    for level in ("privileged", "baseline", "restricted"):
        settings = load_settings(
            {
                "clusterName": "c",
                "gpuNodeGroups": [{"name": "t4"}],
                "teams": [{"name": "ml", "nodeGroups": ["t4"], "podSecurity": level}],
            }
        )
        (team,) = settings.teams
        messages = [v["message"] for v in policy.admission_policy(team, settings.plans)["spec"]["validations"]]
        assert [m for m in messages if m.startswith((PRIVILEGED, DEVICE_MOUNTS))] == [
            policy.privileged_message(team),
            policy.device_mounts_message(team),
        ]


def test_the_teams_check_probes_both_rules():
    """The device-mount probe mounts an emptyDir (every Pod Security level admits one); the privileged
    probe only where the namespace's level admits a privileged container (elsewhere Pod Security
    admission, which runs first, refuses it anyway)."""
    settings = load_settings(
        {
            "clusterName": "c",
            "gpuNodeGroups": [{"name": "t4"}, {"name": "a10g", "instanceTypes": ["g5.xlarge"]}],
            "teams": [
                {"name": "ml", "nodeGroups": ["t4"], "podSecurity": "privileged"},
                {"name": "cv", "nodeGroups": ["a10g"]},
            ],
        }
    )
    ml, cv = settings.teams
    by_name = {c["name"]: c for c in team_check.cases(ml, settings.plans, "busybox")}
    assert by_name["privileged"]["refusedWith"] == "team ml: rule privileged:"
    (container,) = by_name["privileged"]["pod"]["spec"]["containers"]
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["SYS_ADMIN"]}
    assert by_name["device-mounts"]["refusedWith"] == "team ml: rule device mounts:"
    probe = by_name["device-mounts"]["pod"]["spec"]
    assert {"name": "device-root", "mountPath": f"{ROOT}/all"} in probe["containers"][0]["volumeMounts"]
    assert {"name": "device-root", "emptyDir": {}} in probe["volumes"]
    cases = [c["name"] for c in team_check.cases(cv, settings.plans, "busybox")]
    assert "device-mounts" in cases and "privileged" not in cases
    # Each probe breaks its rule only.
    for case in (by_name["privileged"], by_name["device-mounts"]):
        assert [m.split(":")[1] for m in refused_by(case["pod"], policy.admission_policy(ml, settings.plans))] == [
            f" rule {case['refusedWith'].split(' rule ')[1].rstrip(':')}"
        ]
