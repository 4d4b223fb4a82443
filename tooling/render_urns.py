"""Moved to ``components.review.urns`` (shipped for the consumers' review command, ``gpu-eks-review``).
This name stays for the repository's tooling and tests, and is the same module object."""

import sys

from components.review import urns

sys.modules[__name__] = urns
