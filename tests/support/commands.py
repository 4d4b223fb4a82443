"""What the tests start besides the code under test: another Python, the tooling command, a
command's ``main`` in this process (captured as a subprocess's would be), git, a loopback HTTP server."""

from __future__ import annotations

import contextlib
import http.server
import io
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from tests.support.paths import ROOT


def main_in_process(
    main: Callable[[list[str]], int], argv: list[str], *, cwd: Path, command: list[str]
) -> subprocess.CompletedProcess[str]:
    """A command's ``main(argv)`` run in this process from ``cwd``, its stdout, stderr and exit
    status captured as a subprocess's would be (argparse's usage errors exit through SystemExit);
    ``command`` names it in the result. An exception ``main`` does not handle propagates and fails
    the test, where a new Python would have printed a traceback."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as exit_:
            status = exit_.code if isinstance(exit_.code, int) else 1
    return subprocess.CompletedProcess([*command, *argv], status, out.getvalue(), err.getvalue())


def run_python(
    *args: str,
    cwd: Path = ROOT,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``python <args>`` with this interpreter; the environment is ours minus PYTHONPATH, plus ``env``."""
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def tooling_cli(
    *args: str, cwd: Path = ROOT, env: Mapping[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``python -m tooling <args>``."""
    return run_python("-m", "tooling", *args, cwd=cwd, env=env, timeout=timeout)


@contextlib.contextmanager
def loopback_server(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 (a free port) serving ``handler`` in a thread; yields its base URL.

    It polls for shutdown every 50 ms: the standard 0.5 s poll made each test using one wait half
    a second at teardown (8 tests: 4 s of the suite)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def git(repo: Path, *args: str) -> str:
    """``git <args>`` in ``repo`` with a fixed identity; its stdout (raises on failure)."""
    done = subprocess.run(
        ["git", "-c", "user.name=test", "-c", "user.email=test@example.com", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout
