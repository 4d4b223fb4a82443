"""Names that said less than the code does (issue 43, item 7), kept until 1.0: each old name still
gives what it gave, with a DeprecationWarning on the caller's own line that names the new one.
"""

from __future__ import annotations

import importlib
import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest

import components
from components import ConfigError, Settings, load_capacity_settings, load_settings, multilang
from components.check.warnings import settings_warnings
from components.config.addons import VerificationSettings
from components.verification import component as verification
from tests.support.paths import ROOT
from tooling import render


@pytest.mark.parametrize(
    ("old", "new"),
    [("TimeSlicingVerification", "GpuVerification"), ("TimeSlicingVerificationArgs", "GpuVerificationArgs")],
)
def test_the_verifications_old_class_names_are_the_new_classes_with_a_warning(old: str, new: str):
    for module in (components, verification):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = getattr(module, old)
        assert value is getattr(module, new)
        (warning,) = caught
        assert warning.category is DeprecationWarning
        assert str(warning.message).startswith(f"{old} is {new} now (it verifies every sharing mode, MIG,")
        # On the line that used the old name, so Python's default filters show it in a program (__main__).
        assert warning.filename == __file__


def test_an_old_class_name_imports_from_the_package_and_from_its_module():
    with pytest.warns(
        DeprecationWarning, match=r"^TimeSlicingVerification(Args)? is GpuVerification(Args)? now"
    ) as caught:
        from components import TimeSlicingVerification
        from components.verification.component import TimeSlicingVerificationArgs
    assert TimeSlicingVerification is components.GpuVerification
    assert TimeSlicingVerificationArgs is components.GpuVerificationArgs
    assert {w.filename for w in caught} == {__file__}


def test_the_old_class_names_are_no_exports_and_other_names_still_fail():
    # A star import does not warn, and dir() lists what to use.
    assert "TimeSlicingVerification" not in components.__all__
    assert "TimeSlicingVerification" not in dir(components)
    assert {"GpuVerification", "GpuVerificationArgs"} <= set(components.__all__)
    with pytest.raises(AttributeError, match="has no attribute 'TimeSliced'"):
        _ = verification.TimeSliced
    with pytest.raises(AttributeError, match="has no attribute 'TimeSliced'"):
        _ = importlib.import_module("components").TimeSliced


def test_the_verification_keeps_its_type_token():
    """A type token is part of every URN below it: the class's new name leaves the token as it was
    (the snapshots hold the URNs of the dev stack's verification)."""
    assert verification.TYPE_NAME == "gpu-eks:verification:TimeSlicingVerification"


# --- verifyTimeSlicing: the old name of verification.enabled ----------------------------------


def test_the_old_key_turns_the_verification_on_with_a_warning_naming_the_new_key():
    # As the Pulumi CLI passes a stack file's value: a string.
    old = load_settings({"clusterName": "c", "verifyTimeSlicing": "true"})
    assert old.verification.enabled is True and old.old_verify_time_slicing is True
    assert [str(p) for p in settings_warnings(old)][:1] == [
        "gpu-eks:verifyTimeSlicing: received true; expected its new name, verification.enabled (true): "
        "verifyTimeSlicing is read until 1.0 (UPGRADING.md)"
    ]
    new = load_settings({"clusterName": "c", "verification": {"enabled": True}})
    assert new.verification == old.verification and new.old_verify_time_slicing is None
    assert [p for p in settings_warnings(new) if "verifyTimeSlicing" in p.key] == []
    # GpuCapacity's keys too, beside the verification's other keys.
    capacity = load_capacity_settings(
        {"kubernetesVersion": "1.35", "verifyTimeSlicing": True, "verification": {"teams": False}}
    )
    assert (capacity.verification.enabled, capacity.verification.teams) == (True, False)
    off = load_settings({"clusterName": "c", "verifyTimeSlicing": False})
    assert (off.verification.enabled, off.old_verify_time_slicing) == (False, False)


def test_the_old_key_beside_the_new_one_must_agree():
    both = load_settings({"clusterName": "c", "verifyTimeSlicing": True, "verification": {"enabled": True}})
    assert both.verification.enabled is True
    assert str(settings_warnings(both)[0]).startswith("gpu-eks:verifyTimeSlicing: received true;")
    with pytest.raises(ConfigError) as info:
        load_settings({"clusterName": "c", "verifyTimeSlicing": True, "verification": {"enabled": False}})
    assert [str(p) for p in info.value.problems] == [
        "gpu-eks:verifyTimeSlicing: received true; expected no key beside verification.enabled (false): it is its "
        "old name"
    ]
    # A value that is no bool: one problem, at the key that holds it.
    with pytest.raises(ConfigError) as info:
        load_settings({"clusterName": "c", "verifyTimeSlicing": "maybe"})
    assert [p.key for p in info.value.problems] == ["gpu-eks:verifyTimeSlicing"]


def test_a_stack_on_the_old_key_renders_as_on_the_new_one_with_its_warning(tmp_path: Path):
    """dev's stack file as it was (verifyTimeSlicing: true) against today's: the same resources,
    byte for byte; the render's header says the key's new name."""
    new = render.render_stack("dev", ROOT)
    project = tmp_path / "project"
    (project / "stacks").mkdir(parents=True)
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy2(ROOT / name, project / name)
    stack = (ROOT / "stacks" / "Pulumi.dev.yaml").read_text()
    old_stack = stack.replace("  gpu-eks:verification:\n    enabled: true\n", "  gpu-eks:verifyTimeSlicing: true\n")
    assert old_stack != stack
    (project / "stacks" / "Pulumi.dev.yaml").write_text(old_stack)
    old = render.render_stack("dev", project)
    warning = (
        "# warning: gpu-eks:verifyTimeSlicing: received true; expected its new name, verification.enabled (true): "
        "verifyTimeSlicing is read until 1.0 (UPGRADING.md)\n"
    )
    head, rest = new.split("project: gpu-eks\n", 1)
    assert old == head + warning + "project: gpu-eks\n" + rest


def test_the_old_python_name_of_the_key_warns_and_reads_the_new_one():
    with pytest.warns(DeprecationWarning, match=r"^verify_time_slicing= is the old name of verification.enabled") as w:
        built = Settings(cluster_name="c", verify_time_slicing=True, verification=VerificationSettings(teams=False))
    assert {x.filename for x in w} == {__file__}
    assert (built.verification.enabled, built.verification.teams) == (True, False)
    loaded = load_settings({"clusterName": "c", "verification": {"enabled": True}})
    with pytest.warns(DeprecationWarning, match=r"^verify_time_slicing is the old name of verification.enabled") as w:
        assert loaded.verify_time_slicing is True
    assert {x.filename for x in w} == {__file__}
    # A mapping of config keys has one spelling per key: the Python name is no key there.
    with pytest.raises(ConfigError) as info:
        load_settings({"clusterName": "c", "verify_time_slicing": True})
    assert [p.key for p in info.value.problems] == ["gpu-eks:verify_time_slicing"]


def test_other_languages_keep_the_old_input_marked_deprecated_in_the_schema():
    """The component package's input ``verifyTimeSlicing`` still works; the schema (what every generated
    SDK is built from, the golden file being what the plugin serves) marks it, and it alone, deprecated."""
    settings = multilang.settings_from_inputs({"cluster_name": "ml", "verify_time_slicing": True})  # type: ignore[typeddict-unknown-key]
    assert settings.verification.enabled is True
    schema = json.loads((ROOT / "tests" / "golden" / "schema.json").read_text())

    def deprecated(node: Any, path: str = "") -> list[tuple[str, str]]:
        if isinstance(node, dict):
            found = [(path, node["deprecationMessage"])] if "deprecationMessage" in node else []
            return found + [hit for k, v in node.items() for hit in deprecated(v, f"{path}/{k}")]
        return []

    assert deprecated(schema) == [
        (
            "/resources/gpu-eks:index:GpuCluster/inputProperties/verifyTimeSlicing",
            "Use verification.enabled: verifyTimeSlicing is its old name, read until 1.0.",
        )
    ]
    assert schema["types"]["gpu-eks:index:VerificationSettings"]["properties"]["enabled"]["type"] == "boolean"
