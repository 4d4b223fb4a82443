"""``gpu-eks-review``: review a change to your own Pulumi program that uses these components.

Run it in your project (the folder holding ``Pulumi.yaml``), or point ``--project`` at it:

  render   your stack's desired state as YAML, offline (your real program under Pulumi mocks)
  diff     what a change does: the impact summary per stack (replacements and why, node rolls,
           GPU pods rescheduled, device-plugin DaemonSets rolled), then the unified render diff;
           the work tree against a git ref (``--base origin/main``) or one stack against another
           (``--against``); ``--comment FILE`` writes the pull request comment

The base of ``--base`` is checked out into a temporary ``git worktree`` and rendered in a
subprocess. With the same dependency files on both sides it is this Python, with the library
installed here: the diff shows what your program's and your stack files' changes do. When what the
project installs differs (a library upgrade), each side is rendered with what it pins: the work tree
with this Python once its library is checked against the work tree's pin, the base with the base's
own library, in an environment this command builds and caches (``baseenv``); ``--base-python``
names such a Python yourself, ``--same-library`` renders both sides with this one (the output says
what that leaves out). What it cannot check or build is refused with the way out, never called "no
change".

Exit status: render 0 rendered, 1 the program failed, 2 unknown stack or unreadable config; diff
0 no difference, 1 differences, 2 errors.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from ..config import stackfile
from ..version import PACKAGE
from . import baseenv, diff, render
from . import values as render_values

PROG = "gpu-eks-review"
RENDER_COMMAND = f"{PROG} render"
#: Where a consumer reads the render's conventions.
DOCS = "gpu-eks-components' docs/review.md"
BASE_RENDER_TIMEOUT_SECONDS = 300
#: The ``pulumi`` version the review tools are tested with (requirements.txt's pin; a test keeps
#: them equal): the simulated engine drives the SDK's mocks, which are not a stable Pulumi API.
TESTED_PULUMI = "3.272.0"


def pulumi_note(installed: str) -> str | None:
    """A note when this Python's ``pulumi`` is not the tested one (None when it is)."""
    if installed == TESTED_PULUMI:
        return None
    return (
        f"note: {PROG} is tested with pulumi {TESTED_PULUMI}; this Python has {installed} (the render drives the "
        f"SDK's mocks, not a stable API): if a render fails or differs, review with pulumi=={TESTED_PULUMI}"
    )


def _project(path: Path | None) -> Path:
    """The Pulumi project: ``path``, or the nearest folder holding Pulumi.yaml from here upward."""
    root = stackfile.find_project_root(path)
    if not (root / "Pulumi.yaml").is_file():
        raise render.RenderError(f"error: no Pulumi.yaml in {root} or above: run in your project or pass --project", 2)
    return root


def _default_stack(root: Path) -> str:
    stacks = stackfile.available_stacks(root)
    if len(stacks) != 1:
        raise render.RenderError(f"error: choose a stack with --stack (stacks: {', '.join(stacks) or 'none'})", 2)
    return stacks[0]


def render_here(stack: str, root: Path, fmt: str = "yaml") -> tuple[str, list[str]]:
    """The render of ``stack`` and its header's notes (the program's warnings among them)."""
    document, notes = render.render_project_document(stack, root)
    if fmt == "json":
        return render_values.dump_json({**document, "notes": list(notes)}), notes
    return render.render_text(document, notes, RENDER_COMMAND, DOCS), notes


def render_base(stack: str, base_root: Path, ref: str, python: str | None = None) -> str:
    """``stack`` of the base checkout rendered in a subprocess ("" when the base has no such stack):
    the base's program modules must not be the ones this process imported from the work tree.
    ``python``: another Python (its own library version) instead of this one."""
    if not stackfile.stack_file(stack, base_root).is_file():
        return ""
    # Another Python brings its own packages: this one's PYTHONPATH must not shadow them.
    drop = ("PYTHONSAFEPATH", "PYTHONPATH") if python else ("PYTHONSAFEPATH",)
    env = {k: v for k, v in os.environ.items() if k not in drop}
    # This Python: this package's review module; another: the one its library has (baseenv.RUN_REVIEW).
    review = ["-c", baseenv.RUN_REVIEW] if python else ["-m", f"{PACKAGE}.review"]
    command = [python or sys.executable, *review, "render", "--project", str(base_root)]
    try:
        done = subprocess.run(
            [*command, "--stack", stack],
            cwd=base_root,
            env=env,
            capture_output=True,
            text=True,
            timeout=BASE_RENDER_TIMEOUT_SECONDS,
            check=False,
        )
    except OSError as err:
        raise diff.DiffError(f"cannot run {command[0]}: {err.strerror}") from None
    except subprocess.TimeoutExpired:
        raise diff.DiffError(f"rendering stack {stack!r} of {ref} took over {BASE_RENDER_TIMEOUT_SECONDS} s") from None
    if done.returncode != 0:
        raise diff.DiffError(f"cannot render stack {stack!r} of {ref} (exit {done.returncode}):\n{done.stderr.strip()}")
    return done.stdout


def _render_or_fail(stack: str, root: Path) -> str:
    try:
        return render_here(stack, root)[0]
    except render.RenderError as err:
        raise diff.DiffError(f"cannot render stack {stack!r} of the work tree:\n{err}") from None


def diff_base(
    ref: str,
    root: Path,
    stacks: Sequence[str] | None,
    context: int = 3,
    python: str | None = None,
    same_library: bool = False,
) -> tuple[list[diff.StackDiff], baseenv.BaseLibrary]:
    """Each stack's comparison with ``ref``, and what the base was rendered with (its note)."""
    here = stackfile.available_stacks(root)
    unknown = [s for s in stacks or () if s not in here]
    if unknown:
        raise diff.DiffError(f"unknown stack {unknown[0]!r}: there is no {stackfile.stack_file(unknown[0], root)}")
    results: list[diff.StackDiff] = []
    with diff.worktree(ref, root) as base_root:
        library = baseenv.choose(base_root, root, ref, python, same_library)
        chosen = list(stacks) if stacks else sorted(set(here) | set(stackfile.available_stacks(base_root)))
        for stack in chosen:
            old = render_base(stack, base_root, ref, library.python)
            new = _render_or_fail(stack, root) if stack in here else ""
            warning = diff.replaced_report(stack, old, new, f"{RENDER_COMMAND} --stack {stack}", consumer=True)
            sides = (diff.Side(f"{ref}/render/{stack}.yaml", old), diff.Side(f"work-tree/render/{stack}.yaml", new))
            results.append(diff.compare(stack, *sides, context=context, warning=warning))
    return results, library


def diff_stacks(stack: str, against: str, root: Path, context: int = 3) -> list[diff.StackDiff]:
    old = diff.Side(f"render/{stack}.yaml", diff.without_stack_in_urns(_render_or_fail(stack, root), stack))
    new = diff.Side(f"render/{against}.yaml", diff.without_stack_in_urns(_render_or_fail(against, root), against))
    return [diff.compare(f"{stack} -> {against}", old, new, context)]


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    project = argparse.ArgumentParser(add_help=False)
    project.add_argument("--project", type=Path, metavar="DIR", help="the Pulumi project (default: from here upward)")
    r = sub.add_parser("render", parents=[project], help="print a stack's desired state as YAML, offline")
    r.add_argument("--stack", help="the stack (default: the project's only stack file)")
    r.add_argument("--output", type=Path, metavar="FILE", help="write the render to FILE instead of stdout")
    r.add_argument("--format", choices=("yaml", "json"), default="yaml", help="yaml (default) or json, for tools")
    d = sub.add_parser("diff", parents=[project], help="impact summary and render diff (work tree vs git ref)")
    d.add_argument("--stack", help="the stack to compare (default: every stack with --base)")
    which = d.add_mutually_exclusive_group(required=True)
    which.add_argument("--base", metavar="REF", help="compare the work tree with this git ref (e.g. origin/main)")
    which.add_argument("--against", metavar="STACK", help="compare the render of --stack with this stack's")
    d.add_argument(
        "--base-python",
        metavar="PYTHON",
        help="render the base with this Python (a virtualenv with the base's requirements) instead of the one "
        "built from the base's requirements.txt when it differs",
    )
    d.add_argument(
        "--same-library",
        action="store_true",
        help="render the base with this Python's library even when the base's dependency files differ "
        "(reviews the program's changes only; the output says so)",
    )
    d.add_argument("--context", type=int, default=3, metavar="N", help="lines of context (default: 3)")
    d.add_argument("--format", choices=("text", "json"), default="text", help="text (default) or json, for tools")
    d.add_argument("--comment", type=Path, metavar="FILE", help="also write the pull request comment (Markdown)")
    return parser


def _version() -> str:
    import importlib.metadata

    from ..version import package_version

    try:
        return package_version()
    except importlib.metadata.PackageNotFoundError:  # imported from a folder that is no checkout
        return "(not installed)"


def _run_render(args: argparse.Namespace) -> int:
    try:
        root = _project(args.project)
        text, notes = render_here(args.stack or _default_stack(root), root, args.format)
    except render.RenderError as err:
        print(err, file=sys.stderr)
        return err.status
    if args.output is not None:
        render.write_text(args.output, text)
        # Written to a file, the render's warnings would go unseen: they are said here too.
        for note in notes:
            if note.startswith("warning: "):
                print(note, file=sys.stderr)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return 0


def _run_diff(args: argparse.Namespace) -> int:
    library = baseenv.BaseLibrary(None)
    try:
        root = _project(args.project)
        if args.against is not None:
            results = diff_stacks(args.stack or _default_stack(root), args.against, root, args.context)
        else:
            stacks = [args.stack] if args.stack else None
            results, library = diff_base(args.base, root, stacks, args.context, args.base_python, args.same_library)
    except (diff.DiffError, render.RenderError) as err:
        print(f"error: {str(err).removeprefix('error: ')}", file=sys.stderr)
        return 2
    # The note goes with the review (output, comment); where it was built stays on this machine.
    note = library.note
    print(library.detail, end="", file=sys.stderr)
    if args.format == "json":
        sys.stdout.write(diff.json_output(results))
        print(note, end="", file=sys.stderr)
    else:
        sys.stdout.write(note + ("\n" if note else "") + diff.text_output(results))
    sys.stdout.flush()
    if args.comment is not None:
        comment = diff.comment_markdown(results, command=f"{PROG} diff")
        render.write_text(args.comment, (f"> {note.strip().removeprefix('note: ')}\n\n" if note else "") + comment)
    warnings = "".join(r.warning for r in results)
    if warnings:
        print(warnings, end="", file=sys.stderr)
    return 1 if any(r.diff for r in results) else 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    import importlib.metadata

    note = pulumi_note(importlib.metadata.version("pulumi"))
    if note:
        print(note, file=sys.stderr)
    return _run_render(args) if args.command == "render" else _run_diff(args)


if __name__ == "__main__":
    sys.exit(main())
