"""The "GPU families" table of docs/configuration.md, generated from the catalog (components/catalog/instances.py)
by ``python -m tooling docs`` (tooling/docgen.py) between the markers below."""

from __future__ import annotations

from components import catalog

BEGIN = "<!-- BEGIN GENERATED: GPU families (python -m tooling docs) -->"
END = "<!-- END GENERATED: GPU families -->"

_SHARING_NAMES = {catalog.TIME_SLICING: "time-slicing", catalog.MPS: "MPS"}


def _per_size(family: str) -> tuple[str, str]:
    """GPUs per instance and memory per advertised GPU, each with the sizes it applies to."""
    rows = [r for r in catalog.GPU_INSTANCE_TYPES.values() if r.family.name == family]
    gpus: dict[str, list[str]] = {}
    memory: dict[str, list[str]] = {}
    for r in rows:
        size = r.name.split(".", 1)[1]
        share = f"{r.gpu_fraction} ({r.vgpu_profile})" if r.gpu_fraction is not None else str(r.gpus)
        gpus.setdefault(share, []).append(size)
        memory.setdefault(f"{r.gpu_memory_mib_per_gpu:,} MiB", []).append(size)

    def cell(groups: dict[str, list[str]], sizes_when_one: bool) -> str:
        if len(groups) == 1:
            ((value, sizes),) = groups.items()
            return f"{value} ({' '.join(sizes)})" if sizes_when_one else value
        return ", ".join(f"{value}: {' '.join(sizes)}" for value, sizes in groups.items())

    return cell(gpus, True), cell(memory, False)


def families_table() -> str:
    header = [
        "| family | GPU | GPUs per instance | memory per GPU | architecture (amiType) | accelerator label | sharing |",
        "|---|---|---|---|---|---|---|",
    ]
    lines = []
    for name, family in catalog.FAMILIES.items():
        gpus, memory = _per_size(name)
        sharing = " and ".join(_SHARING_NAMES[m] for m in (catalog.TIME_SLICING, catalog.MPS) if m in family.sharing)
        ami = catalog.GPU_AMI_TYPES[family.architecture]
        accelerator = catalog.ACCELERATOR_LABEL_VALUES[family.gpu_model]
        lines.append(
            f"| `{name}` | {family.gpu_model} | {gpus} | {memory} | {family.architecture} (`{ami}`) "
            f"| `{accelerator}` | {sharing or 'none (vGPU slice: one pod per node)'} |"
        )
    return "\n".join([*header, *lines]) + "\n"
