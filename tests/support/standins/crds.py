"""Validate a custom object against its CRD as the API server does: the OpenAPI schema (with
``jsonschema``) after structural defaulting, then every ``x-kubernetes-validations`` CEL rule,
evaluated by common-expression-language (cel-rust bindings, requirements-dev.txt: the project's one
CEL implementation, which tests/test_teams_policy.py uses too), not read.

The API server evaluates a rule with ``self`` bound to the value at the rule's schema node, after
defaults are applied (k8s.io/apiextensions-apiserver pkg/apiserver/schema/cel/validation.go).
Transition rules (those naming ``oldSelf``) do not run on create and are skipped. Kubernetes adds
the regex library's ``find`` (k8s.io/apiserver pkg/cel/library/regex.go) and cel-go's strings
extension ``split`` (ext/strings.go) to CEL: both are given here with their documented meaning.

``strict`` makes a CRD's schema refuse the fields it does not list, for a consumer that would
silently ignore them (nodeadm reading a NodeConfig).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

import cel
import jsonschema

from tests.support.reference import load_reference_yaml


def strict(schema: dict) -> dict:
    """The CRD schema with additionalProperties: false wherever it lists properties, so a
    misspelt field (which nodeadm would silently ignore) fails validation too."""
    schema = copy.deepcopy(schema)

    def walk(node: dict) -> None:
        if isinstance(node, dict):
            if "properties" in node and "additionalProperties" not in node:
                node["additionalProperties"] = False
            for value in node.values():
                if isinstance(value, dict):
                    walk(value)
                elif isinstance(value, list):
                    for item in value:
                        walk(item)

    walk(schema)
    return schema


def _find(text: str, pattern: str) -> str:
    # regex.go: "returns the first match of the regex in the string, or an empty string".
    m = re.search(pattern, text)
    return m.group(0) if m else ""


def _split(text: str, separator: str) -> list[str]:
    return text.split(separator)


def _evaluate(rule: str, value: Any) -> Any:
    context = cel.Context()
    context.add_function("find", _find)
    context.add_function("split", _split)
    context.add_variable("self", value)
    return cel.evaluate(rule, context)


def crd_schema(*parts: str, version: str) -> Mapping[str, Any]:
    """The openAPIV3Schema of ``version`` of the CRD at reference ``parts``."""
    crd = load_reference_yaml(*parts)
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    return served["schema"]["openAPIV3Schema"]


def _default(value: Any, schema: Mapping[str, Any]) -> Any:
    if isinstance(value, dict):
        for key, sub in schema.get("properties", {}).items():
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
            if key in value:
                value[key] = _default(value[key], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key in value:
                if key not in schema.get("properties", {}):
                    value[key] = _default(value[key], extra)
    elif isinstance(value, list) and "items" in schema:
        return [_default(v, schema["items"]) for v in value]
    return value


def _rule_failures(value: Any, schema: Mapping[str, Any], path: str) -> list[str]:
    failures = []
    for rule in schema.get("x-kubernetes-validations", []):
        if "oldSelf" in rule["rule"]:
            continue
        result = _evaluate(rule["rule"], value)
        if result is not True:
            failures.append(f"{path}: {rule.get('message', rule['rule'])} ({rule['rule']}: {result!r})")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key, sub in props.items():
            if key in value:
                failures += _rule_failures(value[key], sub, f"{path}.{key}")
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key in value:
                if key not in props:
                    failures += _rule_failures(value[key], extra, f"{path}[{key}]")
    elif isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            failures += _rule_failures(v, schema["items"], f"{path}[{i}]")
    return failures


def crd_problems(obj: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """Every schema error, failed CEL rule and pruned field of ``obj`` (after defaulting); [] when
    valid and every field is kept (the API server drops a field the schema does not know, so a
    value sent there is lost without an error)."""
    value = _default(copy.deepcopy(dict(obj)), schema)
    problems = [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
        for e in jsonschema.Draft7Validator(schema).iter_errors(value)
    ]
    pruned = [f"{path[1:]}: unknown to the schema (the API server prunes it)" for path in pruned_fields(value, schema)]
    return problems + _rule_failures(value, schema, "") + pruned


def pruned_fields(value: Any, schema: Mapping[str, Any], path: str = "") -> list[str]:
    """The fields of ``value`` a structural schema does not know: the API server drops them
    (k8s.io/apiextensions-apiserver pkg/apiserver/schema/pruning) unless the schema preserves
    unknown fields there, so a value sent in one is silently lost. The object's apiVersion, kind
    and metadata are the API server's, not the schema's."""
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return []
    out: list[str] = []
    if isinstance(value, dict):
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for key, sub in value.items():
            if not path and key in ("apiVersion", "kind", "metadata"):
                continue  # the object's type and ObjectMeta: not pruned by the CRD's schema
            if key in props:
                out += pruned_fields(sub, props[key], f"{path}.{key}")
            elif isinstance(extra, dict):
                out += pruned_fields(sub, extra, f"{path}[{key}]")
            else:
                out.append(f"{path}.{key}")
    elif isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            out += pruned_fields(item, schema["items"], f"{path}[{i}]")
    return out


def drop_nulls(value: Any, schema: Mapping[str, Any]) -> Any:
    """``value`` without the nulls a structural schema does not allow: the API server prunes a null
    of a field that is not ``nullable`` before defaulting (Kubernetes docs, "Extend the Kubernetes API
    with CustomResourceDefinitions", Defaulting and Nullable)."""
    if isinstance(value, dict):
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties") if isinstance(schema.get("additionalProperties"), dict) else {}
        out = {}
        for key, sub in value.items():
            sub_schema = props.get(key, extra)
            if sub is None and not sub_schema.get("nullable"):
                continue
            out[key] = drop_nulls(sub, sub_schema)
        return out
    if isinstance(value, list) and "items" in schema:
        return [drop_nulls(v, schema["items"]) for v in value]
    return value


KARPENTER = ("karpenter", "1.14.1", "crds")


def karpenter_schema(kind: str) -> Mapping[str, Any]:
    """The schema of a Karpenter 1.14.1 kind: EC2NodeClass, NodePool or NodeOverlay."""
    files = {
        "EC2NodeClass": ("karpenter.k8s.aws_ec2nodeclasses.yaml", "v1"),
        "NodePool": ("karpenter.sh_nodepools.yaml", "v1"),
        "NodeOverlay": ("karpenter.sh_nodeoverlays.yaml", "v1alpha1"),
    }
    file, version = files[kind]
    return crd_schema(*KARPENTER, file, version=version)
