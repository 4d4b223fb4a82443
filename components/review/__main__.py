"""``python -m components.review``: the same command as ``gpu-eks-review``."""

import sys

from .cli import main

sys.exit(main())
