"""Supported charts, said honestly: a stack pinning a gpu-operator chart NVIDIA no longer supports
gets a warning with the source (NVIDIA's GPU Operator "Platform Support" page, "NVIDIA GPU
Operator Life Cycle": 26.7.x Supported, 26.3.x Deprecated, 25.10.x and lower End of Support)."""

from __future__ import annotations

import pytest

from components import load_capacity_settings, load_settings
from components.catalog.gpu_operator import DEFAULT_CHART_VERSION, support_status
from components.check.warnings import settings_warnings

PAGE = "https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/platform-support.html"


def chart_warnings(version: str, allow: bool = False) -> list[str]:
    operator = {"chartVersion": version, **({"allowUnvalidatedChartVersion": True} if allow else {})}
    warnings = settings_warnings(load_settings({"clusterName": "c", "gpuOperator": operator}))
    return [str(w) for w in warnings if w.key == "gpu-eks:gpuOperator.chartVersion"]


@pytest.mark.parametrize(("version", "major"), [("v25.3.1", "25.3"), ("v25.10.1", "25.10")])
def test_a_stack_pinning_a_chart_past_support_is_warned_with_the_source(version: str, major: str):
    assert chart_warnings(version) == [
        f'gpu-eks:gpuOperator.chartVersion: received "{version}"; expected a chart NVIDIA supports: v26.7.x '
        f"(v26.7.0 is the default); NVIDIA's platform-support page ({PAGE}) lists {major}.x as End of Support "
        "(no patch releases any more)"
    ]


def test_the_default_chart_is_supported_and_not_warned():
    assert DEFAULT_CHART_VERSION == "v26.7.0"
    assert chart_warnings("v26.7.0") == []
    assert [w for w in settings_warnings(load_settings({"clusterName": "c"})) if "chartVersion" in w.key] == []


def test_a_deprecated_unvalidated_chart_is_warned_as_deprecated():
    (warning,) = chart_warnings("v26.3.1", allow=True)
    assert "lists 26.3.x as Deprecated (critical bug and CVE fixes only)" in warning


def test_gpu_capacity_on_an_existing_cluster_gets_the_same_warning():
    settings = load_capacity_settings({"kubernetesVersion": "1.34", "gpuOperator": {"chartVersion": "v25.10.1"}})
    keys = [w.key for w in settings_warnings(settings)]
    assert "gpu-eks:gpuOperator.chartVersion" in keys


@pytest.mark.parametrize(
    ("version", "status"),
    [
        ("v26.7.0", "Supported"),
        ("v26.7.4", "Supported"),
        ("v26.3.0", "Deprecated"),
        ("v25.10.1", "End of Support"),
        ("v25.3.1", "End of Support"),
        ("v24.9.2", "End of Support"),  # "25.10.x and lower"
        ("v27.1.0", None),  # newer than the page's table: not judged
        ("v26", None),
    ],
)
def test_the_life_cycle_table(version: str, status: str | None):
    assert support_status(version) == status
