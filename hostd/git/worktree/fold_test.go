package worktree

import "testing"

// TestFoldPath: names a case-insensitive, normalization-insensitive host
// (macOS's HFS+ and APFS) takes for one fold alike; others do not.
func TestFoldPath(t *testing.T) {
	alike := [][2]string{
		{".beads/redirect", ".BEADS/Redirect"},
		{".beads", ".bea\u200cds"},       // zero-width non-joiner, which HFS+ ignores
		{".beads", "\ufeff.beads\u202e"}, // byte order mark, right-to-left override
		{".beads", ".beadſ"},             // long s folds as s
		{".githooks", ".githoo\u212as"},  // Kelvin sign folds as k
		{"hóoks", "ho\u0301oks"},         // NFC and NFD
		{"HÓOKS/x", "ho\u0301oks/X"},
		{"tools/hooks", "Tools/Hooks"},
	}
	for _, c := range alike {
		if a, b := foldPath(c[0]), foldPath(c[1]); a != b {
			t.Errorf("%q folds to %q, %q to %q: want alike", c[0], a, c[1], b)
		}
	}
	unlike := [][2]string{
		{".beads", ".beads2"},
		{".beads", ".bead"},
		{"é", "e"},
		{".beads", ".be\u00b7ads"}, // a middle dot is not ignored
		{"\xff", "\xfe"},           // bytes that are not UTF-8 are kept
	}
	for _, c := range unlike {
		if a, b := foldPath(c[0]), foldPath(c[1]); a == b {
			t.Errorf("%q and %q both fold to %q", c[0], c[1], a)
		}
	}
	if got := foldPath("a\xffB"); got != "a\xffb" {
		t.Errorf("a\\xffB folds to %q", got)
	}
}
