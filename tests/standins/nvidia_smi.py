"""A stand-in for the driver's ``nvidia-smi`` (and ``nvidia-ctk``, ``systemctl``, ``logger``, ``sleep``)
for the boot-stage tests: it keeps the GPUs' state in a JSON file, records every call, and
behaves as the NVIDIA MIG user guide says the real one does, for the calls the stage makes.

The tools the script runs are bash shims (``SHIM``, a few milliseconds each, written by
``install``) that hand their arguments to this module, served by the test process on loopback
(``served``), and print its answer: a new Python per call cost about 20 ms, and a boot of an
8-GPU node makes over 70 calls.

Placements are written out here (MIG user guide, "A100 MIG Profiles" / "H100 MIG Profiles"
placement tables: a 1-memory-slice instance starts at 0-6, 2-slice 1g at 0, 2, 4, 6, 2g at 0, 2, 4,
3g at 0 or 4, 4g at 0, 7g at 0), not read from the library's catalog, so a wrong placement in the
library fails here. State (``$STANDIN_STATE``):
``{"model": ..., "gpus": [{"current": "Disabled", "pending": "Disabled", "instances": [[profile, start], ...]}],
"hold": "none" | "until-reset" | "until-reboot", "fail": [...], "toolkit": {...}}``.
``fail`` may hold ``create`` (``-cgi`` fails), ``placement`` (``-cgi`` refuses ``:<start>``; without a
start the stand-in places an instance at the lowest free start, the first fit), ``toolkit``
(``nvidia-ctk`` fails), ``list`` (GPU listing
fails), ``enable`` (``-mig 1`` leaves the mode disabled).
"""

import json
import socketserver
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: memory slices and allowed starts by compute/memory shape (the guide's tables).
STARTS = {"1m": (0, 1, 2, 3, 4, 5, 6), "1g2m": (0, 2, 4, 6), "2g": (0, 2, 4), "3g": (0, 4), "4g": (0,), "7g": (0,)}
SHAPES = {
    "A100-SXM4-40GB": {
        "1g.5gb": ("1m", 1),
        "1g.10gb": ("1g2m", 2),
        "2g.10gb": ("2g", 2),
        "3g.20gb": ("3g", 4),
        "4g.20gb": ("4g", 4),
        "7g.40gb": ("7g", 8),
    },
    "A100-SXM4-80GB": {
        "1g.10gb": ("1m", 1),
        "1g.20gb": ("1g2m", 2),
        "2g.20gb": ("2g", 2),
        "3g.40gb": ("3g", 4),
        "4g.40gb": ("4g", 4),
        "7g.80gb": ("7g", 8),
    },
    "H200-141GB": {
        "1g.18gb": ("1m", 1),
        "1g.35gb": ("1g2m", 2),
        "2g.35gb": ("2g", 2),
        "3g.71gb": ("3g", 4),
        "4g.71gb": ("4g", 4),
        "7g.141gb": ("7g", 8),
    },
}
SHAPES["H100-80GB-HBM3"] = SHAPES["A100-SXM4-80GB"]


class Call:
    """One call of a tool: its arguments, the state file it acts on, what it prints."""

    def __init__(self, tool: str, args: list[str], state_file: str) -> None:
        self.tool, self.args, self.state_file = tool, args, state_file
        self.out: list[str] = []
        self.err: list[str] = []

    def load(self) -> dict:
        return json.loads(Path(self.state_file).read_text())

    def save(self, state: dict) -> None:
        Path(self.state_file).write_text(json.dumps(state))


def opt(args, name):
    return args[args.index(name) + 1] if name in args else None


def create(state, gpu, spec, err: list[str]):
    if gpu["current"] != "Enabled":
        err.append("Unable to create a GPU instance: MIG mode is not enabled")
        return 6
    if "create" in state["fail"]:
        err.append("Failed to create GPU instances: Insufficient Resources")
        return 2
    used = {s for p, start in gpu["instances"] for s in range(start, start + SHAPES[state["model"]][p][1])}
    if "placement" in state["fail"] and ":" in spec:
        err.append("Invalid profile ID specified")
        return 2
    for item in spec.split(","):
        profile, _, start = item.partition(":")
        shape, size = SHAPES[state["model"]][profile]
        start = int(start) if start else next(s for s in STARTS[shape] if not set(range(s, s + size)) & used)
        span = set(range(start, start + size))
        if start not in STARTS[shape] or span & used:
            err.append(f"Failed to create GPU instance {profile} at {start}: Insufficient Resources")
            return 2
        used |= span
        gpu["instances"].append([profile, start])
    return 0


def smi(call: Call) -> int:
    args, out, err = call.args, call.out, call.err
    state = call.load()
    gpus = state["gpus"]
    if args[:1] == ["mig"]:
        gpu = gpus[int(opt(args, "-i"))]
        if "-dci" in args or "-dgi" in args:
            if not gpu["instances"]:
                err.append("No GPU instances found: Not Found")
                return 6
            if "-dgi" in args:
                gpu["instances"] = []
            call.save(state)
            return 0
        if "-cgi" in args:
            rc = create(state, gpu, opt(args, "-cgi"), err)
            call.save(state)
            return rc
        return 2
    if "--query-gpu=index" in args:
        if "list" in state["fail"]:
            err.append("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver")
            return 9
        out.extend(str(i) for i in range(len(gpus)))
        return 0
    if "-r" in args:
        if state["hold"] == "until-reset":
            for gpu in gpus:
                gpu["current"] = gpu["pending"]
        call.save(state)
        return 0
    index = opt(args, "-i")
    gpu = gpus[int(index)] if index is not None else None
    if "--query-gpu=mig.mode.current,mig.mode.pending" in args:
        out.append(f"{gpu['current']}, {gpu['pending']}")
        return 0
    if "-mig" in args:
        if "enable" in state["fail"]:
            err.append("Unable to enable MIG Mode for GPU: Not Supported")
            return 3
        gpu["pending"] = "Enabled"
        if state["hold"] == "none":
            gpu["current"] = "Enabled"
            out.append(f"Enabled MIG Mode for GPU 0000000{index}:10:1C.0")
        else:
            bus = f"0000000{index}:10:1C.0"
            out.append(f"Warning: MIG mode is in pending enable state for GPU {bus}:In use by another client")
        call.save(state)
        return 0
    if "-L" in args:
        out.append(f"GPU {index}: NVIDIA {state['model']} (UUID: GPU-{index})")
        for n, (profile, _) in enumerate(sorted(gpu["instances"], key=lambda i: i[1])):
            out.append(f"  MIG {profile:<13} Device  {n}: (UUID: MIG-{index}-{n})")
        return 0
    return 2


def ctk(call: Call) -> int:
    state = call.load()
    if "toolkit" in state["fail"]:
        return 1
    for i, a in enumerate(call.args):
        if a == "--set":
            key, _, value = call.args[i + 1].partition("=")
            state["toolkit"][key] = value
    call.save(state)
    return 0


def answer(call: Call) -> int:
    """What the tool does: ``nvidia-smi`` and ``nvidia-ctk`` as above; the others only succeed."""
    if call.tool == "nvidia-smi":
        return smi(call)
    if call.tool == "nvidia-ctk":
        return ctk(call)
    return 0


# -- the transport: bash shims on the script's PATH, this module in the test process ---------------

#: A tool on the script's PATH. It sends its name, $STANDIN_STATE, $STANDIN_LOG and its arguments,
#: one per line, and prints the answer: the exit status, then a count and that many lines for
#: stdout, then for stderr. Only bash builtins: no process but the shim's own.
SHIM = r"""#!/bin/bash
exec 3<>"/dev/tcp/127.0.0.1/{port}" || exit 127
printf '%s\n' "${{0##*/}}" "$STANDIN_STATE" "$STANDIN_LOG" "$#" "$@" >&3
IFS= read -r rc <&3
IFS= read -r n <&3
while [ "$n" -gt 0 ]; do IFS= read -r line <&3; printf '%s\n' "$line"; n=$((n - 1)); done
IFS= read -r n <&3
while [ "$n" -gt 0 ]; do IFS= read -r line <&3; printf '%s\n' "$line" >&2; n=$((n - 1)); done
exit "$rc"
"""


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        def line() -> str:
            return self.rfile.readline().decode().removesuffix("\n")

        tool, state_file, log = line(), line(), line()
        args = [line() for _ in range(int(line()))]
        with open(log, "a") as f:  # every call, recorded before it acts
            f.write(" ".join([tool, *args]) + "\n")
        call = Call(tool, args, state_file)
        try:
            rc = answer(call)
        except Exception:  # as a Python tool would: status 1 and the traceback on stderr
            rc, call.out, call.err = 1, [], traceback.format_exc().splitlines()
        reply = [str(rc), str(len(call.out)), *call.out, str(len(call.err)), *call.err]
        self.wfile.write(("\n".join(reply) + "\n").encode())


@contextmanager
def served() -> Iterator[int]:
    """The stand-in served on 127.0.0.1 (a free port) in a thread; yields the port for ``SHIM``."""
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def install(folder: Path, tools: tuple[str, ...], port: int) -> None:
    """Write a shim for each of ``tools`` into ``folder``."""
    for tool in tools:
        path = folder / tool
        path.write_text(SHIM.format(port=port))
        path.chmod(0o755)
