"""The boot stage of a GPU node: what runs on every boot after the driver is up and before kubelet.

A pure builder (no Pulumi, no I/O, nothing imported from the plan): from a group's GPU count, MIG
layout, taints and capacity provider it makes the cloud-init shell part of the group's user data
(``user_data_part``), which writes and starts a systemd unit and its bash script, and the taints the
user data registers a node with until the stage succeeds (``BootStage.pending``). What the node does,
in which order, why, and what an operator sees when it fails: docs/node-boot-stage.md, with the
upstream sources of each step. Only what the AL2023 NVIDIA AMI ships is used (the driver's
``nvidia-smi``, the toolkit's ``nvidia-ctk``); the script is run against stand-ins built from the real
``nvidia-smi``'s grammar and recordings in tests/test_boot_stage.py, and against a real one, read-only,
by ``scripts/gpu-smoke``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..catalog import labels
from ..catalog.mig import MigGpu, layout_problem, placements
from ..config.capacity_provider import CapacityProvider
from ..config.groups import Taint
from ..config.isolation import ENFORCED, ISOLATIONS

UNIT_NAME = "gpu-eks-boot.service"
SCRIPT_PATH = "/usr/local/sbin/gpu-eks-boot"
UNIT_PATH = f"/etc/systemd/system/{UNIT_NAME}"
KUBELET_DROP_IN_PATH = "/etc/systemd/system/kubelet.service.d/90-gpu-eks-boot.conf"
#: Where the stage keeps its markers (the root volume: they survive a reboot).
STATE_DIR = "/var/lib/gpu-eks"
#: The stage's nodeadm drop-in, written on every boot: the taints kubelet registers the node with
#: (and a label when the stage failed). ``nodeadm-run`` reads ``--config-source
#: file:///etc/eks/nodeadm.d/`` after the user data and appends its kubelet flags last
#: (awslabs/amazon-eks-ami v20260724 ``nodeadm-run.service``; nodeadm/internal/api/merge.go
#: ``mergeKubeletFlags``); kubelet keeps the last ``--register-with-taints`` (kubernetes/kubernetes
#: ddd467a0 pkg/util/flag/flags.go ``RegisterWithTaintsVar.Set`` replaces the list; an empty value
#: clears it).
NODEADM_DROP_IN = "/etc/eks/nodeadm.d/90-gpu-eks-boot.yaml"
#: The taint the user data registers every GPU node with; only the stage's drop-in, written when the
#: stage succeeded, registers the node without it. A node whose shell part never ran (cloud-init
#: failed, user data cut) so takes no pod that does not tolerate it, and no operator DaemonSet does.
PENDING_TAINT = Taint(key=labels.BOOT_STAGE_KEY, value="pending", effect="NoSchedule")
#: The taint a node registers with when its boot stage failed (value: the reason).
FAILED_TAINT_KEY = labels.BOOT_STAGE_FAILED_KEY
#: The label it registers with then (``kubectl get nodes -l gpu-eks.io/boot-stage=failed``).
FAILED_LABEL = labels.BOOT_STAGE_KEY
#: Exit status of a failed stage on the first boot: the unit counts it as success
#: (``SuccessExitStatus=``), so kubelet starts and registers the node with the failure taint.
FIRST_BOOT_FAILURE_STATUS = 3
#: The unit's limit on each boot (``TimeoutStartSec``): a stage still running then is failed by systemd,
#: and kubelet (``Requisite=``) does not start: the node never registers.
UNIT_TIMEOUT_MINUTES = 20
#: ASSUMPTION (no AWS document gives a figure per type): the minutes one boot of the largest GPU
#: instances takes besides the stage (a p4d or p5: firmware, 1-2 TiB of memory, 8 GPUs and their
#: NVSwitches), from the launch or the reboot until the stage starts, plus ``nodeadm-run`` and kubelet's
#: registration after it.
BOOT_MINUTES = 10


def minutes_to_register(reboots: bool) -> int:
    """The longest a node whose stage does not fail takes from its launch to kubelet's registration:
    per boot (two when the stage reboots it once), the boot and the stage's own limit. A stage that
    takes longer fails, and the node never registers: an autoscaler removing it then is right."""
    return (2 if reboots else 1) * (BOOT_MINUTES + UNIT_TIMEOUT_MINUTES)


#: The units the stage runs after, where the AMI has them: the driver (``nvidia-kmod-load``), its
#: daemons (NVLink trained by the fabric manager), the AMI's ``set-nvidia-clocks`` (v20260724
#: templates/al2023/runtime/gpu) and the toolkit's ``nvidia-cdi-refresh`` (NVIDIA/nvidia-container-
#: toolkit v1.19.1 deployments/systemd), both of which call ``nvidia-smi``: none runs while the stage
#: changes MIG mode or resets a GPU. ``After=`` a unit that does not exist orders nothing.
AFTER_UNITS = (
    "nvidia-kmod-load.service",
    "nvidia-persistenced.service",
    "nvidia-fabricmanager.service",
    "set-nvidia-clocks.service",
    "nvidia-cdi-refresh.service",
)

#: The toolkit settings of a node of a cluster whose isolation is enforced (the default of
#: ``script_text`` and ``boot_stage``; the plan passes its cluster's: config/isolation.py, which
#: cites the toolkit's keys, their defaults and ``nvidia-ctk config --in-place --set``).
ENFORCED_TOOLKIT_SETTINGS = ISOLATIONS[ENFORCED].toolkit_settings


@dataclass(frozen=True)
class BootStage:
    """The boot stage of one GPU node group: the files it writes, the user-data part, the taints."""

    #: The bash script the unit runs (SCRIPT_PATH).
    script: str
    #: The systemd unit (UNIT_PATH).
    unit: str
    #: kubelet's drop-in (KUBELET_DROP_IN_PATH): kubelet starts only after a stage that did not fail.
    kubelet_drop_in: str
    #: The cloud-init shell part (``text/x-shellscript``) that writes the three and starts the unit.
    user_data_part: str
    #: The taints the user data's NodeConfig registers a node with (``--register-with-taints``): the
    #: ones it registers with once its stage succeeded (``registration_taints``) and ``PENDING_TAINT``,
    #: which only the stage's drop-in takes away.
    pending: tuple[Taint, ...]
    #: The stage may reboot the node once before kubelet registers it (a MIG mode still pending after
    #: the GPU reset, on a provider that lets it: ``reboots_before_registering``).
    reboots: bool = False


def mig_creation(gpu: MigGpu, layout: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    """The GPU instances of ``layout`` on one ``gpu``, as (profile, placement start), in creation
    order: the catalog's placement, largest first. Raises ValueError for a layout that does not fit
    (the settings refuse it first: catalog/mig.py ``layout_problem``)."""
    problem = layout_problem(gpu, layout)
    found = None if problem else placements([gpu.profiles[p] for p, n in layout.items() for _ in range(n)])
    if found is None:
        raise ValueError(f"MIG layout {dict(layout)} does not fit the {gpu.name}: {problem or 'no placement'}")
    return tuple((p.name, start) for p, start in found)


def unit_text() -> str:
    """The systemd unit: enabled (every boot), after the driver's units and the AMI's GPU units,
    before ``nodeadm-run`` (which starts kubelet on every boot; the AMI never enables kubelet) and
    kubelet; on the first boot cloud-final's shell part starts it, and ``nodeadm-run`` follows
    cloud-final (docs/node-boot-stage.md, "What runs, in order")."""
    return f"""[Unit]
Description=gpu-eks boot stage: container toolkit isolation and the MIG layout, before kubelet
After={" ".join(AFTER_UNITS)}
Before=nodeadm-run.service kubelet.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart={SCRIPT_PATH}
SuccessExitStatus={FIRST_BOOT_FAILURE_STATUS}
TimeoutStartSec={UNIT_TIMEOUT_MINUTES}min
SyslogIdentifier=gpu-eks-boot
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=multi-user.target
"""


def kubelet_drop_in_text() -> str:
    """kubelet's drop-in: ``Requisite=`` (systemd.unit(5)): kubelet starts only while the stage is
    active and fails at once after a failed stage, without starting it again (``Requires=`` would)."""
    return f"""[Unit]
Requisite={UNIT_NAME}
After={UNIT_NAME}
"""


def registration_taints(taints: Sequence[Taint], provider: CapacityProvider) -> tuple[Taint, ...]:
    """The taints a node of a group with ``taints`` registers with once its stage succeeded: the
    provider's startup taints too (a ``--register-with-taints`` flag wins over the config file the
    provider writes them in, so ours repeat them: kubelet parses its flags again over the file,
    kubernetes/kubernetes 293a53f2 cmd/kubelet/app/server.go ``kubeletConfigFlagPrecedence``)."""
    return (*taints, *provider.startup_taints)


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
# The taints once the stage succeeded (the user data's add the pending one).
TAINTS="@TAINTS@"
# A MIG mode pending after the GPU reset: reboot once, or fail (Karpenter).
ON_PENDING=@ON_PENDING@

log() { echo "gpu-eks-boot: $*" >&2; }

# Registered on an earlier boot? (read before this boot writes the marker)
REGISTERED_BEFORE=no
[ ! -e "$STATE_DIR/kubelet-started" ] || REGISTERED_BEFORE=yes

# register TAINTS [LABEL]: nodeadm reads it after the user data; kubelet keeps the last taints.
register() {
  mkdir -p "${NODEADM_DROP_IN%/*}" && printf '%s\n' "apiVersion: node.eks.aws/v1alpha1" "kind: NodeConfig" \
    "spec:" "  kubelet:" "    flags:" "      - --register-with-taints=$1" ${2:+"      - --node-labels=$2"} \
    > "$NODEADM_DROP_IN"
}

done_ok() {
  mkdir -p "$STATE_DIR" && touch "$STATE_DIR/kubelet-started" \
    || fail registration "cannot write $STATE_DIR/kubelet-started"
  register "$TAINTS" || fail registration "cannot write $NODEADM_DROP_IN"
  rm -f "$STATE_DIR/rebooted-for-mig"
  log "done: the node is ready for kubelet"
  exit 0
}

fail() {
  reason="$1"; shift
  log "FAILED ($reason): $*; no GPU pod may run here, replace the node (docs/node-boot-stage.md)"
  logger -t gpu-eks-boot -p daemon.err "FAILED ($reason): $*" || true
  register "${TAINTS:+$TAINTS,}@FAILED_TAINT_KEY@=$reason:NoSchedule" "@FAILED_LABEL@=failed" \
    || log "cannot write $NODEADM_DROP_IN (the user data's taints hold)"
  if [ "$REGISTERED_BEFORE" = yes ]; then
    log "the node registered before: its taints stay as they were, so kubelet does not start"
    exit 1
  fi
  mkdir -p "$STATE_DIR" && touch "$STATE_DIR/kubelet-started"
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

# -L takes no -i: a "GPU <i>:" line per GPU, then its MIG devices, indented.
list_mig() {
  LISTING=$(nvidia-smi -L) || fail mig-layout "nvidia-smi -L failed"
}

mig_devices() {
  printf '%s\n' "$LISTING" \
    | awk -v gpu="GPU $1:" '/^GPU / { mine = ($1 " " $2 == gpu); next } mine && $1 == "MIG" { print $2 }' \
    | sort | tr '\n' ' ' | sed 's/ $//'
}

# All GPUs by bus id, their daemons running (as NVIDIA mig-parted).
reset_gpus() {
  log "MIG mode pending on GPU(s)$1: resetting the GPUs ($BUS_IDS)"
  nvidia-smi -r -i "$BUS_IDS" || log "nvidia-smi -r failed"
}

reboot_once() {
  [ "$ON_PENDING" = reboot ] \
    || fail mig-mode "MIG mode still pending on GPU(s)$1 after a GPU reset (a Karpenter node does not reboot)"
  [ ! -e "$STATE_DIR/rebooted-for-mig" ] \
    || fail mig-mode "MIG mode still pending on GPU(s)$1 after a GPU reset and a reboot"
  mkdir -p "$STATE_DIR" && touch "$STATE_DIR/rebooted-for-mig" \
    || fail mig-mode "MIG mode still pending on GPU(s)$1; no reboot without the marker in $STATE_DIR"
  log "MIG mode still pending on GPU(s)$1 after a GPU reset: rebooting once"
  systemctl reboot
  sleep 600
  exit 1
}

apply_mig() {
  gpus=$(nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader) \
    || fail mig-layout "nvidia-smi cannot list the GPUs"
  indexes=$(printf '%s\n' "$gpus" | cut -d, -f1)
  BUS_IDS=$(printf '%s\n' "$gpus" | cut -d, -f2 | tr -d ' ' | tr '\n' ',' | sed 's/,$//')
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
  list_mig
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
    list_mig
    [ "$(mig_devices "$i")" = "$MIG_EXPECTED" ] \
      || fail mig-layout "GPU $i has MIG devices '$(mig_devices "$i")', expected '$MIG_EXPECTED'"
  done
}

# @MIG-END@
# main: the stage (scripts/gpu-smoke sources what is above)
isolate
[ -z "$MIG_CREATE" ] || apply_mig
done_ok
"""

#: The line that starts the script's main part (scripts/gpu-smoke sources what comes before it).
MAIN_MARKER = "# main: the stage"


def script_text(
    gpus: int,
    creation: Sequence[tuple[str, int]],
    registration: Sequence[Taint],
    reboot: bool = True,
    toolkit: Sequence[tuple[str, str]] = ENFORCED_TOOLKIT_SETTINGS,
) -> str:
    """The unit's bash script for a node of ``gpus`` GPUs, each given the GPU instances of
    ``creation`` (empty: no MIG), registering with ``registration`` once it succeeded (with those and
    its own failure taint when it failed); a MIG mode still pending after the GPU reset reboots the
    node once when ``reboot``, and fails the stage otherwise; ``isolate`` sets the toolkit keys of
    ``toolkit``."""
    forms = [t.kubelet_form() for t in registration]
    for value in forms:
        if any(c in value for c in "\"'$`\\ \n"):
            raise ValueError(f"taint {value!r} cannot go into the boot script")
    values = {
        "STATE_DIR": STATE_DIR,
        "NODEADM_DROP_IN": NODEADM_DROP_IN,
        "GPUS": str(gpus),
        "MIG_EXPECTED": " ".join(sorted(p for p, _ in creation)),
        "MIG_CREATE": ",".join(f"{p}:{start}" for p, start in creation),
        "MIG_PROFILES": ",".join(p for p, _ in creation),
        "TAINTS": ",".join(forms),
        "ON_PENDING": "reboot" if reboot else "fail",
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
    gpu: MigGpu | None,
    layout: Mapping[str, int] | None,
    taints: Sequence[Taint],
    provider: CapacityProvider,
    toolkit: Sequence[tuple[str, str]] = ENFORCED_TOOLKIT_SETTINGS,
) -> BootStage:
    """The boot stage of a group of ``gpus`` GPUs per node, with ``layout`` (profile -> count per
    GPU) on each ``gpu`` (None, None: no MIG), whose nodes register with ``taints`` (and the
    ``provider``'s startup taints). A Karpenter node does not reboot for a pending MIG mode
    (``reboots_before_registering``): a reboot before kubelet can outlast Karpenter's 15-minute
    registration limit, after which Karpenter deletes the NodeClaim and terminates the instance
    (kubernetes-sigs/karpenter v1.14.1 pkg/controllers/nodeclaim/lifecycle/liveness.go
    ``registrationTimeout``): it fails closed instead (docs/node-boot-stage.md). ``isolate`` sets the
    toolkit keys of ``toolkit``."""
    creation = mig_creation(gpu, layout) if gpu is not None and layout is not None else ()
    registered = registration_taints(taints, provider)
    script = script_text(gpus, creation, registered, reboot=provider.reboots_before_registering, toolkit=toolkit)
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
    return BootStage(
        script=script,
        unit=unit,
        kubelet_drop_in=drop_in,
        user_data_part=part,
        pending=(*registered, PENDING_TAINT),
        reboots=bool(creation) and provider.reboots_before_registering,
    )
