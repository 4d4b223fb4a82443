"""The library each side of ``gpu-eks-review diff --base`` is rendered with.

The rule (docs/review.md): when the library or any dependency might differ between the base and the
work tree, each side is rendered with what that side pins, or the review is refused with the reason
and the way out; it never says "no change" for it.

* **Nothing differs** (``deps.changed_files``: every file the project's install reads, includes,
  vendored archives and poetry/uv lock files too): both sides with this Python's library.
* **The work tree** is always rendered with this Python: its library must be what the work tree pins
  (``installed.mismatch``, from pip's ``direct_url.json``), else the review is refused: reinstall.
* **The base** gets an environment built from its requirements.txt (a pip project: ``deps.toolchain``),
  **by this command**, so a review on a laptop gives the answer CI gives, cached per hash of the base's
  dependency files and of this environment (``$GPU_EKS_REVIEW_CACHE``, else ``~/.cache/gpu-eks-review``).
  It sees this Python's site-packages after its own (a ``.pth`` file), so pip installs only what the
  base pins differently; the library itself is always installed into it (``--ignore-installed``): the
  same version number built from another commit must not be taken for the one installed here.
* ``--base-python`` names a Python with the base's dependencies instead; ``--same-library`` renders
  both sides with this Python's library, and the output says what that leaves out.
* What it cannot do it refuses (exit 2) naming the way out: a poetry or uv project, a base without
  requirements.txt, a Python without pip or with one that cannot build the environment, a base library
  without ``gpu-eks-review`` (0.2.0 and older: the review tool renders the base with it).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..version import DISTRIBUTION, IMPORT_NAME, OLD_IMPORT_NAME, package_version
from . import deps, installed
from .diff import DiffError

PIP_TIMEOUT_SECONDS = 900
PROBE_TIMEOUT_SECONDS = 60
READY = "gpu-eks-review-ready"
#: ``pip --python``, which installs into the base's environment from this Python's pip (pip 22.3 notes).
PIP_WITH_PYTHON_OPTION = (22, 3)
#: The review tool's refusals end with the ways out that always exist.
WAY_OUT = "pass --base-python with a Python that has the base's dependencies, or --same-library"
#: The import names a base's library may have: ``gpu_eks``, else ``components`` (0.3.0 and older).
IMPORT_NAMES = (IMPORT_NAME, OLD_IMPORT_NAME)
#: What a Python's library is, asked without importing it (a base library may not import here).
PROBE = f"""
import importlib.metadata, importlib.util, json, pathlib, tomllib
spec = next(filter(None, map(importlib.util.find_spec, {IMPORT_NAMES!r})), None)
found = None
if spec is not None and spec.origin:
    package = pathlib.Path(spec.origin).resolve().parent
    pyproject, version = package.parent / "pyproject.toml", None
    if pyproject.is_file():
        project = tomllib.loads(pyproject.read_text()).get("project", {{}})
        version = project.get("version") if project.get("name") == {DISTRIBUTION!r} else None
    if version is None:
        try:
            version = importlib.metadata.version({DISTRIBUTION!r})
        except importlib.metadata.PackageNotFoundError:
            version = "(version unknown)"
    found = {{"version": version, "where": str(package), "review": (package / "review" / "__init__.py").is_file()}}
print(json.dumps(found))
"""
#: ``python -c RUN_REVIEW <args>``: the review command of the library that Python imports, by the
#: first of IMPORT_NAMES it has (``python -m components.review`` would find a project's own
#: ``components/`` folder first: the base is rendered from its folder).
RUN_REVIEW = (
    "import importlib.util, runpy; "
    f"name = next(n for n in {IMPORT_NAMES!r} if importlib.util.find_spec(n)); "
    "runpy.run_module(name + '.review', run_name='__main__', alter_sys=True)"
)


@dataclass(frozen=True)
class BaseLibrary:
    """How the base is rendered: ``python`` (None: this Python), what the review says about it
    (``note``: the output and the pull request comment) and where, locally (``detail``: stderr only)."""

    python: str | None
    note: str = ""
    detail: str = ""


def library_version() -> str:
    """The version of the library this Python imports (a checkout's pyproject.toml, else installed)."""
    try:
        return package_version()
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"


def cache_dir() -> Path:
    if os.environ.get("GPU_EKS_REVIEW_CACHE"):
        return Path(os.environ["GPU_EKS_REVIEW_CACHE"])
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "gpu-eks-review"


def choose(
    base_root: Path, head_root: Path, ref: str, given: str | None = None, same_library: bool = False
) -> BaseLibrary:
    """The library the base of ``ref`` is rendered with (see the module docstring)."""
    if given:
        version = base_library_version(given, ref)
        return BaseLibrary(
            given,
            f"note: the base ({ref}) was rendered with --base-python's {DISTRIBUTION} {version}, the work tree with "
            f"this Python's {library_version()}\n",
            f"note: --base-python: {given}\n",
        )
    changed = deps.changed_files(base_root, head_root)
    if not changed:
        return BaseLibrary(None)
    files = ", ".join(changed)
    if same_library:
        return BaseLibrary(
            None,
            f"note: {files} differ between {ref} and the work tree, and --same-library rendered both with this "
            f"Python's {DISTRIBUTION} {library_version()}: a library change is not in this review, only the "
            "program's and the stack files' changes\n",
        )
    what = (
        f"{files} differ between {ref} and the work tree (a dependency change: the base may use another {DISTRIBUTION})"
    )
    refusal = unbuildable(base_root, head_root, ref)
    if refusal:
        raise DiffError(f"not compared: {what}, and {refusal}; {WAY_OUT}")
    head = head_problem(head_root)
    if head:
        raise DiffError(f"not compared: {what}, and the work tree is rendered with this Python, whose library {head}")
    python, version = build(base_root, ref)
    return BaseLibrary(
        str(python),
        f"note: {files} differ between {ref} and the work tree: the base was rendered with its own "
        f"{DISTRIBUTION} {version} (its requirements.txt), the work tree with {library_version()}\n",
        f"note: the base's environment: {python.parent.parent} (cached; delete it to build it again)\n",
    )


def unbuildable(base_root: Path, head_root: Path, ref: str) -> str | None:
    """Why the base's environment cannot be built from pip's requirements.txt, or None."""
    only = "gpu-eks-review builds the base's environment from a pip requirements.txt only"
    for side, root in ((ref, base_root), ("the work tree", head_root)):
        chain, why = deps.toolchain(root)
        if chain != "pip":
            return f"{only} ({side}: its toolchain is {chain}, {why})"
    if not (base_root / "requirements.txt").is_file():
        return f"{only} ({ref}: it has no requirements.txt)"
    return None


def head_problem(head_root: Path) -> str | None:
    """Why this Python's library is not what the work tree pins (``installed.mismatch``), with the fix;
    None when it is."""
    lines = deps.library_requirements(head_root)
    library = installed.this_library()
    if not lines:
        return (
            f"is {library.describe()}: the work tree's requirements do not name {DISTRIBUTION}, so what it installs "
            f"cannot be told. Pin it in requirements.txt, or {WAY_OUT}"
        )
    for line in lines:
        why = installed.mismatch(library, line, head_root)
        if why:
            reinstall = [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--force-reinstall",
                "--no-deps",
                *deps.pip_arguments(line),
            ]
            return (
                f"is not what the work tree pins: {why.removeprefix('this Python has ')}. Install it into this Python "
                f"(`{shlex.join(reinstall)}`, from the project folder) and review again"
            )
    return None


def base_library_version(python: str, ref: str, env: Path | None = None) -> str:
    """The version of the library ``python`` imports (from ``env``, the environment built for the base,
    when given); refused when it has none, or one without gpu-eks-review (0.2.0 and older)."""
    found = _probe(python)
    if found is None:
        raise DiffError(
            f"{python} does not import {DISTRIBUTION}: the base ({ref}) cannot be rendered with it; {WAY_OUT}"
        )
    if env is not None and not Path(str(found["where"])).is_relative_to(env.resolve()):
        raise DiffError(
            f"the base's requirements.txt does not install {DISTRIBUTION} (its environment imports it from "
            f"{found['where']}): the base cannot be rendered with its own library; {WAY_OUT}"
        )
    if not found["review"]:
        raise DiffError(
            f"the base's {DISTRIBUTION} {found['version']} has no gpu-eks-review (components/review), which renders "
            f"the base: releases 0.2.0 and older do not ship it. Review this upgrade with --same-library: both sides "
            f"render with this Python's {library_version()} (the output says so), which shows your program's and "
            "stack files' changes but not the library's; what the upgrade itself does to existing stacks, and "
            f"which nodes it rolls, is in the library's UPGRADING.md ({found['version']} -> {library_version()})"
        )
    return str(found["version"])


def _probe(python: str) -> dict[str, object] | None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    try:
        done = subprocess.run(
            [python, "-c", PROBE], env=env, capture_output=True, text=True, timeout=PROBE_TIMEOUT_SECONDS, check=False
        )
    except OSError as err:
        raise DiffError(f"cannot run {python}: {err.strerror}") from None
    except subprocess.TimeoutExpired:
        raise DiffError(f"{python} did not answer within {PROBE_TIMEOUT_SECONDS} s") from None
    if done.returncode != 0:
        raise DiffError(f"cannot run {python} (exit {done.returncode}): {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------
# The base's environment
# ---------------------------------------------------------------------------------------------


def _site_dirs() -> list[str]:
    """This Python's installed-package folders (not PYTHONPATH, not a checkout on sys.path)."""
    seen: list[str] = []
    for entry in sys.path:
        if Path(entry).name in ("site-packages", "dist-packages") and Path(entry).is_dir() and entry not in seen:
            seen.append(entry)
    return seen


def _key(base_root: Path, site_dirs: list[str]) -> str:
    """The cache key: every file pip reads for the base (includes, vendored archives' content), this
    Python and what its site-packages hold (the base's venv relies on them)."""
    digest = hashlib.sha256(f"2|{sys.version}|{sys.prefix}|{'|'.join(site_dirs)}".encode())
    for name, content in sorted(deps.pip_files(base_root).items()):
        digest.update(name.encode() + b"\0" + content + b"\0")
    installed_now = sorted(
        f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions(path=site_dirs)
    )
    digest.update("\n".join(installed_now).encode())
    return digest.hexdigest()[:20]


def _run(command: list[str], cwd: Path, what: str) -> str:
    # This process's PYTHONPATH (a checkout of the new library, say) must not reach the base's.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    try:
        done = subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, text=True, timeout=PIP_TIMEOUT_SECONDS, check=False
        )
    except subprocess.TimeoutExpired:
        raise DiffError(f"{what} took over {PIP_TIMEOUT_SECONDS} s") from None
    if done.returncode != 0:
        output = (done.stdout + done.stderr).strip()
        rejected = re.search(r"Invalid requirement: '([^']*)'", output)
        if rejected:
            raise DiffError(_rejected_line(rejected.group(1), what))
        tail = "\n".join(output.splitlines()[-15:])
        raise DiffError(f"{what} failed (exit {done.returncode}); {WAY_OUT}:\n{tail}")
    return done.stdout


def _rejected_line(line: str, what: str) -> str:
    """pip refused a requirement line: why, and the fix (pip before 24.1 vendors packaging 21.3, whose
    URL check wants a host: ``file:///path`` is refused, ``file://localhost/path`` is not)."""
    version = pip_version(sys.executable) or "(unknown)"
    fix = "correct the line in the base's requirements"
    if "file:///" in line:
        fix = (
            "pip before 24.1 (its packaging 21.3) refuses a URL without a host: write file://localhost/... for "
            f"file:///..., or upgrade this Python's pip ({sys.executable} -m pip install --upgrade pip)"
        )
    return f"{what} failed: pip {version} of this Python refuses the requirement `{line}`; {fix}, or {WAY_OUT}"


def pip_version(python: str) -> str | None:
    """The version of ``python``'s pip, None when it has none."""
    done = subprocess.run([python, "-m", "pip", "--version"], capture_output=True, text=True, check=False)
    found = re.match(r"pip (\S+)", done.stdout) if done.returncode == 0 else None
    return found.group(1) if found else None


def pip_problem(version: str | None) -> str | None:
    """Why this Python's pip cannot build the base's environment (it installs with ``--python``), or None."""
    if version is None:
        return (
            f"this Python ({sys.executable}) has no pip, which builds the base's environment: install it "
            f"({sys.executable} -m ensurepip --upgrade, or the system's python3-pip package)"
        )
    numbers = tuple(int(n) for n in re.findall(r"\d+", version)[:2])
    if numbers < PIP_WITH_PYTHON_OPTION:
        return (
            f"pip {version} of this Python has no --python option (pip 22.3 added it), with which it installs into "
            f"the base's environment: upgrade it ({sys.executable} -m pip install --upgrade pip)"
        )
    return None


def build(base_root: Path, ref: str) -> tuple[Path, str]:
    """The base's virtual environment (built once per cache key): its Python and library version."""
    site_dirs = _site_dirs()
    env = cache_dir() / "base-envs" / _key(base_root, site_dirs)
    python = env / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    ready = env / READY
    if ready.is_file():
        return python, ready.read_text(encoding="utf-8").strip()
    problem = pip_problem(pip_version(sys.executable))
    if problem:
        raise DiffError(f"cannot build the base's environment: {problem}; or {WAY_OUT}")
    if env.exists():  # a build that did not finish
        shutil.rmtree(env)
    _run([sys.executable, "-m", "venv", "--without-pip", str(env)], base_root, "creating the base's environment")
    purelib = _run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], base_root, "its python"
    ).strip()
    # After the venv's own site-packages: what the venv installs comes first.
    Path(purelib, "_gpu_eks_review_overlay.pth").write_text("".join(f"{d}\n" for d in site_dirs), encoding="utf-8")
    # pip of this Python, installing for the venv's (pip >= 22.3): the venv needs no pip of its own.
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--disable-pip-version-check"]
    installing = f"installing the requirements of {ref} into its environment"
    library = deps.library_requirements(base_root)
    if library:
        arguments = [a for line in library for a in deps.pip_arguments(line)]
        _run([*pip, "--no-deps", "--ignore-installed", *arguments], base_root, installing)
    _run([*pip, "-r", "requirements.txt"], base_root, installing)
    version = base_library_version(str(python), ref, env)
    ready.write_text(version + "\n", encoding="utf-8")
    return python, version
