"""``python -m tooling diff``: a unified diff of renders, what a reviewer reads.

* ``--stack dev --against prod``: how two stacks differ.
* ``--base origin/main``: what a change does to each stack (or only ``--stack``). The work tree is
  rendered in this process; the base is checked out into a temporary ``git worktree`` (removed
  afterwards) and rendered by *its own* code, in a subprocess running this same Python, so a
  change to the library itself shows up in the diff.

With ``--base``, URNs of the base that the work tree neither declares nor aliases are reported on
stderr: ``pulumi up`` would delete or replace those resources (see tooling.render_urns).

Exit status: 0 no difference, 1 differences, 2 errors (unknown stack or ref, a render failed).
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from components import stackconfig

from . import REPO_ROOT, render, render_urns, render_values

#: A base render is one program run: generous, but a hung base must not hang CI.
BASE_RENDER_TIMEOUT_SECONDS = 300


class DiffError(Exception):
    """Something that stops the diff (exit status 2)."""


@dataclass(frozen=True)
class Side:
    """One render to compare: its text ("" when the stack does not exist there) and its label."""

    label: str
    text: str


_RESOURCE_START = re.compile(r"^- type: (\S+)")
_RESOURCE_NAME = re.compile(r"^  name: (.+)")
_TOP_LEVEL_KEY = re.compile(r"^([A-Za-z][\w-]*):")


def section_of(lines: Sequence[str], index: int) -> str:
    """Where line ``index`` (0-based) of a render is: ``<type> <name>`` of the resource it belongs
    to, or the top-level key (``outputs``); like the function name git shows in hunk headers."""
    for i in range(min(index, len(lines) - 1), -1, -1):
        if match := _RESOURCE_START.match(lines[i]):
            name = _RESOURCE_NAME.match(lines[i + 1]) if i + 1 < len(lines) else None
            return f"{match.group(1)} {name.group(1).strip()}" if name else match.group(1)
        if match := _TOP_LEVEL_KEY.match(lines[i]):
            return match.group(1)
    return ""


def _range(start: int, length: int) -> str:
    """A hunk range as unified diff writes it (difflib's rules: 1-based, empty ranges start before)."""
    first = start + 1
    if length == 1:
        return f"{first}"
    if length == 0:
        first -= 1
    return f"{first},{length}"


def unified(old: Side, new: Side, context: int = 3) -> str:
    """The unified diff of two renders ("" when they are equal).

    The same format as ``diff -u``, plus, after each hunk header, the resource the first change is
    in (as git names the function), so a reviewer knows what changed without scrolling back.
    """
    a = old.text.splitlines(keepends=True)
    b = new.text.splitlines(keepends=True)
    out: list[str] = []
    for group in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(context):
        if not out:
            out += [f"--- {old.label}\n", f"+++ {new.label}\n"]
        first, last = group[0], group[-1]
        change = next(op for op in group if op[0] != "equal")
        where = section_of(a, change[1]) if change[2] > change[1] else section_of(b, change[3])
        head = f"@@ -{_range(first[1], last[2] - first[1])} +{_range(first[3], last[4] - first[3])} @@"
        out.append(f"{head} {where}\n" if where else f"{head}\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out += [" " + line for line in a[i1:i2]]
                continue
            out += ["-" + line for line in a[i1:i2]]
            out += ["+" + line for line in b[j1:j2]]
    # A render always ends in "\n"; mark a last line without one as diff -u does.
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in out)


def replaced_report(stack: str, old_text: str, new_text: str) -> str:
    """The replacement guard between two renders ("" when nothing would be deleted or replaced)."""
    if not old_text or not new_text:
        return ""  # a stack added or removed as a whole is the diff itself
    try:
        missing = render_urns.replaced_urns(render_values.load(old_text), render_values.load(new_text))
    except (ValueError, KeyError, TypeError) as err:
        return f"note: stack {stack}: could not compare URNs ({err}); review the diff by hand\n"
    if not missing:
        return ""
    return render_urns.guard_report(stack, missing, render.REFRESH_COMMAND) + "\n"


# ---------------------------------------------------------------------------------------------
# Rendering each side
# ---------------------------------------------------------------------------------------------


def render_here(stack: str) -> str:
    """The work tree's render of ``stack`` (raises DiffError on failure)."""
    try:
        return render.render_stack(stack)
    except render.RenderError as err:
        raise DiffError(f"cannot render stack {stack!r} of the work tree:\n{err}") from None


def _git(args: Sequence[str], cwd: Path) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise DiffError("git is not installed; --base needs it") from None
    if done.returncode != 0:
        raise DiffError(f"git {' '.join(args)} failed (exit {done.returncode}): {done.stderr.strip()}")
    return done.stdout.strip()


def resolve_ref(ref: str, repo: Path) -> str:
    try:
        return _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], repo)
    except DiffError:
        raise DiffError(
            f"unknown git ref {ref!r}: expected a branch, tag or commit of this repository "
            "(in CI, check out with fetch-depth: 0 so the base branch is there)"
        ) from None


@contextmanager
def worktree(ref: str, project_root: Path) -> Iterator[Path]:
    """The project folder of a temporary detached worktree of ``ref``, removed on exit."""
    top = Path(_git(["rev-parse", "--show-toplevel"], project_root))
    commit = resolve_ref(ref, top)
    relative = project_root.resolve().relative_to(top.resolve())
    scratch = Path(tempfile.mkdtemp(prefix="gpu-eks-render-base-"))
    path = scratch / "tree"
    _git(["worktree", "add", "--detach", "--quiet", str(path), commit], top)
    try:
        yield path / relative
    finally:
        # --force: the render left __pycache__ folders behind, which git counts as changes.
        subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=top, capture_output=True, check=False)
        shutil.rmtree(scratch, ignore_errors=True)
        subprocess.run(["git", "worktree", "prune"], cwd=top, capture_output=True, check=False)


def render_base(stack: str, base_root: Path, ref: str) -> str:
    """``stack`` rendered by the base's own code ("" when the base has no such stack)."""
    if not stackconfig.stack_file(stack, base_root).is_file():
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


#: What stands for the stack name in URNs when two stacks are compared.
STACK_PLACEHOLDER = "<stack>"


def without_stack_in_urns(text: str, stack: str) -> str:
    """``text`` with the stack name in URNs replaced by a placeholder: every URN embeds the stack,
    so comparing two stacks would otherwise show every URN as changed and bury the real differences."""
    return text.replace(f"urn:pulumi:{stack}::", f"urn:pulumi:{STACK_PLACEHOLDER}::")


def diff_stacks(stack: str, against: str, context: int = 3) -> str:
    return unified(
        Side(f"render/{stack}.yaml", without_stack_in_urns(render_here(stack), stack)),
        Side(f"render/{against}.yaml", without_stack_in_urns(render_here(against), against)),
        context,
    )


def diff_base(ref: str, stacks: Sequence[str] | None, context: int = 3) -> tuple[str, str]:
    """(unified diff, replacement warnings) of the work tree against ``ref``, stack by stack."""
    root = REPO_ROOT
    here = stackconfig.available_stacks(root)
    for stack in stacks or ():
        if stack not in here:
            raise DiffError(
                f"unknown stack {stack!r}: there is no stacks/Pulumi.{stack}.yaml (stacks: {', '.join(here)})"
            )
    diffs: list[str] = []
    warnings: list[str] = []
    with worktree(ref, root) as base_root:
        chosen = list(stacks) if stacks else sorted(set(here) | set(stackconfig.available_stacks(base_root)))
        for stack in chosen:
            old = render_base(stack, base_root, ref)
            new = render_here(stack) if stack in here else ""
            diffs.append(
                unified(Side(f"{ref}/render/{stack}.yaml", old), Side(f"work-tree/render/{stack}.yaml", new), context)
            )
            warnings.append(replaced_report(stack, old, new))
    return "".join(diffs), "".join(warnings)


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stack", help="the stack to compare (default: dev with --against, every stack with --base)")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--against", metavar="STACK", help="compare the render of --stack with this stack's")
    which.add_argument("--base", metavar="REF", help="compare the work tree with this git ref (e.g. origin/main)")
    parser.add_argument("--context", type=int, default=3, metavar="N", help="lines of context (default: 3)")


def run(args: argparse.Namespace) -> int:
    try:
        if args.against is not None:
            text, warnings = diff_stacks(args.stack or render.DEFAULT_STACK, args.against, args.context), ""
        else:
            text, warnings = diff_base(args.base, [args.stack] if args.stack else None, args.context)
    except DiffError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    sys.stdout.flush()
    if warnings:
        print(warnings, end="", file=sys.stderr)
    return 1 if text else 0
