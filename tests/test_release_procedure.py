"""Cutting a release: the maintainer's procedure (``python -m tooling release prepare`` / ``tag``)
run on a throwaway clone, the workflow's gate (``release check``), and .github/workflows/release.yml
(trusted publishing, least privilege; zizmor and checkov run on it in test_workflows.py and
test_pod_security.py)."""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from tests.support.copies import copy_repository_files
from tests.support.paths import ROOT
from tests.support.workflows import load_workflow
from tooling import release

GIT = ["git", "-c", "user.name=test", "-c", "user.email=test@example.com", "-c", "advice.detachedHead=false"]

CHANGELOG = """# Changelog

Intro.

## [Unreleased]

### Added

- A new thing.

## [0.2.0] - 2026-11-24

### Added

- Old things.

[Unreleased]: https://github.com/<org>/<this-repo>/compare/v0.2.0...HEAD
[0.2.0]: https://github.com/<org>/<this-repo>/compare/v0.1.0...v0.2.0
"""


def project(tmp_path: Path, version: str = "0.2.0", changelog: str = CHANGELOG) -> Path:
    root = tmp_path / "project"
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text(f'[project]\nname = "gpu-eks-components"\nversion = "{version}"\n')
    (root / "CHANGELOG.md").write_text(changelog)
    (root / "README.md").write_text(
        "`gpu-eks-components @ git+https://github.com/<org>/<this-repo>.git@v0.2.0`\n"
        "pulumi package add https://github.com/<org>/<this-repo>.git/plugin@v0.2.0\n"
        "gpu-eks-components==0.2.0 and the plugin v0.20.0 and ==0.1.0 stay\n"
    )
    return root


# --- check: the workflow's gate ----------------------------------------------------------------


def test_check_returns_the_changelog_section_as_notes(tmp_path: Path):
    root = project(tmp_path)
    assert release.check(root, "v0.2.0") == "### Added\n\n- Old things.\n"


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("v0.3.0", "tag 'v0.3.0' but pyproject.toml's version is '0.2.0' (expected tag v0.2.0)"),
        ("0.2.0", "tag '0.2.0': expected vX.Y.Z\ntag '0.2.0' but pyproject.toml's version is '0.2.0'"),
    ],
)
def test_check_refuses_a_tag_that_is_not_the_version(tmp_path: Path, tag: str, expected: str):
    with pytest.raises(release.ReleaseError) as err:
        release.check(project(tmp_path), tag)
    assert str(err.value).startswith(expected)


def test_check_refuses_a_version_without_a_dated_changelog_section(tmp_path: Path):
    with pytest.raises(release.ReleaseError, match=r"CHANGELOG.md has no section '## \[0.4.0\] - YYYY-MM-DD'"):
        release.check(project(tmp_path, version="0.4.0"), "v0.4.0")
    undated = CHANGELOG.replace("## [0.2.0] - 2026-11-24", "## [0.2.0]")
    with pytest.raises(release.ReleaseError, match=r"section \[0.2.0\] has no date"):
        release.check(project(tmp_path / "b", changelog=undated), "v0.2.0")


def test_this_repository_is_between_releases():
    """main carries the next version's development release, which no tag checks out (issue 42)."""
    assert release.version(ROOT) == "0.4.0.dev0"
    with pytest.raises(release.ReleaseError) as err:
        release.check(ROOT, "v0.4.0")
    assert str(err.value) == (
        "pyproject.toml's version is '0.4.0.dev0', a development version: the release commit sets X.Y.Z "
        "(python -m tooling release prepare X.Y.Z)"
    )
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert release.last_release(changelog) == "0.3.0"
    assert release.changelog_sections(changelog)["0.3.0"][1].startswith("Breaking (see [UPGRADING.md](UPGRADING.md))")


# --- prepare ----------------------------------------------------------------------------------


def test_prepare_moves_version_changelog_and_install_lines(tmp_path: Path):
    root = project(tmp_path)
    changed = release.prepare(root, "0.3.0", dt.date(2026, 12, 1))
    assert sorted(p.name for p in changed) == ["CHANGELOG.md", "README.md", "pyproject.toml"]
    assert release.version(root) == "0.3.0"
    text = (root / "CHANGELOG.md").read_text()
    released = "## [0.3.0] - 2026-12-01\n\n### Added\n\n- A new thing.\n\n## [0.2.0] - 2026-11-24"
    assert f"## [Unreleased]\n\n{released}" in text
    assert text.endswith(
        "[Unreleased]: https://github.com/<org>/<this-repo>/compare/v0.3.0...HEAD\n"
        "[0.3.0]: https://github.com/<org>/<this-repo>/compare/v0.2.0...v0.3.0\n"
        "[0.2.0]: https://github.com/<org>/<this-repo>/compare/v0.1.0...v0.2.0\n"
    )
    assert (root / "README.md").read_text() == (
        "`gpu-eks-components @ git+https://github.com/<org>/<this-repo>.git@v0.3.0`\n"
        "pulumi package add https://github.com/<org>/<this-repo>.git/plugin@v0.3.0\n"
        "gpu-eks-components==0.3.0 and the plugin v0.20.0 and ==0.1.0 stay\n"
    )
    assert release.check(root, "v0.3.0") == "### Added\n\n- A new thing.\n"


def test_prepare_from_a_development_version_and_open_the_next_one(tmp_path: Path):
    """Between releases the version is the next one's X.Y.Z.dev0: prepare releases it (the README's pins
    move from the last release, the golden schema from the SemVer spelling), then ``dev`` opens the next."""
    root = project(tmp_path, version="0.3.0.dev0")
    golden = root / "tests" / "golden" / "schema.json"
    golden.parent.mkdir(parents=True)
    golden.write_text('{\n  "name": "gpu-eks",\n  "version": "0.3.0-dev.0"\n}\n')
    changed = release.prepare(root, "0.3.0", dt.date(2026, 12, 1))
    assert sorted(p.name for p in changed) == ["CHANGELOG.md", "README.md", "pyproject.toml", "schema.json"]
    assert release.version(root) == "0.3.0" and '"version": "0.3.0"\n' in golden.read_text()
    assert "@v0.3.0`" in (root / "README.md").read_text()
    assert release.check(root, "v0.3.0") == "### Added\n\n- A new thing.\n"

    assert sorted(p.name for p in release.dev(root, "0.4.0")) == ["pyproject.toml", "schema.json"]
    assert release.version(root) == "0.4.0.dev0" and '"version": "0.4.0-dev.0"\n' in golden.read_text()
    assert "@v0.3.0`" in (root / "README.md").read_text()  # consumers still install the release
    with pytest.raises(release.ReleaseError, match=r"version 0\.4\.0\.dev0 is not after the current 0\.4\.0\.dev0"):
        release.dev(root, "0.4.0")
    with pytest.raises(release.ReleaseError, match=r"version 0\.3\.1 is not after the current 0\.4\.0\.dev0"):
        release.prepare(root, "0.3.1", dt.date(2026, 12, 2))
    with pytest.raises(release.ReleaseError, match=r"version '0\.5\.0\.dev0': expected X\.Y\.Z"):
        release.dev(root, "0.5.0.dev0")


def test_prepare_compares_from_a_commit_when_the_last_release_was_never_tagged(tmp_path: Path):
    """This CHANGELOG's Unreleased link compares from 0.2.0's commit (never tagged): the new version's
    link compares from that commit, and Unreleased from the new tag."""
    root = project(tmp_path)
    changelog = root / "CHANGELOG.md"
    sha = "19061e2d349e9d71d54d0f5549167866f3860150"
    changelog.write_text(changelog.read_text().replace("compare/v0.2.0...HEAD", f"compare/{sha}...HEAD"))
    release.prepare(root, "0.3.0", dt.date(2026, 12, 1))
    assert changelog.read_text().endswith(
        "[Unreleased]: https://github.com/<org>/<this-repo>/compare/v0.3.0...HEAD\n"
        f"[0.3.0]: https://github.com/<org>/<this-repo>/compare/{sha}...v0.3.0\n"
        "[0.2.0]: https://github.com/<org>/<this-repo>/compare/v0.1.0...v0.2.0\n"
    )


def test_prepare_refuses_nothing_to_release_and_going_back(tmp_path: Path):
    empty = CHANGELOG.replace("### Added\n\n- A new thing.\n\n", "")
    with pytest.raises(release.ReleaseError, match="the 'Unreleased' section is empty"):
        release.prepare(project(tmp_path, changelog=empty), "0.3.0", dt.date(2026, 12, 1))
    with pytest.raises(release.ReleaseError, match=r"version 0\.1\.9 is not after the current 0\.2\.0"):
        release.prepare(project(tmp_path / "b"), "0.1.9", dt.date(2026, 12, 1))
    with pytest.raises(release.ReleaseError, match=r"version '1\.0': expected X\.Y\.Z"):
        release.prepare(project(tmp_path / "c"), "1.0", dt.date(2026, 12, 1))


# --- the whole procedure, as the README's "Releasing" says, on a throwaway clone ---------------


def tooling(clone: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(clone)
    return subprocess.run(
        [sys.executable, "-m", "tooling", *args], cwd=clone, env=env, capture_output=True, text=True, timeout=60
    )


def test_the_release_procedure_on_a_throwaway_clone(tmp_path: Path):
    clone = tmp_path / "clone"
    subprocess.run([*GIT, "clone", "--quiet", str(ROOT), str(clone)], check=True, capture_output=True, timeout=120)
    # The work tree's versions of the files the procedure reads and writes (uncommitted changes too).
    files = ("CHANGELOG.md", "README.md", "pyproject.toml", "tooling/release.py", "tooling/__main__.py")
    for name in (*files, "components/version.py"):
        (clone / name).write_bytes((ROOT / name).read_bytes())
    changelog = (clone / "CHANGELOG.md").read_text()
    section = re.compile(r"## \[Unreleased\]\n.*?(?=^## \[)", re.S | re.M)
    unreleased = section.sub("## [Unreleased]\n\n- Entry.\n\n", changelog, count=1)
    (clone / "CHANGELOG.md").write_text(unreleased)
    subprocess.run([*GIT, "-C", str(clone), "commit", "-qam", "work"], check=True, capture_output=True)

    prepared = tooling(clone, "release", "prepare", "0.4.0", "--date", "2026-12-01")
    assert prepared.returncode == 0, prepared.stderr
    dirty = tooling(clone, "release", "tag")
    assert dirty.returncode == 1
    assert "error: the work tree has uncommitted changes: commit the release first" in dirty.stderr
    subprocess.run([*GIT, "-C", str(clone), "commit", "-qam", "release: v0.4.0"], check=True, capture_output=True)
    tagged = tooling(clone, "release", "tag")
    assert tagged.returncode == 0, tagged.stderr
    assert "tagged v0.4.0; publish it with: git push origin main v0.4.0" in tagged.stderr
    git_show = [*GIT, "-C", str(clone), "rev-parse"]
    head, at_tag = (
        subprocess.run([*git_show, ref], check=True, capture_output=True, text=True).stdout
        for ref in ("HEAD", "v0.4.0^{commit}")
    )
    assert head == at_tag
    kind = subprocess.run([*GIT, "-C", str(clone), "cat-file", "-t", "v0.4.0"], capture_output=True, text=True)
    assert kind.stdout.strip() == "tag"  # annotated

    # The workflow's gate on the tagged commit; the notes are the CHANGELOG section.
    notes = tmp_path / "notes.md"
    checked = tooling(clone, "release", "check", "--tag", "v0.4.0", "--notes", str(notes))
    assert checked.returncode == 0, checked.stderr
    assert notes.read_text() == "- Entry.\n"
    assert tooling(clone, "release", "check", "--tag", "v0.3.0").returncode == 1
    assert tooling(clone, "release", "tag").returncode == 1  # v0.4.0 exists already
    readme = (clone / "README.md").read_text()
    assert "@v0.4.0" in readme and not re.findall(r"@v0\.3\.0\b", readme)

    # Right after the tag: the next version's development release, which no tag checks out.
    opened = tooling(clone, "release", "dev", "0.5.0")
    assert opened.returncode == 0, opened.stderr
    assert release.version(clone) == "0.5.0.dev0"
    assert tooling(clone, "release", "check", "--tag", "v0.4.0").returncode == 1


# --- .github/workflows/release.yml --------------------------------------------------------------


@pytest.fixture(scope="module")
def workflow() -> dict[str, Any]:
    return load_workflow(ROOT / ".github" / "workflows" / "release.yml")


def test_it_runs_on_pushed_version_tags_only(workflow: dict[str, Any]):
    assert workflow["on"] == {"push": {"tags": ["v*"]}}


def test_it_checks_the_tag_then_builds_and_publishes_after_the_tests(workflow: dict[str, Any]):
    jobs = workflow["jobs"]
    assert list(jobs) == ["build", "test", "publish", "github-release"]
    assert jobs["publish"]["needs"] == ["build", "test"]
    assert jobs["github-release"]["needs"] == "publish"
    runs = [s.get("run", "") for s in jobs["build"]["steps"]]
    assert 'python -m tooling release check --tag "$TAG" --notes release-notes.md' in runs[2]
    assert "python -m build --outdir dist ." in runs[3]
    assert jobs["build"]["steps"][2]["env"] == {"TAG": "${{ github.ref_name }}"}
    assert "./scripts/test" in jobs["test"]["steps"][-1]["run"]


def test_only_the_publish_job_can_mint_an_identity_token(workflow: dict[str, Any]):
    """The publish job runs in the environment `pypi`, whose required reviewers (the setup the
    workflow's header and docs/upgrading.md ask for) are what keep a pushed tag alone from publishing."""
    header = (ROOT / ".github" / "workflows" / "release.yml").read_text().split("\nname:", 1)[0]
    assert "add required reviewers to it (Deployment protection rules)" in header
    assert "**The `pypi` environment needs required reviewers.**" in (ROOT / "docs" / "upgrading.md").read_text()
    jobs = workflow["jobs"]
    assert jobs["publish"]["permissions"] == {"id-token": "write"}
    assert jobs["publish"]["environment"]["name"] == "pypi"
    (publish,) = [s for s in jobs["publish"]["steps"] if s.get("uses", "").startswith("pypa/gh-action-pypi-publish@")]
    assert publish["uses"] == "pypa/gh-action-pypi-publish@ed0c53931b1dc9bd32cbe73a98c7f6766f8a527e"
    assert "password" not in publish.get("with", {})  # trusted publishing: no token
    others = {name: job["permissions"] for name, job in jobs.items() if name != "publish"}
    read = {"contents": "read"}
    assert others == {"build": read, "test": read, "github-release": {"contents": "write"}}


def test_the_github_release_gets_the_changelog_section(workflow: dict[str, Any]):
    (step,) = [s for s in workflow["jobs"]["github-release"]["steps"] if "run" in s]
    assert step["run"].startswith('gh release create "$TAG" --verify-tag')
    assert "--notes-file release-notes.md dist/*" in step["run"]


# --- UPGRADING's commands name refs that exist ----------------------------------------------------


def test_upgrading_names_the_last_0_1_0_commit_as_the_base():
    """0.1.0 was never tagged: UPGRADING's `--base 19061e2^` is its last commit (the next one set 0.2.0)."""
    text = (ROOT / "UPGRADING.md").read_text()
    assert "`python -m tooling diff --base 19061e2^`" in text and "--base v0.1.0" not in text
    shallow = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--is-shallow-repository"], capture_output=True, text=True, check=False
    )
    if shallow.stdout.strip() != "false":
        pytest.skip("a shallow clone (CI's default checkout) lacks the history")

    def version_at(ref: str) -> str:
        shown = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{ref}:pyproject.toml"], capture_output=True, text=True, check=True
        )
        return re.search(r'^version = "(.+)"$', shown.stdout, re.M).group(1)  # type: ignore[union-attr]

    assert version_at("19061e2^") == "0.1.0"
    assert version_at("19061e2") == "0.2.0"


def test_the_workflows_build_step_makes_the_sdist_and_the_wheel(workflow: dict[str, Any], tmp_path: Path):
    """The build step's command on the tracked files (offline: --no-isolation uses this venv's
    setuptools, which requirements-dev.txt pins; the workflow builds in an isolated env)."""
    (step,) = [s for s in workflow["jobs"]["build"]["steps"] if "python -m build" in s.get("run", "")]
    assert "python -m pip install build==1.2.2.post1\n" in step["run"]
    assert 'SOURCE_DATE_EPOCH="$(git log -1 --format=%ct)"\nexport SOURCE_DATE_EPOCH\n' in step["run"]
    source = copy_repository_files(tmp_path / "src", untracked=False)  # what the tag's checkout holds
    dist = tmp_path / "dist"
    env = {**os.environ, "SOURCE_DATE_EPOCH": "1764000000"}  # the step sets the tagged commit's time
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    version = release.version(ROOT)
    # Rebuilt from files checked out at another time, the wheel is the same bytes.
    for path in source.rglob("*"):
        os.utime(path, (1_900_000_000, 1_900_000_000))
    again = tmp_path / "again"
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--no-index"]
    done = subprocess.run([*pip_wheel, "-w", str(again), str(source)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    wheel = f"gpu_eks_components-{version}-py3-none-any.whl"
    assert (again / wheel).read_bytes() == (dist / wheel).read_bytes()
    assert sorted(p.name for p in dist.iterdir()) == [
        f"gpu_eks_components-{version}-py3-none-any.whl",
        f"gpu_eks_components-{version}.tar.gz",
    ]
    with tarfile.open(dist / f"gpu_eks_components-{version}.tar.gz") as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    assert {"pyproject.toml", "README.md", "components/review/cli.py", "components/version.py"} <= names
    assert not [n for n in names if n.startswith(("tooling/", "stacks/", "plugin/", ".github/"))]


def test_prepare_moves_every_version_pin_of_this_readme(tmp_path: Path):
    """Every place the README pins this version (install lines, `pulumi package add`) is one
    prepare moves: none is left behind; prose about a version stays."""
    changelog = (ROOT / "CHANGELOG.md").read_text()
    current = release.last_release(changelog)
    assert current == "0.3.0"
    pin = re.compile(rf"(?:\.git(?:/plugin)?@v|gpu-eks-components==){re.escape(current)}\b")
    root = project(tmp_path, version=release.version(ROOT), changelog=changelog)
    readme = (ROOT / "README.md").read_text()
    (root / "README.md").write_text(readme)
    release.prepare(root, "99.0.0", dt.date(2026, 12, 1))
    moved = (root / "README.md").read_text()
    assert pin.findall(moved) == []
    assert len(re.findall(r"(?:@v|==)99\.0\.0\b", moved)) == len(pin.findall(readme)) == 5
    assert len(re.findall(re.escape(current), moved)) == len(re.findall(re.escape(current), readme)) - 5
