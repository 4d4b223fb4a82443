"""A stand-in for the driver's ``nvidia-smi`` (and ``nvidia-ctk``, ``systemctl``, ``logger``, ``sleep``)
for the boot-stage tests: it keeps the GPUs' state in a JSON file and records every call.

What it accepts is the real tool's grammar, read from the real tool's own help texts at test time
(``nvidia_smi_grammar``): a command line the real one refuses is refused here with the real words and
exit status (``nvidia-smi -i 0 -L``: exit 2). What it prints is the real format: on the machine the
transcripts were recorded on (one H200, MIG disabled: ``recorded_state``) a recorded command line
replays its recorded bytes and status, and for the commands the stage runs the model below prints
what the recordings show (tests/test_nvidia_smi_standin.py runs every recording through the model
with the replay off and compares the bytes). What no recording shows is modelled on NVIDIA's MIG user
guide and said so where it is: the ``-L`` lines of MIG devices (its "Getting Started with MIG", as
the recordings' SOURCE.md quotes it), and the messages of the commands that change a GPU, which the
stage never parses. A command whose output is neither recorded nor modelled raises, so a test that
relies on it fails instead of reading something made up.

Placements are written out here (MIG user guide, "A100 MIG Profiles" / "H100 MIG Profiles" tables,
and for the H200 ``nvidia-smi mig -lgip``/``-lgipp`` of the real one, which the tests compare), not
read from the library's catalog, so a wrong placement in the library fails here.

State (``$STANDIN_STATE``): ``{"model": ..., "gpus": [{"current": "Disabled", "pending": "Disabled",
"instances": [[profile, start, with_compute_instance], ...]}], "hold": "none" | "until-reset" |
"until-reboot", "fail": [...], "toolkit": {...}}``; ``"replay": false`` turns the replay off.
``fail`` may hold ``create`` (``-cgi`` fails), ``placement`` (``-cgi`` refuses ``:<start>``; without a
start the stand-in places an instance at the lowest free start, the first fit), ``toolkit``
(``nvidia-ctk`` fails), ``list`` (listing the GPUs fails), ``enable`` (``-mig 1`` leaves the mode
disabled), ``reset`` (``-r`` fails).

The tools the script runs are bash shims (``SHIM``, a few milliseconds each, written by
``install``) that hand their arguments to this module, served by the test process on loopback
(``served``), and print its answer: a new Python per call cost about 20 ms, and a boot of an
8-GPU node makes dozens of calls. The recordings merge stdout and stderr; the stand-in prints
everything on stdout.
"""

import json
import socketserver
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.standins.nvidia_smi_grammar import Parsed, Refused, grammar, recordings

#: memory slices and allowed starts by compute/memory shape (the guide's tables).
STARTS = {"1m": (0, 1, 2, 3, 4, 5, 6), "1g2m": (0, 2, 4, 6), "2g": (0, 2, 4), "3g": (0, 4), "4g": (0,), "7g": (0,)}
#: Per GPU model: profile -> (shape, memory slices, profile ID) (the guide's tables; the H200's as
#: its ``mig -lgip``/``-lgipp`` print them).
SHAPES = {
    "A100-SXM4-40GB": {
        "1g.5gb": ("1m", 1, 19),
        "1g.5gb+me": ("1m", 1, 20),
        "1g.10gb": ("1g2m", 2, 15),
        "2g.10gb": ("2g", 2, 14),
        "3g.20gb": ("3g", 4, 9),
        "4g.20gb": ("4g", 4, 5),
        "7g.40gb": ("7g", 8, 0),
    },
    "A100-SXM4-80GB": {
        "1g.10gb": ("1m", 1, 19),
        "1g.10gb+me": ("1m", 1, 20),
        "1g.20gb": ("1g2m", 2, 15),
        "2g.20gb": ("2g", 2, 14),
        "3g.40gb": ("3g", 4, 9),
        "4g.40gb": ("4g", 4, 5),
        "7g.80gb": ("7g", 8, 0),
    },
    "H200-141GB": {
        "1g.18gb": ("1m", 1, 19),
        "1g.18gb+me": ("1m", 1, 20),
        "1g.35gb": ("1g2m", 2, 15),
        "2g.35gb": ("2g", 2, 14),
        "3g.71gb": ("3g", 4, 9),
        "4g.71gb": ("4g", 4, 5),
        "7g.141gb": ("7g", 8, 0),
    },
}
SHAPES["H100-80GB-HBM3"] = SHAPES["A100-SXM4-80GB"]
#: The product name ``nvidia-smi -L`` prints (the H200's as recorded).
NAMES = {
    "A100-SXM4-40GB": "NVIDIA A100-SXM4-40GB",
    "A100-SXM4-80GB": "NVIDIA A100-SXM4-80GB",
    "H100-80GB-HBM3": "NVIDIA H100 80GB HBM3",
    "H200-141GB": "NVIDIA H200",
}
#: What the recorded H200 answered for fields the stage does not read (more-query.txt, transcripts).
RECORDED_FIELDS = {"driver_version": "580.159.04", "pci.device_id": "0x233510DE"}
NO_DEVICE = "No devices were found\n"  # more-errors.txt: an index that does not exist, exit 6
NO_DRIVER = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."


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


def uuid(index: int) -> str:
    """GPU 0's is the recordings' masked UUID (SOURCE.md), the others follow its format."""
    return f"GPU-{index:08x}-1111-2222-3333-444444444444"


def bus_id(index: int) -> str:
    """GPU 0's is the recorded H200's (more-query.txt)."""
    return f"00000000:00:{6 + index:02X}.0"


def recorded_state(state: dict) -> bool:
    """The machine the transcripts were recorded on: one H200, MIG disabled, nothing failing."""
    gpus = state["gpus"]
    return (
        state["model"] == "H200-141GB"
        and len(gpus) == 1
        and (gpus[0]["current"], gpus[0]["pending"], gpus[0]["instances"]) == ("Disabled", "Disabled", [])
        and not state.get("fail")
    )


class NotFound(Exception):
    pass


def targets(state: dict, ids: str | None) -> list[int]:
    """The GPUs ``-i`` names (index, PCI bus id or UUID, comma separated), every GPU without it."""
    count = len(state["gpus"])
    if ids is None:
        return list(range(count))
    found = []
    for item in ids.split(","):
        match = [i for i in range(count) if item in (str(i), bus_id(i), uuid(i)) or item.upper() == bus_id(i)]
        if not match:
            raise NotFound(item)
        found += match
    return found


def shape(state: dict, profile: str) -> tuple[str, int, int, str]:
    """(shape, memory slices, ID, name) of a profile given by name or ID on the state's model."""
    for name, (kind, size, pid) in SHAPES[state["model"]].items():
        if profile in (name, str(pid)):
            return kind, size, pid, name
    raise KeyError(profile)


def instances_total(name: str, kind: str) -> int:
    """How many GPU instances of a profile one GPU holds (``mig -lgip``'s Total): one per placement,
    but one at most of a ``+me`` profile, which takes the GPU's media extensions (the H200's lgip:
    ``1g.18gb+me ... 1/1``)."""
    return 1 if name.endswith("+me") else len(STARTS[kind])


def create(state, gpu, spec, err: list[str], compute: bool = True) -> int:
    if gpu["current"] != "Enabled":
        err.append("Unable to create a GPU instance: MIG mode is not enabled")
        return 6
    if "create" in state["fail"]:
        err.append("Failed to create GPU instances: Insufficient Resources")
        return 2
    used = {s for p, start, *_ in gpu["instances"] for s in range(start, start + shape(state, p)[1])}
    if "placement" in state["fail"] and ":" in spec:
        err.append("Invalid profile ID specified")
        return 2
    for item in spec.split(","):
        profile, _, start = item.partition(":")
        try:
            kind, size, pid, name = shape(state, profile)
        except KeyError:
            err.append(f"Invalid profile {profile}")
            return 2
        start = int(start) if start else next((s for s in STARTS[kind] if not set(range(s, s + size)) & used), -1)
        span = set(range(start, start + size))
        held = sum(p == name for p, *_ in gpu["instances"])
        if start not in STARTS[kind] or span & used or held >= instances_total(name, kind):
            err.append(f"Failed to create GPU instance {name} at {start}: Insufficient Resources")
            return 2
        used |= span
        gpu["instances"].append([name, start, compute])
        err.append(f"Successfully created GPU instance on GPU using profile MIG {name} (ID {pid:2d})")
    return 0


def listing(state: dict) -> list[str]:
    """``nvidia-smi -L``: one line per GPU (as recorded), then its MIG devices (a GPU instance with a
    compute instance), indented: ``  MIG 3g.71gb     Device  0: (UUID: MIG-...)`` (SOURCE.md)."""
    lines = []
    for i, gpu in enumerate(state["gpus"]):
        lines.append(f"GPU {i}: {NAMES[state['model']]} (UUID: {uuid(i)})")
        devices = [p for p, _, ci in sorted(gpu["instances"], key=lambda x: x[1]) if ci]
        for n, profile in enumerate(devices):
            lines.append(f"  MIG {profile:<11} Device {n:>2}: (UUID: MIG-{i:08x}-{n:04x}-2222-3333-444444444444)")
    return lines


def query(state: dict, parsed: Parsed, out: list[str]) -> int:
    fields = (parsed.values["--query-gpu"] or "").split(",")
    formats = (parsed.values["--format"] or "").split(",")
    indexes = targets(state, parsed.values.get("-i"))
    if "noheader" not in formats:
        out.append(", ".join(fields))
    for i in indexes:
        gpu = state["gpus"][i]
        known = {
            "index": str(i),
            "name": NAMES[state["model"]],
            "uuid": uuid(i),
            "pci.bus_id": bus_id(i),
            "mig.mode.current": gpu["current"],
            "mig.mode.pending": gpu["pending"],
            **(RECORDED_FIELDS if state["model"] == "H200-141GB" else {}),
        }
        missing = [f for f in fields if f not in known]
        if missing:
            raise NotImplementedError(f"--query-gpu {missing}: not modelled")
        out.append(", ".join(known[f] for f in fields))
    return 0


def modify(state: dict, call: Call, parsed: Parsed) -> int:
    """DEVICE MODIFICATION OPTIONS: ``-mig`` and ``-r`` (messages after the MIG user guide's examples)."""
    out = call.out
    indexes = targets(state, parsed.values.get("-i"))
    if parsed.command == "-mig":
        if "enable" in state["fail"]:
            out.append("Unable to enable MIG Mode for GPU: Not Supported")
            return 3
        mode = {"0": "Disabled", "DISABLED": "Disabled", "1": "Enabled", "ENABLED": "Enabled"}[
            parsed.values["-mig"] or ""
        ]
        for i in indexes:
            gpu = state["gpus"][i]
            gpu["pending"] = mode
            if state["hold"] == "none":
                gpu["current"] = mode
                out.append(f"{mode} MIG Mode for GPU {bus_id(i)}")
            else:
                state_word = mode.lower().removesuffix("d")
                out.append(
                    f"Warning: MIG mode is in pending {state_word} state for GPU {bus_id(i)}:In use by another client"
                )
        out.append("All done.")
        call.save(state)
        return 0
    if parsed.command == "-r":
        if "reset" in state["fail"]:
            out.append("Unable to reset this GPU because it's being used by some other process.")
            return 255
        for i in indexes:
            gpu = state["gpus"][i]
            if state["hold"] == "until-reset":
                gpu["current"] = gpu["pending"]
            gpu["instances"] = []  # MIG instances do not survive a reset
            out.append(f"GPU {bus_id(i)} was successfully reset.")
        out.append("All done.")
        call.save(state)
        return 0
    raise NotImplementedError(f"nvidia-smi {parsed.command}: not modelled")


def mig(state: dict, call: Call, parsed: Parsed) -> int:
    out, values, command = call.out, parsed.values, parsed.command
    indexes = targets(state, values.get("-i"))
    enabled = [i for i in indexes if state["gpus"][i]["current"] == "Enabled"]
    if command in ("-lgi", "-lci") and not enabled:
        out.append("No MIG-enabled devices found.")  # transcripts.txt, more-mig-lists.txt: exit 0
        return 0
    if command == "-cgi":
        rc = 0
        for i in indexes:
            rc = rc or create(state, state["gpus"][i], values["-cgi"] or "", out, compute="-C" in values)
        call.save(state)
        return rc
    if command in ("-dci", "-dgi"):
        found = False
        for i in indexes:
            gpu = state["gpus"][i]
            if command == "-dci":
                found |= any(ci for *_, ci in gpu["instances"])
                gpu["instances"] = [[p, s, False] for p, s, _ in gpu["instances"]]
            else:
                busy = [p for p, _, ci in gpu["instances"] if ci]
                if busy:
                    out.append(
                        f"Unable to destroy GPU instance of profile {busy[0]} on GPU {i}: In use by another client"
                    )
                    return 19
                found |= bool(gpu["instances"])
                gpu["instances"] = []
        call.save(state)
        if not found:
            out.append(f"No {'compute' if command == '-dci' else 'GPU'} instances found: Not Found")
            return 6
        return 0
    raise NotImplementedError(f"nvidia-smi mig {command}: not modelled")


def smi(call: Call) -> int:
    state = call.load()
    for gpu in state["gpus"]:  # [profile, start] in a test's state: with its compute instance
        gpu["instances"] = [[*instance, True][:3] for instance in gpu["instances"]]
    recorded = recordings()[0].get(tuple(call.args))
    replay = recorded is not None and state.get("replay", True) and recorded_state(state)
    try:
        parsed = grammar().parse(call.args)
    except Refused as refused:
        call.out.extend(refused.output.splitlines())
        return refused.status
    except NotImplementedError:  # a sub-command whose help was not recorded: its recordings only
        if not replay:
            raise
    if replay:
        call.out.extend(recorded.output.splitlines())
        return recorded.status
    try:
        if parsed.section in ("LIST OPTIONS", "SELECTIVE QUERY OPTIONS") and "list" in state["fail"]:
            call.out.append(NO_DRIVER)
            return 9
        if parsed.section == "LIST OPTIONS" and parsed.command == "-L":
            call.out.extend(listing(state))
            return 0
        if parsed.section == "SELECTIVE QUERY OPTIONS" and parsed.command == "--query-gpu":
            return query(state, parsed, call.out)
        if parsed.section == "DEVICE MODIFICATION OPTIONS":
            return modify(state, call, parsed)
        if parsed.section == "mig":
            return mig(state, call, parsed)
    except NotFound:
        call.out.extend(NO_DEVICE.splitlines())
        return 6
    raise NotImplementedError(f"nvidia-smi {' '.join(call.args)}: neither recorded nor modelled")


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
    grammar(), recordings()  # read once, before the first call
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
