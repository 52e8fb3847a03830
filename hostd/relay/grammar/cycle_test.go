package grammar

import (
	"bytes"
	"strings"
	"testing"
)

// TestCycles: only a real gt handoff --cycle asks hostd to respawn the
// polecat's pane; a dry run, help, or --cycle as a flag's value does not.
func TestCycles(t *testing.T) {
	tests := []struct {
		args string
		want bool
	}{
		{"handoff --cycle", true},
		{"handoff --cycle -s context-cycle", true},
		{"handoff -s subject --cycle --reason compaction", true},
		{"handoff --cycle=true", true},
		{"handoff -yc --cycle", true},
		{"handoff -yc", false}, // -c is --collect
		{"handoff", false},
		{"handoff --auto", false},
		{"handoff --cycle=false", false},
		{"handoff --cycle --cycle=false", false},
		{"handoff --cycle -n", false},
		{"handoff --dry-run --cycle", false},
		{"handoff --cycle -yn", false},
		{"handoff --cycle --help", false},
		{"handoff -h --cycle", false},
		{"handoff -s --cycle", false},
		{"handoff --subject --cycle", false},
		{"handoff -m --cycle", false},
		{"handoff --reason --cycle", false},
		{"handoff -ys --cycle", false},
		{"handoff -- --cycle", false},
		{"handoff --cycle -- -n", true},
		{"handoff gt-abc --cycle", true},
		{"hook --cycle", false},
	}
	for _, tt := range tests {
		line, err := gtGrammar.check(append([]string{"gt"}, strings.Fields(tt.args)...))
		if err != nil && tt.want {
			t.Errorf("gt %s refused: %v", tt.args, err)
			continue
		}
		if got := err == nil && line.Cycles(); got != tt.want {
			t.Errorf("gt %s: cycles %v, want %v", tt.args, got, tt.want)
		}
	}
}

// FuzzCycles: any command line is judged without a panic, and one that
// Cycles holds --cycle (or --cycle=true) before any "--".
func FuzzCycles(f *testing.F) {
	for _, s := range []string{"handoff\x00--cycle", "handoff\x00--cycle\x00-n", "handoff\x00-s\x00--cycle", "handoff\x00-yc\x00--cycle"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		args := []string{"gt"}
		for _, a := range bytes.Split(b, []byte{0}) {
			args = append(args, string(a))
		}
		line, err := gtGrammar.check(args)
		if err != nil || !line.Cycles() {
			return
		}
		for _, a := range args[1:] {
			switch {
			case a == "--":
				t.Fatalf("%q cycles without --cycle before --", args)
			case a == "--cycle", a == "--cycle=true":
				return
			}
		}
		t.Fatalf("%q cycles without --cycle", args)
	})
}
