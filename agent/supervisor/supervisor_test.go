package supervisor

import (
	"log/slog"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/agent/creds"
	"github.com/polecat-sidecar/sidecar/internal/settings/settingstest"
	"github.com/polecat-sidecar/sidecar/tunnel"
)

// TestConfig: New takes zero fields (the Tunnel's too) as the defaults
// and refuses a field out of its range, naming it.
func TestConfig(t *testing.T) {
	valid := func() Config {
		c := DefaultConfig()
		c.Addr, c.ServerName, c.Creds, c.Logger = "localhost:9876", "localhost", new(creds.Store), slog.New(slog.DiscardHandler)
		return c
	}
	settingstest.Run(t, valid, func(c Config) error { _, err := New(c); return err }, []settingstest.Case[Config]{
		{Name: "defaults"},
		{Name: "zero is the default", Set: func(c *Config) { *c = Config{Addr: c.Addr, ServerName: c.ServerName, Creds: c.Creds} }},
		{Name: "one tunnel field given", Set: func(c *Config) { c.Tunnel = tunnel.Config{IdleTimeout: time.Second} }},
		{Name: "TCP only", Set: func(c *Config) { c.Transport = tunnel.TransportTCP }},
		{Name: "no address", Set: func(c *Config) { c.Addr = "" }, Want: "supervisor: Addr is required"},
		{Name: "no server name", Set: func(c *Config) { c.ServerName = "" }, Want: "ServerName is required"},
		{Name: "no credentials", Set: func(c *Config) { c.Creds = nil }, Want: "Creds is required"},
		{Name: "unknown transport", Set: func(c *Config) { c.Transport = "udp" }, Want: `Transport is "udp": it must be auto, quic or tcp`},
		{Name: "tunnel out of range", Set: func(c *Config) { c.Tunnel.IdleTimeout = -time.Second }, Want: "Tunnel: IdleTimeout is -1s: it must be above 0"},
		{Name: "negative min backoff", Set: func(c *Config) { c.MinBackoff = -time.Second }, Want: "MinBackoff is -1s: it must be above 0"},
		{Name: "max backoff below min", Set: func(c *Config) { c.MaxBackoff = c.MinBackoff - 1 }, Want: "MaxBackoff is 99.999999ms: it must be at least 100ms"},
		{Name: "negative connect timeout", Set: func(c *Config) { c.ConnectTimeout = -time.Second }, Want: "ConnectTimeout is -1s: it must be above 0"},
		{Name: "negative probe interval", Set: func(c *Config) { c.ProbeInterval = -time.Second }, Want: "ProbeInterval is -1s: it must be above 0"},
	})
}
