package runtimes

import (
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/internal/settings/settingstest"
)

// TestConfig: a runtime needs a name, kubernetes its settings in range;
// the kubernetes settings count for that runtime alone.
func TestConfig(t *testing.T) {
	settingstest.Run(t, DefaultConfig, Config.Validate, []settingstest.Case[Config]{
		{Name: "docker"},
		{Name: "podman by its path", Set: func(c *Config) { c.Name = "/usr/bin/podman" }},
		{Name: "kubernetes", Set: func(c *Config) { c.Name = "kubernetes" }},
		{Name: "no name", Set: func(c *Config) { c.Name = "" }, Want: "Name is required"},
		{Name: "kubectl", Set: func(c *Config) { c.Name = "/usr/local/bin/kubectl" }, Want: "the Kubernetes runtime is named kubernetes"},
		{Name: "kubernetes out of range", Set: func(c *Config) { c.Name, c.Kubernetes.PullPolicy = "kubernetes", "Sometimes" }, Want: `Kubernetes.PullPolicy is "Sometimes"`},
		{Name: "docker ignores kubernetes's", Set: func(c *Config) { c.Kubernetes.PullPolicy = "Sometimes" }},
	})
}

// TestNew: docker and podman are their CLI; a name New cannot build is
// an error naming the setting.
func TestNew(t *testing.T) {
	rt, err := New(Config{Name: "podman"})
	if cli, ok := rt.(sandbox.CLI); err != nil || !ok || cli.Bin != "podman" {
		t.Errorf("podman: %T %v, %v", rt, rt, err)
	}
	if _, err := New(Config{Name: "kubectl"}); err == nil || !strings.Contains(err.Error(), "sandbox.runtime kubectl: Name is \"kubectl\"") {
		t.Errorf("kubectl: %v", err)
	}
	if keys := Settings(&Config{}, "runtime"); keys[0].Key != "sandbox.runtime" || keys[0].Flag != "runtime" || !strings.HasPrefix(keys[1].Key, "sandbox.kubernetes.") {
		t.Errorf("settings %+v", keys[:2])
	}
}
