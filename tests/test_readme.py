"""The README and the pages of docs/ stay true: every Python program in them runs under the mocks
recipe of docs/testing.md (other Python blocks parse, and what they import exists), every path and
module they name exists, the version range is the one the error lists, the README's table of
contents lists its headings and its index lists every page, and the configuration reference
(docs/configuration.md) covers every key."""

from __future__ import annotations

import ast
import datetime as dt
import importlib
import re
from typing import Any

import pytest
from pydantic import BaseModel

from components import ConfigError, load_settings
from components.check.settings import Settings
from tests.support.paths import ROOT
from tooling.simulation import Simulation, run_program

README = (ROOT / "README.md").read_text()
#: The library's import name, and its folder's in this repository (in which ``gpu_eks`` is
#: ``components``: components/moved.py): both resolve here.
LIBRARY_NAMES = ("gpu_eks", "components")
#: The pages of docs/, by name (those other changes add included).
PAGES = {p.name: p.read_text() for p in sorted((ROOT / "docs").glob("*.md"))}
#: Everything a reader reads: the README, then every page.
DOCS = "\n".join([README, *PAGES.values()])
CONFIGURATION = PAGES["configuration.md"]


def python_blocks(text: str = DOCS) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def prose(text: str = README) -> str:
    """``text`` without its fenced blocks (a ``#`` line in a block is no heading)."""
    return re.sub(r"^```.*?^```$", "", text, flags=re.S | re.M)


# ---------------------------------------------------------------------------------------------
# Python examples, run under the README's gpu_mocks.py (its "Testing your stack under mocks")
# ---------------------------------------------------------------------------------------------

MOCKS_BLOCK = "# gpu_mocks.py"
#: A block that imports pulumi is a program: it runs under the mocks. Others are fragments.
PROGRAM = re.compile(r"^import pulumi$", re.M)
#: What the examples' StackReferences read: the platform team's stack of the GpuCapacity example.
PLATFORM_OUTPUTS = {
    "acme/platform/prod": {
        "clusterName": "platform-prod",
        "privateSubnetIds": ["subnet-0bbbbbbbbbbbbbbb1", "subnet-0bbbbbbbbbbbbbbb2"],
        "kubeconfig": '{"apiVersion": "v1", "kind": "Config", "clusters": []}',
        "nodeRoleArn": "arn:aws:iam::123456789012:role/platform-nodes",
    }
}


def readme_mocks() -> Any:
    """A fresh ``GpuEksMocks`` of the README's recipe, answering the examples' StackReferences."""
    (block,) = [b for b in python_blocks() if b.startswith(MOCKS_BLOCK)]
    namespace: dict[str, Any] = {"__name__": "gpu_mocks"}
    exec(compile(block, "docs/testing.md:gpu_mocks.py", "exec"), namespace)
    return namespace["GpuEksMocks"](stack_outputs=PLATFORM_OUTPUTS)


EXAMPLES = [b for b in python_blocks() if not b.startswith(MOCKS_BLOCK) and PROGRAM.search(b)]
FRAGMENTS = [b for b in python_blocks() if not b.startswith(MOCKS_BLOCK) and not PROGRAM.search(b)]
_RUNS: dict[int, Simulation] = {}


def run_example(index: int) -> Simulation:
    """The README's ``index``-th example program, run once under the README's mocks."""
    if index not in _RUNS:
        example = EXAMPLES[index]
        program = compile(example, f"README.md:example-{index}", "exec")
        # The SDK's runtime is the README mocks' own: GpuEksMocks answers, the recording monitor
        # (like the recipe's NoResourceReferencesMonitor) reports no resource-reference support.
        _RUNS[index] = run_program(
            lambda: exec(program, {}), {}, project="consumer", stack="test", mocks=readme_mocks()
        )
    return _RUNS[index]


def example_index(marker: str) -> int:
    (index,) = [i for i, b in enumerate(EXAMPLES) if marker in b]
    return index


def test_the_docs_have_one_mocks_recipe_and_the_readme_two_examples():
    assert [b.splitlines()[0] for b in python_blocks(PAGES["testing.md"]) if b.startswith(MOCKS_BLOCK)] == [
        "# gpu_mocks.py: Pulumi mocks for a stack that uses the gpu-eks components"
    ]
    assert len([b for b in python_blocks() if b.startswith(MOCKS_BLOCK)]) == 1
    assert len([b for b in python_blocks(README) if PROGRAM.search(b)]) == 2
    assert EXAMPLES[:2] == python_blocks(README)


@pytest.mark.parametrize("index", range(len(FRAGMENTS)))
def test_every_python_fragment_parses_and_its_imports_exist(index: int):
    """Blocks that are no program (a call shown in passing) still parse, and name what exists."""
    tree = ast.parse(FRAGMENTS[index])
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in LIBRARY_NAMES:
            for alias in node.names:
                resolve(f"{node.module}.{alias.name}")


@pytest.mark.parametrize("index", range(len(EXAMPLES)))
def test_every_python_example_runs_under_the_readme_mocks(index: int):
    sim = run_example(index)
    exported = re.findall(r'pulumi\.export\("(\w+)"', EXAMPLES[index])
    assert exported and sorted(sim.outputs) == sorted(exported)
    assert all(sim.outputs[name] for name in exported), sim.outputs
    assert sim.by_type("aws:eks/nodeGroup:NodeGroup")


def test_the_gpu_cluster_example_declares_what_it_says():
    sim = run_example(example_index("GpuCluster("))
    assert sim.one("eks:index:Cluster").inputs["name"] == "ml-platform"
    assert sim.one("aws:eks/nodeGroup:NodeGroup", "ml-t4").inputs["instanceTypes"] == ["g4dn.xlarge"]
    assert sim.outputs["t4NodeSelector"]["gpu-eks.io/gpu-count"] == "1"
    assert sim.outputs["t4Tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    ]


def test_the_gpu_capacity_example_reads_the_platform_stack():
    sim = run_example(example_index("GpuCapacity("))
    ng = sim.one("aws:eks/nodeGroup:NodeGroup", "ml-gpu-t4").inputs
    assert (ng["clusterName"], ng["subnetIds"], ng["nodeRoleArn"]) == (
        "platform-prod",
        ["subnet-0bbbbbbbbbbbbbbb1", "subnet-0bbbbbbbbbbbbbbb2"],
        "arn:aws:iam::123456789012:role/platform-nodes",
    )
    assert sim.by_type("aws:iam/role:Role") == []
    assert sim.one("kubernetes:helm.sh/v3:Release").inputs["version"] == "v26.7.0"
    assert sim.outputs["t4NodeSelector"] == {
        "gpu-eks.io/gpu-count": "1",
        "gpu-eks.io/node-group": "t4",
        "k8s.amazonaws.com/accelerator": "nvidia-tesla-t4",
        "nvidia.com/device-plugin.config": "t4",
    }


# ---------------------------------------------------------------------------------------------
# Module paths: every file path and dotted ``gpu_eks.``/``tooling.`` name resolves
# ---------------------------------------------------------------------------------------------

PATH_PATTERN = r"(?<![\w/.-])(?:components|tooling|tests|docs|stacks|examples|scripts|plugin|bench)/[\w./<>*-]*"


def readme_paths(text: str = DOCS) -> list[str]:
    return sorted({p.rstrip(".") for p in re.findall(PATH_PATTERN, text)})


def test_every_path_the_readme_and_the_docs_name_exists():
    paths = readme_paths()
    assert {"components/catalog/instances.py", "docs/architecture.md", "tests/snapshots/<stack>.yaml"} <= set(paths)
    missing = [p for p in paths if not list(ROOT.glob(re.sub(r"<[^>]+>", "*", p)))]
    assert missing == []


#: A relative Markdown link of a page: ``[text](other.md)``, ``(../README.md#anchor)``.
PAGE_LINK = re.compile(r"\]\((?!https?:|#|mailto:)([^)#\s]+)(?:#[\w-]*)?\)")


#: A link to a heading: ``[text](#anchor)`` on the same page, ``[text](page.md#anchor)`` on another.
ANCHOR_LINK = re.compile(r"\]\(((?!https?:)[^)#\s]*)#([\w-]+)\)")


def anchors(path) -> set[str]:
    return {github_anchor(h) for h in re.findall(r"^#{1,4} (.+)$", prose(path.read_text()), flags=re.M)}


def test_every_relative_link_of_the_docs_pages_resolves():
    """A page's ``[text](path)`` is relative to docs/; the README's to the root; an ``#anchor`` is a
    heading of the page it points at (the README's sections moved to pages: their anchors did not)."""
    missing = [f"README.md: {t}" for t in PAGE_LINK.findall(prose(README)) if not (ROOT / t).exists()]
    for name, text in PAGES.items():
        missing += [f"docs/{name}: {t}" for t in PAGE_LINK.findall(prose(text)) if not (ROOT / "docs" / t).exists()]
    for path in [ROOT / "README.md", *(ROOT / "docs" / name for name in PAGES)]:
        for target, anchor in ANCHOR_LINK.findall(prose(path.read_text())):
            page = (path.parent / target) if target else path
            if page.suffix == ".md" and page.is_file() and anchor not in anchors(page):
                missing.append(f"{path.relative_to(ROOT)}: {target}#{anchor}")
    assert missing == []


def resolve(dotted: str) -> object:
    """The module or attribute ``dotted`` names: the longest importable module prefix, then getattr."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            target = getattr(target, name)
        return target
    raise ModuleNotFoundError(dotted)


def readme_dotted_names() -> list[str]:
    named = re.findall(r"`((?:gpu_eks|components|tooling)(?:\.\w+)+)`", DOCS)
    named += re.findall(r"python -m ((?:gpu_eks|components|tooling)\b[\w.]*)", DOCS)
    return sorted(set(named))


def test_every_dotted_name_the_readme_names_resolves():
    names = readme_dotted_names()
    assert {
        "gpu_eks.plan.userdata.gpu_node_config",
        "gpu_eks.gpu_operator.values.gpu_operator_values",
        "gpu_eks.composites.declare.declare_gpu_capacity",
        "gpu_eks",
        "tooling",
    } <= set(names)
    unresolved = []
    for name in names:
        try:
            resolve(name)
        except (ImportError, AttributeError):
            unresolved.append(name)
    assert unresolved == []


def test_what_a_consumer_copies_names_the_library_gpu_eks():
    """A project's own ``components/`` package would shadow the old name (issue 43): the docs'
    programs and fragments import ``gpu_eks`` and name its functions under it; ``python -m
    components`` stays only where a page runs this repository's checkout (the quick start, CI)."""
    imports = [b for b in python_blocks() if re.search(r"^\s*(?:from|import) components\b", b, re.M)]
    assert imports == []
    assert [n for n in readme_dotted_names() if n.startswith("components.")] == []
    assert "from gpu_eks import GpuCluster, GpuClusterArgs, load_settings" in README


def library_functions() -> set[str]:
    """Every public top-level function defined in components/ (read from the source, not imported)."""
    names = set()
    for path in (ROOT / "components").rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                names.add(node.name)
    return names


def test_a_function_is_named_by_its_full_module_path():
    """``nodeconfig.gpu_node_config`` named a module that had moved: a function of the library
    appears in the README as ``gpu_eks.<module>.<function>``, which the test above resolves."""
    functions = library_functions()
    assert {"gpu_node_config", "asg_tags", "declare_gpu_capacity", "extra_args"} <= functions
    # Configuration keys are no Python names (`verification.namespace` is a key, whatever
    # function is called `namespace`).
    keys = [key.replace("[]", "") for key in config_keys(Settings)]
    assert "verification.namespace" in keys
    short = [
        token
        for token in re.findall(r"`([a-z_]\w*(?:\.\w+)+)`", DOCS)
        if token.rsplit(".", 1)[1] in functions
        and token.split(".")[0] not in LIBRARY_NAMES
        and not any(key == token or key.endswith("." + token) for key in keys)
    ]
    assert short == []


# ---------------------------------------------------------------------------------------------
# The Kubernetes version range, the table of contents, the order of the first sections
# ---------------------------------------------------------------------------------------------


def test_the_version_range_is_the_list_the_error_names(monkeypatch: pytest.MonkeyPatch):
    from components import catalog

    # The suite's date (tests/conftest.py): 1.31 is in extended support until 2026-11-26.
    assert catalog.today() == dt.date(2026, 11, 21)
    m = re.search(
        r"the\s+versions\s+EKS\s+supports\s+today\s+are\s+(1\.\d+)–(1\.\d+),\s+the\s+list\s+an\s+invalid\s+`kubernetesVersion`",
        CONFIGURATION,
    )
    assert m, "docs/configuration.md: the sentence giving the accepted Kubernetes versions"
    first, last = (int(v.split(".")[1]) for v in m.groups())
    with pytest.raises(ConfigError) as err:
        load_settings({"clusterName": "c", "kubernetesVersion": "1.2"})
    listed = re.search(r"one of ((?:1\.\d+, )*1\.\d+)", str(err.value))
    assert listed, str(err.value)
    assert listed.group(1) == ", ".join(f"1.{minor}" for minor in range(first, last + 1))
    assert (first, last) == (31, 36)


def github_anchor(heading: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped but ``-``, spaces as ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def test_the_table_of_contents_lists_every_heading_in_order():
    text = prose()
    headings = re.findall(r"^(#{2,3}) (.+)$", text, flags=re.M)
    assert ("##", "Quick start") in headings and ("##", "Documentation") in headings
    contents = re.search(r"^Contents:\n\n((?:\s*- \[.+\n)+)", text, flags=re.M)
    assert contents, "README: a 'Contents:' list of links"
    entries = re.findall(r"^( *)- \[(.+?)\]\(#([\w-]+)\)$", contents.group(1), flags=re.M)
    assert entries == [("  " * (len(level) - 2), title, github_anchor(title)) for level, title in headings]
    assert "<!-- toc" not in README


def test_the_quick_start_comes_before_the_resource_tree():
    assert README.index("./scripts/run   ") < README.index(' GpuCluster "gpu-eks"  (gpu-eks:index:GpuCluster)')
    sections = re.findall(r"^## (.+)$", prose(), flags=re.M)
    assert sections[:3] == ["Quick start", "What it builds", "Using the components from another stack"]


def test_the_resource_tree_names_every_component_of_the_library():
    """The "What it builds" tree shows the real component tree: every ComponentResource type token the library
    declares (a component added later must be drawn there too)."""
    tokens = set()
    for path in (ROOT / "components").rglob("*.py"):
        tokens |= set(re.findall(r'^TYPE_NAME = "(gpu-eks:[\w:]+)"$', path.read_text(), flags=re.M))
    assert {"gpu-eks:karpenter:Karpenter", "gpu-eks:teams:Teams", "gpu-eks:index:GpuCapacity"} <= tokens
    tree = README.split("## What it builds", 1)[1].split("\n## ", 1)[0]
    assert sorted(t for t in tokens if f"({t}" not in tree) == []


def test_the_readme_is_short_and_every_concept_has_a_page():
    assert len(README.splitlines()) < 500
    assert {
        "sharing.md",
        "teams.md",
        "karpenter.md",
        "cluster-autoscaler.md",
        "cold-start.md",
        "observability.md",
        "review.md",
        "preflight.md",
        "upgrading.md",
        "configuration.md",
    } <= set(PAGES)


def test_the_readme_indexes_every_page_of_docs(tmp_path):
    """The index is generated from docs/*.md: a page another change adds is listed by ``python -m
    tooling docs`` (tests/test_docgen.py fails until it is), under its own title."""
    from tooling import docgen

    listed = re.findall(r"^- \[(.+)\]\(docs/([\w.-]+\.md)\)$", README, flags=re.M)
    assert [page for _, page in listed] == list(PAGES)
    assert ("Teams", "teams.md") in listed
    (tmp_path / "teams.md").write_text("# Teams\n")
    (tmp_path / "node-boot-stage.md").write_text("# The node boot stage\n\nWhat runs before kubelet.\n")
    assert docgen.docs_index(tmp_path) == (
        "- [The node boot stage](docs/node-boot-stage.md)\n- [Teams](docs/teams.md)\n"
    )


def config_keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every leaf config key of ``model`` (``scaling`` and ``taints`` count as leaves)."""
    keys = []
    for name, field in model.model_fields.items():
        alias = field.alias or name
        annotation = field.annotation
        nested = [
            t
            for t in getattr(annotation, "__args__", (annotation,))
            if isinstance(t, type) and issubclass(t, BaseModel) and t.__name__ not in ("Scaling", "Taint")
        ]
        if not nested:
            keys.append(prefix + alias)
        for t in nested:
            sep = "[]." if "tuple" in str(annotation) else "."
            keys += config_keys(t, prefix + alias + sep)
    return keys


def test_configuration_reference_lists_every_key():
    table = {m.group(1) for m in re.finditer(r"^\| `([^`]+)` \|", CONFIGURATION, flags=re.M)}
    keys = set(config_keys(Settings))
    assert {"gpuNodeGroups[].timeSlicing.replicas", "network.vpcId", "systemNodeGroup.diskSizeGiB"} <= keys
    assert keys - table == set(), "document these keys in the configuration reference (docs/configuration.md)"


def test_lazy_exports_match_all():
    import components

    assert sorted(components.__all__) == sorted(components._EXPORTS)
    assert all(getattr(components, name) is not None for name in components.__all__)


def test_the_capacity_key_list_is_every_gpu_capacity_key_in_order():
    from components.check.settings import GpuCapacitySettings

    m = re.search(r"`load_capacity_settings` takes (.+?), with the defaults", README, re.DOTALL)
    assert m, "README: the sentence listing load_capacity_settings' keys"
    listed = re.findall(r"`([A-Za-z]+)`", m.group(1))
    keys = [f.alias or name for name, f in GpuCapacitySettings.model_fields.items()]
    # Not the old name of verification.enabled (config/verification.py OLD_ENABLED_KEY), read until 1.0.
    assert listed == [key for key in keys if key != "verifyTimeSlicing"]
    assert listed[-3:] == ["observability", "teams", "tags"]
