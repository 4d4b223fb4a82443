"""``python -m tooling diff``: a unified diff of renders, what a reviewer reads.

* ``--stack dev --against prod``: how two stacks differ.
* ``--base origin/main``: what a change does to each stack (or only ``--stack``). The work tree is
  rendered in this process; the base is checked out into a temporary ``git worktree`` (removed
  afterwards) and rendered by *its own* code, in a subprocess running this same Python, so a
  change to the library itself shows up in the diff.

With ``--base``, URNs of the base that the work tree neither declares nor aliases are reported on
stderr: ``pulumi up`` would delete or replace those resources (see tooling.render_urns).

Output: first the change-impact summary of each stack (tooling.impact: what deploying the change
does: replacements and why, node rolls, GPU pods rescheduled, device-plugin DaemonSet rolls), then
the unified diffs. ``--format json`` gives both as one JSON document for other tools;
``--comment FILE`` also writes the pull request comment (Markdown: the summaries first, then the
diff, cut to fit a GitHub comment).

Exit status: 0 no difference, 1 differences, 2 errors (unknown stack or ref, a render failed).
"""

from __future__ import annotations

import argparse
import difflib
import json
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
from typing import Any

from components.config import stackfile

from . import REPO_ROOT, impact, render, render_urns, render_values

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


#: What stands for the stack name in URNs when two stacks are compared.
STACK_PLACEHOLDER = "<stack>"


def without_stack_in_urns(text: str, stack: str) -> str:
    """``text`` with the stack name in URNs replaced by a placeholder: every URN embeds the stack,
    so comparing two stacks would otherwise show every URN as changed and bury the real differences."""
    return text.replace(f"urn:pulumi:{stack}::", f"urn:pulumi:{STACK_PLACEHOLDER}::")


@dataclass(frozen=True)
class StackDiff:
    """One comparison: the unified diff of two renders, its impact summary and any guard warning."""

    stack: str
    old: Side
    new: Side
    diff: str
    impact: impact.Impact | None
    warning: str = ""

    @property
    def title(self) -> str:
        return f"{self.old.label} -> {self.new.label}"


def _document(text: str) -> dict[str, Any]:
    loaded = render_values.load(text) if text else None
    return loaded if isinstance(loaded, dict) else {}


def compare(stack: str, old: Side, new: Side, context: int = 3, warning: str = "") -> StackDiff:
    """The diff of two renders and, when they differ, what deploying the new one does."""
    text = unified(old, new, context)
    summary = impact.summarize(stack, _document(old.text), _document(new.text)) if text else None
    return StackDiff(stack, old, new, text, summary, warning)


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
# Output: text, JSON, the pull request comment
# ---------------------------------------------------------------------------------------------

#: GitHub refuses comments over 65536 characters; the diff is cut to leave room for the summaries.
COMMENT_LIMIT = 60_000


def text_output(results: Sequence[StackDiff]) -> str:
    """The summaries of every stack that changed, then the unified diffs; a line saying "no change"
    when no render differs (an empty output would look like a failure)."""
    if not any(r.diff for r in results):
        compared = ", ".join(f"{r.stack} ({r.title})" for r in results) or "no stack"
        return f"no change: the rendered desired state is the same for {compared}\n"
    summaries = [impact.text(r.impact, f"stack {r.stack} ({r.title})") for r in results if r.impact]
    return "".join(summaries) + ("\n" if summaries else "") + "".join(r.diff for r in results)


def json_output(results: Sequence[StackDiff]) -> str:
    document = {
        "stacks": [
            {
                "stack": r.stack,
                "old": r.old.label,
                "new": r.new.label,
                "changed": bool(r.diff),
                "summary": r.impact.to_json() if r.impact else None,
                "diff": r.diff,
                "replacementWarning": r.warning,
            }
            for r in results
        ]
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def comment_markdown(results: Sequence[StackDiff], limit: int = COMMENT_LIMIT) -> str:
    """The pull request comment: per stack the impact summary first, then the render diff."""
    parts: list[str] = []
    for r in results:
        if not r.impact:
            parts.append(f"### Stack `{r.stack}`: no change\n\n")
            continue
        parts.append(f"### Stack `{r.stack}`: what deploying this change does\n\n{impact.markdown(r.impact)}\n")
        if r.warning:
            parts.append("> [!WARNING]\n> " + r.warning.strip().replace("\n", "\n> ") + "\n\n")
    head = "".join(parts)
    diff = "".join(r.diff for r in results)
    room = max(limit - len(head) - 200, 0)
    cut = len(diff) > room
    shown = diff[:room]
    body = head
    if diff:
        body += "<details><summary>Render diff</summary>\n\n```diff\n" + shown
        body += ("" if shown.endswith("\n") else "\n") + "```\n\n</details>\n"
        if cut:
            body += "\n(cut to fit a comment: the job summary and `python -m tooling diff` show all of it)\n"
    return body


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
