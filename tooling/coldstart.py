"""``python -m tooling coldstart --stack dev [--image-gib N]``: the cold-start model of each GPU group
of a stack (components/coldstart/model.py), offline, from the stack's validated settings."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from components.check.loading import load_stack
from components.coldstart.model import render_text
from components.config import stackfile
from components.config.errors import ConfigError

from . import REPO_ROOT

#: A CUDA inference image's compressed size (README "Cold start": pass your own with --image-gib).
DEFAULT_IMAGE_GIB = 8.0


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stack", default="dev", help="stack whose GPU groups to model (default: dev)")
    parser.add_argument(
        "--image-gib",
        type=float,
        default=DEFAULT_IMAGE_GIB,
        help=f"the workload image's compressed size in GiB (default: {DEFAULT_IMAGE_GIB:g})",
    )
    parser.add_argument("--root", type=Path, default=REPO_ROOT, help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    if args.image_gib <= 0:
        print(f"error: --image-gib must be positive, got {args.image_gib:g}", file=sys.stderr)
        return 2
    try:
        _, settings = load_stack(args.stack, args.root)
    except stackfile.StackNotFound:
        known = ", ".join(stackfile.available_stacks(args.root)) or "none"
        print(f"error: unknown stack {args.stack!r} (stacks: {known})", file=sys.stderr)
        return 2
    except ConfigError as err:
        print(err, file=sys.stderr)
        return 1
    sys.stdout.write(render_text(settings.plans, args.image_gib, f"stack {args.stack}") + "\n")
    return 0
