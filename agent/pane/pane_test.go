package pane

import (
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/settings/settingstest"
)

// TestConfig: New takes zero fields as the defaults and refuses a field
// out of its range, naming it.
func TestConfig(t *testing.T) {
	settingstest.Run(t, DefaultConfig, func(c Config) error { _, err := New(c); return err }, []settingstest.Case[Config]{
		{Name: "defaults"},
		{Name: "zero is the default", Set: func(c *Config) { *c = Config{} }},
		{Name: "negative follow", Set: func(c *Config) { c.Follow = -time.Second }, Want: "pane: Follow is -1s: it must be above 0"},
	})
}
