"""Inputs known only at deployment (``pulumi.Output``): checked by the same rules as plain values,
when they resolve, failing the deployment with the library's message as its first line.

Pulumi wraps a ``ValueError`` raised while an input resolves in "While processing input ..."
lines (see ``config.errors.deploy_time_error``); a ``pulumi.RunError`` reaches the user as is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pulumi

from ..config.errors import CONFIG_NAMESPACE, ConfigError, Problem, is_plain
from ..config.fields import tag_value_problem

#: What a late check finds: a message per problem of the resolved value (empty: none).
LateRule = Callable[[Any], list[str]]
#: The error text for a resolved value and what the rule found in it.
LateReport = Callable[[Any, list[str]], str]


def checked_when_resolved(value: Any, rule: LateRule, report: LateReport) -> Any:
    """``value`` itself when plain (its rules ran already); else an Output of it that raises
    ``pulumi.RunError(report(resolved, problems))`` when it resolves to a value ``rule`` refuses."""
    if is_plain(value):
        return value

    def check(resolved: Any) -> Any:
        found = rule(resolved)
        if found:
            raise pulumi.RunError(report(resolved, found))
        return resolved

    return pulumi.Output.from_input(value).apply(check)


def _tag_value_rule(resolved: Any) -> list[str]:
    problem = tag_value_problem(resolved)
    return [problem] if problem else []


def checked_setting_tags(tags: Mapping[str, Any], namespace: str = CONFIG_NAMESPACE) -> dict[str, Any]:
    """The ``tags`` setting with each Output value checked by the tag-value rule when it resolves
    (plain values were checked when the settings loaded); the key is ``<namespace>:tags.<key>``."""

    def report(key: str) -> LateReport:
        return lambda resolved, found: ConfigError(
            [Problem(f"{namespace}:tags.{key}", resolved, problem) for problem in found]
        ).report()

    return {key: checked_when_resolved(value, _tag_value_rule, report(key)) for key, value in tags.items()}
