"""``components``: the old import name of gpu-eks-components, kept until 1.0 (UPGRADING.md).

The wheel installs this folder as the top-level package ``components``, beside the library itself,
``gpu_eks`` (setup.py). Importing it warns once and makes ``components`` and each ``components.x`` the
modules ``gpu_eks`` and ``gpu_eks.x`` themselves (``keep_old_name`` in components/moved.py): ``from
components import GpuCluster`` and ``python -m components preflight`` keep working, with the same
classes. A project's own ``components`` package, earlier on ``sys.path``, wins over this one, and
``gpu_eks`` imports either way. In this repository (where components/ is the library) it does nothing.
"""

from gpu_eks.moved import keep_old_name

keep_old_name(__name__)
