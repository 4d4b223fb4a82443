"""How a configuration problem is reported: one line per problem naming the key, the value received
and what is expected, every problem at once.

Pydantic's own errors are translated here into the library's words (``problems_from``); rules that
find problems below the value they validate raise ``KeyedProblems``.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import json
import sys
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel

#: The Pulumi config namespace of this library (the project name in Pulumi.yaml).
CONFIG_NAMESPACE = "gpu-eks"


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    key: str
    received: Any
    expected: str

    def __str__(self) -> str:
        if self.received is _MISSING:
            return f"{self.key}: received nothing; expected {self.expected}"
        return f"{self.key}: received {_show(self.received)}; expected {self.expected}"


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()


#: How a value not known until deployment (a ``pulumi.Output``) appears in a message: never its
#: ``__str__``, which is Pulumi's "Calling __str__ on an Output[T] is not supported" text.
UNRESOLVED = "<unresolved Output>"


def is_unresolved(value: Any) -> bool:
    """A ``pulumi.Output`` or another awaitable (the non-plain forms of ``pulumi.Input``)."""
    # Without importing pulumi (preflight and the CLI load settings without the Pulumi SDK):
    # if the program never imported it, no value can be an Output.
    pulumi = sys.modules.get("pulumi")
    if pulumi is not None and isinstance(value, pulumi.Output):
        return True
    return inspect.isawaitable(value)


def is_plain(value: Any) -> bool:
    """True when ``value`` (and, for lists, tuples and dicts, everything inside it) is known now.

    Validation rules for values that may come from other resources (``network.vpcId``, subnet
    ids) run on plain values only; an Output is passed through and checked on resolution
    (``resolve_network``).
    """
    if is_unresolved(value):
        return False
    if isinstance(value, (list, tuple)):
        return all(is_plain(v) for v in value)
    if isinstance(value, Mapping):
        return all(is_plain(k) and is_plain(v) for k, v in value.items())
    return True


def _displayable(value: Any) -> Any:
    if is_unresolved(value):
        return UNRESOLVED
    if isinstance(value, (list, tuple)):
        return [_displayable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _displayable(v) for k, v in value.items()}
    return value


def _show(value: Any) -> str:
    value = _displayable(value)
    if value == UNRESOLVED:
        return UNRESOLVED
    try:
        return json.dumps(value, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        return repr(value)


#: One problem below a validated value: (relative key path, value received, what is expected).
KeyedProblem = tuple[tuple[str | int, ...], Any, str]


class KeyedProblems(ValueError):
    """Raised inside a validator to report problems at precise keys *below* the validated value.

    A cross-field rule (a profile collision, a duplicate taint) belongs to one element, not to
    the whole list or config: each entry is (path relative to the validated value, in the stack
    file's spelling, e.g. ``("gpuNodeGroups", 1, "timeSlicing", "profile")``; the value received
    there; what is expected). ``_problems`` expands them into one Problem each.
    """

    def __init__(self, problems: list[KeyedProblem]):
        self.problems = problems
        super().__init__("; ".join(expected for _, _, expected in problems))


#: What a ConfigError is about: the stack configuration (``gpu-eks:<key>`` in a stack file), or
#: settings given in Python (a mapping of the same keys, without the namespace).
STACK_CONFIGURATION = "stack configuration"
SETTINGS = "settings"


class ConfigError(ValueError):
    """The stack configuration (or settings given as a mapping, ``source``) is invalid; ``problems``
    lists every problem found, each keyed as in the stack config (``gpu-eks:...``)."""

    def __init__(self, problems: list[Problem], source: str = STACK_CONFIGURATION):
        self.problems = problems
        self.source = source
        super().__init__(self.report())

    def report(self) -> str:
        """Every problem, keyed as the reader wrote them: a mapping's own keys for ``SETTINGS``."""
        n = len(self.problems)
        lines = [f"invalid {self.source} ({n} problem{'s' if n != 1 else ''}):"]
        prefix = f"{CONFIG_NAMESPACE}:" if self.source == SETTINGS else None
        lines += [
            f"  {Problem(p.key.removeprefix(prefix), p.received, p.expected) if prefix else p}" for p in self.problems
        ]
        return "\n".join(lines)


def settings_error(problems: list[Problem]) -> ConfigError:
    """The ConfigError of settings given in Python as a mapping (``load_settings``). In a Pulumi program
    (the SDK imported) it is also a ``pulumi.RunError``, which Pulumi reports as its message alone,
    not as "an unhandled exception" with the program's traceback (pulumi/errors.py ``RunError``); it
    is still caught as a ConfigError."""
    pulumi = sys.modules.get("pulumi")
    run_error = getattr(pulumi, "RunError", None)
    if run_error is None:
        return ConfigError(problems, SETTINGS)
    return _with_run_error(run_error)(problems, SETTINGS)


@functools.cache
def _with_run_error(run_error: type[Exception]) -> type[ConfigError]:
    return type("SettingsError", (ConfigError, run_error), {"__doc__": ConfigError.__doc__, "__module__": __name__})


def deploy_time_error(err: ConfigError) -> Exception:
    """The exception to raise for ``err`` found while an Output resolves (inside ``apply``).

    Pulumi wraps a ``ValueError`` (ConfigError is one) raised while an input resolves in
    "While processing input: ..." and "While processing resource: ..." lines, once per level
    (pulumi/runtime/rpc.py ``serialize_properties``, pulumi/runtime/resource.py
    ``prepare_resource``, pulumi 3.x), so the library's message ended up four levels down. Those
    wrap only ValueError and AssertionError: a ``pulumi.RunError`` passes through unchanged and,
    by its contract (pulumi/errors.py: "a clean exit rather than the usual verbose unhandled error
    logic which emits the source program text and complete stack trace"), is reported as its
    message alone, so the first line the user sees is ``invalid stack configuration (...)``.
    """
    import pulumi  # only ever called inside a Pulumi program (config/ itself does not need it)

    return pulumi.RunError(err.report())


def describe_problems(problems: Iterable[KeyedProblem]) -> str:
    """Keyed problems as one line each: ``gpuNodeGroups[1].name: expected ...``."""
    return "; ".join(f"{key_of(path, '').lstrip(':')}: {expected}" for path, _, expected in problems)


def key_of(loc: tuple[Any, ...], namespace: str) -> str:
    out = f"{namespace}:" if loc else namespace
    for i, part in enumerate(loc):
        if isinstance(part, int):
            out += f"[{part}]"
        elif part == "[key]":
            continue  # pydantic marks a dict key error as (..., key, "[key]")
        else:
            out += ("" if i == 0 else ".") + str(part)
    return out


def _expected(e: Mapping[str, Any]) -> str:
    """What the user should write, in this library's words, for one pydantic error."""
    kind: str = e["type"]
    ctx: Mapping[str, Any] = e.get("ctx") or {}
    plain = {
        "missing": "a value",
        "extra_forbidden": "no such key (a typo? see the configuration reference, docs/configuration.md)",
        "int_type": "a whole number",
        "int_parsing": "a whole number",
        "int_from_float": "a whole number",
        "bool_type": "true or false",
        "bool_parsing": "true or false",
        "string_type": "a text value",
        "string_unicode": "a text value",
        "list_type": "a list",
        "tuple_type": "a list",
        "set_type": "a list",
        "dict_type": "a map of key: value",
        "mapping_type": "a map of key: value",
        "model_type": "a map of key: value",
        "model_attributes_type": "a map of key: value",
        "dataclass_type": "a map of key: value",
        "none_required": "no value",
    }
    if kind in plain:
        return plain[kind]
    if kind == "value_error":
        return str(e["msg"]).removeprefix("Value error, ")
    if kind == "literal_error":
        return f"one of {ctx.get('expected', '')}"
    bounds = {
        "greater_than_equal": ("a number of at least {}", "ge"),
        "greater_than": ("a number greater than {}", "gt"),
        "less_than_equal": ("a number of at most {}", "le"),
        "less_than": ("a number less than {}", "lt"),
        "too_short": ("at least {} item(s)", "min_length"),
        "too_long": ("at most {} item(s)", "max_length"),
        "string_too_short": ("at least {} character(s)", "min_length"),
        "string_too_long": ("at most {} character(s)", "max_length"),
    }
    if kind in bounds:
        text, field = bounds[kind]
        return text.format(ctx.get(field))
    # Any other pydantic error type: never pass its phrasing on (tests feed every field wrong shapes).
    return "a value of the type documented in the configuration reference (docs/configuration.md)"


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The settings model inside a field's type (``X | None``, ``list[X]``, ``Annotated[X, …]``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def keys_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The camelCase keys a mapping at ``loc`` (a path of keys and list indexes) accepts."""
    current: type[BaseModel] | None = model
    for part in loc:
        if current is None:
            return []
        if isinstance(part, int):
            continue
        fields = {f.alias or name: f for name, f in current.model_fields.items()}
        if part not in fields:
            return []
        current = _model_in(fields[part].annotation)
    return [] if current is None else [f.alias or name for name, f in current.model_fields.items()]


def unknown_key_hint(key: str, known: list[str]) -> str:
    """``did you mean instanceTypes? `` for a typo or a snake_case spelling of a known key, else ''."""
    camel = to_camel(key)
    if camel in known:
        return f"did you mean {camel}? (keys are camelCase) "
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    return f"did you mean {close[0]}? " if close else ""


def problems_from(err: ValidationError, namespace: str, model: type[BaseModel] | None = None) -> list[Problem]:
    """Pydantic's errors as Problems; with ``model``, an unknown key gets the closest key it accepts there."""
    problems = []
    for e in err.errors(include_url=False):
        loc = tuple(p for p in e["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        loc = tuple(p for p in loc if p != "[key]")
        keyed = (e.get("ctx") or {}).get("error")
        if isinstance(keyed, KeyedProblems):
            problems += [Problem(key_of(loc + sub, namespace), got, want) for sub, got, want in keyed.problems]
            continue
        received: Any = e.get("input", _MISSING)
        if e["type"] == "missing":
            received = _MISSING
        expected = _expected(e)
        if e["type"] == "extra_forbidden" and model is not None and loc and isinstance(loc[-1], str):
            hint = unknown_key_hint(loc[-1], keys_at(model, loc[:-1]))
            if hint:
                expected = f"no such key; {hint}(see the configuration reference, docs/configuration.md)"
        problems.append(Problem(key=key_of(loc, namespace), received=received, expected=expected))
    return problems


def nested_problem(problem: Problem, namespace: str, section: str) -> Problem:
    """``gpu-eks:vpcId`` → ``gpu-eks:network.vpcId`` for a problem found validating a section alone."""
    rest = problem.key.removeprefix(namespace).removeprefix(":")
    key = f"{namespace}:{section}" + (f".{rest}" if rest else "")
    return Problem(key=key, received=problem.received, expected=problem.expected)
