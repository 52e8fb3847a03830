package data

import (
	"fmt"
	"testing"
)

func files(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	return out
}

// TestHold: the delete hold adds up what transfers take away of the files
// hostd last confirmed, so many small transfers, files the polecat added
// to swell the count, and files taken away twice do not get round it.
func TestHold(t *testing.T) {
	confirmed := files("results/op", 64)
	tests := []struct {
		name      string
		transfers [][]string // what each transfer takes away
		share     float64
		held      []bool // each transfer held or not
	}{
		{"half at once passes, one more is held", [][]string{confirmed[:32], confirmed[32:33]}, 0.5, []bool{false, true}},
		{"halving in small steps adds up", [][]string{confirmed[:16], confirmed[16:32], confirmed[32:40]}, 0.5, []bool{false, false, true}},
		{"all at once", [][]string{confirmed}, 0.5, []bool{true}},
		{"the polecat's own files do not count", [][]string{files("results/mine", 200)}, 0.5, []bool{false}},
		{"its own files do not swell the count", [][]string{files("results/mine", 64), confirmed[:40]}, 0.5, []bool{false, true}},
		{"a file taken twice counts once", [][]string{confirmed[:30], confirmed[:30], confirmed[30:32]}, 0.5, []bool{false, false, false}},
		{"taking nothing more passes when already over", [][]string{confirmed[:60], nil}, 1, []bool{false, false}},
		{"a share of 1 never holds", [][]string{confirmed}, 1, []bool{false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := hold{Confirmed: confirmed}
			for i, lost := range tc.transfers {
				next := h.after(lost)
				if got := h.over(next, tc.share); got != tc.held[i] {
					t.Fatalf("transfer %d (losing %d, %d lost before): held %v, want %v", i+1, len(lost), len(h.Lost), got, tc.held[i])
				}
				if !tc.held[i] {
					h = next
				}
			}
		})
	}
}
