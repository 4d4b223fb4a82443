"""``python -m tooling gpu-smoke DIR``: the prepare step of ``scripts/gpu-smoke``. Writes the boot-stage
script (components/plan/boot.py) a node of ``--gpus`` GPUs of ``--gpu`` runs, for each ``--layout``
and ``--provider``, into DIR, for ``scripts/gpu-smoke run DIR`` on a machine with that GPU (which
needs bash and nvidia-smi only). The scripts register with the default GPU taint.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from components.catalog import mig
from components.config.capacity_provider import KARPENTER, MANAGED_NODE_GROUP
from components.config.groups import DEFAULT_GPU_TAINT
from components.plan import boot

#: The scripts' providers, as --provider names them.
PROVIDERS = {"managed": MANAGED_NODE_GROUP, "karpenter": KARPENTER}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", type=Path, help="the folder to write the scripts into (created)")
    parser.add_argument("--gpu", default="H200-141GB", choices=sorted(mig.MIG_GPUS), help="the GPU model")
    parser.add_argument("--gpus", type=int, default=1, help="GPUs on the machine (default 1)")
    parser.add_argument(
        "--layout",
        action="append",
        help="a named layout of the GPU (all-balanced, the default), profile=count,... (1g.18gb=4,3g.71gb=1), "
        "or none (no MIG: the isolation only); repeatable",
    )
    parser.add_argument("--provider", action="append", choices=PROVIDERS, help="managed (default) or karpenter")


def layout_of(gpu: mig.MigGpu, text: str) -> dict[str, int] | None:
    """``text`` as a layout of ``gpu``: a named one, ``profile=count,...``, or ``none``."""
    if text == "none":
        return None
    named = mig.named_layouts(gpu.name)
    if text in named:
        return dict(named[text])
    try:
        layout = {p: int(n) for p, _, n in (item.partition("=") for item in text.split(","))}
    except ValueError:
        message = f"error: --layout {text!r}: a named layout ({', '.join(named)}), profile=count,... or none"
        raise SystemExit(message) from None
    problem = mig.layout_problem(gpu, layout)
    if problem:
        raise SystemExit(f"error: --layout {text!r} on the {gpu.name}: {problem}")
    return layout


def run(args: argparse.Namespace) -> int:
    gpu = mig.MIG_GPUS[args.gpu]
    if args.gpus < 1:
        raise SystemExit("error: --gpus must be at least 1")
    args.dir.mkdir(parents=True, exist_ok=True)
    for text in args.layout or ["all-balanced"]:
        layout = layout_of(gpu, text)
        for provider in args.provider or ["managed"]:
            stage = boot.boot_stage(
                args.gpus, gpu if layout else None, layout, (DEFAULT_GPU_TAINT,), PROVIDERS[provider]
            )
            name = f"{gpu.name.lower()}-x{args.gpus}-{text.replace('=', '').replace(',', '-')}-{provider}.sh"
            (args.dir / name).write_text(stage.script)
            print(f"wrote {args.dir / name}")
    print(f"next, on the GPU machine from the repository's root: bash scripts/gpu-smoke run {args.dir}")
    return 0
