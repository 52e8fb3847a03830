// Package logging sets up the structured logger (log/slog) both binaries
// write to stderr.
package logging

import (
	"fmt"
	"io"
	"log/slog"
)

// New returns a logger writing to w at level ("debug", "info", "warn",
// "error") in format ("text" or "json").
func New(w io.Writer, level, format string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("--log-format %q: want text or json", format)
	}
}

// SetDefault makes New's logger the process's default.
func SetDefault(w io.Writer, level, format string) error {
	l, err := New(w, level, format)
	if err != nil {
		return err
	}
	slog.SetDefault(l)
	return nil
}
