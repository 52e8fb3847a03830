package liveness

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRunAndRecord(t *testing.T) {
	notExec := filepath.Join(t.TempDir(), "not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		argv []string
		want int
	}{
		{[]string{"sh", "-c", "exit 0"}, 0},
		{[]string{"sh", "-c", "exit 42"}, 42},
		{[]string{"sh", "-c", "kill -9 $$"}, 128 + 9},
		{[]string{"/nonexistent/command"}, 127},
		{[]string{"no-such-command-anywhere"}, 127},
		{[]string{notExec}, 126},
	} {
		file := filepath.Join(t.TempDir(), "status")
		if got := RunAndRecord(file, "", c.argv); got != c.want {
			t.Errorf("%v: exit %d, want %d", c.argv, got, c.want)
		}
		if code, ok := readStatus(file); !ok || code != c.want {
			t.Errorf("%v: recorded %d (%v), want %d", c.argv, code, ok, c.want)
		}
	}
	if _, ok := readStatus(filepath.Join(t.TempDir(), "none")); ok {
		t.Error("status read from a missing file")
	}
}
