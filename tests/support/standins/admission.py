"""A ValidatingAdmissionPolicy evaluated as the API server does, with a CEL implementation
(common-expression-language, the cel-rust bindings pinned in requirements-dev.txt).

How the API server runs one (Kubernetes docs, "Validating Admission Policy"; k8s.io/apiserver
pkg/admission/plugin/policy/validating): a request is checked when its operation and resource
match a ``matchConstraints.resourceRules`` entry (``pods/<subresource>`` for a subresource) and
every ``matchConditions`` expression is true; ``variables`` are then bound under ``variables.<name>``
(each evaluated once), ``request`` holds the admission request's attributes (``operation``,
``subResource``...), ``object`` the object as the API server decoded it (quantities in their
canonical string form, optional fields absent, not null); the request is refused when a validation
is false (validationActions Deny), with that validation's message.
"""

from __future__ import annotations

from typing import Any

import cel


def matches(rule: dict[str, Any], operation: str, sub_resource: str) -> bool:
    resource = "pods" + (f"/{sub_resource}" if sub_resource else "")
    return any(
        operation in r["operations"] and resource in r["resources"]
        for r in rule["spec"]["matchConstraints"]["resourceRules"]
    )


def refusals(rule: dict[str, Any], obj: dict[str, Any], operation: str = "CREATE", sub_resource: str = "") -> list[str]:
    """The messages of the validations ``obj`` fails; [] when it is admitted (or not matched)."""
    spec = rule["spec"]
    if not matches(rule, operation, sub_resource):
        return []
    ctx: dict[str, Any] = {"object": obj, "request": {"operation": operation, "subResource": sub_resource}}
    if not all(cel.evaluate(c["expression"], ctx) for c in spec.get("matchConditions", [])):
        return []
    variables: dict[str, Any] = {}
    for v in spec.get("variables", []):
        variables[v["name"]] = cel.evaluate(v["expression"], {**ctx, "variables": variables})
    ctx["variables"] = variables
    out = []
    for v in spec["validations"]:
        result = cel.evaluate(v["expression"], ctx)
        assert isinstance(result, bool), (v["expression"], result)
        if not result:
            out.append(v["message"])
    return out
