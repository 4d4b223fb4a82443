"""Repository tooling: ``python -m tooling <command>`` from a checkout.

Commands:
  render     print a stack's desired state as YAML, offline (Pulumi mocks, no cloud)
  diff       unified diff of two renders (two stacks, or the work tree against a git ref)
  coldstart  print the cold-start model of each GPU group of a stack (offline)
  release    cut a release (prepare, tag) and check one (the release workflow's gate)
  docs       write the generated docs (docs/configuration.md, multilang inputs, the docs index)
  gpu-smoke  write boot-stage scripts for a read-only smoke run on a real GPU (scripts/gpu-smoke)
"""

from __future__ import annotations

import sys

from components.__main__ import main as _main

COMMANDS: dict[str, tuple[str, str]] = {
    "render": ("tooling.render", "print a stack's desired state as YAML, offline"),
    "diff": ("tooling.diff", "unified diff of renders (stack vs stack, or work tree vs git ref)"),
    "coldstart": ("tooling.coldstart", "print the cold-start model of each GPU group of a stack, offline"),
    "release": ("tooling.release", "cut a release (prepare X.Y.Z, tag) or check a tag against the version"),
    "docs": ("tooling.docgen", "write docs/configuration.md's tables, multilang/inputs.py and README's docs index"),
    "gpu-smoke": ("tooling.gpu_smoke", "write boot-stage scripts for scripts/gpu-smoke's read-only run on a real GPU"),
}


def main(argv: list[str] | None = None) -> int:
    return _main(argv, prog="python -m tooling", commands=COMMANDS, description=__doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
