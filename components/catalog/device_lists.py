"""How a container is handed its GPUs on a node: what the device plugin sends, what the node's
container toolkit makes of it. Facts of upstream software, encoded once; tests/test_device_lists.py
runs every combination through the toolkit's own decision (its source, compiled) and checks the
functions here against it, and checks the device plugin's source text for what is encoded of it.

**The device plugin** (NVIDIA/k8s-device-plugin ``internal/plugin/server.go``
``getAllocateResponse``, identical in this respect at v0.17.2, v0.18.1 and v0.20.0, the plugins of
gpu-operator v25.3.1, v25.10.1 and v26.7.0): for the non-CDI members of ``DEVICE_LIST_STRATEGY``,
``envvar`` sets ``NVIDIA_VISIBLE_DEVICES=<ids>`` (``updateResponseForDeviceListEnvVar``), then
``volume-mounts`` sets it again, to ``/var/run/nvidia-container-devices``, and mounts ``/dev/null``
at ``/var/run/nvidia-container-devices/<id>`` per device (``updateResponseForDeviceMounts``). So
``envvar,volume-mounts`` sends exactly what ``volume-mounts`` sends, as long as the plugin has no
IMEX channels (``updateResponseForImexChannelsEnvVar`` is the envvar step's only other write; the
library configures none: its config files set no ``imex``, plan/device_plugin.py). The ids are the
GPUs' (or MIG devices') UUIDs (the operator's asset sets ``DEVICE_ID_STRATEGY=uuid``), replica
suffixes of shared devices removed (``deviceIDsFromAnnotatedDeviceIDs``).

**The toolkit** (NVIDIA/nvidia-container-toolkit v1.19.1, the AL2023 NVIDIA AMIs' of mid-2026; mode
``auto`` resolves to ``jit-cdi``, ``internal/info/auto.go``, which builds the image with no CDI
annotation prefixes, ``internal/runtime/runtime_factory.go`` ``initRuntimeModeAndImage``):
``internal/config/image/cuda_image.go`` ``VisibleDevices`` takes the device list from the
``/dev/null`` mounts under ``/var/run/nvidia-container-devices`` when
``accept-nvidia-visible-devices-as-volume-mounts`` is on and there is one, else from
``NVIDIA_VISIBLE_DEVICES`` when the container is privileged (``privileged.go``: ``CAP_SYS_ADMIN`` in
its bounding set) or ``accept-nvidia-visible-devices-envvar-when-unprivileged`` is on, else none.
Each name must then be ``all``, a GPU or MIG index or a UUID: anything else, such as
``/var/run/nvidia-container-devices`` itself, fails the container's creation (``pkg/nvcdi/lib-nvml.go``
``normalizeDeviceID``: "identifier is not a valid UUID or index"). The two keys live in
``/etc/nvidia-container-runtime/config.toml``, read for every container; their defaults
(``api/config/v1/config.go`` ``GetDefault``, ``toml.go``) are what a node runs whose user data never
set them (the AMI does not: awslabs/amazon-eks-ami ``install-nvidia-driver.sh``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: The variable the plugin and the toolkit use for the device list.
VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"
#: Where the plugin mounts its device requests (server.go ``deviceListAsVolumeMountsContainerPathRoot``;
#: cuda_image.go ``DeviceListAsVolumeMountsRoot``), each a bind of the host's ``/dev/null``.
DEVICE_LIST_ROOT = "/var/run/nvidia-container-devices"
DEVICE_LIST_HOST_PATH = "/dev/null"

#: The toolkit's two keys (api/config/v1/config.go TOML tags, v1.19.1).
ENVVAR_WHEN_UNPRIVILEGED = "accept-nvidia-visible-devices-envvar-when-unprivileged"
VOLUME_MOUNTS_ACCEPTED = "accept-nvidia-visible-devices-as-volume-mounts"
#: Their defaults: a node whose user data never set them (api/config/v1/config.go GetDefault).
TOOLKIT_DEFAULTS: Mapping[str, bool] = {ENVVAR_WHEN_UNPRIVILEGED: True, VOLUME_MOUNTS_ACCEPTED: False}

#: The device plugin's device-list strategies (server.go, ``spec.DeviceListStrategy*``).
ENVVAR = "envvar"
VOLUME_MOUNTS = "volume-mounts"
CDI_STRATEGIES = ("cdi-annotations", "cdi-cri")

#: What a container asking for GPUs through the device plugin gets.
ITS_DEVICES = "its devices"
NO_DEVICES = "no GPU"
NOT_CREATED = "not created (the toolkit refuses the device name)"


@dataclass(frozen=True)
class Allocation:
    """What the device plugin's Allocate returns for one container: environment and mounts."""

    envs: Mapping[str, str]
    #: (host path, container path), in the plugin's order.
    mounts: tuple[tuple[str, str], ...]


def strategy_members(strategy: str) -> tuple[str, ...]:
    """The members of a ``DEVICE_LIST_STRATEGY`` value (a comma-separated list)."""
    return tuple(m.strip() for m in strategy.split(",") if m.strip())


def allocate_response(strategy: str, device_ids: Sequence[str]) -> Allocation:
    """What the plugin sends for ``device_ids`` under a non-CDI ``strategy`` (getAllocateResponse)."""
    members = strategy_members(strategy)
    if set(members) & set(CDI_STRATEGIES) or not set(members) <= {ENVVAR, VOLUME_MOUNTS}:
        raise ValueError(f"device-list strategy {strategy!r}: only envvar and volume-mounts are encoded here")
    envs: dict[str, str] = {}
    mounts: list[tuple[str, str]] = []
    if ENVVAR in members:
        envs[VISIBLE_DEVICES] = ",".join(device_ids)
    if VOLUME_MOUNTS in members:
        envs[VISIBLE_DEVICES] = DEVICE_LIST_ROOT
        mounts = [(DEVICE_LIST_HOST_PATH, f"{DEVICE_LIST_ROOT}/{i}") for i in device_ids]
    return Allocation(envs, tuple(mounts))


def toolkit_settings(sets: Sequence[tuple[str, str]] = ()) -> dict[str, bool]:
    """The node's two keys after ``nvidia-ctk config --set key=value`` of each of ``sets`` (none:
    the defaults)."""
    out = dict(TOOLKIT_DEFAULTS)
    for key, value in sets:
        if key not in out or value not in ("true", "false"):
            raise ValueError(f"toolkit setting {key}={value}: not one of the two device-list keys")
        out[key] = value == "true"
    return out


_SET = re.compile(r"--set[ =]([a-z-]+)=(true|false)")


def toolkit_sets_in(script: str) -> tuple[tuple[str, str], ...]:
    """The device-list keys a boot script sets with ``nvidia-ctk config --in-place --set k=v``
    (plan/boot.py ``isolate``); () for a script without that call (the node keeps the defaults)."""
    lines = [line for line in script.splitlines() if "nvidia-ctk config" in line and "--in-place" in line]
    return tuple((k, v) for line in lines for k, v in _SET.findall(line) if k in TOOLKIT_DEFAULTS)


def valid_device_name(name: str) -> bool:
    """Whether the toolkit's jit-cdi mode can resolve ``name`` (pkg/nvcdi ``normalizeDeviceID`` with
    go-nvlib's ``Identifier``: ``all``, a GPU index, ``<gpu>:<mig>`` indexes, a GPU or MIG UUID)."""
    return (
        name == "all"
        or re.fullmatch(r"[0-9]+(:[0-9]+)?", name) is not None
        or re.fullmatch(r"(GPU|MIG)-[0-9a-fA-F-]+", name) is not None
    )


def gpu_pod_outcome(strategy: str, settings: Mapping[str, bool]) -> str:
    """What an unprivileged container that requested GPUs gets on a node with the toolkit
    ``settings`` when the plugin runs ``strategy``: ITS_DEVICES, NO_DEVICES or NOT_CREATED (the
    toolkit's order, above). Checked against the compiled decision in tests/test_device_lists.py."""
    members = strategy_members(strategy)
    if VOLUME_MOUNTS in members:
        if settings[VOLUME_MOUNTS_ACCEPTED]:
            return ITS_DEVICES
        # The variable then holds DEVICE_LIST_ROOT, which no GPU is called.
        return NOT_CREATED if settings[ENVVAR_WHEN_UNPRIVILEGED] else NO_DEVICES
    if ENVVAR in members:
        return ITS_DEVICES if settings[ENVVAR_WHEN_UNPRIVILEGED] else NO_DEVICES
    raise ValueError(f"device-list strategy {strategy!r}: only envvar and volume-mounts are encoded here")


def isolated(settings: Mapping[str, bool]) -> bool:
    """Whether an unprivileged container that requested no GPU gets none whatever its
    ``NVIDIA_VISIBLE_DEVICES`` (the toolkit refuses the variable from it)."""
    return not settings[ENVVAR_WHEN_UNPRIVILEGED]
