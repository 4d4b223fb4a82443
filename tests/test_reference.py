"""tests/support/reference.py: the reference files come from ../shared, or else from their pinned upstream
URLs, verified by sha256. The download path is exercised against a local HTTP server on 127.0.0.1
(no internet here); the pins themselves are checked against the local byte-for-byte copies."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import reference
from tests.support.commands import loopback_server
from tests.support.paths import ROOT


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path, list[str]]]:
    """(base URL, served folder, requested paths) of an HTTP server on 127.0.0.1."""
    served = tmp_path / "served"
    served.mkdir()
    requests: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(served), **kwargs)

        def do_GET(self):
            requests.append(self.path)
            super().do_GET()

        def log_message(self, *args):  # quiet
            pass

    with loopback_server(Handler) as base:
        yield base, served, requests


def source(base: str, name: str, body: bytes) -> reference.Source:
    return reference.Source(name, f"{base}/{name}", hashlib.sha256(body).hexdigest())


def test_a_missing_file_is_downloaded_verified_and_cached(server, tmp_path: Path):
    base, served, requests = server
    body = b"apiVersion: v2\nname: gpu-operator\n"
    (served / "Chart.yaml").write_bytes(body)
    sources = {"gpu-operator/v1/Chart.yaml": source(base, "Chart.yaml", body)}
    cache = tmp_path / "cache"

    path = reference.locate("gpu-operator/v1/Chart.yaml", local=tmp_path / "absent", cache=cache, sources=sources)
    assert path == cache / "gpu-operator" / "v1" / "Chart.yaml"
    assert path.read_bytes() == body
    # The second time it comes from the cache, without a request.
    again = reference.locate("gpu-operator/v1/Chart.yaml", local=tmp_path / "absent", cache=cache, sources=sources)
    assert again == path
    assert requests == ["/Chart.yaml"]


def test_a_download_with_another_sha256_fails_and_writes_nothing(server, tmp_path: Path):
    base, served, _ = server
    (served / "values.yaml").write_bytes(b"tampered: true\n")
    pinned = source(base, "values.yaml", b"original: true\n")
    cache = tmp_path / "cache"
    with pytest.raises(reference.ReferenceUnavailable) as err:
        reference.locate("op/values.yaml", local=tmp_path / "absent", cache=cache, sources={"op/values.yaml": pinned})
    assert "received sha256 " + hashlib.sha256(b"tampered: true\n").hexdigest() in str(err.value)
    assert f"expected {pinned.sha256}" in str(err.value)
    assert not (cache / "op" / "values.yaml").exists()


def test_a_corrupted_cache_is_downloaded_again(server, tmp_path: Path):
    base, served, requests = server
    body = b"good\n"
    (served / "f.txt").write_bytes(body)
    cache = tmp_path / "cache"
    (cache / "x").mkdir(parents=True)
    (cache / "x" / "f.txt").write_bytes(b"bad\n")
    path = reference.locate(
        "x/f.txt", local=tmp_path / "absent", cache=cache, sources={"x/f.txt": source(base, "f.txt", body)}
    )
    assert path.read_bytes() == body and requests == ["/f.txt"]


def test_a_missing_upstream_file_and_an_unknown_file_are_reported(server, tmp_path: Path):
    base, _, _ = server
    with pytest.raises(reference.ReferenceUnavailable, match="404"):
        reference.locate("a/b", local=tmp_path, cache=tmp_path / "c", sources={"a/b": source(base, "nothing", b"")})
    with pytest.raises(reference.ReferenceUnavailable, match="no pinned source"):
        reference.locate("a/unknown", local=tmp_path, cache=tmp_path / "c", sources={})


def test_the_local_copy_wins(tmp_path: Path):
    (tmp_path / "nodeadm").mkdir()
    (tmp_path / "nodeadm" / "crd.yaml").write_text("x")
    found = reference.locate("nodeadm/crd.yaml", local=tmp_path, cache=tmp_path / "c", sources={})
    assert found == tmp_path / "nodeadm" / "crd.yaml"


def test_the_pins_are_raw_files_at_a_commit():
    data = json.loads(reference.SOURCES.read_text())
    assert data["files"], "tests/data/reference_sources.json lists the reference files"
    for entry in data["files"]:
        assert entry["url"].startswith("https://raw.githubusercontent.com/"), entry
        _owner, _repo, commit, *_path = entry["url"].removeprefix("https://raw.githubusercontent.com/").split("/")
        assert len(commit) == 40 and all(c in "0123456789abcdef" for c in commit), entry["url"]
        assert len(entry["sha256"]) == 64


def test_the_pins_match_the_local_copies_and_cover_every_file():
    if not reference.LOCAL.is_dir():
        message = f"{reference.LOCAL} is absent: the pins cannot be compared with the local copies"
        if os.environ.get("GPU_EKS_REQUIRE_REFERENCE") and (ROOT.parent / "shared").exists():
            pytest.fail(message)
        pytest.skip(message)
    sources = reference.load_sources()
    local = {
        str(p.relative_to(reference.LOCAL)) for p in reference.LOCAL.rglob("*") if p.is_file() and p.name != "SOURCE.md"
    }
    assert sorted(local - set(sources)) == [], "reference files without a pinned source: add them"
    assert sorted(set(sources) - local) == [], "pinned sources without a local copy"
    wrong = [f for f, s in sources.items() if reference.sha256_of(reference.LOCAL / f) != s.sha256]
    assert wrong == [], f"the local copies differ from the pinned sha256: {wrong}"


def test_reference_cache_is_git_ignored():
    assert ".reference-cache/" in (ROOT / ".gitignore").read_text().splitlines()
