package certs

import (
	"log/slog"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/hostd/registry"
	"github.com/polecat-sidecar/sidecar/internal/settings/settingstest"
)

// TestConfig: New takes zero fields as the defaults and refuses a field
// out of its range, naming it.
func TestConfig(t *testing.T) {
	ca, _, err := pki.Init(pki.Dir(t.TempDir()), "")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(registry.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	valid := func() Config {
		c := DefaultConfig()
		c.Logger = slog.New(slog.DiscardHandler)
		return c
	}
	settingstest.Run(t, valid, func(c Config) error { _, err := New(ca, reg, c); return err }, []settingstest.Case[Config]{
		{Name: "defaults"},
		{Name: "zero is the default", Set: func(c *Config) { *c = Config{Logger: c.Logger} }},
		{Name: "negative TTL", Set: func(c *Config) { c.TTL = -time.Hour }, Want: "certs: TTL is -1h0m0s: it must be above 0"},
		{Name: "no renewals", Set: func(c *Config) { c.RenewalsPerHour = -1 }, Want: "RenewalsPerHour is -1: it must be above 0"},
		{Name: "negative watch", Set: func(c *Config) { c.Watch = -time.Second }, Want: "Watch is -1s: it must be above 0"},
	})
}
