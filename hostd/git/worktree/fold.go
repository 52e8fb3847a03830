package worktree

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// foldPath is path as a case-insensitive, normalization-insensitive file
// system (macOS's HFS+ and APFS) sees it: the code points HFS+ ignores
// dropped, decomposed (NFD), each rune folded to one for its whole case
// orbit, bytes that are not UTF-8 kept. Two names that fold alike may be
// one file on the host; two that do not are never one. docs/security.md
// ("Other polecats' branches, and main") says why each step.
func foldPath(path string) string {
	ascii := true
	for i := 0; i < len(path); i++ {
		if path[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(path)
	}
	s := norm.NFD.String(mapRunes(path, func(r rune) rune {
		if hfsIgnored(r) {
			return -1
		}
		return r
	}))
	return norm.NFD.String(mapRunes(s, foldRune))
}

// mapRunes is strings.Map that keeps bytes that are not UTF-8 as they are
// (strings.Map makes each U+FFFD).
func mapRunes(s string, f func(rune) rune) string {
	var b strings.Builder
	b.Grow(len(s))
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteByte(s[0])
		case f(r) >= 0:
			b.WriteRune(f(r))
		}
		s = s[n:]
	}
	return b.String()
}

// foldRune is the lower case of the smallest rune r's case folding orbit
// holds: one rune for every rune that folds alike.
func foldRune(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return unicode.ToLower(least)
}

// hfsIgnored reports whether HFS+ ignores r in a name: zero-width
// joiners, direction marks and embeddings, the deprecated format
// controls, and the byte order mark (git's utf8.c, next_hfs_char).
func hfsIgnored(r rune) bool {
	switch {
	case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
		return true
	}
	return false
}
