"""The rules that read the group plans, on their own floor above ``plan/`` (docs/architecture.md):
the settings models whole (``settings``), the rules across groups (``groups``), teams (``teams``)
and the Cluster Autoscaler (``autoscaler``), the warnings, and loading settings (``loading``).
"""
