// Command devicedecision asks the NVIDIA container toolkit's own device decision which devices
// each container gets: internal/config/image CUDA.VisibleDevices of
// NVIDIA/nvidia-container-toolkit v1.19.1, built from ../shared/reference (tests/support/tools/toolkit.py copies
// this file to cmd/devicedecision/ of a copy of that tree, so it may import the internal package).
//
// It builds the image as the runtime does in its jit-cdi mode
// (internal/runtime/runtime_factory.go initRuntimeModeAndImage: the OCI spec, the two device-list
// keys of config.toml, and no CDI annotation prefixes outside the cdi mode).
//
// Input (stdin): a JSON list of {"settings": {"<toml key>": bool, ...}, "spec": <OCI runtime spec>}.
// Output (stdout): a JSON list, per input, of the device names VisibleDevices returns ([] for none).
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/NVIDIA/nvidia-container-toolkit/internal/config/image"
)

const (
	envvarWhenUnprivileged = "accept-nvidia-visible-devices-envvar-when-unprivileged"
	volumeMountsAccepted   = "accept-nvidia-visible-devices-as-volume-mounts"
)

type container struct {
	Settings map[string]bool `json:"settings"`
	Spec     *specs.Spec     `json:"spec"`
}

func main() {
	var containers []container
	decoder := json.NewDecoder(os.Stdin)
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(&containers); err != nil {
		fmt.Fprintln(os.Stderr, "devicedecision: reading the input:", err)
		os.Exit(2)
	}
	out := make([][]string, 0, len(containers))
	for i, c := range containers {
		envvar, ok1 := c.Settings[envvarWhenUnprivileged]
		mounts, ok2 := c.Settings[volumeMountsAccepted]
		if !ok1 || !ok2 || len(c.Settings) != 2 {
			fmt.Fprintf(os.Stderr, "devicedecision: container %d: settings must hold exactly the two keys\n", i)
			os.Exit(2)
		}
		cuda, err := image.NewCUDAImageFromSpec(
			c.Spec,
			image.WithAcceptDeviceListAsVolumeMounts(mounts),
			image.WithAcceptEnvvarUnprivileged(envvar),
		)
		if err != nil {
			fmt.Fprintf(os.Stderr, "devicedecision: container %d: %v\n", i, err)
			os.Exit(1)
		}
		devices := cuda.VisibleDevices()
		if devices == nil {
			devices = []string{}
		}
		out = append(out, devices)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "devicedecision: writing the output:", err)
		os.Exit(1)
	}
}
