"""The team's own ``components`` package beside the library, ``gpu_eks``: each name imports its own."""

from __future__ import annotations

import pathlib
import sys

import gpu_eks
from components.tags import TEAM_TAGS
from gpu_eks import Settings, load_settings

import components

HERE = pathlib.Path(__file__).resolve().parent


def test_components_is_the_teams_own_package():
    assert pathlib.Path(components.__file__).resolve() == HERE / "components" / "__init__.py"
    assert sys.modules["components"] is components and not hasattr(components, "GpuCluster")


def test_gpu_eks_is_the_installed_library_and_loads_settings_with_the_teams_tags():
    assert "site" in pathlib.Path(gpu_eks.__file__).parts
    settings = load_settings({"clusterName": "research", "kubernetesVersion": "1.35", "tags": TEAM_TAGS})
    assert isinstance(settings, Settings)
    assert settings.tags == TEAM_TAGS
