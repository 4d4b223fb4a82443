"""Release hygiene: the package version has its CHANGELOG and UPGRADING entries."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.support.paths import ROOT


def package_version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def numbers(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


def changelog_headings() -> list[str]:
    return re.findall(r"^## \[([^\]]+)\]", (ROOT / "CHANGELOG.md").read_text(), flags=re.M)


def last_release() -> str:
    """The newest version the CHANGELOG dates (what consumers install)."""
    return next(h for h in changelog_headings() if h != "Unreleased")


def test_the_package_version_is_a_release_or_the_next_ones_development_release():
    """Between releases pyproject.toml says the next version's development release (PEP 440 X.Y.Z.devN),
    never the last release's number: a commit after 0.3.0 is not 0.3.0 (issue 42)."""
    m = re.fullmatch(r"(\d+\.\d+\.\d+)(\.dev\d+)?", package_version())
    assert m, package_version()
    assert package_version() == "0.4.0.dev0"
    if m.group(2):
        assert numbers(m.group(1)) > numbers(last_release()) and m.group(1) not in changelog_headings()
    else:
        assert m.group(1) == last_release()


def test_versions_sort_as_pep_440_orders_them_and_spell_as_semver():
    """PEP 440 ("Summary of permitted suffixes and relative ordering"): X.Y.Z.devN < X.Y.ZaN < X.Y.ZbN
    < X.Y.ZrcN < X.Y.Z; Pulumi's package schema takes SemVer 2.0.0 (its metaschema's pattern)."""
    from components.version import is_release, semver, sort_key

    ordered = ["0.3.0", "0.4.0.dev0", "0.4.0.dev1", "0.4.0a1.dev0", "0.4.0a1", "0.4.0b2", "0.4.0rc1", "0.4.0"]
    assert sorted(ordered, key=sort_key) == ordered
    assert [semver(v) for v in ("0.4.0", "0.4.0.dev0", "0.4.0a1", "1.0.0rc1")] == [
        "0.4.0",
        "0.4.0-dev.0",
        "0.4.0-alpha.1",
        "1.0.0-rc.1",
    ]
    assert is_release("0.4.0") and not is_release("0.4.0.dev0")
    with pytest.raises(ValueError, match=r"expected X\.Y\.Z or a pre-release"):
        sort_key("0.4")


def test_changelog_has_the_last_release_and_an_unreleased_section():
    headings = changelog_headings()
    assert headings[0] == "Unreleased"
    assert last_release() == "0.3.0"
    # Newest first: released versions in descending order.
    released = [numbers(h) for h in headings[1:]]
    assert released == sorted(released, reverse=True)


def test_upgrading_has_a_section_for_the_last_release():
    upgrading = (ROOT / "UPGRADING.md").read_text()
    assert re.search(rf"^## (.* → )?{re.escape(last_release())}\b", upgrading, flags=re.M)


def test_readme_states_the_tagging_policy():
    readme = (ROOT / "README.md").read_text()
    assert "Releases are git tags `vX.Y.Z`" in readme
    assert "[CHANGELOG](CHANGELOG.md)" in readme and "[UPGRADING.md](UPGRADING.md)" in readme


# --- The README's consumer install line, as a consumer types it ----------------------------------

#: The README's requirement line for consumers (section "Upgrading").
README_REQUIREMENT = re.compile(r"`(gpu-eks-components @ git\+(https://github\.com/<org>/<this-repo>\.git)@(v[^`]+))`")


def readme_requirement() -> tuple[str, str, str]:
    (found,) = README_REQUIREMENT.findall((ROOT / "README.md").read_text())
    return found


def test_the_readme_install_lines_pin_the_last_release():
    """Both consumer lines (pip and `pulumi package add`) name the tag of the last release (a
    development version is never installed by tag)."""
    readme = (ROOT / "README.md").read_text()
    assert readme_requirement()[2] == "v0.3.0" == f"v{last_release()}"
    assert "pulumi package add https://github.com/<org>/<this-repo>.git/plugin@v0.3.0" in readme
    assert not re.findall(r"@v(?!0\.3\.0\b)\d+\.\d+\.\d+", readme)


def test_the_version_lives_in_one_place():
    from components import __version__
    from components.multilang import package_version as schema_version

    assert __version__ == schema_version() == package_version() == "0.4.0.dev0"


def test_the_readme_consumer_line_installs_this_version(tmp_path: Path):
    """`pip install "<README line>"` with the repository URL pointing at a clone of this
    repository (git+file://, offline), as a consumer's requirements file would have it. The clone
    gets the tag when this repository does not have it (nothing is tagged here): on the release
    commit, the one that set pyproject.toml's version to it."""
    line, url, tag = readme_requirement()
    clone = tmp_path / "clone"
    git = ["git", "-c", "advice.detachedHead=false", "-c", "user.name=test", "-c", "user.email=test@example.com"]
    subprocess.run([*git, "clone", "--quiet", str(ROOT), str(clone)], check=True, capture_output=True, timeout=120)
    tags = subprocess.run([*git, "-C", str(clone), "tag", "--list", tag], capture_output=True, text=True, check=True)
    if not tags.stdout.strip():
        commit = release_commit(tag.removeprefix("v"))
        if commit is None:
            pytest.skip("a shallow clone (CI's default checkout) lacks the release commit")
        subprocess.run([*git, "-C", str(clone), "tag", "-a", tag, "-m", tag, commit], check=True, capture_output=True)
    # A PEP 508 URL needs a host (packaging refuses git+file:///…); git reads file://localhost/….
    requirement = line.replace(url, f"file://localhost{clone}")
    assert requirement == f"gpu-eks-components @ git+file://localhost{clone}@{tag}"
    site = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index"]
    done = subprocess.run(
        [*pip, "--target", str(site), requirement], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)
    probe = (
        "import importlib.metadata, components; "
        "print(importlib.metadata.version('gpu-eks-components'), components.__version__)"
    )
    shown = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split() == ["0.3.0", "0.3.0"]
    assert (site / "components" / "composites" / "gpu_capacity.py").is_file()


def release_commit(version: str) -> str | None:
    """The commit that set pyproject.toml's version to ``version`` (None when the history lacks it)."""
    pickaxe = f'-Sversion = "{version}"'
    done = subprocess.run(
        ["git", "-C", str(ROOT), "log", "--reverse", "--format=%H", pickaxe, "--", "pyproject.toml"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.split()[0] if done.returncode == 0 and done.stdout.split() else None


# --- Release hygiene: a pinned build backend, CHANGELOG links to refs that exist -------------------


def test_the_build_backend_is_pinned_as_requirements_dev_pins_it():
    """A release must rebuild bit for bit: the backend is one version, the one the tests build with."""
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]
    pins = dict(line.split("==") for line in (ROOT / "requirements-dev.txt").read_text().splitlines() if "==" in line)
    assert build["requires"] == ["setuptools==80.9.0"] == [f"setuptools=={pins['setuptools']}"]
    assert build["build-backend"] == "setuptools.build_meta"


#: A CHANGELOG link reference's refs: ``compare/<a>...<b>``, ``tree/<a>``, ``releases/tag/<a>``.
CHANGELOG_LINK = re.compile(r"^\[([^\]]+)\]: https://github\.com/[^/]+/[^/]+/(compare|tree|releases/tag)/(\S+)$", re.M)


def changelog_refs(text: str) -> dict[str, list[str]]:
    """Each link reference's label and the git refs it names."""
    refs: dict[str, list[str]] = {}
    for label, kind, tail in CHANGELOG_LINK.findall(text):
        refs[label] = tail.split("...") if kind == "compare" else [tail]
    return refs


def missing_refs(text: str, version: str) -> list[str]:
    """Refs of ``text``'s links that this repository lacks: a tag or a commit. ``v<version>`` (the
    version being released, tagged by ``python -m tooling release tag`` after the tests) may be missing."""
    missing = []
    for label, refs in changelog_refs(text).items():
        for ref in refs:
            if ref == f"v{version}":
                continue
            done = subprocess.run(
                ["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
                capture_output=True,
                check=False,
            )
            if done.returncode != 0:
                missing.append(f"[{label}]: {ref}")
    return missing


def test_the_changelog_links_name_refs_that_exist():
    """Neither 0.1.0 nor 0.2.0 was tagged: their links name the commits (bde7cb0, where the CHANGELOG
    says 0.1.0 stands, and 19061e2, which cut 0.2.0), not tags that do not exist; 0.3.0, the version
    being released, names its tag."""
    text = (ROOT / "CHANGELOG.md").read_text()
    assert changelog_refs(text) == {
        "Unreleased": ["v0.3.0", "HEAD"],
        "0.3.0": ["19061e2d349e9d71d54d0f5549167866f3860150", "v0.3.0"],
        "0.2.0": ["bde7cb06f990b674cd52a3f19c0fa757977a428d", "19061e2d349e9d71d54d0f5549167866f3860150"],
        "0.1.0": ["bde7cb06f990b674cd52a3f19c0fa757977a428d"],
    }
    shallow = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--is-shallow-repository"], capture_output=True, text=True, check=False
    )
    if shallow.stdout.strip() != "false":
        pytest.skip("a shallow clone (CI's default checkout) lacks the history")
    assert missing_refs(text, last_release()) == []
    # The check can fail: a ref this repository lacks; the version being released may be untagged yet.
    unknown = "0" * 40
    link = f"[0.3.0]: https://github.com/<org>/<this-repo>/compare/{unknown}...v0.3.0\n"
    assert missing_refs(link, "0.3.0") == [f"[0.3.0]: {unknown}"]
    assert missing_refs(link, "0.4.0") == [f"[0.3.0]: {unknown}", "[0.3.0]: v0.3.0"]
