"""Repository tooling: this repository's render, snapshots and render diff, releases, docs.

Not shipped in the wheel (pyproject.toml packages only ``components``): it needs this
repository's checkout (``Pulumi.yaml``, ``stacks/``, ``__main__.py``). The render engine, the
simulated engine, the render diff and the impact summary are ``components.review`` (shipped, the
consumers' ``gpu-eks-review``); ``render`` and ``diff`` here run them on this repository's stacks,
validated as gpu-eks stacks. Run it from a checkout: ``python -m tooling``.
"""

from pathlib import Path

#: The checkout this tooling belongs to (the folder holding Pulumi.yaml, stacks/ and tests/).
REPO_ROOT = Path(__file__).resolve().parent.parent
