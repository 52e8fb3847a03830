// Package render is how hostd's CLI shows what the daemon answers, as
// text for an operator: the status table and a polecat's detail, the data
// channel's status, journal and transfer results, and the small helpers
// they share to fit a column. Every string a polecat influenced is escaped
// here (internal/termsafe) before it reaches a terminal; --json output is
// the CLI's, not this package's.
package render

import (
	"fmt"
	"time"
)

// OrDash is s, or "-" when it is empty.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Fit truncates s to n characters (runes, not bytes), marking the cut.
func Fit(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:max(n-1, 0)]) + "~"
}

// short renders a duration in at most 5 characters: 45s, 12m, 3h, 2d.
func short(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

// bytesShort renders a size in at most 5 characters.
func bytesShort(n uint64) string {
	switch {
	case n >= 10<<30:
		return fmt.Sprintf("%dG", n>>30)
	case n >= 1<<30:
		return fmt.Sprintf("%.1fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%dM", n>>20)
	default:
		return fmt.Sprintf("%dK", n>>10)
	}
}
