"""Names that said less than the code does (issue 43, item 7), kept until 1.0: each old name still
gives what it gave, with a DeprecationWarning on the caller's own line that names the new one.
"""

from __future__ import annotations

import importlib
import warnings

import pytest

import components
from components.verification import component as verification


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
