"""Every Python file a comment or docstring under components/ names exists: a module that moves (or a
test that is renamed) cannot leave a pointer to nothing behind.

A name with a folder (``blocks/managed.py``, ``tests/test_helm_values.py``) resolves from the
repository root, from ``components/``, from the folder of the file that names it or one above it,
or inside the installed package its first folder names (``pulumi/runtime/mocks.py``,
``botocore/parsers.py``: upstream files, cited). A bare name (``gpu_cluster.py``) must be a file of
this repository.
"""

from __future__ import annotations

import importlib.util
import io
import re
import tokenize
from pathlib import Path

import pytest

from tests.support.paths import ROOT

#: ``folder/…/name.py``, not inside a longer path or URL, not a ``../`` path outside the repository, and
#: not under a shell variable (``$HOME/allreduce.py``: a file a Job writes on the node).
WITH_FOLDER = re.compile(r"(?<![\w./:$-])((?:[\w-]+/)+[\w-]+\.py)\b")
BARE = re.compile(r"(?<![\w./:-])([\w-]+\.py)\b")
SOURCES = sorted((ROOT / "components").rglob("*.py"))


def comment_texts(path: Path) -> list[tuple[int, str]]:
    """The comments and string literals (docstrings included) of ``path``, with their lines."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
    return [(t.start[0], t.string) for t in tokens if t.type in (tokenize.COMMENT, tokenize.STRING)]


def installed(path: str) -> Path | None:
    """``path`` inside the installed package its first folder names (None: no such package)."""
    top = path.split("/", 1)[0]
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).parent / path


def resolves(path: str, named_in: Path) -> bool:
    candidates = [ROOT / path, ROOT / "components" / path]
    candidates += [folder / path for folder in named_in.parents if folder.is_relative_to(ROOT)]
    candidates.append(installed(path))
    return any(c is not None and c.is_file() for c in candidates)


REPOSITORY_FILES = {
    p.name for folder in ("components", "tests", "tooling", "plugin") for p in (ROOT / folder).rglob("*.py")
} | {p.name for p in ROOT.glob("*.py")}  # the program's __main__.py, setup.py


def dangling() -> list[str]:
    found = []
    for source in SOURCES:
        where = source.relative_to(ROOT)
        for line, text in comment_texts(source):
            for m in WITH_FOLDER.finditer(text):
                if not resolves(m.group(1), source):
                    found.append(f"{where}:{line}: {m.group(1)}")
            for m in BARE.finditer(WITH_FOLDER.sub("", text)):
                if m.group(1) not in REPOSITORY_FILES:
                    found.append(f"{where}:{line}: {m.group(1)}")
    return found


def test_every_python_file_a_comment_names_exists():
    assert dangling() == []


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("# see blocks/managed.py", True),  # from components/
        ("# tests/test_helm_values.py checks it", True),  # from the root
        ("# pulumi 3.272 pulumi/runtime/mocks.py", True),  # the installed package
        ("# tests/test_chart_reference.py compares", False),  # a test that was renamed
        ("# (nodegroup.py)", False),  # a module that never was
        ("# https://example.com/a/b.py", True),  # a URL is not a path of ours
    ],
)
def test_the_check_can_fail(tmp_path: Path, text: str, ok: bool, monkeypatch: pytest.MonkeyPatch):
    source = ROOT / "components" / "config" / "names.py"
    monkeypatch.setattr("tests.test_code_paths.SOURCES", [source])
    monkeypatch.setattr("tests.test_code_paths.comment_texts", lambda _path: [(1, text)])
    assert (dangling() == []) is ok
