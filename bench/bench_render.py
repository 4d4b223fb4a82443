"""Benchmark: how long `render` takes per stack, against the floor of the same harness.

    python bench/bench_render.py                 # in-process, imports warm (the default)
    python bench/bench_render.py --subprocess    # whole CLI processes, cold start included
    python bench/bench_render.py --runs 9

The floor is a bare program of 4 ``aws.s3.Bucket`` run by the same harness
(``simulation.run_program``, first-preview answers): what any mocked Pulumi run costs. Target:
render <= 2x the floor. In-process timing measures the render itself; Python start-up and the
Pulumi imports (~2 s, the same for both) dominate the subprocess figures and hide it.

Each render is also split into the program's simulated run and render's own work (config
validation, the render document, YAML), so a miss can be attributed. Not a test: no assertion.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

FLOOR_RESOURCES = 4


def bucket_program(count: int) -> Callable[[], None]:
    def program() -> None:
        import pulumi_aws as aws

        for i in range(count):
            aws.s3.Bucket(f"bucket-{i}")

    return program


def run_floor(count: int = FLOOR_RESOURCES) -> None:
    from tooling.simulation import FirstPreviewCloud, run_program

    run_program(bucket_program(count), {}, project="bench", stack="bench", preview=True, mocks=FirstPreviewCloud())


def timed(fn: Callable[[], object]) -> float:
    # Collect first: garbage left by the previous run must not be paid for by this one.
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def render_phases(stack: str) -> dict[str, float]:
    """One render, phase by phase, exactly as render.render_stack runs them."""
    from tooling import render

    gc.collect()
    t0 = time.perf_counter()
    config, project, notes = render.stack_config(stack, ROOT)
    t1 = time.perf_counter()
    sim = render.run_first_preview(config, project, stack, ROOT)
    t2 = time.perf_counter()
    document = render.render_document(sim.resources, sim.wire_outputs, stack, project)
    t3 = time.perf_counter()
    render.render_text(document, notes)
    t4 = time.perf_counter()
    return {"config": t1 - t0, "program": t2 - t1, "document": t3 - t2, "yaml": t4 - t3, "total": t4 - t0}


def in_process(stacks: list[str], runs: int) -> None:
    from tooling import render

    # Warm-up: imports, first-use caches (pydantic validators, pulumi type metadata).
    run_floor()
    sizes = {stack: len(render.simulate(stack, ROOT)[0].resources) for stack in stacks}
    for stack in stacks:
        render.render_stack(stack, ROOT)

    # Interleaved, so that a noisy moment of the machine hits every measurement alike.
    floors: list[float] = []
    same_size: dict[str, list[float]] = {s: [] for s in stacks}
    renders: dict[str, list[float]] = {s: [] for s in stacks}
    phases: dict[str, list[dict[str, float]]] = {s: [] for s in stacks}
    for _ in range(runs):
        floors.append(timed(run_floor))
        for stack in stacks:
            renders[stack].append(timed(lambda s=stack: render.render_stack(s, ROOT)))
            same_size[stack].append(timed(lambda n=sizes[stack]: run_floor(n)))
            phases[stack].append(render_phases(stack))

    floor = statistics.median(floors)
    print(f"mode: in-process (imports warm), median of {runs} runs")
    print(f"floor: bare program of {FLOOR_RESOURCES} buckets, same harness: {floor * 1000:6.1f} ms")
    for stack in stacks:
        total = statistics.median(renders[stack])
        bare = statistics.median(same_size[stack])
        part = {k: statistics.median(p[k] for p in phases[stack]) for k in phases[stack][0]}
        print(
            f"render {stack} ({sizes[stack]} resources): {total * 1000:6.1f} ms = {total / floor:.1f}x the floor; "
            f"a bare program of {sizes[stack]} buckets: {bare * 1000:.1f} ms (render = {total / bare:.2f}x that)"
        )
        print(
            f"    phases: config read + validation {part['config'] * 1000:.1f} ms, program run "
            f"{part['program'] * 1000:.1f} ms, render document {part['document'] * 1000:.1f} ms, "
            f"YAML {part['yaml'] * 1000:.1f} ms"
        )


def as_subprocesses(stacks: list[str], runs: int) -> None:
    def cli(*args: str) -> Callable[[], object]:
        return lambda: subprocess.run([sys.executable, *args], cwd=ROOT, check=True, capture_output=True)

    floor_cli = cli(str(Path(__file__).resolve()), "--floor-once")
    floors: list[float] = []
    renders: dict[str, list[float]] = {s: [] for s in stacks}
    for _ in range(runs):
        floors.append(timed(floor_cli))
        for stack in stacks:
            renders[stack].append(timed(cli("-m", "tooling", "render", "--stack", stack)))
    floor = statistics.median(floors)
    print(f"mode: subprocesses (cold start: Python and the Pulumi imports included), median of {runs} runs")
    print(f"floor: bare program of {FLOOR_RESOURCES} buckets, same harness: {floor * 1000:6.1f} ms")
    for stack in stacks:
        total = statistics.median(renders[stack])
        print(f"render {stack}: {total * 1000:6.1f} ms = {total / floor:.2f}x the floor")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per measurement (median; default 5)")
    parser.add_argument("--subprocess", action="store_true", help="time whole CLI processes instead")
    parser.add_argument("--stack", action="append", help="stack(s) to time (default: every stack)")
    parser.add_argument("--floor-once", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.floor_once:
        run_floor()
        return 0
    from components.config import stackfile

    stacks = args.stack or stackfile.available_stacks()
    (as_subprocesses if args.subprocess else in_process)(stacks, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
