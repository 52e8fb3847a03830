package confine

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Profile is p as a sandbox-exec profile (Apple's Sandbox Profile
// Language): everything a process does is allowed except reading,
// writing and executing files, which only p's rules allow, each for its
// path and what lies beneath it (a path's symlinks resolved first, as
// macOS matches real paths: /tmp is /private/tmp there). Looking a path up
// stays allowed, as under Landlock. A path with a control character
// cannot be written in the language and is refused.
func Profile(p Policy) (string, error) {
	var b strings.Builder
	b.WriteString("(version 1)\n(allow default)\n")
	b.WriteString("(deny file-read-data file-write* file-ioctl process-exec*)\n")
	for _, r := range p.Sorted() {
		for _, path := range profilePaths(r.Path) {
			q, err := quote(path)
			if err != nil {
				return "", err
			}
			sub := "(subpath " + q + ")"
			if r.Access&List != 0 && r.Access&Read == 0 {
				b.WriteString("(allow file-read-data (literal " + q + "))\n")
			}
			if r.Access&(Read|Device) != 0 {
				b.WriteString("(allow file-read-data " + sub + ")\n")
			}
			if r.Access&(Write|Device) != 0 {
				b.WriteString("(allow file-write* " + sub + ")\n")
			}
			if r.Access&Device != 0 {
				b.WriteString("(allow file-ioctl " + sub + ")\n")
			}
			if r.Access&Exec != 0 {
				b.WriteString("(allow process-exec* " + sub + ")\n")
			}
		}
	}
	return b.String(), nil
}

// quote is s as a profile's string literal: backslash and double quote
// escaped; control characters refused.
func quote(s string) (string, error) {
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", fmt.Errorf("confine: %q has a control character, which a sandbox profile cannot name", s)
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`, nil
}

// profilePaths is path as given and, when it differs, with its symlinks
// resolved: the profile names both, so that a rule holds whichever form
// the kernel matches.
func profilePaths(path string) []string {
	real, err := filepath.EvalSymlinks(path)
	if err != nil || real == path {
		return []string{path}
	}
	return []string{path, real}
}
