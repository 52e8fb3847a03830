package sandbox

import (
	"slices"
	"testing"
)

// TestCommand: Gas Town's session command runs in the container by its
// name, with Claude's --settings at the rig's copy under the data root;
// nothing after "--" or that is not a host path changes.
func TestCommand(t *testing.T) {
	s := &Service{cfg: Config{DataRoot: "/work"}}
	const rig = "/work/.claude/settings.json"
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"host claude", []string{"/home/op/.claude/local/claude", "--dangerously-skip-permissions"}, []string{"claude", "--dangerously-skip-permissions"}},
		{"on PATH", []string{"claude", "prompt"}, []string{"claude", "prompt"}},
		{"settings", []string{"claude", "--settings", "/home/op/gt/gastown/polecats/.claude/settings.json", "go"}, []string{"claude", "--settings", rig, "go"}},
		{"settings=", []string{"claude", "--settings=/home/op/gt/x.json"}, []string{"claude", "--settings=" + rig}},
		{"relative settings kept", []string{"claude", "--settings", "mine.json"}, []string{"claude", "--settings", "mine.json"}},
		{"settings as the last word", []string{"claude", "--settings"}, []string{"claude", "--settings"}},
		{"after --", []string{"claude", "--", "--settings", "/x"}, []string{"claude", "--", "--settings", "/x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.in)
			if got := s.command(in); !slices.Equal(got, tt.want) {
				t.Errorf("command(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if !slices.Equal(in, tt.in) {
				t.Errorf("the caller's command changed: %q", in)
			}
		})
	}
}
