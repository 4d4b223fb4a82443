"""Repository tooling: the offline render engine, snapshots and the render diff.

Not shipped in the wheel (pyproject.toml packages only ``components``): it needs this
repository's checkout (``Pulumi.yaml``, ``stacks/``, ``__main__.py``) and uses private Pulumi SDK
internals (``pulumi.runtime.mocks``, the resource-monitor protocol), which is safe only at the
exact ``pulumi`` version requirements.txt pins. Run it from a checkout: ``python -m tooling``.
"""

from pathlib import Path

#: The checkout this tooling belongs to (the folder holding Pulumi.yaml, stacks/ and tests/).
REPO_ROOT = Path(__file__).resolve().parent.parent
