"""Pure functions turning what a program sent the Pulumi engine into readable, stable YAML.

Input values arrive in the engine's wire form (the JSON form of a protobuf Struct, as recorded in
``simulation.Registration.wire_inputs``): secrets are wrapped in a signature object, values not
known until deployment are a sentinel string, and every number is a double. ``display`` turns
that into plain data a reviewer can read:

* secrets become ``SECRET`` ("[secret]"), whatever is inside them (even an unknown);
* unknown values become ``UNKNOWN`` ("(known after apply)");
* whole doubles become ints (``maxSize: 2``, not ``2.0``);
* maps are sorted by key, so the output never depends on dict or protobuf map order;
* strings that encode documents (launch template user data, Helm values that hold YAML, JSON
  policies, a kubeconfig that is not secret) are decoded by the ``EXPANSIONS`` rules into
  ``Decoded`` values, which ``dump`` writes as YAML structures under a tag that says how the
  real value is encoded (``!yaml``, ``!json``, ``!base64-mime``).

Nothing here imports Pulumi: these functions are tested directly on hand-written values.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from ..plan.userdata import parse_mime

#: What a reviewer sees instead of a secret value.
SECRET = "[secret]"
#: What a reviewer sees instead of a value only known after deployment.
UNKNOWN = "(known after apply)"

# The engine's wire-protocol markers (pulumi.runtime.rpc; a test checks they still agree).
SIG_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
ASSET_SIG = "c44067f5952c0a294b673a41bacd8c17"
ARCHIVE_SIG = "0def7320c3a5731c473e5ecbe6d01bc7"
RESOURCE_SIG = "5cf8f73096256a8f31e491e813e4eb8e"
OUTPUT_VALUE_SIG = "d0e6a833031e9bbcd3f4e8bde6ca49a4"
UNKNOWN_SENTINEL = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"

#: libyaml's safe loader when PyYAML has it (same results, several times faster).
_SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

#: A path into a value: map keys (str) and list indexes (int).
Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Decoded:
    """A string input shown decoded; ``tag`` (e.g. ``!yaml``) says how the real value encodes it."""

    tag: str
    value: Any


# ---------------------------------------------------------------------------------------------
# Decoders: a string in, a Decoded out, or None to leave the string as it is
# ---------------------------------------------------------------------------------------------


def decode_yaml(text: str) -> Decoded | None:
    """A YAML document holding a map or a list; None for anything else (plain words, bad YAML)."""
    try:
        docs = [d for d in yaml.load_all(text, Loader=_SAFE_LOADER) if d is not None]
    except yaml.YAMLError:
        return None
    if len(docs) == 1 and isinstance(docs[0], dict | list):
        return Decoded("!yaml", docs[0])
    if len(docs) > 1:
        return Decoded("!yaml-stream", docs)
    return None


def decode_json(text: str) -> Decoded | None:
    """A JSON object or array (IAM policies, kubeconfigs); None for anything else."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return Decoded("!json", value) if isinstance(value, dict | list) else None


def decode_document(text: str) -> Decoded | None:
    """JSON first (it is also YAML, but the tag should say JSON), then YAML."""
    return decode_json(text) or decode_yaml(text)


def decode_user_data(text: str) -> Decoded | None:
    """EC2 user data: base64 of a MIME multipart (nodeadm NodeConfig parts) or of a plain script.

    The ``sha256`` (of the decoded bytes, first 16 hex digits) changes with any byte of the user
    data, including MIME headers the parts do not show, so no change to it can hide in a review.
    """
    try:
        raw = base64.b64decode(text, validate=True)
        decoded = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    digest = hashlib.sha256(raw).hexdigest()[:16]
    if decoded.lstrip().lower().startswith(("content-type: multipart", "mime-version")):
        try:
            parts = parse_mime(decoded)
        except ValueError:
            parts = None
        if parts is not None:
            return Decoded(
                "!base64-mime",
                {
                    "sha256": digest,
                    "parts": [
                        {"contentType": ctype, "content": decode_document(body) or body} for ctype, body in parts
                    ],
                },
            )
    return Decoded("!base64", {"sha256": digest, "content": decode_document(decoded) or decoded})


# ---------------------------------------------------------------------------------------------
# Which strings are decoded
# ---------------------------------------------------------------------------------------------

HELM_RELEASE_TYPES = ("kubernetes:helm.sh/v3:Release", "kubernetes:helm.sh/v4:Chart", "kubernetes:helm.sh/v3:Chart")
IAM_POLICY_TYPES = (
    "aws:iam/policy:Policy",
    "aws:iam/rolePolicy:RolePolicy",
    "aws:iam/userPolicy:UserPolicy",
    "aws:iam/groupPolicy:GroupPolicy",
)


@dataclass(frozen=True)
class Expansion:
    """Decode the string at ``path`` (``"*"`` matches any one key or index) of resources of ``types``
    (None: any type) with ``decode``."""

    types: tuple[str, ...] | None
    path: tuple[str, ...]
    decode: Callable[[str], Decoded | None]

    def matches(self, typ: str, path: Path) -> bool:
        if self.types is not None and typ not in self.types:
            return False
        return len(path) == len(self.path) and all(
            p == "*" or p == str(k) for p, k in zip(self.path, path, strict=True)
        )


EXPANSIONS: tuple[Expansion, ...] = (
    # nodeadm NodeConfig (launch templates) or any other EC2 user data.
    Expansion(None, ("userData",), decode_user_data),
    # k8s-device-plugin configs: Helm values whose strings are YAML documents.
    Expansion(HELM_RELEASE_TYPES, ("values", "devicePlugin", "config", "data", "*"), decode_yaml),
    # A kubeconfig is JSON or YAML; as a secret (as here) it is masked before any decoding.
    Expansion(None, ("kubeconfig",), decode_document),
    Expansion(("aws:iam/role:Role",), ("assumeRolePolicy",), decode_json),
    Expansion(IAM_POLICY_TYPES, ("policy",), decode_json),
)


def expansion_for(typ: str, path: Path, rules: Sequence[Expansion] = EXPANSIONS) -> Expansion | None:
    return next((rule for rule in rules if rule.matches(typ, path)), None)


# ---------------------------------------------------------------------------------------------
# Wire form -> display form
# ---------------------------------------------------------------------------------------------


def display(
    value: Any,
    typ: str = "",
    path: Path = (),
    rules: Sequence[Expansion] = EXPANSIONS,
    urns: Mapping[str, str] | None = None,
) -> Any:
    """The readable form of a wire value at ``path`` of a resource of type ``typ`` (see module doc).

    ``urns`` maps the simulator's URNs to the engine's: a resource passed as an input travels as
    its URN string (resource references are off in simulations), shown as the engine would see it.
    """

    def walk(v: Any, p: Path) -> Any:
        if isinstance(v, dict):
            sig = v.get(SIG_KEY)
            if sig == SECRET_SIG:
                return SECRET
            if sig == OUTPUT_VALUE_SIG:
                # Output values carry their own secret/known flags (sent when the monitor asks for them).
                if v.get("secret"):
                    return SECRET
                return walk(v["value"], p) if "value" in v else UNKNOWN
            if sig in (ASSET_SIG, ARCHIVE_SIG):
                tag = "!asset" if sig == ASSET_SIG else "!archive"
                return Decoded(tag, {k: walk(v[k], (*p, k)) for k in sorted(v) if k != SIG_KEY})
            if sig == RESOURCE_SIG:
                return walk(v.get("urn", UNKNOWN_SENTINEL), p)
            return {k: walk(v[k], (*p, k)) for k in sorted(v)}
        if isinstance(v, list):
            return [walk(x, (*p, i)) for i, x in enumerate(v)]
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, str):
            if v == UNKNOWN_SENTINEL:
                return UNKNOWN
            if urns and v in urns:
                return urns[v]
            rule = expansion_for(typ, p, rules)
            if rule is not None:
                decoded = rule.decode(v)
                if decoded is not None:
                    return decoded
        return v

    return walk(value, path)


# ---------------------------------------------------------------------------------------------
# YAML out and back in
# ---------------------------------------------------------------------------------------------


def _ignore_aliases(self: Any, data: Any) -> bool:
    # An object shown twice (the same tags dict on two resources) must be written twice, not as
    # &id001 / *id001, whose numbering depends on traversal order.
    return True


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


def _represent_dict(dumper: yaml.SafeDumper, data: Mapping[Any, Any]) -> yaml.Node:
    # Insertion order: callers sort what has no meaningful order (display() sorts input maps).
    return dumper.represent_mapping("tag:yaml.org,2002:map", list(data.items()))


def _represent_decoded(dumper: yaml.SafeDumper, data: Decoded) -> yaml.Node:
    if isinstance(data.value, dict):
        return dumper.represent_mapping(data.tag, list(data.value.items()))
    if isinstance(data.value, list):
        return dumper.represent_sequence(data.tag, data.value)
    return dumper.represent_scalar(data.tag, str(data.value))


def make_dumper(base: type[yaml.SafeDumper]) -> type[yaml.SafeDumper]:
    """A dumper on ``base``: block style, no anchors, multi-line strings as literal blocks."""
    dumper = type(f"Render{base.__name__}", (base,), {"ignore_aliases": _ignore_aliases})
    dumper.add_representer(str, _represent_str)
    dumper.add_representer(dict, _represent_dict)
    dumper.add_representer(Decoded, _represent_decoded)
    return dumper


PURE_DUMPER = make_dumper(yaml.SafeDumper)
#: libyaml's emitter writes the same bytes ~6x faster (a test checks both agree on real renders);
#: PyYAML wheels ship it, the pure-Python emitter is the fallback.
DUMPER = make_dumper(yaml.CSafeDumper) if getattr(yaml, "__with_libyaml__", False) else PURE_DUMPER


def dump(data: Any, dumper: type[yaml.SafeDumper] = DUMPER) -> str:
    """``data`` as YAML; lines are never folded, so a diff shows whole values."""
    return yaml.dump(data, Dumper=dumper, sort_keys=False, allow_unicode=True, width=1_000_000)


class _Loader(_SAFE_LOADER):  # type: ignore[misc,valid-type]
    """Reads a render back: a decoded value's tag is dropped, its structure kept."""


def _construct_tagged(loader: yaml.SafeLoader, tag_suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)  # type: ignore[arg-type]


_Loader.add_multi_constructor("!", _construct_tagged)


def load(text: str) -> Any:
    """Parse a render (the output of ``dump``), tags dropped."""
    return yaml.load(text, Loader=_Loader)


def _json_default(value: Any) -> Any:
    if isinstance(value, Decoded):
        # How the real value is encoded, and what it says.
        return {"encoding": value.tag.lstrip("!"), "decoded": value.value}
    return str(value)  # a date or another scalar a decoded YAML document may hold


def dump_json(data: Any) -> str:
    """A render as JSON (``render --format json``): decoded strings as {"encoding", "decoded"}."""
    return json.dumps(data, indent=2, ensure_ascii=False, default=_json_default) + "\n"
