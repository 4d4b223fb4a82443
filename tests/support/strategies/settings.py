"""Hypothesis strategies for stack settings, derived from the settings models and the catalog.

``stack_settings(model)`` walks ``model.model_fields`` (and every model inside them) and draws a
stack-file-shaped mapping: camelCase keys as the stack file spells them (each field's alias),
plain YAML values. Nothing here lists the keys of a model: a field another branch adds is drawn
as soon as its type is one the walker knows:

* ``bool``, ``int`` (bounds from ``Ge``/``Gt``/``Le``/``Lt``: every bound drawn, and its near
  misses ``bound - 1`` / ``bound + 1``), ``float``, ``str``, ``Literal[...]`` and ``Enum`` (every
  choice; a near miss in another case), unions (``X | None``, ``A | B`` of models),
  ``list``/``tuple``/``set`` and ``dict`` (``MinLen``/``MaxLen`` and their near misses; empty and
  duplicate collections), nested models, ``Field(pattern=...)``/``constr`` and ``multiple_of``;
* strings checked by a validator of ``config/fields.py`` draw values from ``VALID`` (documented
  examples and the values at each documented bound) or, as near misses, from ``NEAR_MISS``
  (tests/support/strategies/samples.py);
* a few keys whose valid values are facts of the catalog (``CATALOG``: instance types of one
  family, MIG profiles and layouts, chart and Kubernetes versions, extended resources) draw them
  from the catalog; ``FIXES`` make a drawn mapping keep the rules across its keys most of the time.

A type the walker does not know (a ``datetime``, an unknown constraint, a fixed-length tuple)
raises ``UnsupportedField`` naming the model, the field and the type, never skips it. A string
with a validator the walker does not know draws the field's default, its ``examples`` and
arbitrary text (so a new string key is still exercised; give its ``Field`` ``examples=[...]`` or a
``VALID`` entry so that accepted values are drawn too).

Every value is a good one or, with probability about ``1 / miss`` per key, a near miss: a value
just past a documented bound, a wrong type, an empty or duplicate collection, a missing required
key, an unknown key. ``miss=0`` draws good values only (many such configurations still break a
rule across keys: that is the point).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import annotated_types
from hypothesis import strategies as st
from pydantic import BaseModel
from pydantic.alias_generators import to_snake
from pydantic.fields import FieldInfo
from pydantic.functional_validators import AfterValidator, BeforeValidator, PlainValidator, WrapValidator
from pydantic.types import Strict, StringConstraints
from pydantic_core import PydanticUndefined

from tests.support.strategies.samples import CATALOG, COLLECTION_RULES, FIXES, NEAR_MISS, VALID, UnsupportedField

Strategy = st.SearchStrategy


# ---------------------------------------------------------------------------------------------
# The walker
# ---------------------------------------------------------------------------------------------


@dataclass
class Constraints:
    """What the metadata of a type says (bounds, strictness, validators by name)."""

    ge: float | None = None
    le: float | None = None
    min_len: int | None = None
    max_len: int | None = None
    strict: bool = False
    validators: list[str] = field(default_factory=list)
    pattern: str | None = None
    multiple_of: float | None = None

    def add(self, item: Any, where: str) -> None:
        if isinstance(item, FieldInfo):
            for sub in item.metadata:
                self.add(sub, where)
            return
        if isinstance(item, annotated_types.Ge):
            self.ge = item.ge
        elif isinstance(item, annotated_types.Gt):
            self.ge = item.gt + 1
        elif isinstance(item, annotated_types.Le):
            self.le = item.le
        elif isinstance(item, annotated_types.Lt):
            self.le = item.lt - 1
        elif isinstance(item, annotated_types.MinLen):
            self.min_len = item.min_length
        elif isinstance(item, annotated_types.MaxLen):
            self.max_len = item.max_length
        elif isinstance(item, Strict):
            self.strict = item.strict
        elif isinstance(item, annotated_types.MultipleOf):
            self.multiple_of = item.multiple_of
        elif isinstance(item, StringConstraints) or type(item).__name__ == "_PydanticGeneralMetadata":
            # Field(pattern=..., ...) and constr(...): a regular expression and text lengths.
            known = {"pattern", "min_length", "max_length", "strict", "strip_whitespace", "to_upper", "to_lower"}
            unknown = {k for k, v in vars(item).items() if v is not None and k not in known}
            if unknown:
                raise UnsupportedField(f"{where}: unsupported constraint {item!r} ({', '.join(sorted(unknown))})")
            self.pattern = getattr(item, "pattern", None) or self.pattern
            self.min_len = getattr(item, "min_length", None) or self.min_len
            self.max_len = getattr(item, "max_length", None) or self.max_len
        elif isinstance(item, (AfterValidator, BeforeValidator, WrapValidator, PlainValidator)):
            name = validator_name(item.func)
            low, high = COLLECTION_RULES.get(name, (None, None))
            self.min_len = low if low is not None else self.min_len
            self.max_len = high if high is not None else self.max_len
            self.validators.append(name)
        else:
            raise UnsupportedField(
                f"{where}: unsupported constraint {item!r} (teach tests/support/strategies/settings.py)"
            )


def validator_name(func: Callable[..., Any]) -> str:
    """``_dns_label``; a closure of ``_ec2_id`` as ``_ec2_id(vpc)``."""
    qualname = getattr(func, "__qualname__", repr(func))
    if "<locals>" in qualname:
        outer = qualname.split(".<locals>")[0]
        cells = [c.cell_contents for c in func.__closure__ or () if isinstance(c.cell_contents, str)]
        return f"{outer}({','.join(cells)})"
    return qualname.split(".")[-1]


def _unwrap(annotation: Any, constraints: Constraints, where: str) -> Any:
    while typing.get_origin(annotation) is typing.Annotated:
        for item in annotation.__metadata__:
            constraints.add(item, where)
        annotation = annotation.__origin__
    return annotation


def _mix(good: Strategy[Any], bad: Strategy[Any] | None, miss: int) -> Strategy[Any]:
    """``good``, or with probability 1/``miss`` ``bad``."""
    if not miss or bad is None:
        return good
    return st.integers(0, miss - 1).flatmap(lambda i: bad if _hit(i, miss) else good)


def _hit(i: int, n: int) -> bool:
    """A draw of ``st.integers(0, n - 1)`` that happens with probability about 1/n: the middle value,
    since Hypothesis draws the ends of a range more often than the rest."""
    return i == n // 2


_WRONG_TYPE = {
    bool: st.sampled_from(["true", 1, None]),
    int: st.sampled_from(["4", 4.5, True, None]),
    float: st.sampled_from(["4", None]),
    str: st.sampled_from([5, None, ["x"]]),
}


@dataclass
class Walker:
    miss: int

    def model(self, model: type[BaseModel]) -> Strategy[dict[str, Any]]:
        title = _title(model)
        parts: dict[str, tuple[Strategy[Any], bool]] = {}
        for name, info in model.model_fields.items():
            key = info.alias or name
            where = f"{title}.{name} ({key})"
            value = self.field(model, name, info, where)
            required = info.is_required()
            parts[key] = (value, required)
        unknown = sorted({to_snake(k) for k in parts if to_snake(k) != k} | {"typo"})

        @st.composite
        def draw_model(draw: st.DrawFn) -> dict[str, Any]:
            out: dict[str, Any] = {}
            for key, (value, required) in parts.items():
                include = True if required else draw(st.booleans())
                if required and self.miss and _hit(draw(st.integers(0, self.miss * 4)), self.miss * 4 + 1):
                    include = False  # a required key missing
                if include:
                    out[key] = draw(value)
            fix = FIXES.get(title)
            if fix is not None and (not self.miss or not _hit(draw(st.integers(0, self.miss - 1)), self.miss)):
                fix(draw, out)
            if self.miss and _hit(draw(st.integers(0, self.miss * 4)), self.miss * 4 + 1):
                out[draw(st.sampled_from(unknown))] = draw(st.sampled_from([1, "x", {}]))
            return out

        return _mix(draw_model(), st.sampled_from(["x", [], None, 3]) if self.miss else None, self.miss * 8)

    def field(self, model: type[BaseModel], name: str, info: FieldInfo, where: str) -> Strategy[Any]:
        override = next(
            (
                CATALOG[(_title(cls), name)]
                for cls in model.__mro__
                if isinstance(cls, type) and issubclass(cls, BaseModel) and (_title(cls), name) in CATALOG
            ),
            None,
        )
        if override is not None:
            good, bad = override
            return _mix(good(), bad() if bad else None, self.miss)
        constraints = Constraints()
        for item in info.metadata:
            constraints.add(item, where)
        examples = list(info.examples or [])
        if info.default is not PydanticUndefined and info.default is not None and _plain(info.default):
            examples.append(info.default)
        return self.value(info.annotation, constraints, where, examples)

    def value(self, annotation: Any, constraints: Constraints, where: str, examples: list[Any]) -> Strategy[Any]:
        annotation = _unwrap(annotation, constraints, where)
        origin = typing.get_origin(annotation)
        args = typing.get_args(annotation)
        if origin in (typing.Union, types.UnionType):
            options = [a for a in args if a is not type(None)]
            inner = [self.value(a, _copy(constraints), where, examples) for a in options]
            return st.one_of(*inner, *([st.none()] if type(None) in args else []))
        if origin is typing.Literal:
            good = st.sampled_from(list(args))
            near = [str(a).upper() if str(a).upper() != a else str(a).lower() for a in args] + ["x"]
            return _mix(good, st.sampled_from(near), self.miss)
        if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
            values = [m.value for m in annotation]
            return _mix(st.sampled_from(values), st.just("x"), self.miss)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return self.model(annotation)
        if origin in (list, tuple, set, frozenset):
            if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
                raise UnsupportedField(f"{where}: a fixed-length tuple {annotation!r}")
            return self.sequence(args[0], constraints, where)
        if origin is dict:
            return self.mapping(args[0], args[1], constraints, where)
        if annotation is bool:
            return _mix(st.booleans(), _WRONG_TYPE[bool], self.miss)
        if annotation is int:
            return self.integer(constraints)
        if annotation is float:
            low = constraints.ge if constraints.ge is not None else -1e3
            high = constraints.le if constraints.le is not None else 1e3
            return _mix(st.floats(low, high), _WRONG_TYPE[float], self.miss)
        if annotation is str:
            return self.string(constraints, where, examples)
        raise UnsupportedField(
            f"{where}: unsupported field type {annotation!r} (teach tests/support/strategies/settings.py)"
        )

    def integer(self, c: Constraints) -> Strategy[int]:
        low = int(c.ge) if c.ge is not None else None
        high = int(c.le) if c.le is not None else None
        lo = low if low is not None else -1
        hi = high if high is not None else lo + 64
        bounds = [b for b in (low, high) if b is not None]
        good = st.one_of(st.integers(lo, min(hi, lo + 64)), st.sampled_from(bounds or [lo]))
        if c.multiple_of:
            step = int(c.multiple_of)
            good = st.integers(-(-lo // step), max(hi // step, -(-lo // step))).map(lambda n: n * step)
        near = [b + d for b, d in ((low, -1), (high, 1)) if b is not None]
        bad = st.one_of(st.sampled_from(near), _WRONG_TYPE[int]) if near else _WRONG_TYPE[int]
        return _mix(good, bad, self.miss)

    def string(self, c: Constraints, where: str, examples: list[Any]) -> Strategy[str]:
        known = [v for v in c.validators if v in VALID]
        goods = [VALID[v]() for v in known[-1:]]
        bads = [NEAR_MISS[v]() for v in c.validators if v in NEAR_MISS]
        if c.pattern is not None:
            fits = st.from_regex(c.pattern, fullmatch=True)
            if c.max_len is not None or c.min_len is not None:
                fits = fits.filter(lambda t: (c.min_len or 0) <= len(t) <= (c.max_len or len(t)))
            goods.append(fits)
            bads.append(st.just(""))
        elif c.max_len is not None or c.min_len is not None:
            goods.append(st.text(alphabet="abc-1", min_size=c.min_len or 0, max_size=c.max_len or 12))
        if c.max_len is not None:
            bads.append(st.just("a" * (c.max_len + 1)))
        if c.min_len:
            bads.append(st.just("a" * (c.min_len - 1)))
        if examples:
            goods.append(st.sampled_from(examples))
        if not goods:
            # No validator and no example: any text, short.
            goods.append(st.text(st.characters(codec="ascii", categories=["L", "N", "Pd"]), max_size=12))
        unknown = [v for v in c.validators if v not in VALID and v not in COLLECTION_RULES]
        if unknown:
            # A validated string this module does not know: arbitrary text too (mostly refused).
            bads.append(st.text(max_size=20))
        bads.append(_WRONG_TYPE[str])
        return _mix(st.one_of(*goods), st.one_of(*bads), self.miss)

    def sequence(self, item: Any, c: Constraints, where: str) -> Strategy[list[Any]]:
        element = self.value(item, Constraints(), f"{where}[]", [])
        low = c.min_len or 0
        high = c.max_len if c.max_len is not None and c.max_len <= low + 3 else low + 3
        good = st.lists(element, min_size=low, max_size=high, unique_by=lambda x: json.dumps(x, sort_keys=True))
        near: list[Strategy[Any]] = [
            st.lists(element, min_size=1, max_size=3).map(lambda xs: [*xs, xs[0]]),  # a duplicate
            st.just("x"),
        ]
        if low:
            near.append(st.lists(element, max_size=low - 1))
        if c.max_len is not None and c.max_len <= 64:
            near.append(st.lists(element, min_size=c.max_len + 1, max_size=c.max_len + 1))
        if not low:
            near.append(st.just([]))
        return _mix(good, st.one_of(*near), self.miss)

    def mapping(self, key: Any, value: Any, c: Constraints, where: str) -> Strategy[dict[Any, Any]]:
        # Stack-file keys are text: a wrong-typed key is not a near miss YAML can write here.
        keys = self.value(key, Constraints(), f"{where}{{key}}", []).filter(lambda k: isinstance(k, str))
        values = self.value(value, Constraints(), f"{where}{{value}}", [])
        low = c.min_len or 0
        good = st.dictionaries(keys, values, min_size=low, max_size=low + 3)
        near: list[Strategy[Any]] = [st.just(["x"]), st.just({})]
        if c.max_len is not None:
            big = c.max_len + 1
            near.append(st.just({f"k{i}": "v" for i in range(big)}))
        return _mix(good, st.one_of(*near), self.miss)


def _title(model: type[BaseModel]) -> str:
    return model.model_config.get("title") or model.__name__


def _copy(c: Constraints) -> Constraints:
    return dataclasses.replace(c, validators=list(c.validators))


def _plain(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool))


def stack_settings(model: type[BaseModel], miss: int = 8) -> Strategy[dict[str, Any]]:
    """Stack-file-shaped settings of ``model`` (``Settings`` or ``GpuCapacitySettings``): good
    values, and with ``miss`` > 0 a near miss at about one key in ``miss``."""
    return Walker(miss).model(model).filter(lambda d: isinstance(d, Mapping))


def keys_of(model: type[BaseModel]) -> set[str]:
    """The stack-file keys of ``model`` (aliases)."""
    return {info.alias or name for name, info in model.model_fields.items()}
