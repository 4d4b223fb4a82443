"""The property tests' own machinery: the strategies draw every key of the models, a key of a known
shape that another branch adds, and name a type they cannot draw; the refusal check can fail."""

from __future__ import annotations

import datetime as dt
import enum
import typing

import pytest
from hypothesis import event, given, settings
from pydantic import Field, StringConstraints

from components.check.settings import GpuCapacitySettings, Settings
from components.config.fields import _Model
from tests.support.settings_keys import key_names_a_setting
from tests.support.strategies.settings import UnsupportedField, Walker, stack_settings


@pytest.mark.parametrize("model", [Settings, GpuCapacitySettings])
def test_the_strategies_draw_every_key_of_the_models(model):
    # Building the strategy walks every field: an unsupported type raises UnsupportedField here.
    Walker(miss=8).model(model)


class _Kind(enum.Enum):
    FAST = "fast"


class _RepairA(_Model):
    mode: typing.Literal["reboot"] = "reboot"


class _RepairB(_Model):
    mode: typing.Literal["replace"] = "replace"
    after_minutes: int = Field(10, ge=5, multiple_of=5)


class _NewKeys(_Model):
    """Keys of the shapes another branch may add: each is drawn, and drawn well formed."""

    efa: bool = False
    placement_group: str | None = Field(None, pattern=r"pg-[0-9]{1,4}")
    reservation_ids: typing.Annotated[
        list[typing.Annotated[str, StringConstraints(pattern=r"cr-[0-9a-f]{17}")]], Field(max_length=3)
    ] = []
    weight: float = Field(1.0, ge=0, le=10)
    repair: _RepairA | _RepairB | None = None
    kind: _Kind = _Kind.FAST
    group: _RepairB = _RepairB()


@settings(max_examples=30)
@given(raw=stack_settings(_NewKeys, miss=0))
def test_new_keys_of_known_shapes_are_drawn_well_formed(raw):
    _NewKeys.model_validate(raw, by_name=False)
    event(f"keys: {len(raw)}")


def test_a_key_of_an_unknown_type_is_named_not_skipped():
    class WithDate(_Model):
        window_start: dt.date

    with pytest.raises(UnsupportedField, match=r"WithDate\.window_start \(windowStart\): unsupported field type"):
        stack_settings(WithDate)


def test_the_key_check_fails_a_problem_that_names_no_key():
    raw = {"gpuNodeGroups": [{"labels": {"example.com/team": "x"}}], "teams": [{"quota": {"nvidia.com/gpu": 1}}]}
    named = ["gpuNodeGroups[0].labels.example.com/team", "teams[0].quota.nvidia.com/gpu", "clusterName"]
    unnamed = ["", "nope", "teams[0].quota.cpu", "gpuNodeGroups[0].name.x", "teams[x]"]
    assert [key_names_a_setting(f"gpu-eks:{k}", Settings, raw) for k in named] == [True, True, True]
    assert [key_names_a_setting(f"gpu-eks:{k}", Settings, raw) for k in unnamed] == [False] * 5
    assert not key_names_a_setting("gpu-eks", Settings, raw)
