"""Moved to ``components.review.values`` (shipped for the consumers' review command, ``gpu-eks-review``).
This name stays for the repository's tooling and tests, and is the same module object."""

import sys

from components.review import values

sys.modules[__name__] = values
