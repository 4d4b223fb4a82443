"""The library the base of ``gpu-eks-review diff --base`` is rendered with.

A pull request that bumps gpu-eks-components changes the project's dependency files, not its
program: rendering the base with the library installed here (the new one) would show both sides
through the same code and claim "no change" for an upgrade that replaces every GPU node. So when
the base's dependency files differ from the work tree's, the base gets its own environment:

* **Built by this command**, not by the workflow: the same ``gpu-eks-review diff --base origin/main``
  must give the same answer on a laptop as in CI, and the command is what knows the base checkout
  (its temporary worktree) and the project folder inside it.
* **From the base's requirements.txt** (the Pulumi ``pip`` toolchain, the default, installs that file:
  Pulumi docs, "Pulumi.yaml project file reference", ``runtime.options.toolchain``), into a virtual
  environment cached per hash of the base's requirement files and this environment
  (``$GPU_EKS_REVIEW_CACHE``, else ``~/.cache/gpu-eks-review``): a second review of the same base
  installs nothing.
* **Over this environment**: the new venv sees this Python's site-packages after its own (a ``.pth``
  file), and pip installs into it only what the base's requirements pin differently, so a review
  downloads the old library and whatever it pins, not every provider SDK again. The library itself
  is always installed into the venv (``--ignore-installed``): the same version number built from
  another commit (a ``git+…@<sha>`` line) must not be taken for the one installed here. Every
  requirement the base names is met at the base's version; a package only the work tree installs
  stays importable, which the base's code does not import.

A poetry or uv project (``pyproject.toml`` with ``poetry.lock``/``uv.lock``), or a base without
requirements.txt, is not built: the command refuses to compare (exit 2) and says what it could not
compare, unless ``--base-python`` names a Python with the base's dependencies or ``--same-library``
accepts a review of the program's changes only (the output says so).

The base library must ship ``gpu-eks-review`` itself (``components/review``), which renders it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from components.version import package_version

from .diff import DiffError

DISTRIBUTION = "gpu-eks-components"
#: A requirement line naming the library (PEP 503 names compare with -, _ and . alike).
LIBRARY_LINE = re.compile(r"^\s*gpu[-_.]eks[-_.]components\s*(?:[\[@=<>!~;]|$)", re.I)
#: The files each Pulumi Python toolchain installs from (Pulumi.yaml ``runtime.options.toolchain``).
TOOLCHAIN_FILES = {
    "pip": ("requirements*.txt", "constraints*.txt"),
    "poetry": ("pyproject.toml", "poetry.lock"),
    "uv": ("pyproject.toml", "uv.lock"),
}
PIP_TIMEOUT_SECONDS = 900
READY = "gpu-eks-review-ready"


@dataclass(frozen=True)
class BaseLibrary:
    """How the base is rendered: ``python`` (None: this Python) and what the review says about it."""

    python: str | None
    note: str = ""


def toolchain(root: Path) -> str:
    """The project's Python toolchain: Pulumi.yaml ``runtime.options.toolchain``, default ``pip``."""
    try:
        project = yaml.safe_load((root / "Pulumi.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return "pip"
    runtime = project.get("runtime") if isinstance(project, dict) else None
    options = runtime.get("options") if isinstance(runtime, dict) else None
    chosen = options.get("toolchain") if isinstance(options, dict) else None
    return str(chosen) if chosen else "pip"


def dependency_files(root: Path, chain: str) -> dict[str, bytes]:
    """The project's dependency files for ``chain`` (name -> content)."""
    found: dict[str, bytes] = {}
    for pattern in TOOLCHAIN_FILES.get(chain, TOOLCHAIN_FILES["pip"]):
        for path in sorted(root.glob(pattern)):
            if path.is_file():
                found[path.name] = path.read_bytes()
    return found


def changed_files(base_root: Path, head_root: Path) -> list[str]:
    """The dependency files that differ between the base and the work tree (either toolchain's)."""
    chains = {toolchain(base_root), toolchain(head_root)}
    changed: set[str] = set()
    for chain in chains:
        old, new = dependency_files(base_root, chain), dependency_files(head_root, chain)
        changed |= {name for name in old.keys() | new.keys() if old.get(name) != new.get(name)}
    if len(chains) > 1:
        changed.add("Pulumi.yaml (toolchain)")
    return sorted(changed)


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
        return BaseLibrary(given)
    changed = changed_files(base_root, head_root)
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
    chain = toolchain(base_root)
    requirements = base_root / "requirements.txt"
    if chain != "pip" or not requirements.is_file():
        why = f"its toolchain is {chain}" if chain != "pip" else "it has no requirements.txt"
        raise DiffError(
            f"not compared: {files} differ between {ref} and the work tree (a dependency change: the base may use "
            f"another {DISTRIBUTION}), and gpu-eks-review builds the base's environment from a pip requirements.txt "
            f"only ({ref}: {why}). Pass --base-python with a Python that has the base's dependencies, or "
            "--same-library to review the program's changes with this Python's library on both sides"
        )
    python, version = build(base_root, requirements)
    return BaseLibrary(
        str(python),
        f"note: {files} differ between {ref} and the work tree: the base was rendered with its own "
        f"{DISTRIBUTION} {version} (its requirements.txt, environment {python.parent.parent}), the work tree "
        f"with {library_version()}\n",
    )


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


def _key(requirements: Path, site_dirs: list[str]) -> str:
    """The cache key: the base's requirement files, this Python and what its site-packages hold
    (the base's venv relies on them), so a changed environment builds a new one."""
    digest = hashlib.sha256(f"1|{sys.version}|{sys.prefix}|{'|'.join(site_dirs)}".encode())
    for name, content in sorted(dependency_files(requirements.parent, "pip").items()):
        digest.update(name.encode() + b"\0" + content + b"\0")
    installed = sorted(f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions(path=site_dirs))
    digest.update("\n".join(installed).encode())
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
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise DiffError(
            f"{what} failed (exit {done.returncode}); pass --base-python with a Python that has the base's "
            f"dependencies, or --same-library:\n{tail}"
        )
    return done.stdout


def library_lines(requirements: Path) -> list[str]:
    """The requirement lines of ``requirements`` that name the library (options and comments cut)."""
    lines = []
    for line in requirements.read_text(encoding="utf-8").splitlines():
        if LIBRARY_LINE.match(line):
            lines.append(re.split(r"\s+(?:#|--)", line.strip(), maxsplit=1)[0])
    return lines


def build(base_root: Path, requirements: Path) -> tuple[Path, str]:
    """The base's virtual environment (built once per cache key): its Python and library version."""
    site_dirs = _site_dirs()
    env = cache_dir() / "base-envs" / _key(requirements, site_dirs)
    python = env / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    ready = env / READY
    if ready.is_file():
        return python, ready.read_text(encoding="utf-8").strip()
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
    installing = f"installing {requirements.name} of the base into {env}"
    library = library_lines(requirements)
    if library:
        _run([*pip, "--no-deps", "--ignore-installed", *library], base_root, installing)
    _run([*pip, "-r", str(requirements)], base_root, installing)
    probe = (
        f"import importlib.metadata as m, components; print(m.version({DISTRIBUTION!r})); print(components.__file__)"
    )
    version, where = _run([str(python), "-c", probe], base_root, f"importing {DISTRIBUTION} of the base").splitlines()
    if not Path(where).resolve().is_relative_to(env.resolve()):
        raise DiffError(
            f"the base's requirements.txt does not install {DISTRIBUTION} (its environment imports it from "
            f"{where}): the base cannot be rendered with its own library; pass --base-python or --same-library"
        )
    ready.write_text(version + "\n", encoding="utf-8")
    return python, version
