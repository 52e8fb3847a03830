package main

import (
	"slices"
	"testing"
)

// TestSessionEnv: a session gets the variables Gas Town sets (GT_*, BD_*,
// BEADS_*, CLAUDE*, ANTHROPIC_*) and those asked for, never the
// container's own settings (GT_PROXY_*, GT_AGENT_*) nor the host's others.
func TestSessionEnv(t *testing.T) {
	environ := []string{"GT_RIG=gastown", "GT_POLECAT=toast", "GT_AGENT=claude", "GT_PROXY_URL=https://x", "GT_AGENT_JOIN=tok",
		"BD_ACTOR=x", "BEADS_DIR=/b", "CLAUDECODE=", "CLAUDE_CONFIG_DIR=/c", "ANTHROPIC_API_KEY=k", "HOME=/home/op", "PATH=/bin", "MY_TOKEN=t"}
	got := sessionEnv(environ, []string{"MY_TOKEN"})
	want := []string{"MY_TOKEN", "GT_RIG", "GT_POLECAT", "GT_AGENT", "BD_ACTOR", "BEADS_DIR", "CLAUDECODE", "CLAUDE_CONFIG_DIR", "ANTHROPIC_API_KEY"}
	if !slices.Equal(got, want) {
		t.Errorf("sessionEnv = %q, want %q", got, want)
	}
}
