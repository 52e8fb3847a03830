package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/polecat-sidecar/sidecar/internal/termsafe"
)

// isTTY reports whether w, or the writer under it if it is an escaping
// one, is a terminal: status's colour, sync's progress and attach only
// then.
func isTTY(w io.Writer) bool {
	f, ok := termsafe.Raw(w).(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// showCmd makes cmd fetch one value and print it, as text or, with its
// flag --json, as JSON.
func showCmd[T any](cmd *cobra.Command, fetch func(context.Context) (T, error), text, asJSON func(io.Writer, T) error) *cobra.Command {
	var wantJSON bool
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		v, err := fetch(cmd.Context())
		if err != nil {
			return err
		}
		if wantJSON {
			return asJSON(cmd.OutOrStdout(), v)
		}
		return text(cmd.OutOrStdout(), v)
	}
	cmd.Flags().BoolVar(&wantJSON, "json", false, "print JSON")
	return cmd
}

// encodeJSON prints v as one line of JSON.
func encodeJSON[T any](w io.Writer, v T) error { return json.NewEncoder(w).Encode(v) }

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// fit truncates s to n characters, marking the cut.
func fit(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "~"
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
