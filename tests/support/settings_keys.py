"""The keys of a stack file, read from the settings models: whether a problem's key names a setting
(tests/test_properties.py holds every refusal to it)."""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from components.config.errors import CONFIG_NAMESPACE


def _fields(model: type[BaseModel]) -> dict[str, Any]:
    return {info.alias or name: info.annotation for name, info in model.model_fields.items()}


def _strip(annotation: Any) -> Any:
    """``X`` of ``Annotated[X, ...]`` and ``X | None``."""
    while True:
        if typing.get_origin(annotation) is typing.Annotated:
            annotation = annotation.__origin__
            continue
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
            annotation = args[0]
            continue
        return annotation


def key_names_a_setting(key: str, model: type[BaseModel], raw: Mapping[str, Any]) -> bool:
    """Whether ``key`` (``gpu-eks:gpuNodeGroups[0].mig.migDevices``) is a path of ``model``'s
    stack-file keys, or ends at a key the input wrote (an unknown key is named as written). Read
    with the models' own field aliases, so dict keys with dots (``nvidia.com/gpu``) are read whole."""
    prefix = f"{CONFIG_NAMESPACE}:"
    if not key.startswith(prefix) or key == prefix:
        return False
    return _path_ok(key[len(prefix) :], model, raw)


def _path_ok(rest: str, annotation: Any, node: Any) -> bool:
    if not rest:
        return True
    annotation = _strip(annotation)
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        # A union of models (a key another branch may add): any of them.
        return any(_path_ok(rest, a, node) for a in typing.get_args(annotation) if a is not type(None))
    m = re.match(r"\[(\d+)\]", rest)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        rest = rest.removeprefix(".")
        aliases = _fields(annotation)
        name = next(
            (a for a in sorted(aliases, key=len, reverse=True) if re.match(rf"{re.escape(a)}(?=$|[.\[])", rest)),
            None,
        )
        if name is None:
            # An unknown key: named as the input wrote it, with nothing below it.
            return isinstance(node, Mapping) and rest in node
        below = node.get(name) if isinstance(node, Mapping) else None
        return _path_ok(rest[len(name) :], aliases[name], below)
    if origin in (list, tuple, set, frozenset) and m:
        index = int(m.group(1))
        below = node[index] if isinstance(node, list) and index < len(node) else None
        return _path_ok(rest[m.end() :], typing.get_args(annotation)[0], below)
    if origin is dict:
        # A dict's key may hold dots (nvidia.com/gpu): the input's keys say where it ends.
        rest = rest.removeprefix(".")
        if not isinstance(node, Mapping):
            return node is None
        value_type = typing.get_args(annotation)[1]
        return any(
            _path_ok(rest[len(k) :], value_type, node[k])
            for k in map(str, node)
            if rest == k or rest.startswith((f"{k}.", f"{k}["))
        )
    return False
