"""A stand-in for the driver's ``nvidia-smi`` (and ``nvidia-ctk``, ``systemctl``, ``logger``, ``sleep``)
for the boot-stage tests: it keeps the GPUs' state in a JSON file, records every call, and
behaves as the NVIDIA MIG user guide says the real one does, for the calls the stage makes.

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
import os
import sys

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


def load():
    with open(os.environ["STANDIN_STATE"]) as f:
        return json.load(f)


def save(state):
    with open(os.environ["STANDIN_STATE"], "w") as f:
        json.dump(state, f)


def record(tool, args):
    with open(os.environ["STANDIN_LOG"], "a") as f:
        f.write(" ".join([tool, *args]) + "\n")


def opt(args, name):
    return args[args.index(name) + 1] if name in args else None


def create(state, gpu, spec):
    if gpu["current"] != "Enabled":
        print("Unable to create a GPU instance: MIG mode is not enabled", file=sys.stderr)
        return 6
    if "create" in state["fail"]:
        print("Failed to create GPU instances: Insufficient Resources", file=sys.stderr)
        return 2
    used = {s for p, start in gpu["instances"] for s in range(start, start + SHAPES[state["model"]][p][1])}
    if "placement" in state["fail"] and ":" in spec:
        print("Invalid profile ID specified", file=sys.stderr)
        return 2
    for item in spec.split(","):
        profile, _, start = item.partition(":")
        shape, size = SHAPES[state["model"]][profile]
        start = int(start) if start else next(s for s in STARTS[shape] if not set(range(s, s + size)) & used)
        span = set(range(start, start + size))
        if start not in STARTS[shape] or span & used:
            print(f"Failed to create GPU instance {profile} at {start}: Insufficient Resources", file=sys.stderr)
            return 2
        used |= span
        gpu["instances"].append([profile, start])
    return 0


def smi(args):
    state = load()
    gpus = state["gpus"]
    if args[:1] == ["mig"]:
        gpu = gpus[int(opt(args, "-i"))]
        if "-dci" in args or "-dgi" in args:
            if not gpu["instances"]:
                print("No GPU instances found: Not Found", file=sys.stderr)
                return 6
            if "-dgi" in args:
                gpu["instances"] = []
            save(state)
            return 0
        if "-cgi" in args:
            rc = create(state, gpu, opt(args, "-cgi"))
            save(state)
            return rc
        return 2
    if "--query-gpu=index" in args:
        if "list" in state["fail"]:
            print("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver", file=sys.stderr)
            return 9
        print("\n".join(str(i) for i in range(len(gpus))))
        return 0
    if "-r" in args:
        if state["hold"] == "until-reset":
            for gpu in gpus:
                gpu["current"] = gpu["pending"]
        save(state)
        return 0
    index = opt(args, "-i")
    gpu = gpus[int(index)] if index is not None else None
    if "--query-gpu=mig.mode.current,mig.mode.pending" in args:
        print(f"{gpu['current']}, {gpu['pending']}")
        return 0
    if "-mig" in args:
        if "enable" in state["fail"]:
            print("Unable to enable MIG Mode for GPU: Not Supported", file=sys.stderr)
            return 3
        gpu["pending"] = "Enabled"
        if state["hold"] == "none":
            gpu["current"] = "Enabled"
            print(f"Enabled MIG Mode for GPU 0000000{index}:10:1C.0")
        else:
            bus = f"0000000{index}:10:1C.0"
            print(f"Warning: MIG mode is in pending enable state for GPU {bus}:In use by another client")
        save(state)
        return 0
    if "-L" in args:
        print(f"GPU {index}: NVIDIA {state['model']} (UUID: GPU-{index})")
        for n, (profile, _) in enumerate(sorted(gpu["instances"], key=lambda i: i[1])):
            print(f"  MIG {profile:<13} Device  {n}: (UUID: MIG-{index}-{n})")
        return 0
    return 2


def ctk(args):
    state = load()
    if "toolkit" in state["fail"]:
        return 1
    for i, a in enumerate(args):
        if a == "--set":
            key, _, value = args[i + 1].partition("=")
            state["toolkit"][key] = value
    save(state)
    return 0


def main():
    tool, args = os.path.basename(sys.argv[0]), sys.argv[1:]
    record(tool, args)
    if tool == "nvidia-smi":
        return smi(args)
    if tool == "nvidia-ctk":
        return ctk(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
