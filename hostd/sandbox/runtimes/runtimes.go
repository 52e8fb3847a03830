// Package runtimes picks the runtime hostd's sandboxes are made with from
// its name (sandbox.runtime): docker or podman (sandbox.CLI, a name on
// PATH or a path), or kubernetes (kube, with the settings under
// sandbox.kubernetes). hostd run, hostd nuke, hostd serve's reaper and
// hostd doctor all build theirs with New.
package runtimes

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox/kube"
	"github.com/polecat-sidecar/sidecar/internal/settings"
)

// Config is the runtime's name and the settings of the runtimes that
// have any.
type Config struct {
	// Name is sandbox.runtime: docker, podman (or a path to either's
	// CLI) or kubernetes.
	Name string
	// Kubernetes is sandbox.kubernetes.*, read when Name is kubernetes.
	Kubernetes kube.Config
}

// DefaultConfig is docker, with the kubernetes runtime's defaults.
func DefaultConfig() Config { return Config{Name: "docker", Kubernetes: kube.DefaultConfig()} }

// Settings is the table of c's settings: sandbox.runtime, whose flag is
// flag (run and nuke: runtime; serve: sandbox-runtime), and
// sandbox.kubernetes.*.
func Settings(c *Config, flag string) []settings.Setting {
	return append([]settings.Setting{{Key: "sandbox.runtime", Flag: flag, Usage: "the runtime hostd makes sandboxes with: docker, podman (or a path to either's CLI) or kubernetes (sandbox.kubernetes.*)", Value: &c.Name}},
		kube.Settings(&c.Kubernetes)...)
}

// IsKubernetes says whether name is the kubernetes runtime's.
func IsKubernetes(name string) bool { return name == kube.RuntimeName }

// Validate names the fields out of range as settings.FieldErrors: no
// name, and the kubernetes settings when Name is kubernetes.
func (c Config) Validate() error {
	if err := settings.Required("Name", c.Name); err != nil {
		return err
	}
	switch filepath.Base(c.Name) {
	case "kubectl", "k8s":
		return settings.Invalid("Name", c.Name, errors.New("the Kubernetes runtime is named kubernetes (hostd drives its API, not kubectl)"))
	}
	if IsKubernetes(c.Name) {
		return settings.Under("Kubernetes", c.Kubernetes.Validate())
	}
	return nil
}

// New is the runtime c names.
func New(c Config) (sandbox.Runtime, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("sandbox.runtime %s: %w", c.Name, err)
	}
	if IsKubernetes(c.Name) {
		return kube.New(c.Kubernetes)
	}
	return sandbox.CLI{Bin: c.Name}, nil
}
