"""The teams' check Job (components/teams/verification.py), RUN: its script talks HTTPS to a stand-in API
server that admits pods as the real one would with the team's objects (the placement policy's CEL
evaluated by a CEL implementation, the ResourceQuota's sum of requests), so the check passes against
enforcing objects and fails against a server that admits everything. Also: its RBAC is one verb, its
objects validate, every pod meets the restricted Pod Security Standard (checkov's findings on them:
tests/test_pod_security.py).

What the stand-in does not do: LimitRange defaulting, Pod Security admission, authentication beyond
the bearer token. The refusal texts are the API server's: ValidatingAdmissionPolicy "... denied
request: <message>" (k8s.io/apiserver pkg/admission/plugin/policy/validating dispatcher.go), quota
"exceeded quota: <name>, requested: ..., used: ..., limited: ..." (k8s.io/apiserver
pkg/admission/plugin/resourcequota controller.go), as JSON with Go's HTML escaping of < and >.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from components.check.loading import load_settings
from components.teams import policy, verification
from tests.data.samples import CHECKED_TEAMS
from tests.support.standins.admission import refusals

#: The teams' check Job's cluster (tests/data/samples.py CHECKED_TEAMS; checkov scans team ml's objects too).
SETTINGS = load_settings(CHECKED_TEAMS)
ML, CV = SETTINGS.teams
TOKEN = "test-token"


class _ApiServer(BaseHTTPRequestHandler):
    team = ML
    enforce = True
    requests: list[dict[str, Any]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self, code: int, body: dict[str, Any]) -> None:
        # Go's encoding/json escapes <, > and & (HTML-safe), as the API server's responses do.
        raw = json.dumps(body).replace("<", "\\u003c").replace(">", "\\u003e").encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_POST(self) -> None:
        pod = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "pod": pod})
        ns = self.team.namespace_name
        if (
            self.path != f"/api/v1/namespaces/{ns}/pods?dryRun=All"
            or self.headers["Authorization"] != f"Bearer {TOKEN}"
        ):
            return self._answer(400, {"message": f"unexpected request {self.path}"})
        kubernetes_validate.validate(pod, "1.35.0", strict=True)
        name = pod["metadata"]["name"]
        if self.enforce:
            refused = refusals(policy.admission_policy(self.team, SETTINGS.plans), pod)
            if refused:
                message = (
                    f"pods \"{name}\" is forbidden: ValidatingAdmissionPolicy 'gpu-eks-team-{self.team.name}' "
                    f"with binding 'gpu-eks-team-{self.team.name}' denied request: {refused[0]}"
                )
                return self._answer(403, {"kind": "Status", "message": message, "reason": "Forbidden"})
            for resource, hard in self.team.quota.items():
                asked = sum(int(c["resources"]["limits"].get(resource, 0)) for c in pod["spec"]["containers"])
                if asked > hard:
                    message = (
                        f'pods "{name}" is forbidden: exceeded quota: gpu-eks-team-{self.team.name}, requested: '
                        f"requests.{resource}={asked}, used: requests.{resource}=0, limited: requests.{resource}={hard}"
                    )
                    return self._answer(403, {"kind": "Status", "message": message, "reason": "Forbidden"})
        return self._answer(201, pod)


@pytest.fixture(scope="module")
def tls(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("sa")
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"),
            *("-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(where / "key"), "-out", str(where / "ca.crt")),
        ],
        check=True,
        capture_output=True,
    )
    (where / "token").write_text(TOKEN)
    return where


def run_check(tls: Path, team, enforce: bool) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    handler = type("Handler", (_ApiServer,), {"team": team, "enforce": enforce, "requests": []})
    server = HTTPServer(("127.0.0.1", 0), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls / "ca.crt", tls / "key")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        spec = verification.job_spec(team, SETTINGS.plans, "python:3.12-slim")
        container = spec["template"]["spec"]["containers"][0]
        env = {e["name"]: e["value"] for e in container["env"]}
        env.update(
            KUBERNETES_SERVICE_HOST="127.0.0.1", KUBERNETES_SERVICE_PORT=str(server.server_port), RETRY_SECONDS="0"
        )
        script = container["command"][2].replace("/var/run/secrets/kubernetes.io/serviceaccount", str(tls))
        done = subprocess.run(
            [sys.executable, "-c", script], env={**os.environ, **env}, capture_output=True, text=True, timeout=60
        )
    finally:
        server.shutdown()
    return done, handler.requests


def test_the_check_passes_against_the_teams_objects(tls):
    done, requests = run_check(tls, ML, enforce=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [line.split(":")[0] for line in done.stdout.splitlines()] == [
        "OK   admitted",
        "OK   outside-groups",
        "OK   device-variable",
        "OK   env-from",
        "OK   node-name",
        "OK   gpu-taints",
        "OK   gpu-labels",
        "OK   device-mounts",
        "OK   over-quota",
    ]
    # One request per case, all dry runs: nothing is created.
    assert len(requests) == 9
    over = requests[8]["pod"]["spec"]["containers"]
    assert [c["resources"]["limits"]["nvidia.com/gpu"] for c in over] == [2, 2, 2]  # 6 = quota 5 + 1, max 2 each


def test_the_check_fails_against_a_server_that_admits_everything(tls):
    done, _ = run_check(tls, ML, enforce=False)
    assert done.returncode == 1
    assert [line.split(":")[0] for line in done.stdout.splitlines()] == [
        "OK   admitted",
        "FAIL outside-groups",
        "FAIL device-variable",
        "FAIL env-from",
        "FAIL node-name",
        "FAIL gpu-taints",
        "FAIL gpu-labels",
        "FAIL device-mounts",
        "FAIL over-quota",
    ]


def test_a_team_without_quota_checks_placement_only(tls):
    done, requests = run_check(tls, CV, enforce=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [r["pod"]["metadata"]["name"] for r in requests] == [
        "gpu-eks-team-check-cv-admitted",
        "gpu-eks-team-check-cv-outside",
        "gpu-eks-team-check-cv-device-variable",
        "gpu-eks-team-check-cv-env-from",
        "gpu-eks-team-check-cv-node-name",
        "gpu-eks-team-check-cv-gpu-taints",
        "gpu-eks-team-check-cv-gpu-labels",
        "gpu-eks-team-check-cv-device-mounts",
    ]
    # The pod outside selects the other group (t4).
    assert requests[1]["pod"]["spec"]["nodeSelector"] == {"gpu-eks.io/node-group": "t4"}


def test_the_checks_rbac_is_create_pods_in_the_teams_namespace_only():
    assert verification.role(ML)["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]}]
    assert verification.role(CV)["metadata"]["namespace"] == "vision"
    binding = verification.role_binding(CV, "gpu-timeslicing-check")
    assert binding["metadata"]["namespace"] == "vision"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "gpu-eks-team-check-cv", "namespace": "gpu-timeslicing-check"}
    ]
    assert verification.API_EGRESS_POLICY_SPEC == {
        "podSelector": {
            "matchLabels": {"app.kubernetes.io/managed-by": "gpu-eks", "app.kubernetes.io/component": "team-check"}
        },
        "policyTypes": ["Egress"],
        "egress": [{"ports": [{"protocol": "TCP", "port": 443}]}],
    }


def test_the_check_objects_validate_and_meet_restricted():
    objects = [
        verification.service_account(ML, "gpu-timeslicing-check"),
        verification.role(ML),
        verification.role_binding(ML, "gpu-timeslicing-check"),
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "gpu-eks-team-check-ml", "namespace": "gpu-timeslicing-check"},
            "spec": verification.job_spec(ML, SETTINGS.plans, "python:3.12-slim"),
        },
    ]
    for obj in objects:
        kubernetes_validate.validate(obj, "1.35.0", strict=True)
    pods = [objects[3]["spec"]["template"]["spec"]] + [
        c["pod"]["spec"] for c in verification.cases(ML, SETTINGS.plans, "python:3.12-slim")
    ]
    for spec in pods:
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert all(c["securityContext"]["capabilities"] == {"drop": ["ALL"]} for c in spec["containers"])
    # Only the check's own pod carries a token; the probes it asks for do not.
    assert [p["automountServiceAccountToken"] for p in pods] == [True] + [False] * 9
