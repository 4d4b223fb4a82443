"""The render diff and what a reviewer reads from it: a unified diff of two renders with hunk
headers naming the resource, the change-impact summary of each stack (``impact``), the
replacement guard (``urns``), and the pull request comment (Markdown: summaries first, then the
diff, cut to fit a GitHub comment). Also the temporary ``git worktree`` a base ref is rendered in.

Used by this repository's ``python -m tooling diff`` and by the consumers' ``gpu-eks-review diff``;
each renders its two sides its own way.
"""

from __future__ import annotations

import difflib
import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import impact
from . import urns as render_urns
from . import values as render_values


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


def replaced_report(stack: str, old_text: str, new_text: str, refresh_command: str, consumer: bool = False) -> str:
    """The replacement guard between two renders ("" when nothing would be deleted or replaced);
    ``consumer``: for a consuming team's program (``urns.guard_report``)."""
    if not old_text or not new_text:
        return ""  # a stack added or removed as a whole is the diff itself
    try:
        missing = render_urns.replaced_urns(render_values.load(old_text), render_values.load(new_text))
    except (ValueError, KeyError, TypeError) as err:
        return f"note: stack {stack}: could not compare URNs ({err}); review the diff by hand\n"
    if not missing:
        return ""
    return render_urns.guard_report(stack, missing, refresh_command, consumer) + "\n"


# ---------------------------------------------------------------------------------------------
# git: a base ref checked out beside the work tree
# ---------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------
# The two renders compared
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


def comment_markdown(
    results: Sequence[StackDiff], limit: int = COMMENT_LIMIT, command: str = "python -m tooling diff"
) -> str:
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
            body += f"\n(cut to fit a comment: the job summary and `{command}` show all of it)\n"
    return body
