"""``python -m tooling release``: cut a release, and check one before it is published.

The version lives in one place, ``version`` in pyproject.toml (components/version.py); a release is
the commit that sets it to ``X.Y.Z``, with a CHANGELOG section ``## [X.Y.Z] - YYYY-MM-DD`` and an
annotated tag ``vX.Y.Z`` on it. Between releases the version is the next one's development release
``X.Y.Z.dev0`` (PEP 440): no commit but the release's carries its number. The maintainer's
procedure (docs/upgrading.md, "Releasing"):

1. ``python -m tooling release prepare X.Y.Z``: sets the version in pyproject.toml, turns the
   CHANGELOG's "Unreleased" entries into the section of X.Y.Z (a new, empty "Unreleased" above it),
   and moves the README's install lines (from the last release) and the component package's golden
   schema to the new version. Review, run the tests, commit.
2. ``python -m tooling release tag``: checks the clean work tree's HEAD as the workflow will, then
   creates the annotated tag ``vX.Y.Z`` on it. ``git push origin main vX.Y.Z`` starts
   .github/workflows/release.yml.
3. The workflow runs ``python -m tooling release check --tag vX.Y.Z --notes FILE`` (the tag, the
   version and the CHANGELOG agree; the section's body becomes the GitHub release's notes), builds,
   publishes to PyPI and creates the GitHub release.
4. ``python -m tooling release dev X.Y.Z``: the next version's ``X.Y.Z.dev0`` in pyproject.toml and
   the golden schema (the README keeps naming the release); commit it right after the tag.

Standard library only: the workflow runs ``check`` before installing anything.
Exit status: 0 done, 1 the release does not check out (each problem on stderr), 2 usage errors.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import subprocess
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path

from components.version import is_release, semver, sort_key

from . import REPO_ROOT

SEMVER = re.compile(r"\d+\.\d+\.\d+")
UNRELEASED = "## [Unreleased]"
#: A released section's heading (Keep a Changelog 1.1.0): ``## [X.Y.Z] - YYYY-MM-DD``.
SECTION = re.compile(r"^## \[(?P<version>[^\]]+)\](?: - (?P<date>\d{4}-\d{2}-\d{2}))?[ \t]*$", re.M)
#: Where the README pins the version (the consumer's install lines): ``…git@vX.Y.Z``, ``==X.Y.Z``.
README_PINS = (
    re.compile(r"(\.git(?:/plugin)?@v)(\d+\.\d+\.\d+)"),
    re.compile(r"(gpu-eks-components==)(\d+\.\d+\.\d+)"),
)
GOLDEN_SCHEMA = Path("tests") / "golden" / "schema.json"
LINK_REFERENCE = re.compile(r"^\[[^\]]+\]: \S+$", re.M)
#: The CHANGELOG's link reference of "Unreleased": ``[Unreleased]: <repo>/compare/<ref>...HEAD``, the
#: ref the last release's tag ``vX.Y.Z`` (or a commit: 0.2.0 was never tagged).
UNRELEASED_LINK = re.compile(r"^\[Unreleased\]: (?P<repo>\S+)/compare/(?P<old>\S+?)\.\.\.HEAD$", re.M)


class ReleaseError(Exception):
    """The release does not check out: every problem, one per line."""


def version(root: Path) -> str:
    return str(tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"])


def changelog_sections(text: str) -> dict[str, tuple[str | None, str]]:
    """``{version: (date, body)}`` of every ``## [...]`` section (``Unreleased`` included)."""
    heads = list(SECTION.finditer(text))
    # The last section ends where the link references start (``[0.2.0]: https://…``).
    links = LINK_REFERENCE.search(text, heads[-1].end()) if heads else None
    ends = [h.start() for h in heads[1:]] + [links.start() if links else len(text)]
    return {h["version"]: (h["date"], text[h.end() : end].strip("\n")) for h, end in zip(heads, ends, strict=True)}


def check(root: Path, tag: str) -> str:
    """The release notes of ``tag`` (its CHANGELOG section's body); raises ReleaseError listing
    every disagreement between the tag, pyproject.toml's version and the CHANGELOG."""
    problems: list[str] = []
    if not re.fullmatch(rf"v{SEMVER.pattern}", tag):
        problems.append(f"tag {tag!r}: expected vX.Y.Z")
    current = version(root)
    if not is_release(current):
        problems.append(
            f"pyproject.toml's version is {current!r}, a development version: the release commit sets X.Y.Z "
            "(python -m tooling release prepare X.Y.Z)"
        )
    elif tag != f"v{current}":
        problems.append(f"tag {tag!r} but pyproject.toml's version is {current!r} (expected tag v{current})")
    sections = changelog_sections((root / "CHANGELOG.md").read_text())
    date, body = sections.get(current, (None, ""))
    if not is_release(current):
        pass  # no section to check: the version is not a release
    elif current not in sections:
        problems.append(f"CHANGELOG.md has no section '## [{current}] - YYYY-MM-DD'")
    elif date is None:
        problems.append(f"CHANGELOG.md's section [{current}] has no date ('## [{current}] - YYYY-MM-DD')")
    elif not body.strip():
        problems.append(f"CHANGELOG.md's section [{current}] is empty")
    if "Unreleased" in sections and next(iter(sections)) != "Unreleased":
        problems.append("CHANGELOG.md: '## [Unreleased]' must be the first section")
    if problems:
        raise ReleaseError("\n".join(problems))
    return body + "\n"


def _set_version_in_pyproject(text: str, old: str, new: str) -> str:
    updated, count = re.subn(rf'^version = "{re.escape(old)}"$', f'version = "{new}"', text, count=1, flags=re.M)
    if count != 1:
        raise ReleaseError(f'pyproject.toml: no line version = "{old}"')
    return updated


def _changelog_with_release(text: str, new: str, date: dt.date) -> str:
    sections = changelog_sections(text)
    if new in sections:
        raise ReleaseError(f"CHANGELOG.md already has a section [{new}]")
    if not sections.get("Unreleased", (None, ""))[1].strip():
        raise ReleaseError("CHANGELOG.md: the 'Unreleased' section is empty: nothing to release")
    text = text.replace(UNRELEASED, f"{UNRELEASED}\n\n## [{new}] - {date.isoformat()}", 1)
    # The link references at the end (Keep a Changelog): Unreleased compares from the new tag.
    return UNRELEASED_LINK.sub(
        lambda m: f"[Unreleased]: {m['repo']}/compare/v{new}...HEAD\n[{new}]: {m['repo']}/compare/{m['old']}...v{new}",
        text,
        count=1,
    )


def prepare(root: Path, new: str, date: dt.date) -> list[Path]:
    """Move the repository to version ``new`` (X.Y.Z, after the current version, which may be its
    development release): returns the files changed (nothing is committed)."""
    old = _next_version(root, new, new)
    pyproject = root / "pyproject.toml"
    changelog = root / "CHANGELOG.md"
    # The README names the last release (never a development version): its pins move from there.
    released = old if is_release(old) else last_release(changelog.read_text())
    edits = {
        pyproject: _set_version_in_pyproject(pyproject.read_text(), old, new),
        changelog: _changelog_with_release(changelog.read_text(), new, date),
    }
    readme = root / "README.md"
    text = readme.read_text()
    for pin in README_PINS:
        text = pin.sub(lambda m: m.group(1) + (new if m.group(2) == released else m.group(2)), text)
    edits[readme] = text
    return _write(root, {**edits, **_golden_schema_edit(root, old, new)})


def dev(root: Path, new: str) -> list[Path]:
    """Open the development of ``new`` (X.Y.Z) after a release: pyproject.toml's version and the golden
    schema's become ``X.Y.Z.dev0``; the README and the CHANGELOG still name the last release."""
    target = f"{new}.dev0"
    old = _next_version(root, new, target)
    pyproject = root / "pyproject.toml"
    edits = {pyproject: _set_version_in_pyproject(pyproject.read_text(), old, target)}
    return _write(root, {**edits, **_golden_schema_edit(root, old, target)})


def last_release(changelog: str) -> str | None:
    """The newest released version of a CHANGELOG: its first dated section."""
    return next((v for v, (date, _) in changelog_sections(changelog).items() if date), None)


def _next_version(root: Path, new: str, target: str) -> str:
    """The current version, after checking that ``new`` is X.Y.Z and ``target`` comes after it."""
    if not SEMVER.fullmatch(new):
        raise ReleaseError(f"version {new!r}: expected X.Y.Z")
    old = version(root)
    if sort_key(target) <= sort_key(old):
        raise ReleaseError(f"version {target} is not after the current {old}")
    return old


def _golden_schema_edit(root: Path, old: str, new: str) -> dict[Path, str]:
    """The component package's golden schema at ``new`` (its version is SemVer: components/version.py)."""
    golden = root / GOLDEN_SCHEMA
    if not golden.is_file():
        return {}
    return {golden: golden.read_text().replace(f'"version": "{semver(old)}"', f'"version": "{semver(new)}"', 1)}


def _write(root: Path, edits: dict[Path, str]) -> list[Path]:
    changed = [path for path, content in edits.items() if content != path.read_text()]
    for path in changed:
        path.write_text(edits[path])
    return changed


def _git(args: Sequence[str], root: Path) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ReleaseError(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def tag(root: Path) -> str:
    """Check HEAD of a clean work tree as the workflow will, then tag it ``vX.Y.Z`` (annotated)."""
    if _git(["status", "--porcelain", "--untracked-files=no"], root).strip():
        raise ReleaseError("the work tree has uncommitted changes: commit the release first")
    name = f"v{version(root)}"
    check(root, name)
    if _git(["tag", "--list", name], root).strip():
        raise ReleaseError(f"tag {name} exists already")
    _git(["tag", "-a", name, "-m", f"gpu-eks-components {name[1:]}"], root)
    return name


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="step", required=True, metavar="STEP")
    p = sub.add_parser("prepare", help="set the version, date the CHANGELOG's Unreleased entries, move install lines")
    p.add_argument("version", help="the new version, X.Y.Z")
    p.add_argument("--date", type=dt.date.fromisoformat, default=None, help="the release date (default: today, UTC)")
    sub.add_parser("tag", help="check the committed release and create its annotated tag vX.Y.Z")
    d = sub.add_parser("dev", help="after a release: the next version's development release X.Y.Z.dev0")
    d.add_argument("version", help="the next version, X.Y.Z")
    c = sub.add_parser("check", help="check that a tag, pyproject.toml and the CHANGELOG agree (the workflow's gate)")
    c.add_argument("--tag", required=True, help="the tag being released, vX.Y.Z")
    c.add_argument("--notes", type=Path, metavar="FILE", help="write the version's CHANGELOG section to FILE")


def run(args: argparse.Namespace, root: Path = REPO_ROOT) -> int:
    try:
        if args.step == "prepare":
            date = args.date or dt.datetime.now(dt.UTC).date()
            changed = prepare(root, args.version, date)
            print(f"prepared {args.version}: {', '.join(str(p.relative_to(root)) for p in changed)}", file=sys.stderr)
            print(
                "next: review, run ./scripts/test, add an UPGRADING.md section if users must act, commit, then "
                "`python -m tooling release tag`",
                file=sys.stderr,
            )
        elif args.step == "dev":
            changed = dev(root, args.version)
            print(f"{args.version}.dev0: {', '.join(str(p.relative_to(root)) for p in changed)}", file=sys.stderr)
            print(f'next: commit ("start {args.version}.dev0") right after the release\'s tag', file=sys.stderr)
        elif args.step == "tag":
            name = tag(root)
            print(f"tagged {name}; publish it with: git push origin main {name}", file=sys.stderr)
            print("then open the next version: python -m tooling release dev X.Y.Z, and commit", file=sys.stderr)
        else:
            notes = check(root, args.tag)
            if args.notes is not None:
                args.notes.write_text(notes)
            print(f"{args.tag}: pyproject.toml and CHANGELOG.md agree", file=sys.stderr)
    except ReleaseError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0
