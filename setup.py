"""The wheel's packages; everything else is in pyproject.toml.

The folder components/ installs as ``gpu_eks``, the import name no Pulumi project's own
``components/`` folder shadows, and components/compat/ as ``components``, the old name kept until 1.0
(UPGRADING.md, "The import name gpu_eks"). setuptools discovers packages by folder name
(pyproject's ``packages.find`` cannot rename), so the renamed ones are derived here from the folders.
"""

from setuptools import find_packages, setup

# The repository's folder and its old-name shim (components/compat/, the wheel's `components`).
FOLDER, COMPAT = "components", "compat"

setup(
    package_dir={"gpu_eks": FOLDER, "components": f"{FOLDER}/{COMPAT}"},
    packages=[
        "gpu_eks",
        *(f"gpu_eks.{name}" for name in find_packages(FOLDER, exclude=[COMPAT, f"{COMPAT}.*"])),
        "components",
    ],
)
