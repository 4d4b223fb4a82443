"""Entry point of the gpu-eks component package (PulumiPlugin.yaml): serves components.multilang (package.py).

Pulumi runs this file from the repository it cloned (``pulumi package add <git-url>.git/plugin``);
the library is the ``components`` package one folder up (its folder's name; the wheel installs the
same package as ``gpu_eks``, whose ``multilang`` infers the same schema: tests/test_consumer.py).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from components.multilang import serve

if __name__ == "__main__":
    serve()
