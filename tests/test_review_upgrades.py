"""``gpu-eks-review diff --base`` on pull requests that may change the library (issue 42): the rule of
docs/review.md, "when the library or any dependency might differ between base and head, the review
renders each side with what that side pins, or refuses with the reason and the way out; never 'no
change'", in each layout a consuming team has. What is installed is pip's own record of it: a tiny
package named gpu-eks-components installed by this venv's real pip (its ``direct_url.json``).

The layout where the base is rendered with its own library, end to end with a node roll reported, is
tests/test_consumer_review.py's (the library pinned in an included file, ``-r reqs/lib.txt``); here
the refusals, end to end, and the decisions from pip's records."""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import re
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from components.review import baseenv, deps, installed
from components.review.diff import DiffError
from tests.support.paths import ROOT
from tests.support.review import GIT, PROJECT, review

NEW = "gpu-eks-components @ git+https://github.com/<org>/<this-repo>.git@<new-commit>"
TAIL = "pass --base-python with a Python that has the base's dependencies, or --same-library"


def consumer_repository(
    root: Path, base: dict[str, bytes | str], head: dict[str, bytes | str], toolchain: str | None = "pip"
) -> Path:
    """tests/consumer_project in a git repository: main has the files ``base`` (and Pulumi.yaml's
    ``toolchain``: None leaves the option out); the work tree ``head``."""
    shutil.copytree(PROJECT, root, ignore=shutil.ignore_patterns("__pycache__"))
    project = root / "Pulumi.yaml"
    option = f"    toolchain: {toolchain}\n" if toolchain else ""
    assert "    toolchain: pip\n" in project.read_text()
    project.write_text(project.read_text().replace("    toolchain: pip\n", option))
    for files in (base, head):
        for name, content in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            data = content.encode() if isinstance(content, str) else content
            (root / name).write_bytes(data)
        if files is base:
            subprocess.run([*GIT, "init", "--quiet", str(root)], check=True, capture_output=True)
            subprocess.run([*GIT, "-C", str(root), "add", "-A"], check=True, capture_output=True)
            subprocess.run([*GIT, "-C", str(root), "commit", "--quiet", "-m", "base"], check=True, capture_output=True)
    return root


def refusal(root: Path) -> str:
    done = review("diff", "--base", "main", cwd=root)
    assert done.returncode == 2, done.stdout
    assert "no change" not in done.stdout
    return done.stderr.splitlines()[-1]


# ---------------------------------------------------------------------------------------------
# The four layouts, end to end: never "no change"
# ---------------------------------------------------------------------------------------------


def test_a_bumped_commit_pin_the_work_tree_does_not_run_is_refused(tmp_path: Path):
    """The pull request moves the commit pin; this Python's library is not that commit (pip kept what it
    had; here: the checkout on sys.path): both sides would render with the same code."""
    old = NEW.replace("<new-commit>", "<old-commit>")
    root = consumer_repository(tmp_path / "p", {"requirements.txt": f"{old}\n"}, {"requirements.txt": f"{NEW}\n"})
    assert refusal(root) == (
        "error: not compared: requirements.txt differ between main and the work tree (a dependency change: the "
        "base may use another gpu-eks-components), and the work tree is rendered with this Python, whose library "
        f"is not what the work tree pins: gpu-eks-components 0.4.0.dev0 imported from the source tree {ROOT}, not "
        f"installed, not `{NEW}`. Install it into this Python (`{sys.executable} -m pip install --force-reinstall "
        f"--no-deps '{NEW}'`, from the project folder) and review again"
    )


def test_a_poetry_project_without_the_toolchain_option_is_refused(tmp_path: Path):
    """pyproject.toml + poetry.lock, Pulumi.yaml naming no toolchain: the lock file pins the library."""
    lock = '[[package]]\nname = "gpu-eks-components"\nversion = "0.3.0"\n'
    base = {"pyproject.toml": "[tool.poetry]\nname = 'vision'\n", "poetry.lock": lock}
    root = consumer_repository(tmp_path / "p", base, {"poetry.lock": lock.replace("0.3.0", "0.4.0")}, toolchain=None)
    assert deps.toolchain(root) == ("poetry", "poetry.lock; Pulumi.yaml names no toolchain")
    assert refusal(root) == (
        "error: not compared: poetry.lock differ between main and the work tree (a dependency change: the base may "
        "use another gpu-eks-components), and gpu-eks-review builds the base's environment from a pip "
        "requirements.txt only (main: its toolchain is poetry, poetry.lock; Pulumi.yaml names no toolchain); "
        f"{TAIL}"
    )


def test_a_vendored_wheel_replaced_under_the_same_name_is_refused_unless_installed(tmp_path: Path):
    """requirements.txt is the same on both sides; the wheel it installs is not (its sha256 is compared)."""
    wheel = "vendor/gpu_eks_components-0.3.0-py3-none-any.whl"
    requirements = f"pulumi==3.272.0\n./{wheel}\n"
    root = consumer_repository(
        tmp_path / "p", {"requirements.txt": requirements, wheel: b"the old build"}, {wheel: b"a new build"}
    )
    sha = hashlib.sha256(b"a new build").hexdigest()
    assert refusal(root) == (
        f"error: not compared: {wheel} (content) differ between main and the work tree (a dependency change: the "
        "base may use another gpu-eks-components), and the work tree is rendered with this Python, whose library "
        f"is not what the work tree pins: gpu-eks-components 0.4.0.dev0 imported from the source tree {ROOT}, not "
        f"installed, not the content of {root / wheel} (sha256 {sha}) that `./{wheel}` installs. Install it into "
        f"this Python (`{sys.executable} -m pip install --force-reinstall --no-deps ./{wheel}`, from the project "
        "folder) and review again"
    )


@pytest.mark.parametrize(
    ("toolchain", "files", "why"),
    [
        ("uv", {"pyproject.toml": "[project]\nname = 'vision'\n", "uv.lock": "version = 1\n"}, "uv, Pulumi.yaml's"),
        ("pip", {"requirements.txt": "gpu-eks-components==0.3.0\n"}, None),
    ],
)
def test_a_dependency_change_it_cannot_build_is_refused(
    tmp_path: Path, toolchain: str, files: dict[str, str], why: str | None
):
    """Not "no change": the command says what it could not compare and how to compare it."""
    base = files if toolchain == "uv" else {}
    head = {name: f"{text}# the pull request's\n" for name, text in files.items()}
    root = consumer_repository(tmp_path / "p", base, head, toolchain=toolchain)
    reason = f"its toolchain is {why} toolchain" if why else "it has no requirements.txt"
    assert refusal(root) == (
        f"error: not compared: {', '.join(sorted(files))} differ between main and the work tree (a dependency "
        "change: the base may use another gpu-eks-components), and gpu-eks-review builds the base's environment "
        f"from a pip requirements.txt only (main: {reason}); {TAIL}"
    )


def test_every_file_pip_reads_is_compared(tmp_path: Path):
    """Includes as pip reads them (``-r``/``-c`` and long forms, relative to the including file),
    continuation lines, comments, and the content of the archives and folders lines install."""
    root = tmp_path / "p"
    (root / "reqs" / "more").mkdir(parents=True)
    (root / "vendor" / "lib" / "__pycache__").mkdir(parents=True)
    (root / "requirements.txt").write_text("pulumi==3.272.0  # pinned\n-r reqs/lib.txt\n--constraint=constraints.txt\n")
    (root / "constraints.txt").write_text("boto3<2\n")
    (root / "reqs" / "lib.txt").write_text(
        "--requirement more/extra.txt\n./vendor/gpu_eks_components-0.3.0-py3-none-any.whl \\\n"
    )
    (root / "reqs" / "more" / "extra.txt").write_text("-e ./vendor/lib\n# gpu-eks-components==9.9.9\n")
    (root / "vendor" / "gpu_eks_components-0.3.0-py3-none-any.whl").write_bytes(b"wheel")
    (root / "vendor" / "lib" / "setup.py").write_text("")
    (root / "vendor" / "lib" / "__pycache__" / "x.pyc").write_bytes(b"cache")
    assert sorted(deps.pip_files(root)) == [
        "constraints.txt",
        "reqs/lib.txt",
        "reqs/more/extra.txt",
        "requirements.txt",
        "vendor/gpu_eks_components-0.3.0-py3-none-any.whl (content)",
        "vendor/lib (content)",
    ]
    assert deps.library_requirements(root) == ["./vendor/gpu_eks_components-0.3.0-py3-none-any.whl"]
    before = deps.pip_files(root)
    (root / "vendor" / "lib" / "__pycache__" / "x.pyc").write_bytes(b"another cache")
    assert deps.pip_files(root) == before  # what a build reads did not change
    (root / "vendor" / "lib" / "setup.py").write_text("# changed\n")
    assert deps.pip_files(root)["vendor/lib (content)"] != before["vendor/lib (content)"]


def test_a_hash_pinned_library_line_is_the_library(tmp_path: Path):
    """``pip-compile --generate-hashes`` writes the requirement's options on its line: pip reads the
    requirement before them (``pip/_internal/req/req_file.py``), so does the review."""
    (tmp_path / "requirements.txt").write_text(
        "pulumi==3.272.0 --hash=sha256:aa\ngpu-eks-components==0.4.0 \\\n    --hash=sha256:bb --hash=sha256:cc\n"
    )
    assert deps.library_requirements(tmp_path) == ["gpu-eks-components==0.4.0"]
    assert deps.requirement_target("gpu-eks-components==0.4.0 --hash=sha256:bb") == ("gpu-eks-components", None)


def test_files_included_from_outside_the_project_are_compared_by_their_own_path(tmp_path: Path):
    """A monorepo's project includes the repository's requirements (``-r ../requirements.txt``): that
    file is not the project's requirements.txt, and a library bump in it is a change."""
    (tmp_path / "project").mkdir()
    project = tmp_path / "project"
    (project / "requirements.txt").write_text("-r ../requirements.txt\n-r ../common.txt\n")
    (tmp_path / "requirements.txt").write_text("pulumi==3.272.0\n")
    (tmp_path / "common.txt").write_text("gpu-eks-components==0.3.0\n")
    assert sorted(deps.pip_files(project)) == ["../common.txt", "../requirements.txt", "requirements.txt"]
    assert deps.library_requirements(project) == ["gpu-eks-components==0.3.0"]
    base = tmp_path / "base"
    shutil.copytree(tmp_path, base, ignore=shutil.ignore_patterns("base"))
    (tmp_path / "requirements.txt").write_text("pulumi==3.272.0\ngpu-eks-components==0.4.0\n")
    assert deps.changed_files(base / "project", project) == ["../requirements.txt"]


# ---------------------------------------------------------------------------------------------
# What pip recorded: a VCS install's commit, an archive's sha256 (PEP 610 direct_url.json)
# ---------------------------------------------------------------------------------------------


def write_wheel(folder: Path, files: dict[str, str]) -> Path:
    """A wheel of gpu-eks-components 0.3.0 holding ``files``, in the binary distribution format (PEP 427:
    METADATA, WHEEL, and RECORD with each file's urlsafe-base64 sha256 and size)."""
    info = "gpu_eks_components-0.3.0.dist-info"
    content = {
        **files,
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: gpu-eks-components\nVersion: 0.3.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for name, text in content.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text.encode())}\n")
    content[f"{info}/RECORD"] = "".join(record) + f"{info}/RECORD,,\n"
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / "gpu_eks_components-0.3.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in content.items():
            archive.writestr(name, text)
    return wheel


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A package named gpu-eks-components at two commits, installed by this venv's pip from the first
    (git+file) and from its wheel: ``repo``, ``commits``, ``wheel``, ``vcs`` and ``archive`` (Libraries)."""
    scratch = tmp_path_factory.mktemp("tiny")
    repo = scratch / "repo"
    (repo / "components").mkdir(parents=True)
    (repo / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "gpu-eks-components"\nversion = "0.3.0"\n[tool.setuptools]\npackages = ["components"]\n'
    )
    commits = []
    for text in ("one = 1\n", "two = 2\n"):
        (repo / "components" / "__init__.py").write_text(text)
        subprocess.run([*GIT, "init", "--quiet", str(repo)], check=True, capture_output=True)
        subprocess.run([*GIT, "-C", str(repo), "add", "-A"], check=True, capture_output=True)
        subprocess.run([*GIT, "-C", str(repo), "commit", "--quiet", "-m", text], check=True, capture_output=True)
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True)
        commits.append(head.stdout.strip())
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--no-build-isolation"]
    libraries = {}
    wheel = write_wheel(scratch / "wheels", {"components/__init__.py": "one = 1\n"})
    for kind, requirement in (
        ("vcs", f"gpu-eks-components @ git+file://localhost{repo}@{commits[0]}"),
        ("archive", str(wheel)),
    ):
        site = scratch / kind
        subprocess.run([*pip, "--target", str(site), requirement], check=True, capture_output=True, timeout=120)
        (dist,) = importlib.metadata.distributions(path=[str(site)])
        libraries[kind] = installed.installed_library(dist, site)
    return {"repo": repo, "commits": commits, "wheel": wheel, **libraries}


def test_a_vcs_install_is_judged_by_the_commit_pip_recorded(tiny: dict, tmp_path: Path):
    repo, (first, second) = tiny["repo"], tiny["commits"]
    library = tiny["vcs"]
    assert library.origin["vcs_info"] == {"commit_id": first, "requested_revision": first, "vcs": "git"}
    line = f"gpu-eks-components @ git+file://localhost{repo}@"
    assert installed.mismatch(library, line + first, tmp_path) is None
    assert installed.mismatch(library, line + first[:10], tmp_path) is None  # a short commit
    assert installed.mismatch(library, line + second, tmp_path) == (
        f"this Python has gpu-eks-components 0.3.0 installed from file://localhost{repo} at commit {first}, not the "
        f"commit `{line}{second}` pins ({second})"
    )
    assert installed.mismatch(library, "gpu-eks-components==0.3.0", tmp_path) == (
        f"this Python has gpu-eks-components 0.3.0 installed from file://localhost{repo} at commit {first}, not the "
        "release `gpu-eks-components==0.3.0` names"
    )


def test_folder_remote_and_index_installs_are_judged_by_what_pip_records(tmp_path: Path):
    """PEP 610's other shapes (``dir_info`` for a folder, a remote archive's URL, none for an index):
    written here as pip writes them (the VCS and archive records above are pip's own)."""
    vendored = tmp_path / "vendor" / "gpu-eks"
    vendored.mkdir(parents=True)
    (vendored / "pyproject.toml").write_text('[project]\nname = "gpu_eks_components"\nversion = "0.3.0"\n')
    (tmp_path / "requirements.txt").write_text("pulumi==3.272.0\n-e ./vendor/gpu-eks\n")
    (line,) = deps.library_requirements(tmp_path)  # found by the folder's own name
    assert (line, deps.pip_arguments(line)) == ("-e ./vendor/gpu-eks", ["--editable", "./vendor/gpu-eks"])
    folder = installed.Library("0.3.0", tmp_path, {"url": f"file://{vendored}", "dir_info": {"editable": True}}, True)
    assert installed.mismatch(folder, line, tmp_path) is None
    assert installed.mismatch(folder, "./vendor/other", tmp_path) is not None
    url = "https://example.com/wheels/gpu_eks_components-0.3.0-py3-none-any.whl"
    remote = installed.Library("0.3.0", tmp_path, {"url": url, "archive_info": {}}, True)
    assert installed.mismatch(remote, f"gpu-eks-components @ {url}", tmp_path) is None
    assert installed.mismatch(remote, f"gpu-eks-components @ {url.replace('0.3.0', '0.4.0')}", tmp_path) == (
        f"this Python has gpu-eks-components 0.3.0 installed from {url}, not `gpu-eks-components @ "
        f"{url.replace('0.3.0', '0.4.0')}`"
    )
    index = installed.Library("0.4.0.dev0", tmp_path, None, True)
    assert installed.mismatch(index, "gpu-eks-components>=0.4.0.dev0,<0.5", tmp_path) is None
    assert installed.mismatch(index, "gpu-eks-components==0.3.0", tmp_path) == (
        "this Python has gpu-eks-components 0.4.0.dev0 installed from an index, which `gpu-eks-components==0.3.0` "
        "does not allow"
    )


def test_an_archive_install_is_judged_by_its_sha256(tiny: dict, tmp_path: Path, monkeypatch):
    """The vendored-wheel layout when this Python did install the work tree's wheel: the base is then
    rendered with the base's own wheel (its environment keyed by the wheel's content, so a replaced
    wheel never reuses a stale one)."""
    wheel, library = tiny["wheel"], tiny["archive"]
    vendored = "vendor/gpu_eks_components-0.3.0-py3-none-any.whl"
    head = tmp_path / "head"
    (head / "vendor").mkdir(parents=True)
    shutil.copy2(wheel, head / vendored)
    (head / "requirements.txt").write_text(f"./{vendored}\n")
    base = tmp_path / "base"
    shutil.copytree(head, base)
    (base / vendored).write_bytes(b"the old build")
    assert installed.mismatch(library, f"./{vendored}", head) is None
    assert installed.mismatch(library, f"./{vendored}", base).endswith(f"that `./{vendored}` installs")

    monkeypatch.setattr(installed, "this_library", lambda: library)
    built: list[Path] = []
    monkeypatch.setattr(baseenv, "build", lambda root, ref: (built.append(root), (Path("/env/bin/python"), "0.2.9"))[1])
    chosen = baseenv.choose(base, head, "main")
    assert built == [base] and chosen.python == "/env/bin/python"
    assert chosen.note.startswith(f"note: {vendored} (content) differ between main and the work tree: the base was")
    site = baseenv._site_dirs()
    assert baseenv._key(base, site) != baseenv._key(head, site)


# ---------------------------------------------------------------------------------------------
# A base environment that cannot be built (item 7), a base library without the review tool (item 5)
# ---------------------------------------------------------------------------------------------


def test_a_python_without_pip_or_with_an_old_one_is_refused_with_the_fix(tmp_path: Path):
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, capture_output=True)
    version = baseenv.pip_version(str(bare / "bin" / "python"))  # a real Python without pip
    assert version is None
    assert baseenv.pip_problem(version) == (
        f"this Python ({sys.executable}) has no pip, which builds the base's environment: install it "
        f"({sys.executable} -m ensurepip --upgrade, or the system's python3-pip package)"
    )
    assert baseenv.pip_problem("22.2.2").startswith("pip 22.2.2 of this Python has no --python option (pip 22.3")
    assert baseenv.pip_problem(baseenv.pip_version(sys.executable)) is None


def test_a_requirement_this_pip_refuses_is_said_with_the_fix(tmp_path: Path, monkeypatch):
    """pip before 24.1 vendors packaging 21.3, which refuses a URL without a host (``git+file:///...``):
    this venv's pip, run for real, refuses it; the review says which line and what to do."""
    version = baseenv.pip_version(sys.executable)
    if tuple(int(n) for n in re.findall(r"\d+", version or "0")[:2]) >= (24, 1):
        pytest.skip(f"pip {version} accepts file:/// URLs")
    monkeypatch.setenv("GPU_EKS_REVIEW_CACHE", str(tmp_path / "cache"))
    line = "gpu-eks-components @ git+file:///srv/git/gpu-eks.git@0123456789abcdef0123456789abcdef01234567"
    (tmp_path / "requirements.txt").write_text(f"{line}\n")
    with pytest.raises(DiffError) as err:
        baseenv.build(tmp_path, "main")
    assert str(err.value) == (
        f"installing the requirements of main into its environment failed: pip {version} of this Python refuses the "
        f"requirement `{line}`; pip before 24.1 (its packaging 21.3) refuses a URL without a host: write "
        f"file://localhost/... for file:///..., or upgrade this Python's pip ({sys.executable} -m pip install "
        f"--upgrade pip), or {TAIL}"
    )


def test_the_0_2_0_base_is_refused_naming_the_way_out(consumer_base: Path, tmp_path: Path):
    """The real 0.2.0 release (19061e2, the commit that cut it) ships no review tool: refused with the way out."""
    python = tmp_path / "python-0.2.0"
    python.write_text(f'#!/bin/sh\nPYTHONPATH="{consumer_base}" exec "{sys.executable}" "$@"\n')
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    root = consumer_repository(tmp_path / "p", {}, {})
    done = review("diff", "--base", "main", "--base-python", str(python), cwd=root)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "error: the base's gpu-eks-components 0.2.0 has no gpu-eks-review (components/review), which renders the "
        "base: releases 0.2.0 and older do not ship it. Review this upgrade with --same-library: both sides render "
        "with this Python's 0.4.0.dev0 (the output says so), which shows your program's and stack files' changes but "
        "not the library's; what the upgrade itself does to existing stacks, and which nodes it rolls, is in the "
        "library's UPGRADING.md (0.2.0 -> 0.4.0.dev0)"
    )


@pytest.fixture
def consumer_base(tmp_path: Path) -> Path:
    """The library as released at 0.2.0: ``git archive 19061e2`` (its components/ and pyproject.toml)."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "19061e2", "components", "pyproject.toml"], capture_output=True, check=False
    )
    if archive.returncode != 0:
        pytest.skip("a shallow clone (CI's default checkout) lacks the 0.2.0 release commit")
    tree = tmp_path / "0.2.0"
    tree.mkdir()
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    assert 'version = "0.2.0"' in (tree / "pyproject.toml").read_text()
    return tree
