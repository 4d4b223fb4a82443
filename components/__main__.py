"""Command line: ``python -m gpu_eks <command>`` (in this repository: ``python -m components``).

Commands (each works from an installed package):
  preflight  check an AWS account for what would make `pulumi up` fail (read-only boto3 calls)

The review tools for your own Pulumi project (offline render, render diff, impact summary) are
the separate command ``gpu-eks-review`` (``python -m gpu_eks.review``). This repository's own
tooling (its stacks' snapshots, releases) is not shipped: ``python -m tooling`` in a checkout.

Each command lives in its own module exposing ``configure(parser)`` and ``run(args) -> int``;
modules are imported only when their command runs, so ``preflight`` never loads Pulumi.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .version import PACKAGE

#: Command -> (its module: relative names are inside this package, whatever its import name; help).
COMMANDS: dict[str, tuple[str, str]] = {
    "preflight": (".preflight.cli", "check an AWS account before `pulumi up`"),
}


def missing_dependency(prog: str, command: str, module: str) -> str:
    """What to do when this Python lacks a package the command needs (instead of a traceback)."""
    return (
        f"error: {prog} {command}: this Python ({sys.executable}) does not have the package {module!r}.\n"
        "Run it with the project's virtual environment: `source .venv/bin/activate` first (a checkout's\n"
        "./scripts/run creates .venv and renders the dev stack), or install the requirements into this\n"
        "Python: `python -m pip install -r requirements.txt`."
    )


def main(
    argv: list[str] | None = None,
    prog: str = f"python -m {PACKAGE}",
    commands: dict[str, tuple[str, str]] | None = None,
    description: str | None = None,
) -> int:
    """Run one command of ``commands`` (default: this package's own)."""
    commands = COMMANDS if commands is None else commands
    parser = argparse.ArgumentParser(prog=prog, description=description or __doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    argv = sys.argv[1:] if argv is None else argv
    chosen = next((a for a in argv if not a.startswith("-")), None)
    for name, (module, help_text) in commands.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            # Import only the module of the command being run.
            try:
                mod = importlib.import_module(module, PACKAGE)
            except ModuleNotFoundError as err:
                if (err.name or "").split(".")[0] in (PACKAGE, "tooling"):
                    raise
                print(missing_dependency(prog, name, err.name or str(err)), file=sys.stderr)
                return 2
            mod.configure(p)
            p.set_defaults(_run=mod.run)
    args = parser.parse_args(argv)
    return int(args._run(args))


if __name__ == "__main__":
    # The name it was run under: python -m gpu_eks, or the old python -m components (it warned).
    sys.exit(main(prog=f"python -m {__spec__.parent}"))
