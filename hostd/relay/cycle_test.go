package relay

import (
	"bytes"
	"strings"
	"testing"
)

func argv(s string) [][]byte {
	var a [][]byte
	for _, f := range strings.Fields(s) {
		a = append(a, []byte(f))
	}
	return a
}

// TestCycles: only a real gt handoff --cycle asks hostd to respawn the
// polecat's pane; a dry run, help, or --cycle as a flag's value does not.
func TestCycles(t *testing.T) {
	tests := []struct {
		args string
		want bool
	}{
		{"--cycle", true},
		{"--cycle -s context-cycle", true},
		{"-s subject --cycle --reason compaction", true},
		{"--cycle=true", true},
		{"-yc --cycle", true},
		{"", false},
		{"--auto", false},
		{"--cycle=false", false},
		{"--cycle --cycle=false", false},
		{"--cycle -n", false},
		{"--dry-run --cycle", false},
		{"--cycle -yn", false},
		{"--cycle --help", false},
		{"-h --cycle", false},
		{"-s --cycle", false},
		{"--subject --cycle", false},
		{"-m --cycle", false},
		{"--reason --cycle", false},
		{"-ys --cycle", false},
		{"-- --cycle", false},
		{"--cycle -- -n", true},
		{"gt-abc --cycle", true},
	}
	for _, tt := range tests {
		if got := cycles(argv(tt.args)); got != tt.want {
			t.Errorf("cycles(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}

// FuzzCycles: any argument list is judged without a panic, and one that
// cycles holds --cycle (or --cycle=true) before any "--".
func FuzzCycles(f *testing.F) {
	for _, s := range []string{"--cycle", "--cycle\x00-n", "-s\x00--cycle", "-yc\x00--cycle"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		args := bytes.Split(b, []byte{0})
		if !cycles(args) {
			return
		}
		for _, a := range args {
			switch string(a) {
			case "--":
				t.Fatalf("cycles(%q) = true without --cycle before --", args)
			case "--cycle", "--cycle=true":
				return
			}
		}
		t.Fatalf("cycles(%q) = true without --cycle", args)
	})
}
