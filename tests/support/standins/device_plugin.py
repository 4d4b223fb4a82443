"""The NVIDIA device plugin's reading of its config file (k8s-device-plugin v0.17.2, v0.18.1, v0.20.0,
the plugins of the validated gpu-operator charts): the checks that make it exit, and the fields it
knows (it ignores the others without a word)."""

from __future__ import annotations

import yaml


def plugin_config_problems(text: str) -> list[str]:
    """The checks k8s-device-plugin applies when it loads a config file, as read in
    api/config/v1/config.go (parseConfigFrom), replicas.go (ReplicatedResources /
    ReplicatedResource UnmarshalJSON) and flags.go at v0.17.2, v0.18.1 and v0.20.0 (the
    three are identical in these rules). A problem here makes the plugin and GFD exit."""
    out = []
    config = yaml.safe_load(text)
    if config.get("version", "v1") != "v1":
        out.append("unknown version")
    if config.get("flags", {}).get("migStrategy", "none") not in ("none", "single", "mixed"):
        out.append("unknown MIG strategy")
    for strategy in ("timeSlicing", "mps"):
        rr = config.get("sharing", {}).get(strategy)
        if rr is None:
            continue
        if not rr.get("resources"):
            out.append("no resources specified")
        for r in rr.get("resources") or []:
            if "name" not in r:
                out.append("no resource name specified")
            if "replicas" not in r:
                out.append("no replicas specified")
            elif r["replicas"] < 2:
                out.append("number of replicas must be >= 2")
    return out


#: JSON field names (a subset: those near what we write) of the plugin's config structs (config.go Config, flags.go
#: CommandLineFlags, sharing.go Sharing, replicas.go ReplicatedResources/ReplicatedResource;
#: the same in v0.17.2, v0.18.1, v0.20.0). It decodes with sigs.k8s.io/yaml, which ignores
#: unknown fields: a misspelt key would be silently dropped, so every key we write must be one.
PLUGIN_FIELDS = {
    (): {"version", "flags", "resources", "sharing", "imex"},
    ("flags",): {"migStrategy", "failOnInitError", "mpsRoot", "nvidiaDriverRoot", "plugin", "gfd"},
    ("sharing",): {"timeSlicing", "mps"},
    ("sharing", "timeSlicing"): {"renameByDefault", "failRequestsGreaterThanOne", "resources"},
}

RESOURCE_FIELDS = {"name", "rename", "devices", "replicas"}
