"""``python -m tooling diff``: a unified diff of renders, what a reviewer reads.

* ``--stack dev --against prod``: how two stacks differ.
* ``--base origin/main``: what a change does to each stack (or only ``--stack``). The work tree is
  rendered in this process; the base is checked out into a temporary ``git worktree`` (removed
  afterwards) and rendered by *its own* code, in a subprocess running this same Python, so a
  change to the library itself shows up in the diff.

With ``--base``, URNs of the base that the work tree neither declares nor aliases are reported on
stderr: ``pulumi up`` would delete or replace those resources (see components.review.urns).

Output: first the change-impact summary of each stack (components.review.impact: what deploying the change
does: replacements and why, node rolls, GPU pods rescheduled, device-plugin DaemonSet rolls), then
the unified diffs. ``--format json`` gives both as one JSON document for other tools;
``--comment FILE`` also writes the pull request comment (Markdown: the summaries first, then the
diff, cut to fit a GitHub comment).

The comparison, the summaries and the comment are components.review.diff (shipped: the consumers'
``gpu-eks-review diff`` is the same review of their own project); this module renders the sides.

Exit status: 0 no difference, 1 differences, 2 errors (unknown stack or ref, a render failed).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from components.config import stackfile
from components.review import diff as _diff
from components.review.diff import (
    COMMENT_LIMIT,
    DiffError,
    Side,
    StackDiff,
    compare,
    json_output,
    section_of,
    text_output,
    unified,
    without_stack_in_urns,
    worktree,
)

from . import REPO_ROOT, render

__all__ = [
    "DiffError",
    "Side",
    "StackDiff",
    "compare",
    "json_output",
    "section_of",
    "text_output",
    "unified",
    "without_stack_in_urns",
]

#: A base render is one program run: generous, but a hung base must not hang CI.
BASE_RENDER_TIMEOUT_SECONDS = 300


def replaced_report(stack: str, old_text: str, new_text: str) -> str:
    """The replacement guard between two renders of this repository ("" when nothing would be
    deleted or replaced)."""
    return _diff.replaced_report(stack, old_text, new_text, render.REFRESH_COMMAND)


def comment_markdown(results: Sequence[StackDiff], limit: int = COMMENT_LIMIT) -> str:
    """The pull request comment: per stack the impact summary first, then the render diff."""
    return _diff.comment_markdown(results, limit, "python -m tooling diff")


# ---------------------------------------------------------------------------------------------
# Rendering each side
# ---------------------------------------------------------------------------------------------


def render_here(stack: str) -> str:
    """The work tree's render of ``stack`` (raises DiffError on failure)."""
    try:
        return render.render_stack(stack)
    except render.RenderError as err:
        raise DiffError(f"cannot render stack {stack!r} of the work tree:\n{err}") from None


def render_base(stack: str, base_root: Path, ref: str) -> str:
    """``stack`` rendered by the base's own code ("" when the base has no such stack)."""
    if not stackfile.stack_file(stack, base_root).is_file():
        return ""
    # The render command moved from components/ (up to 0.1.0) to tooling/: use whichever the base has.
    if (base_root / "tooling" / "render.py").is_file():
        package = "tooling"
    elif (base_root / "components" / "render.py").is_file():
        package = "components"
    else:
        raise DiffError(f"{ref} has no render command (tooling/render.py): there is no render to compare against")
    env = dict(os.environ)
    # The base's own packages must win over anything on PYTHONPATH (like this work tree).
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(base_root), env.get("PYTHONPATH", "")) if p)
    env.pop("PYTHONSAFEPATH", None)
    try:
        done = subprocess.run(
            [sys.executable, "-m", package, "render", "--stack", stack],
            cwd=base_root,
            env=env,
            capture_output=True,
            text=True,
            timeout=BASE_RENDER_TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise DiffError(f"rendering stack {stack!r} of {ref} took over {BASE_RENDER_TIMEOUT_SECONDS} s") from None
    if done.returncode != 0:
        raise DiffError(f"cannot render stack {stack!r} of {ref} (exit {done.returncode}):\n{done.stderr.strip()}")
    return done.stdout


# ---------------------------------------------------------------------------------------------
# The two comparisons
# ---------------------------------------------------------------------------------------------


def diff_stacks(stack: str, against: str, context: int = 3) -> list[StackDiff]:
    old = Side(f"render/{stack}.yaml", without_stack_in_urns(render_here(stack), stack))
    new = Side(f"render/{against}.yaml", without_stack_in_urns(render_here(against), against))
    return [compare(f"{stack} -> {against}", old, new, context)]


def diff_base(ref: str, stacks: Sequence[str] | None, context: int = 3) -> list[StackDiff]:
    """The work tree against ``ref``, stack by stack."""
    root = REPO_ROOT
    here = stackfile.available_stacks(root)
    for stack in stacks or ():
        if stack not in here:
            raise DiffError(
                f"unknown stack {stack!r}: there is no stacks/Pulumi.{stack}.yaml (stacks: {', '.join(here)})"
            )
    results: list[StackDiff] = []
    with worktree(ref, root) as base_root:
        chosen = list(stacks) if stacks else sorted(set(here) | set(stackfile.available_stacks(base_root)))
        for stack in chosen:
            old = render_base(stack, base_root, ref)
            new = render_here(stack) if stack in here else ""
            results.append(
                compare(
                    stack,
                    Side(f"{ref}/render/{stack}.yaml", old),
                    Side(f"work-tree/render/{stack}.yaml", new),
                    context,
                    replaced_report(stack, old, new),
                )
            )
    return results


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stack", help="the stack to compare (default: dev with --against, every stack with --base)")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--against", metavar="STACK", help="compare the render of --stack with this stack's")
    which.add_argument("--base", metavar="REF", help="compare the work tree with this git ref (e.g. origin/main)")
    parser.add_argument("--context", type=int, default=3, metavar="N", help="lines of context (default: 3)")
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text: impact summaries, then the unified diff (default); json: both, for other tools",
    )
    parser.add_argument(
        "--comment",
        type=Path,
        metavar="FILE",
        help="also write the pull request comment (Markdown: summaries first, then the diff) to FILE",
    )


def run(args: argparse.Namespace) -> int:
    try:
        if args.against is not None:
            results = diff_stacks(args.stack or render.DEFAULT_STACK, args.against, args.context)
        else:
            results = diff_base(args.base, [args.stack] if args.stack else None, args.context)
    except DiffError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    changed = any(r.diff for r in results)
    sys.stdout.write(json_output(results) if args.format == "json" else text_output(results))
    sys.stdout.flush()
    if args.comment is not None:
        render.write_text(args.comment, comment_markdown(results))
    warnings = "".join(r.warning for r in results)
    if warnings:
        print(warnings, end="", file=sys.stderr)
    return 1 if changed else 0
