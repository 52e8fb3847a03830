package main

import (
	"context"
	"encoding/json"
	"io"
	"os"

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
