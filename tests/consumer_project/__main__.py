"""The consuming team's Pulumi program: the resources of infra.py."""

import infra

infra.declare()
