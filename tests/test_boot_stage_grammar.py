"""Every ``nvidia-smi`` command line of every generated boot script, through the real tool's grammar
(tests/support/standins/nvidia_smi_grammar.py, from nvidia-smi 580.159.04's own help): the scripts of each
MIG GPU with every named layout and the layouts of examples/ and stacks/, of both capacity providers,
and without MIG; run on the stand-in through every path that calls ``nvidia-smi`` (a fresh node, a
pending mode, a reboot, placements the driver refuses). And scripts/gpu-smoke's guard: of those
command lines it lets through exactly the read-only ones."""

from __future__ import annotations

import contextlib
import re
import subprocess
from collections.abc import Iterator

import pytest
import yaml

from components.catalog import mig as mig_catalog
from components.check.loading import settings_from_config
from components.config import stackfile
from components.config.capacity_provider import KARPENTER, MANAGED_NODE_GROUP
from components.config.groups import DEFAULT_GPU_TAINT
from components.plan import boot
from tests.support.paths import ROOT, STACKS
from tests.support.reference import observed_path
from tests.support.standins import nvidia_smi as standin
from tests.support.standins.boot_node import Node
from tests.support.standins.nvidia_smi_grammar import Refused, grammar

#: Every place a boot script calls nvidia-smi, its variables named (the literal the test reads the
#: scripts' text and their runs against).
SITES = {
    "nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader",
    "nvidia-smi -i <gpu> --query-gpu=mig.mode.current,mig.mode.pending --format=csv,noheader",
    "nvidia-smi -i <gpu> -mig 1",
    "nvidia-smi -r -i <bus ids>",
    "nvidia-smi -L",
    "nvidia-smi mig -i <gpu> -dci",
    "nvidia-smi mig -i <gpu> -dgi",
    "nvidia-smi mig -i <gpu> -cgi <profile:start,...> -C",
    "nvidia-smi mig -i <gpu> -cgi <profile,...> -C",
}
PROVIDERS = {"managed": MANAGED_NODE_GROUP, "karpenter": KARPENTER}
#: The read-only ones (the help's LIST and SELECTIVE QUERY commands).
READ_ONLY_SITES = {
    "nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader",
    "nvidia-smi -i <gpu> --query-gpu=mig.mode.current,mig.mode.pending --format=csv,noheader",
    "nvidia-smi -L",
}


def site_of_text(call: str) -> str:
    """A call as the script's text spells it, its variables named."""
    for variable, name in (
        ('"$1"', "<gpu>"),
        ('"$i"', "<gpu>"),
        ('"$BUS_IDS"', "<bus ids>"),
        ('"$MIG_CREATE"', "<profile:start,...>"),
        ('"$MIG_PROFILES"', "<profile,...>"),
    ):
        call = call.replace(variable, name)
    return call


def site_of_run(call: str) -> str:
    """A call as a run made it, its values named."""
    call = re.sub(r"-r -i [0-9A-F:.,]+$", "-r -i <bus ids>", call)
    call = re.sub(r"-i \d+ ", "-i <gpu> ", call)
    call = re.sub(r"-cgi \S*:\S* ", "-cgi <profile:start,...> ", call)
    return re.sub(r"-cgi [^\s:]+ ", "-cgi <profile,...> ", call)


def text_sites(script: str) -> list[str]:
    """The nvidia-smi commands of a script's text: at a line's start, after ``$(`` or ``if !``."""
    return [
        site_of_text(m.group(1).strip())
        for m in re.finditer(r"(?m)(?:^\s*|\$\(|if ! )(nvidia-smi [^|)\n\\;]*?)\s*(?:\|\||\||\)|\\|;|$)", script)
    ]


def scripts() -> dict[str, tuple[str, str, int]]:
    """Every boot script of the test: name -> (script, GPU model, GPUs per node)."""
    out: dict[str, tuple[str, str, int]] = {}
    for model, gpu in mig_catalog.MIG_GPUS.items():
        for name, layout in mig_catalog.named_layouts(model).items():
            for provider in PROVIDERS:
                stage = boot.boot_stage(1, gpu, layout, (DEFAULT_GPU_TAINT,), PROVIDERS[provider])
                out[f"{model} {name} {provider}"] = (stage.script, model, 1)
    files = [
        *sorted((ROOT / "examples").glob("Pulumi.*.yaml")),
        *(ROOT / "stacks" / f"Pulumi.{s}.yaml" for s in STACKS),
    ]
    for path in files:
        config = yaml.safe_load(path.read_text())["config"]
        stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
        settings = settings_from_config(stackfile.cli_config(config), stackfile.project_name(ROOT), stack)
        for plan in settings.plans:
            assert plan.boot is not None
            model = mig_catalog.FAMILY_MIG_GPU.get(plan.instance.family.name, "H100-80GB-HBM3")
            out[f"{path.parent.name}/{path.name} {plan.name}"] = (plan.boot.script, model, plan.gpus_per_node)
    return out


def runs_needed(everything: dict[str, tuple[str, str, int]]) -> dict[str, str]:
    """The scripts to run, and for each of the others the one it calls nvidia-smi exactly as: a Karpenter
    script is its managed twin but for the lines of ``TAINTS`` and ``ON_PENDING``, which reach no
    nvidia-smi call; a script without MIG (no nvidia-smi in its text) is the first one of those."""
    same: dict[str, str] = {}
    plain = None
    for name, (script, _, _) in everything.items():
        twin = name.replace(" karpenter", " managed")
        if twin != name and twin in everything:
            ours, theirs = (_without_registration(t) for t in (script, everything[twin][0]))
            assert ours == theirs, name
            same[name] = twin
        elif not text_sites(script):
            if plain is None:
                plain = name
            else:
                same[name] = plain
    return same


def _without_registration(script: str) -> str:
    return re.sub(r"(?m)^(TAINTS|ON_PENDING)=.*$", "", script)


@pytest.fixture(scope="module")
def calls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, set[str]]]:
    """Per script, the nvidia-smi command lines of a run that takes every path calling nvidia-smi: a
    fresh node whose MIG mode a GPU reset applies (``-r``) and whose driver refuses the placements
    (the fallback ``-cgi``)."""
    observed_path("nvidia-smi-h.txt")
    tmp = tmp_path_factory.mktemp("nodes")
    everything = scripts()
    same = runs_needed(everything)
    found: dict[str, set[str]] = {}
    with standin.served() as port:
        Node.port = port
        for n, (name, (script, model, gpus)) in enumerate(everything.items()):
            if name in same:
                continue
            folder = tmp / str(n)
            folder.mkdir()
            _, log, _ = Node(folder, model, gpus, hold="until-reset", fail=("placement",)).run(script)
            found[name] = {c for c in log if c.startswith("nvidia-smi")}
    yield {**found, **{name: found[twin] for name, twin in same.items()}}


def test_every_script_was_run_and_calls_nvidia_smi_only_as_its_text_says(calls):
    everything = scripts()
    assert len(everything) >= 4 * 7 * 2 + 2  # every named layout of every GPU, both providers, the examples
    for name, (script, _, _) in everything.items():
        assert {site_of_run(c) for c in calls[name]} == set(text_sites(script)), name
    mig = [name for name, (script, _, _) in everything.items() if 'MIG_CREATE=""' not in script]
    assert {site_of_run(c) for name in mig for c in calls[name]} == SITES
    plain = [name for name in everything if name not in mig]
    assert plain and all(calls[name] == set() for name in plain)  # without MIG: no nvidia-smi at all


def test_every_nvidia_smi_command_line_of_every_script_is_one_the_real_tool_accepts(calls):
    lines = sorted({c for found in calls.values() for c in found})
    assert len(lines) > 50  # one -cgi per layout, the GPU indexes of the examples' 8-GPU nodes, ...
    for line in lines:
        try:
            grammar().parse(line.split()[1:])
        except Refused as refused:
            pytest.fail(f"{line}: the real nvidia-smi refuses it: {refused.output}")


def test_the_smoke_guard_lets_through_exactly_the_read_only_command_lines(calls):
    """Read-only by the help's sections (LIST, SELECTIVE QUERY; mig's List commands); the guard
    (scripts/gpu-smoke ``allows``) answers for each line of every script."""
    lines = sorted({c for found in calls.values() for c in found})
    verdicts = classify([line.removeprefix("nvidia-smi ") for line in lines])
    for line, verdict in zip(lines, verdicts, strict=True):
        read_only = grammar().parse(line.split()[1:]).read_only
        assert read_only == (site_of_run(line) in READ_ONLY_SITES), line
        assert verdict == ("allow" if read_only else "refuse"), line
    assert {
        site_of_run(line) for line, v in zip(lines, verdicts, strict=True) if v == "refuse"
    } == SITES - READ_ONLY_SITES


def classify(lines: list[str]) -> list[str]:
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "gpu-smoke"), "classify"],
        input="".join(f"{line}\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.splitlines()


def test_the_smoke_guard_refuses_every_command_that_changes_a_gpu_or_the_host():
    """Every command of the help's DEVICE and UNIT MODIFICATION sections, every mig create or destroy
    command, in each spelling, alone and with a GPU; and read-only commands that write a file (-f) or
    loop (-l). The guard's own list (``MUTATING``, checked by ``run`` before it starts) is among them."""
    g = grammar()
    forms = []
    for section in g.sections:
        if section.name in ("DEVICE MODIFICATION OPTIONS", "UNIT MODIFICATION OPTIONS"):
            for option in section.choose:
                for spelling in (option.short, option.long):
                    if spelling:
                        value = [] if option.value == "none" else ["1"]
                        word = f"{spelling}=1" if spelling.startswith("--") and value else spelling
                        args = [word] if word != spelling else [spelling, *value]
                        forms += [" ".join(args), " ".join(["-i", "0", *args]), " ".join([*args, "--id=0"])]
    for short, command in g.mig_commands.items():
        if not command.description.startswith("List") and short != "-h":
            for spelling in (short, command.option.long):
                value = ["1g.18gb"] if command.option.value == "required" else []
                forms += [f"mig {spelling} {' '.join(value)}".strip(), f"mig -i 0 {spelling} {' '.join(value)}".strip()]
    forms += ["-L -f /tmp/x", "--query-gpu=index --format=csv -f /tmp/x", "--query-gpu=index --format=csv -l 1"]
    assert len(forms) > 150
    for form in forms:
        with contextlib.suppress(Refused):  # refused by the real tool anyway
            assert not g.parse(form.split()).read_only, form
    assert set(classify(forms)) == {"refuse"}
    guard = (ROOT / "scripts" / "gpu-smoke").read_text()
    mutating = re.findall(
        r'"([^"]+)"', guard[guard.index("MUTATING=(") : guard.index(")\n", guard.index("MUTATING=("))]
    )
    assert len(mutating) > 30
    assert set(classify(mutating)) == {"refuse"}
    for form in mutating:
        with contextlib.suppress(Refused):
            assert not g.parse(form.split()).read_only, form
