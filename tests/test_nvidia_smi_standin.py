"""The ``nvidia-smi`` stand-in (tests/support/standins) against what the real one printed on an H200 with driver
580.159.04 (../shared/observed/nvidia-smi/580.159.04-h200): its grammar refuses what the real one
refused, its model prints the recorded bytes, its placement table is the real H200's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.reference import observed_path
from tests.support.standins import nvidia_smi as standin
from tests.support.standins import nvidia_smi_grammar as smi_grammar
from tests.support.standins.nvidia_smi_grammar import Refused

NOT_VALID = "ERROR: Option {} is not valid for this command. Please run 'nvidia-smi -h' for help.\n"


@pytest.fixture(scope="module")
def grammar() -> smi_grammar.Grammar:
    observed_path("nvidia-smi-h.txt")  # skipped, or failed, where the recordings are missing
    return smi_grammar.grammar()


def model(tmp_path: Path, args: list[str], state: dict) -> tuple[str, int]:
    """What the stand-in prints for ``nvidia-smi <args>`` on ``state``, and its exit status."""
    state_file = tmp_path / "state.json"
    state_file.write_text(json.dumps(state))
    call = standin.Call("nvidia-smi", args, str(state_file))
    rc = standin.answer(call)
    return "".join(f"{line}\n" for line in call.out + call.err), rc


def recorded_h200(replay: bool) -> dict:
    gpu = {"current": "Disabled", "pending": "Disabled", "instances": []}
    return {"model": "H200-141GB", "gpus": [gpu], "hold": "none", "fail": [], "toolkit": {}, "replay": replay}


@pytest.mark.parametrize(
    "args",
    [
        ["-i", "0", "-L"],
        ["-L", "-i", "0"],
        ["--id=0", "-L"],
        ["-i", "0", "--list-gpus"],
        ["--list-gpus", "-i", "0"],
        ["-L", "--id=0"],
        ["--list-gpus", "--id=0"],
        ["-B", "-i", "0"],
    ],
)
def test_list_takes_no_gpu_in_any_spelling(grammar, args):
    with pytest.raises(Refused) as refused:
        grammar.parse(args)
    spelled = next(a for a in args if a.startswith(("-i", "--id")))
    assert (refused.value.output, refused.value.status) == (NOT_VALID.format(spelled), 2)


def test_every_recording_is_accepted_or_refused_as_the_real_tool_did(grammar):
    first, _, _ = smi_grammar.recordings()
    refused = {}
    for args in first:
        try:
            grammar.parse(list(args))
        except Refused as err:
            refused[args] = (err.output, err.status)
        except NotImplementedError:
            assert args == ("topo", "-m"), args  # a sub-command whose help was not recorded
    assert refused == {args: (rec.output, rec.status) for args, rec in first.items() if args in refused}
    assert sorted(refused) == sorted(
        [
            ("-i", "0", "-L"),
            ("-L", "-i", "0"),
            ("--id=0", "-L"),
            ("-i", "0", "--list-gpus"),
            ("-q", "-d", "MIG"),
        ]
    )


def test_the_model_prints_the_recorded_bytes(grammar, tmp_path):
    """Every recording through the stand-in with the replay off, on the machine it was recorded on:
    what the model covers is byte for byte the recording; the rest is replayed only."""
    first, _, _ = smi_grammar.recordings()
    replayed_only = []
    for args, rec in first.items():
        try:
            assert model(tmp_path, list(args), recorded_h200(replay=False)) == (rec.output, rec.status), args
        except NotImplementedError:
            replayed_only.append(" ".join(args))
        assert model(tmp_path, list(args), recorded_h200(replay=True)) == (rec.output, rec.status), args
    assert sorted(replayed_only) == [
        "--query-gpu=index,uuid,name,pci.bus_id,pci.device_id,driver_version,mig.mode.current,mig.mode.pending,"
        "persistence_mode,memory.total --format=csv",
        "-q",
        "mig -lcip -i 0",
        "mig -lgip -i 0",
        "mig -lgipp -i 0",
        "topo -m",
    ]


def test_what_the_recordings_leave_open_is_known():
    """One command was recorded twice with different bytes (a blank line more in more-errors.txt: the
    captures merge stdout and stderr); the stand-in prints transcripts.txt's. One has no status."""
    first, differing, incomplete = smi_grammar.recordings()
    assert [(r.source, r.args) for r in differing] == [("more-errors.txt", ("-L", "-i", "0"))]
    assert differing[0].output == first[("-L", "-i", "0")].output + "\n"
    assert differing[0].status == first[("-L", "-i", "0")].status == 2
    assert incomplete == ("nvidia-smi -i 0 -q -d MIG",)


@pytest.mark.parametrize(
    ("args", "command"),
    [
        (["mig", "-i", "0", "-cgi", "3g.71gb:4,9", "-C"], "-cgi"),
        (["mig", "-dci", "-i", "0", "-gi", "1", "-ci", "0"], "-dci"),
        (["mig", "-cci", "-i", "0"], "-cci"),
        (["-r", "-i", "00000000:00:06.0,00000000:00:07.0"], "-r"),
        (["-r", "bus", "-i", "0"], "-r"),
        (["--gpu-reset", "--id=0"], "-r"),
        (["-i", "0", "-mig", "1"], "-mig"),
        (["--multi-instance-gpu=1"], "-mig"),
        (["-lgc", "1500", "--mode=1"], "-lgc"),
        (["-q", "-d", "MEMORY,ECC", "-i", "0"], "-q"),
        (["--query-gpu=index,pci.bus_id", "--format=csv,noheader", "-i", "0"], "--query-gpu"),
        ([], ""),
    ],
)
def test_the_grammar_accepts_what_the_help_allows(grammar, args, command):
    assert grammar.parse(args).command == command


@pytest.mark.parametrize(
    ("args", "refusal"),
    [
        (["mig", "-lgi", "-gi", "1"], NOT_VALID.format("-gi")),
        (["mig", "-C", "-lgi"], NOT_VALID.format("-C")),
        (["mig", "-dgi", "-ci", "0"], NOT_VALID.format("-ci")),
        (["mig", "-cgi"], NOT_VALID.format("-cgi")),
        (["mig", "-lgi", "-dgi"], NOT_VALID.format("-dgi")),
        (["-mig", "1", "-r"], NOT_VALID.format("-r")),
        (["-r", "-L"], NOT_VALID.format("-L")),
        (["-m", "1", "-pl", "300"], NOT_VALID.format("-m")),
        (
            ["--query-gpu=index"],
            "ERROR: --format= is mandatory for this command. Please run 'nvidia-smi -h' for help.\n",
        ),
        (["--query-gpu=index", "--format=noheader"], NOT_VALID.format("--format=noheader")),
        (["--query-gpu=mig.mode", "--format=csv"], 'Field "mig.mode" is not a valid field to query.\n'),
        (["-q", "-d", "MIG"], "Failed to parse --display/-d flags\n"),
        (["--list-gpus=0"], NOT_VALID.format("--list-gpus=0")),
    ],
)
def test_the_grammar_refuses_what_the_help_does_not_allow(grammar, args, refusal):
    with pytest.raises(Refused) as refused:
        grammar.parse(args)
    assert (refused.value.output, refused.value.status) == (refusal, 2)


def test_the_stand_ins_h200_placements_are_the_real_h200s():
    """``mig -lgip`` (name, ID) and ``mig -lgipp`` (ID: starts, memory slices) of the real H200 against
    the stand-in's own table (not the library's catalog)."""
    ids = {
        int(m.group(2)): m.group(1)
        for m in re.finditer(r"MIG (\S+)\s+(\d+)\s", observed_path("nvidia-smi-mig-lgip.txt").read_text())
    }
    real = {}
    for m in re.finditer(
        r"Profile ID\s+(\d+) Placements?\s*:\s*\{([\d,]+)\}:(\d+)",
        observed_path("nvidia-smi-mig-lgipp.txt").read_text(),
    ):
        starts = tuple(int(s) for s in m.group(2).split(","))
        real[ids[int(m.group(1))]] = (starts, int(m.group(3)), int(m.group(1)))
    ours = {name: (standin.STARTS[kind], size, pid) for name, (kind, size, pid) in standin.SHAPES["H200-141GB"].items()}
    assert ours == real
    assert len(real) == 7
    totals = {
        m.group(1): int(m.group(2))
        for m in re.finditer(r"MIG (\S+)\s+\d+\s+\d+/(\d+)\s", observed_path("nvidia-smi-mig-lgip.txt").read_text())
    }
    shapes = standin.SHAPES["H200-141GB"]
    assert {name: standin.instances_total(name, shapes[name][0]) for name in shapes} == totals
    assert totals["1g.18gb+me"] == 1


def test_a_gpu_holds_one_media_extension_instance():
    state = {"model": "H200-141GB", "fail": []}
    gpu = {"current": "Enabled", "instances": []}
    err: list[str] = []
    assert standin.create(state, gpu, "1g.18gb+me", err) == 0
    assert standin.create(state, gpu, "1g.18gb+me", err) == 2
    assert err[-1] == "Failed to create GPU instance 1g.18gb+me at 1: Insufficient Resources"
    assert gpu["instances"] == [["1g.18gb+me", 0, True]]


def test_a_gpu_that_does_not_exist_is_not_found(tmp_path):
    state = recorded_h200(replay=False)
    assert model(tmp_path, ["-i", "7", "--query-gpu=index", "--format=csv,noheader"], state) == (standin.NO_DEVICE, 6)
    assert model(tmp_path, ["-r", "-i", "0,00000000:00:07.0"], state) == (standin.NO_DEVICE, 6)


def test_the_listing_shows_mig_devices_under_their_gpu(tmp_path):
    """The format the stage parses: each GPU's line, then its MIG devices (a GPU instance with a
    compute instance), indented (SOURCE.md, after NVIDIA's MIG user guide)."""
    gpus = [
        {"current": "Enabled", "pending": "Enabled", "instances": [["3g.71gb", 4, True], ["1g.18gb", 0, True]]},
        {"current": "Enabled", "pending": "Enabled", "instances": [["7g.141gb", 0, False]]},
    ]
    state = {"model": "H200-141GB", "gpus": gpus, "hold": "none", "fail": [], "toolkit": {}}
    assert model(tmp_path, ["-L"], state) == (
        "GPU 0: NVIDIA H200 (UUID: GPU-00000000-1111-2222-3333-444444444444)\n"
        "  MIG 1g.18gb     Device  0: (UUID: MIG-00000000-0000-2222-3333-444444444444)\n"
        "  MIG 3g.71gb     Device  1: (UUID: MIG-00000000-0001-2222-3333-444444444444)\n"
        "GPU 1: NVIDIA H200 (UUID: GPU-00000001-1111-2222-3333-444444444444)\n",
        0,
    )
