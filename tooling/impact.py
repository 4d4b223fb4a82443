"""Moved to ``components.review.impact`` (shipped for the consumers' review command, ``gpu-eks-review``).
This name stays for the repository's tooling and tests, and is the same package (its modules too)."""

import sys

from components.review import impact
from components.review.impact import rules, summary, words

sys.modules[__name__] = impact
sys.modules.update({f"{__name__}.{m.__name__.rsplit('.', 1)[1]}": m for m in (rules, summary, words)})
