package command

import (
	"context"
	"encoding/json"
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/polecat-sidecar/sidecar/internal/termsafe"
)

// IsTTY reports whether w, or the writer under it if it is an escaping
// one, is a terminal: status's colour, sync's progress and attach only
// then.
func IsTTY(w io.Writer) bool {
	f, ok := termsafe.Raw(w).(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// ShowCmd makes cmd fetch one value and print it, as text or, with its
// flag --json, as JSON.
func ShowCmd[T any](cmd *cobra.Command, fetch func(context.Context) (T, error), text, asJSON func(io.Writer, T) error) *cobra.Command {
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

// EncodeJSON prints v as one line of JSON.
func EncodeJSON[T any](w io.Writer, v T) error { return json.NewEncoder(w).Encode(v) }

// WriteJSON prints v as indented JSON.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
