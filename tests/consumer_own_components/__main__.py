"""The consuming team's Pulumi program: infra.py's resources (the library, ``gpu_eks``) and an
output from the team's own package named ``components`` (components/), side by side."""

import infra
import pulumi
from components.tags import TEAM_TAGS

infra.declare()
pulumi.export("team", TEAM_TAGS["team"])
