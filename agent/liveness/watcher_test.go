package liveness

import (
	"context"
	"log/slog"
	"testing"
)

// TestStartDefaults: Start takes zero Config fields from DefaultConfig and
// keeps those given.
func TestStartDefaults(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	tests := []struct {
		name             string
		cfg              Config
		session, workDir string
	}{
		{"zero", Config{Logger: quiet}, DefaultSession, "."},
		{"given", Config{Name: "crew", WorkDir: "/tmp", Logger: quiet}, "crew", "/tmp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := Start(context.Background(), tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if w.cfg.Name != tt.session || w.cfg.WorkDir != tt.workDir || w.log != quiet {
				t.Fatalf("Name %q, WorkDir %q; want %q, %q and the given logger", w.cfg.Name, w.cfg.WorkDir, tt.session, tt.workDir)
			}
		})
	}
}
