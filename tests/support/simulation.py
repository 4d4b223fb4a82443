"""The real program under Pulumi mocks (tooling/simulation.py), run once per process and cached:
the stacks, the promise tests' other configurations, the examples; a consumer's own program; and a
stack's settings, parsed as the program parses them. Runs are deterministic, so one serves every test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from components.check.loading import load_stack
from components.check.settings import Settings
from components.config import stackfile
from tests.data.samples import AUTOSCALED, AUTOSCALED_OVERRIDES, DEFAULTS, VARIANT, VARIANT_OVERRIDES
from tests.support.paths import EXAMPLES, ROOT
from tooling.simulation import FakeCloud, Simulation, program_from_file, run_program, run_stack

_SIMULATIONS: dict[str, Simulation] = {}


def simulate(stack: str) -> Simulation:
    """One simulated run per stack per test session (runs are deterministic)."""
    if stack not in _SIMULATIONS:
        _SIMULATIONS[stack] = run_stack(stack, ROOT)
    return _SIMULATIONS[stack]


def simulate_run(name: str) -> Simulation:
    """``simulate(stack)`` for the stacks, the variant configurations for ``VARIANT`` and
    ``AUTOSCALED``, and a stack
    with every ``gpu-eks:*`` key at its default for ``DEFAULTS`` (tests/data/samples.py)."""
    if name not in (VARIANT, AUTOSCALED, DEFAULTS):
        return simulate(name)
    if name not in _SIMULATIONS:
        if name == VARIANT:
            _SIMULATIONS[name] = run_stack("dev", ROOT, config_overrides=VARIANT_OVERRIDES)
        elif name == AUTOSCALED:
            _SIMULATIONS[name] = run_stack("dev", ROOT, config_overrides=AUTOSCALED_OVERRIDES)
        else:
            _SIMULATIONS[name] = run_program(
                program_from_file(ROOT / "__main__.py"),
                stackfile.cli_config({"aws:region": "us-west-2"}),
                project=stackfile.project_name(ROOT),
                stack=DEFAULTS,
            )
    return _SIMULATIONS[name]


_EXAMPLES: dict[str, Simulation] = {}


def example_config(name: str) -> dict[str, Any]:
    """The config of examples/Pulumi.<name>.yaml."""
    return yaml.safe_load((EXAMPLES / f"Pulumi.{name}.yaml").read_text())["config"]


def run_example(name: str, overrides: dict[str, Any] | None = None) -> Simulation:
    """The program run with the config of examples/Pulumi.<name>.yaml, ``overrides`` replacing its keys."""
    return run_program(
        program_from_file(ROOT / "__main__.py"),
        stackfile.cli_config({**example_config(name), **(overrides or {})}),
        project=stackfile.project_name(ROOT),
        stack=name,
    )


def example(name: str) -> Simulation:
    """``run_example(name)``, once per process."""
    if name not in _EXAMPLES:
        _EXAMPLES[name] = run_example(name)
    return _EXAMPLES[name]


def run_consumer_program(program, mocks: FakeCloud | None = None) -> Simulation:
    """A consumer's own program (a function declaring resources) under the mocks, as project
    ``consumer``, stack ``test``."""
    return run_program(program, {}, project="consumer", stack="test", mocks=mocks, timeout=60)


def settings_for_stack(stack: str, root: Path | None = None) -> Settings:
    """Parse and validate a stack's settings exactly as the program would (raises ConfigError)."""
    return load_stack(stack, root)[1]
