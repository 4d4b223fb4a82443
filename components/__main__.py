"""Command line: ``python -m components <command>``.

Commands:
  render     print a stack's desired state as YAML, offline (Pulumi mocks, no cloud)
  diff       unified diff of two renders (two stacks, or the work tree against a git ref)
  preflight  check an AWS account for what would make `pulumi up` fail (read-only boto3 calls)

Each command lives in its own module exposing ``configure(parser)`` and ``run(args) -> int``;
modules are imported only when their command runs, so ``preflight`` never loads Pulumi.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS: dict[str, tuple[str, str]] = {
    "render": ("components.render", "print a stack's desired state as YAML, offline"),
    "diff": ("components.diff", "unified diff of renders (stack vs stack, or work tree vs git ref)"),
    "preflight": ("components.preflight.cli", "check an AWS account before `pulumi up`"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m components", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    argv = sys.argv[1:] if argv is None else argv
    chosen = next((a for a in argv if not a.startswith("-")), None)
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            # Import only the module of the command being run.
            mod = importlib.import_module(module)
            mod.configure(p)
            p.set_defaults(_run=mod.run)
    args = parser.parse_args(argv)
    return int(args._run(args))


if __name__ == "__main__":
    sys.exit(main())
