"""The settings' patterns are ASCII-only and anchored at both ends, as their consumers' parsers are.

Python's ``\\d`` and ``\\w`` match any Unicode digit or word character and ``$`` matches before a
trailing newline; Go (``time.ParseDuration`` reads ``'0' <= c <= '9'``, the distribution reference
grammar and k8s.io/apimachinery validation use ASCII classes), AWS (IAM account ids ``\\d{12}`` over
ASCII, EKS release versions) and Prometheus (prometheus/common model/time.go) refuse such values.
Each case below is a literal value one of those consumers refuses (issue 17 review, finding 1).
"""

from __future__ import annotations

from typing import Any

import pytest

from components.catalog.labels import kubelet_label_problem, label_value_problem, qualified_name_problem
from components.check.loading import load_settings
from components.config.addons import prometheus_duration_ms
from components.config.errors import ConfigError
from components.config.fields import go_duration_ns

ARABIC_INDIC_TWO = "\u0662"  # ٢, a Unicode digit (category Nd) that Python's \d matches


def problems(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_settings({"clusterName": "c", **raw})
    return [str(p) for p in info.value.problems]


def test_go_durations_take_ascii_digits_only():
    assert go_duration_ns("2m") == 120_000_000_000
    assert go_duration_ns(f"{ARABIC_INDIC_TWO}m") is None
    assert go_duration_ns("5m\n") is None


def test_scale_down_unneeded_time_with_an_arabic_indic_digit_is_refused():
    assert problems({"autoscaler": {"scaleDownUnneededTime": "\u0662m"}}) == [
        'gpu-eks:autoscaler.scaleDownUnneededTime: received "\\u0662m"; expected a Go duration such as 10m, 1h30m or '
        "1.5h (a number and a unit, ns us ms s m h, repeated; Go's time.ParseDuration refuses anything else)"
    ]


@pytest.mark.parametrize("value", ["5m\n", "\u0665m", "1h\n"])
def test_prometheus_durations_refuse_a_trailing_newline_and_unicode_digits(value: str):
    assert prometheus_duration_ms(value) is None


def test_prometheus_durations_still_parse_ascii():
    assert prometheus_duration_ms("5m") == 300_000
    assert prometheus_duration_ms("1h30m") == 5_400_000


def test_an_alert_duration_with_a_trailing_newline_is_refused():
    (line,) = problems({"observability": {"enabled": True, "alerts": {"memoryFor": "5m\n"}}})
    assert line.startswith('gpu-eks:observability.alerts.memoryFor: received "5m\\n"; expected a Prometheus duration')


@pytest.mark.parametrize(
    ("image", "shown"),
    [
        ("nvcr.io/nvidia/cuda:12.5-\u00e9", "nvcr.io/nvidia/cuda:12.5-\\u00e9"),
        ("nvcr.io/nvidia/cuda:\u0661\u0662", "nvcr.io/nvidia/cuda:\\u0661\\u0662"),
    ],
)
def test_image_tags_outside_ascii_word_characters_are_refused(image: str, shown: str):
    # The problem line shows the received value JSON-escaped.
    assert problems({"verification": {"image": image}}) == [
        f'gpu-eks:verification.image: received "{shown}"; expected a container image reference such as '
        "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
    ]


def test_an_image_tag_of_ascii_word_characters_is_accepted():
    image = "nvcr.io/nvidia/cuda:12.5_x-y"
    assert load_settings({"clusterName": "c", "verification": {"image": image}}).verification.image == image


@pytest.mark.parametrize(
    "arn",
    [
        "arn:aws:iam::\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669\u0660\u0661\u0662:role/Admin",
        "arn:aws:iam::123456789012:role/Admin\n",
    ],
)
def test_principal_arns_with_a_unicode_account_id_or_a_newline_are_refused(arn: str):
    (line,) = problems({"adminPrincipalArns": [arn]})
    assert line.startswith("gpu-eks:adminPrincipalArns[0]: received ")
    assert line.endswith("; expected an IAM role or user ARN such as arn:aws:iam::123456789012:role/Admin")


def test_an_assumed_role_arn_with_a_unicode_account_id_is_still_refused():
    arn = "arn:aws:sts::\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669\u0660\u0661\u0662:assumed-role/A/s"
    (line,) = problems({"adminPrincipalArns": [arn]})
    assert line.endswith("; expected an IAM role or user ARN such as arn:aws:iam::123456789012:role/Admin")


@pytest.mark.parametrize("release", ["1.35.0-20260115\n", "1.35.0-2026011\u0665"])
def test_ami_release_versions_with_a_newline_or_unicode_digit_are_refused(release: str):
    (line,) = problems({"gpuNodeGroups": [{"name": "gpu", "amiReleaseVersion": release}]})
    assert line.startswith("gpu-eks:gpuNodeGroups[0].amiReleaseVersion: received ")
    assert line.endswith(
        "; expected an EKS AMI release version such as 1.35.0-20260115 (<kubernetes x.y.z>-<yyyymmdd>)"
    )


@pytest.mark.parametrize("version", ["1.35\n", "1.3\u0665"])
def test_kubernetes_versions_with_a_newline_or_unicode_digit_are_refused(version: str):
    (line,) = problems({"kubernetesVersion": version})
    assert line.startswith("gpu-eks:kubernetesVersion: received ")
    assert "; expected a Kubernetes minor version, one of " in line


def test_a_system_instance_type_with_a_trailing_newline_is_refused():
    (line,) = problems({"systemNodeGroup": {"instanceTypes": ["m6i.large\n"]}})
    assert line.endswith("; expected EC2 instance type names such as m6i.large")


@pytest.mark.parametrize("key", ["team\n", "example.com\n/team", "t\u00e9am"])
def test_label_and_taint_keys_with_a_newline_or_non_ascii_are_refused(key: str):
    assert qualified_name_problem(key) is not None
    assert kubelet_label_problem(key) is not None


@pytest.mark.parametrize("value", ["ml\n", "m\u00e9l", "\u0661"])
def test_label_values_with_a_newline_or_non_ascii_are_refused(value: str):
    assert label_value_problem(value) == (
        "at most 63 characters: alphanumerics, '-', '_' or '.', alphanumeric at both ends"
    )


def test_a_chart_version_outside_ascii_is_refused_even_when_unvalidated_versions_are_allowed():
    (line,) = problems({"gpuOperator": {"chartVersion": "v25.10.1-\u00e9", "allowUnvalidatedChartVersion": True}})
    assert (
        line
        == 'gpu-eks:gpuOperator.chartVersion: received "v25.10.1-\\u00e9"; expected a chart version such as v26.7.0'
    )


# --- Label and taint keys: a '/' needs a prefix before it (k8s.io/apimachinery v0.35.7
# pkg/api/validate/content/kube.go IsLabelKey: "prefix part must be non-empty") --------------------

EMPTY_PREFIX = "a non-empty prefix before '/' (a DNS subdomain such as example.com/team), or no '/' at all"


def test_a_label_key_with_an_empty_prefix_is_refused():
    assert problems({"gpuNodeGroups": [{"name": "gpu", "labels": {"/team": "ml"}}]}) == [
        f'gpu-eks:gpuNodeGroups[0].labels./team: received "/team"; expected {EMPTY_PREFIX}'
    ]


def test_a_taint_key_with_an_empty_prefix_is_refused():
    taint = {"key": "/dedicated", "value": "ml", "effect": "NoSchedule"}
    assert problems({"gpuNodeGroups": [{"name": "gpu", "taints": [taint]}]}) == [
        f'gpu-eks:gpuNodeGroups[0].taints[0].key: received "/dedicated"; expected {EMPTY_PREFIX}'
    ]


def test_label_and_taint_keys_with_a_prefix_or_none_are_accepted():
    taint = {"key": "example.com/dedicated", "value": "ml", "effect": "NoSchedule"}
    s = load_settings(
        {
            "clusterName": "c",
            "gpuNodeGroups": [{"name": "gpu", "labels": {"example.com/team": "ml", "team": "ml"}, "taints": [taint]}],
        }
    )
    assert s.gpu_node_groups[0].labels == {"example.com/team": "ml", "team": "ml"}
    assert [t.key for t in s.gpu_node_groups[0].taints] == ["example.com/dedicated"]
