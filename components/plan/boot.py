"""The boot stage of a GPU node: what runs on every boot after the driver is up and before kubelet.

A pure builder (no Pulumi, no I/O, nothing imported from the plan): from a group's GPU count, MIG
layout and taints it makes the text that goes into the group's user data (a cloud-init shell part,
``user_data_part``), which writes and starts a systemd unit and its script. Only what the AL2023
NVIDIA AMI ships is used: the driver's ``nvidia-smi`` and the toolkit's ``nvidia-ctk``; nothing is
downloaded at boot (../shared/reference/amazon-eks-ami SOURCE.md: no MIG tooling besides
``nvidia-smi``).

Order (the AMI's units, awslabs/amazon-eks-ami v20260724 ``templates/al2023/runtime``; tested by
parsing them in tests/test_boot_stage.py): cloud-init's ``cloud-final`` runs the shell part on the
first boot, which starts the unit; ``nodeadm-run.service`` (``After=cloud-final.service``) starts
kubelet only after it. The unit is enabled (``WantedBy=multi-user.target``) and ordered
``Before=nodeadm-run.service kubelet.service``: kubelet, enabled by nodeadm once, starts on a later
boot without ``nodeadm-run``; a kubelet drop-in ``Requires=`` the unit, so kubelet never starts
after a failed stage on a later boot. ``After=`` the driver's units (``nvidia-kmod-load``,
``nvidia-persistenced``, ``nvidia-fabricmanager``): the GPUs are up and NVLink trained.

What it does:

1. **Isolation** (every GPU group): the host toolkit's two device-list keys, as
   ``gpuOperator.isolation`` chooses them (config/isolation.py; ``enforced``: refuse
   ``NVIDIA_VISIBLE_DEVICES`` from unprivileged containers, take the device list from volume mounts;
   ``migrating``: accept both): ``nvidia-ctk config --in-place --set <key>=<value> ...``
   (NVIDIA/nvidia-container-toolkit: the TOML keys of ``internal/config/config.go`` v1.14.0-v1.18.0,
   ``api/config/v1/config.go`` v1.19.1-v1.20.0, defaults ``true``/``false``; ``nvidia-ctk config --set
   --in-place`` at each, on ``/etc/nvidia-container-runtime/config.toml``). The runtime reads the file
   for every container, so no restart. What a container then gets: catalog/device_lists.py.
2. **MIG** (a group with a layout): per GPU, MIG mode on (``nvidia-smi -i <i> -mig 1``), then, if
   the GPU's MIG devices (``nvidia-smi -i <i> -L``) are not the layout, every compute and GPU
   instance destroyed and the layout's GPU instances created with a default compute instance each
   at the catalog's placements, largest first (``nvidia-smi mig -i <i> -cgi
   <profile>:<start>,... -C``; NVIDIA MIG user guide, "Getting Started with MIG": ``-cgi`` takes
   profile names or IDs, ``-C`` creates the default compute instance; nvidia-smi's help for ``-cgi``:
   each profile with an optional ``:<placement start>``; placements: catalog/mig.py ``placements``).
   If the driver refuses the placements, the same profiles are created in the same order at the
   driver's own placements, and the result is checked like any other. MIG instances do not survive a
   reboot (MIG user guide: "the GPU instances and compute instances ... are not persistent across
   reboots"), so every boot checks; a right layout is left alone.

   **Pending MIG mode.** On the A100 the driver resets the GPU to enable MIG mode and leaves the
   change pending while a client holds the GPU; from Hopper on no reset is needed (MIG user guide,
   "Enable MIG Mode"; gpu-operator#1606). Before kubelet no pod holds a GPU, only the AMI's
   ``nvidia-persistenced`` and ``nvidia-fabricmanager`` (and no DCGM: it runs in the operator's
   pods, after kubelet): the stage stops them, resets every GPU at once (``nvidia-smi -r``: on
   NVSwitch systems, the p4d/p5 families, all GPUs together with the fabric manager stopped),
   starts them again. Still pending: it reboots once (the mode is applied at boot), guarded by a
   marker in ``/var/lib/gpu-eks``; pending again after that reboot is a failure.

**Failure** (a layout that cannot be applied, the toolkit not configurable, a GPU missing): the node
must never take GPU pods nor advertise whole GPUs. The stage logs ``gpu-eks-boot: FAILED (<reason>)``
to the journal (``journalctl -u gpu-eks-boot``) and writes a nodeadm drop-in
(``/etc/eks/nodeadm.d/``, read by ``nodeadm-run``: ``--config-source file:///etc/eks/nodeadm.d/``
after the user data; its kubelet flags appended last, nodeadm/internal/api/merge.go
``mergeKubeletFlags``, kubelet/environment.go) with the group's taints plus ``FAILED_TAINT_KEY``
(``NoSchedule``) and the label ``FAILED_LABEL``: kubelet's ``--register-with-taints`` keeps the last
value (kubernetes pkg/util/flag ``RegisterWithTaintsVar.Set`` replaces), so the list repeats the
group's taints (and Karpenter's ``karpenter.sh/unregistered``, which its NodeConfig would otherwise
carry in ``registerWithTaints``: a flag wins over the config file). No operator DaemonSet tolerates
the taint, so no device plugin runs there and nothing is advertised. Taints are taken at
registration only; on a later boot (the node registered before) the stage fails the unit instead,
and kubelet (``Requires=``) does not start: the node goes NotReady.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..catalog import mig as mig_catalog
from ..config.groups import Taint
from ..config.isolation import ENFORCED, ISOLATIONS

UNIT_NAME = "gpu-eks-boot.service"
SCRIPT_PATH = "/usr/local/sbin/gpu-eks-boot"
UNIT_PATH = f"/etc/systemd/system/{UNIT_NAME}"
KUBELET_DROP_IN_PATH = "/etc/systemd/system/kubelet.service.d/90-gpu-eks-boot.conf"
#: Where the stage keeps its markers (the root volume: they survive a reboot).
STATE_DIR = "/var/lib/gpu-eks"
#: nodeadm's drop-in directory (nodeadm-run.service ``--config-source file:///etc/eks/nodeadm.d/``).
NODEADM_DROP_IN = "/etc/eks/nodeadm.d/90-gpu-eks-boot-failed.yaml"
#: The taint a node registers with when its boot stage failed (value: the reason).
FAILED_TAINT_KEY = "gpu-eks.io/boot-stage-failed"
#: The label it registers with then (``kubectl get nodes -l gpu-eks.io/boot-stage=failed``).
FAILED_LABEL = "gpu-eks.io/boot-stage"
#: Karpenter's startup taint, in its NodeConfig's ``registerWithTaints`` (kubernetes-sigs/karpenter
#: pkg/apis/v1/taints.go ``UnregisteredNoExecuteTaint``; aws/karpenter-provider-aws v1.14.1
#: pkg/providers/amifamily/bootstrap/nodeadm.go ``generateInlineKubeletConfiguration``).
KARPENTER_UNREGISTERED = "karpenter.sh/unregistered:NoExecute"
#: Exit status of a failed stage on the first boot: the unit counts it as success
#: (``SuccessExitStatus=``), so kubelet starts and registers the node with the failure taint.
FIRST_BOOT_FAILURE_STATUS = 3

#: The toolkit settings of a node of a cluster whose isolation is enforced (the default of
#: ``script_text`` and ``boot_stage``; the plan passes its cluster's: config/isolation.py).
ENFORCED_TOOLKIT_SETTINGS = ISOLATIONS[ENFORCED].toolkit_settings


@dataclass(frozen=True)
class BootStage:
    """The boot stage of one GPU node group: the files it writes and the user-data part."""

    #: The bash script the unit runs (SCRIPT_PATH).
    script: str
    #: The systemd unit (UNIT_PATH).
    unit: str
    #: kubelet's drop-in (KUBELET_DROP_IN_PATH): kubelet requires the stage.
    kubelet_drop_in: str
    #: The cloud-init shell part (``text/x-shellscript``) that writes the three and starts the unit.
    user_data_part: str


def mig_creation(gpu: mig_catalog.MigGpu, layout: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    """The GPU instances of ``layout`` on one ``gpu``, as (profile, placement start), in creation
    order: the catalog's placement, largest first. Raises ValueError for a layout that does not fit
    (the settings refuse it first: catalog/mig.py ``layout_problem``)."""
    problem = mig_catalog.layout_problem(gpu, layout)
    found = None if problem else mig_catalog.placements([gpu.profiles[p] for p, n in layout.items() for _ in range(n)])
    if found is None:
        raise ValueError(f"MIG layout {dict(layout)} does not fit the {gpu.name}: {problem or 'no placement'}")
    return tuple((p.name, start) for p, start in found)


def unit_text() -> str:
    """The systemd unit (ordering: see the module docstring)."""
    return f"""[Unit]
Description=gpu-eks boot stage: container toolkit isolation and the MIG layout, before kubelet
After=nvidia-kmod-load.service nvidia-persistenced.service nvidia-fabricmanager.service
Before=nodeadm-run.service kubelet.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart={SCRIPT_PATH}
SuccessExitStatus={FIRST_BOOT_FAILURE_STATUS}
TimeoutStartSec=20min
SyslogIdentifier=gpu-eks-boot
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=multi-user.target
"""


def kubelet_drop_in_text() -> str:
    """kubelet's drop-in: it starts only after the stage, and not at all if the stage failed."""
    return f"""[Unit]
Requires={UNIT_NAME}
After={UNIT_NAME}
"""


def registration_taints(taints: Sequence[Taint], karpenter: bool) -> list[str]:
    """The taints a failed node registers with, before the failure taint, in kubelet's form."""
    return [t.kubelet_form() for t in taints] + ([KARPENTER_UNREGISTERED] if karpenter else [])


_SCRIPT = r"""#!/bin/bash
# gpu-eks boot stage (generated by gpu-eks-components, components/plan/boot.py;
# docs/node-boot-stage.md). Runs before kubelet on every boot.
set -u
export LC_ALL=C
STATE_DIR="${GPU_EKS_STATE_DIR:-@STATE_DIR@}"
NODEADM_DROP_IN="${GPU_EKS_NODEADM_DROP_IN:-@NODEADM_DROP_IN@}"
GPUS=@GPUS@
# Per GPU: the MIG devices the layout gives (sorted) and the GPU instances to create.
MIG_EXPECTED="@MIG_EXPECTED@"
MIG_CREATE="@MIG_CREATE@"
MIG_PROFILES="@MIG_PROFILES@"
TAINTS="@TAINTS@"

log() { echo "gpu-eks-boot: $*" >&2; }

done_ok() {
  mkdir -p "$STATE_DIR" && touch "$STATE_DIR/kubelet-started"
  rm -f "$STATE_DIR/rebooted-for-mig"
  log "done: the node is ready for kubelet"
  exit 0
}

fail() {
  reason="$1"; shift
  log "FAILED ($reason): $*; no GPU pod may run here, replace the node (docs/node-boot-stage.md)"
  logger -t gpu-eks-boot -p daemon.err "FAILED ($reason): $*" || true
  mkdir -p "$(dirname "$NODEADM_DROP_IN")" "$STATE_DIR"
  taints="@FAILED_TAINT_KEY@=$reason:NoSchedule"
  [ -n "$TAINTS" ] && taints="$TAINTS,$taints"
  printf '%s\n' \
    "apiVersion: node.eks.aws/v1alpha1" \
    "kind: NodeConfig" \
    "spec:" \
    "  kubelet:" \
    "    flags:" \
    "      - --register-with-taints=$taints" \
    "      - --node-labels=@FAILED_LABEL@=failed" > "$NODEADM_DROP_IN"
  if [ -e "$STATE_DIR/kubelet-started" ]; then
    log "the node registered before: its taints stay as they were, so kubelet does not start"
    exit 1
  fi
  touch "$STATE_DIR/kubelet-started"
  exit @FIRST_BOOT_FAILURE_STATUS@
}

isolate() {
  nvidia-ctk config --in-place@TOOLKIT_SETS@ \
    || fail isolation "nvidia-ctk could not configure the container toolkit"
}

# @MIG-BEGIN@
mig_mode() {
  nvidia-smi -i "$1" --query-gpu=mig.mode.current,mig.mode.pending --format=csv,noheader | tr -d ' '
}

mig_devices() {
  nvidia-smi -i "$1" -L | awk '$1 == "MIG" { print $2 }' | sort | tr '\n' ' ' | sed 's/ $//'
}

reset_gpus() {
  log "MIG mode pending on GPU(s)$1: resetting the GPUs with their clients stopped"
  systemctl stop nvidia-persistenced.service nvidia-fabricmanager.service || true
  nvidia-smi -r || log "nvidia-smi -r failed"
  systemctl start nvidia-fabricmanager.service nvidia-persistenced.service || true
}

reboot_once() {
  if [ -e "$STATE_DIR/rebooted-for-mig" ]; then
    fail mig-mode "MIG mode still pending on GPU(s)$1 after a GPU reset and a reboot"
  fi
  mkdir -p "$STATE_DIR" && touch "$STATE_DIR/rebooted-for-mig"
  log "MIG mode still pending on GPU(s)$1 after a GPU reset: rebooting once"
  systemctl reboot
  sleep 600
  exit 1
}

apply_mig() {
  indexes=$(nvidia-smi --query-gpu=index --format=csv,noheader) \
    || fail mig-layout "nvidia-smi cannot list the GPUs"
  count=$(printf '%s\n' "$indexes" | grep -c .)
  [ "$count" = "$GPUS" ] || fail mig-layout "nvidia-smi lists $count GPU(s), the instance type has $GPUS"
  pending=""
  for i in $indexes; do
    case "$(mig_mode "$i")" in
      Enabled,*) continue ;;
    esac
    nvidia-smi -i "$i" -mig 1 || true
    case "$(mig_mode "$i")" in
      Enabled,*) ;;
      *,Enabled) pending="$pending $i" ;;
      *) fail mig-mode "nvidia-smi could not enable MIG mode on GPU $i" ;;
    esac
  done
  if [ -n "$pending" ]; then
    reset_gpus "$pending"
    still=""
    for i in $pending; do
      case "$(mig_mode "$i")" in
        Enabled,*) ;;
        *) still="$still $i" ;;
      esac
    done
    [ -z "$still" ] || reboot_once "$still"
  fi
  for i in $indexes; do
    [ "$(mig_devices "$i")" = "$MIG_EXPECTED" ] && continue
    log "GPU $i: MIG devices '$(mig_devices "$i")', creating '$MIG_EXPECTED'"
    nvidia-smi mig -i "$i" -dci || true
    nvidia-smi mig -i "$i" -dgi || true
    if ! nvidia-smi mig -i "$i" -cgi "$MIG_CREATE" -C; then
      log "GPU $i: creating at the placements failed, trying the driver's placements ($MIG_PROFILES)"
      nvidia-smi mig -i "$i" -dci || true
      nvidia-smi mig -i "$i" -dgi || true
      nvidia-smi mig -i "$i" -cgi "$MIG_PROFILES" -C \
        || fail mig-layout "nvidia-smi could not create $MIG_CREATE on GPU $i"
    fi
    [ "$(mig_devices "$i")" = "$MIG_EXPECTED" ] \
      || fail mig-layout "GPU $i has MIG devices '$(mig_devices "$i")', expected '$MIG_EXPECTED'"
  done
}

# @MIG-END@
isolate
[ -z "$MIG_CREATE" ] || apply_mig
done_ok
"""


def script_text(
    gpus: int,
    creation: Sequence[tuple[str, int]],
    registration: Sequence[str],
    toolkit: Sequence[tuple[str, str]] = ENFORCED_TOOLKIT_SETTINGS,
) -> str:
    """The unit's bash script for a node of ``gpus`` GPUs, each given the GPU instances of
    ``creation`` (empty: no MIG), failing with the taints of ``registration`` before its own, setting
    the toolkit keys of ``toolkit`` (``isolate``)."""
    for value in registration:
        if any(c in value for c in "\"'$`\\ \n"):
            raise ValueError(f"taint {value!r} cannot go into the boot script")
    values = {
        "STATE_DIR": STATE_DIR,
        "NODEADM_DROP_IN": NODEADM_DROP_IN,
        "GPUS": str(gpus),
        "MIG_EXPECTED": " ".join(sorted(p for p, _ in creation)),
        "MIG_CREATE": ",".join(f"{p}:{start}" for p, start in creation),
        "MIG_PROFILES": ",".join(p for p, _ in creation),
        "TAINTS": ",".join(registration),
        "FAILED_TAINT_KEY": FAILED_TAINT_KEY,
        "FAILED_LABEL": FAILED_LABEL,
        "FIRST_BOOT_FAILURE_STATUS": str(FIRST_BOOT_FAILURE_STATUS),
        "TOOLKIT_SETS": "".join(f" --set {k}={v}" for k, v in toolkit),
    }
    text = _SCRIPT
    head, rest = text.split("# @MIG-BEGIN@\n")
    mig, tail = rest.split("# @MIG-END@\n")
    # Without a layout the MIG functions stay out (the user data's 16 KB are shared with the labels).
    text = head + (mig if creation else "") + tail
    for key, value in values.items():
        text = text.replace(f"@{key}@", value)
    return text


def _heredoc(path: str, mode: str, content: str, marker: str) -> str:
    if any(line == marker for line in content.splitlines()):
        raise ValueError(f"{path}: content holds the here-document marker {marker}")
    return f"install -D -m {mode} /dev/stdin {path} <<'{marker}'\n{content}{marker}\n"


def boot_stage(
    gpus: int,
    gpu: mig_catalog.MigGpu | None,
    layout: Mapping[str, int] | None,
    taints: Sequence[Taint],
    karpenter: bool,
    toolkit: Sequence[tuple[str, str]] = ENFORCED_TOOLKIT_SETTINGS,
) -> BootStage:
    """The boot stage of a group of ``gpus`` GPUs per node, with ``layout`` (profile -> count per
    GPU) on each ``gpu`` (None, None: no MIG), registering with ``taints`` (and Karpenter's startup
    taint when ``karpenter``) if it fails, setting the toolkit keys of ``toolkit``."""
    creation = mig_creation(gpu, layout) if gpu is not None and layout is not None else ()
    script = script_text(gpus, creation, registration_taints(taints, karpenter), toolkit)
    unit, drop_in = unit_text(), kubelet_drop_in_text()
    part = (
        "#!/bin/bash\n"
        "# gpu-eks boot stage: writes the unit and its script, starts it before nodeadm-run starts kubelet\n"
        "set -eu\n"
        + _heredoc(SCRIPT_PATH, "0755", script, "GPU_EKS_SCRIPT")
        + _heredoc(UNIT_PATH, "0644", unit, "GPU_EKS_UNIT")
        + _heredoc(KUBELET_DROP_IN_PATH, "0644", drop_in, "GPU_EKS_KUBELET")
        + "systemctl daemon-reload\n"
        + f"systemctl enable {UNIT_NAME}\n"
        + f"systemctl start {UNIT_NAME} || true\n"
    )
    return BootStage(script=script, unit=unit, kubelet_drop_in=drop_in, user_data_part=part)
