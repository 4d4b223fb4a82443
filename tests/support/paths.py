"""Where things are: the checkout under test, its stacks, examples and snapshots."""

from __future__ import annotations

from pathlib import Path

from components.config import stackfile

#: The checkout under test (Pulumi.yaml, __main__.py, stacks/, components/, tooling/, tests/).
ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
#: The data the tests share (tests/data: settings samples, promised values, recorded files).
DATA = TESTS / "data"
SNAPSHOTS = TESTS / "snapshots"
#: The example stacks (examples/Pulumi.<name>.yaml), rendered like the real stacks.
EXAMPLES = ROOT / "examples"
STACKS = tuple(stackfile.available_stacks(ROOT))
