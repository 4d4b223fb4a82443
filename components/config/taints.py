"""A node taint, and the rules on a group's taints (unique by key and effect, none of the node boot
stage's keys)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from ..catalog import labels
from .errors import KeyedProblem, KeyedProblems
from .fields import LabelValue, QualifiedName, _Model, doc


# The one taint type of the library: settings, group plans, user data, tolerations, autoscaler tags.
class Taint(_Model):
    """A node taint, applied by kubelet (``--register-with-taints``) through nodeadm.

    kubelet parses it with k8s.io/kubernetes pkg/util/taints ParseTaints (key a qualified name,
    value a label value, a known effect); the API server validates the Node with
    pkg/apis/core/validation validateNodeTaints (the same rules, plus unique key+effect pairs:
    checked per group in GpuNodeGroupSettings)."""

    # The schema's type name, whatever this class is called (python -m tooling docs).
    model_config = ConfigDict(title="TaintSpec")

    key: QualifiedName = Field(
        **doc(
            "Taint key: a Kubernetes qualified name (optional DNS-subdomain prefix and `/`, then a name of at most 63 "
            "characters).",
            type="qualified name",
            default="required",
        )
    )
    value: LabelValue = Field("", **doc("Taint value: a Kubernetes label value.", type="label value", default="empty"))
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = Field(
        **doc("Taint effect.", type="`NoSchedule` | `PreferNoSchedule` | `NoExecute`", default="required")
    )

    def kubelet_form(self) -> str:
        """``key=value:Effect`` (or ``key:Effect``), the syntax of ``--register-with-taints``."""
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


#: The taint every GPU node group carries unless its config says otherwise.
DEFAULT_GPU_TAINT = Taint(key="nvidia.com/gpu", value="true", effect="NoSchedule")

#: The keys the node boot stage registers nodes with (components/plan/boot.py: ``=pending`` until
#: the stage succeeded, ``-failed=<reason>`` when it failed).
BOOT_STAGE_TAINT_KEYS = (labels.BOOT_STAGE_KEY, labels.BOOT_STAGE_FAILED_KEY)


def group_taints(taints: tuple[Taint, ...]) -> tuple[Taint, ...]:
    """A group's taints, or every problem with them."""
    # The API server refuses a Node whose taints repeat a key+effect pair ("taints must be unique
    # by key and effect pair": k8s.io/kubernetes pkg/apis/core/validation validateNodeTaints),
    # and kubelet's ParseTaints refuses the flag ("duplicated taints with the same key and
    # effect", pkg/util/taints/taints.go): the node would never join.
    first: dict[tuple[str, str], int] = {}
    problems: list[KeyedProblem] = []
    for i, t in enumerate(taints):
        seen = first.setdefault((t.key, t.effect), i)
        if seen != i:
            problems.append(
                (
                    (i,),
                    t.model_dump(by_alias=True, exclude_defaults=True),
                    f"a taint whose key and effect differ from taints[{seen}] ({t.key}:{t.effect}): "
                    "a Node's taints must be unique by key and effect, or the API server refuses it",
                )
            )
        if t.key in BOOT_STAGE_TAINT_KEYS:
            problems.append(
                (
                    (i, "key"),
                    t.key,
                    f"a key the node boot stage does not set itself ({', '.join(BOOT_STAGE_TAINT_KEYS)}): it "
                    "registers every node with them until its stage succeeded or when it failed "
                    "(docs/node-boot-stage.md), and kubelet refuses a key and effect twice",
                )
            )
    if problems:
        raise KeyedProblems(problems)
    return taints
