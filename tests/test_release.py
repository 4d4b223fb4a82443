"""Release hygiene: the package version has its CHANGELOG and UPGRADING entries."""

from __future__ import annotations

import re
import tomllib

from tests.support import ROOT


def package_version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_the_package_version_is_semver():
    assert re.fullmatch(r"\d+\.\d+\.\d+", package_version())


def test_changelog_has_the_package_version_and_an_unreleased_section():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## \[([^\]]+)\]", changelog, flags=re.M)
    assert headings[0] == "Unreleased"
    assert package_version() in headings
    # Newest first: released versions in descending order.
    released = [tuple(int(x) for x in h.split(".")) for h in headings[1:]]
    assert released == sorted(released, reverse=True)


def test_upgrading_has_a_section_for_the_package_version():
    upgrading = (ROOT / "UPGRADING.md").read_text()
    assert re.search(rf"^## (.* → )?{re.escape(package_version())}\b", upgrading, flags=re.M)


def test_readme_states_the_tagging_policy():
    readme = (ROOT / "README.md").read_text()
    assert "Releases are git tags `vX.Y.Z`" in readme
    assert "[CHANGELOG](CHANGELOG.md)" in readme and "[UPGRADING.md](UPGRADING.md)" in readme
