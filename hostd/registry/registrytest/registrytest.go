// Package registrytest gives hostd's service tests the registry of live
// sessions they are built on: a real registry, empty, its logs discarded.
package registrytest

import (
	"log/slog"
	"testing"

	"github.com/polecat-sidecar/sidecar/hostd/registry"
)

// New is an empty registry with the default Config, logging nowhere.
func New(t testing.TB) *registry.Registry {
	t.Helper()
	reg, err := registry.New(registry.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}
