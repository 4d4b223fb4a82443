"""A GPU node for the boot-stage tests: its GPUs (the ``nvidia-smi`` stand-in's state) and a run of a
boot script on it, with the tools on its PATH answered by the stand-in (``nvidia_smi.served``)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from tests.support.reference import load_reference_yaml
from tests.support.standins import nvidia_smi as standin
from tests.support.standins.crds import strict

TOOLS = ("nvidia-smi", "nvidia-ctk", "systemctl", "logger", "sleep")


class Node:
    """A node's GPUs (the stand-in's state) and a run of the boot script on it."""

    port = 0  # the served stand-in's: set by the test module's fixture

    def __init__(
        self,
        tmp: Path,
        model: str,
        gpus: int,
        hold: str = "none",
        fail: tuple[str, ...] = (),
        state_dir: Path | None = None,
    ):
        self.tmp = tmp
        self.bin = tmp / "bin"
        self.bin.mkdir()
        standin.install(self.bin, TOOLS, self.port)
        self.state_file = tmp / "gpus.json"
        self.log = tmp / "calls.log"
        self.state_dir = state_dir or tmp / "state"
        self.drop_in = tmp / "nodeadm.d" / "90-gpu-eks-boot.yaml"
        gpu = {"current": "Disabled", "pending": "Disabled", "instances": []}
        gpu_states = [dict(gpu) for _ in range(gpus)]
        self.write({"model": model, "gpus": gpu_states, "hold": hold, "fail": list(fail), "toolkit": {}})

    def read(self) -> dict:
        return json.loads(self.state_file.read_text())

    def write(self, state: dict) -> None:
        self.state_file.write_text(json.dumps(state))

    def env(self) -> dict[str, str]:
        return {
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "STANDIN_STATE": str(self.state_file),
            "STANDIN_LOG": str(self.log),
            "GPU_EKS_STATE_DIR": str(self.state_dir),
            "GPU_EKS_NODEADM_DROP_IN": str(self.drop_in),
        }

    def run(self, script: str) -> tuple[int, list[str], str]:
        """Run ``script``; its exit status, the calls it made (this run only) and its stderr."""
        self.log.write_text("")
        path = self.tmp / "gpu-eks-boot"
        path.write_text(script)
        done = subprocess.run(["bash", str(path)], env=self.env(), capture_output=True, text=True, timeout=60)
        return done.returncode, self.log.read_text().splitlines(), done.stderr

    def reboot(self) -> None:
        """A reboot: pending MIG modes take effect, MIG instances are gone (MIG user guide)."""
        state = self.read()
        for gpu in state["gpus"]:
            gpu["current"], gpu["instances"] = gpu["pending"], []
        self.write(state)

    def layouts(self) -> list[list[str]]:
        return [sorted(p for p, *_ in g["instances"]) for g in self.read()["gpus"]]

    def drop_in_document(self) -> dict[str, Any]:
        """The stage's nodeadm drop-in, valid against nodeadm's NodeConfig CRD (or the test fails)."""
        doc = yaml.safe_load(self.drop_in.read_text())
        crd = load_reference_yaml("nodeadm/node.eks.aws_nodeconfigs.yaml")
        jsonschema.validate(doc, strict(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]))
        return doc

    def drop_in_flags(self) -> list[str]:
        """The kubelet flags of the stage's nodeadm drop-in."""
        return self.drop_in_document()["spec"]["kubelet"]["flags"]
