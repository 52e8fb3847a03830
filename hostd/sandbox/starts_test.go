package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// newStarts is a town with polecats gastown/toast and gastown/nux, and
// its record of failed starts, logging to log.
func newStarts(t *testing.T, log *bytes.Buffer) *Starts {
	t.Helper()
	town := t.TempDir()
	for _, name := range []string{"toast", "nux"} {
		if err := os.MkdirAll(filepath.Join(town, "gastown", "polecats", name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &Starts{Dir: filepath.Join(town, ".runtime", "hostd", "start-failures"), Town: town, Logger: slog.New(slog.NewTextHandler(log, nil))}
}

// TestStartsReadsTodaysRecord: testdata/start-failures holds a record
// written by the release before the records had a type of their own; it is
// read field for field, and a record written now has the same fields.
func TestStartsReadsTodaysRecord(t *testing.T) {
	var log bytes.Buffer
	s := newStarts(t, &log)
	fixture, err := os.ReadFile(filepath.Join("testdata", "start-failures", "gastown", "toast.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(s.Dir, "gastown"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.File(toast), fixture, 0o600); err != nil {
		t.Fatal(err)
	}
	want := api.StartFailure{Identity: api.Identity(toast), At: time.Date(2026, 11, 28, 19, 12, 27, 432622229, time.UTC),
		Reason: "image polecat:1 is not among docker's images: build it with make image, or set sandbox.image"}
	if got, ok := s.Failure(toast); !ok || got != want {
		t.Fatalf("the record of today's format: %+v (%v), want %+v", got, ok, want)
	}
	nux := wire.Identity{Rig: "gastown", Name: "nux"}
	if _, err := s.Failed(nux, "hostd is not running"); err != nil {
		t.Fatal(err)
	}
	written, err := os.ReadFile(s.File(nux))
	if err != nil {
		t.Fatal(err)
	}
	var old, now map[string]any
	if err := errors.Join(json.Unmarshal(fixture, &old), json.Unmarshal(written, &now)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(slices.Sorted(maps.Keys(now)), slices.Sorted(maps.Keys(old))) {
		t.Errorf("a record written now:\n%s\nhas other fields than today's:\n%s", written, fixture)
	}
}

// TestStarts: a failed start is recorded (replacing the one before) and
// logged, listed by identity, and gone once a start succeeds or, after
// RolledBackKeep, once Gas Town has removed the polecat's directory; a record that cannot be read still
// shows that the polecat failed; a name that could leave the directory is
// refused.
func TestStarts(t *testing.T) {
	var log bytes.Buffer
	s := newStarts(t, &log)
	nux := wire.Identity{Rig: "gastown", Name: "nux"}
	for _, r := range []string{"first", "hostd is not running"} {
		if _, err := s.Failed(toast, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Failed(nux, "image polecat:1 is not among docker's images"); err != nil {
		t.Fatal(err)
	}
	list := s.Failures()
	if len(list) != 2 || list[0].Identity != api.Identity(nux) || list[1].Identity != api.Identity(toast) || list[1].Reason != "hostd is not running" || list[1].At.IsZero() {
		t.Fatalf("failures: %+v", list)
	}
	if !strings.Contains(log.String(), `msg="hostd run could not start a polecat; hostd status shows it until its next start" polecat=gastown/toast lines_not_logged=0 reason="hostd is not running"`) {
		t.Errorf("the failure was not logged:\n%s", log.String())
	}

	if cleared, err := s.Started(toast); err != nil || !cleared {
		t.Fatalf("started: %v, %v", cleared, err)
	}
	if cleared, err := s.Started(toast); err != nil || cleared {
		t.Fatalf("started again: %v, %v; want nothing cleared", cleared, err)
	}
	if _, ok := s.Failure(toast); ok {
		t.Error("a start that succeeded left the failure")
	}
	if !strings.Contains(log.String(), `msg="hostd run started a polecat that had failed to start" polecat=gastown/toast`) {
		t.Errorf("the start was not logged:\n%s", log.String())
	}

	if err := os.WriteFile(s.File(nux), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if rec, ok := s.Failure(nux); !ok || !strings.HasPrefix(rec.Reason, "the record of its failed start is unreadable") {
		t.Errorf("unreadable record: %+v, %v", rec, ok)
	}

	if err := os.RemoveAll(filepath.Join(s.Town, "gastown", "polecats", "nux")); err != nil {
		t.Fatal(err)
	}
	if list := s.Failures(); len(list) != 1 || list[0].Identity != api.Identity(nux) {
		t.Errorf("failures of a polecat gt sling rolled back a moment ago: %+v, want its failure kept", list)
	}
	old := time.Now().Add(-RolledBackKeep - time.Minute)
	if err := os.Chtimes(s.File(nux), old, old); err != nil {
		t.Fatal(err)
	}
	if list := s.Failures(); len(list) != 0 {
		t.Errorf("failures of a nuked polecat: %+v", list)
	}
	if _, err := os.Stat(s.File(nux)); !os.IsNotExist(err) {
		t.Errorf("the nuked polecat's record is still there: %v", err)
	}

	for _, id := range []wire.Identity{{Rig: "..", Name: "toast"}, {Rig: "gastown", Name: "../../x"}, {Rig: "gastown", Name: "-x"}} {
		if _, err := s.Failed(id, "x"); err == nil {
			t.Errorf("recorded a failure for %q", id)
		}
		if _, err := s.Started(id); err == nil {
			t.Errorf("cleared a failure for %q", id)
		}
	}
}

// TestStartsBoundReason: a reason quoting the runtime or the container
// (a clone's error) is kept to wire.MaxReasonLen bytes of UTF-8, written
// and read back.
func TestStartsBoundReason(t *testing.T) {
	var log bytes.Buffer
	s := newStarts(t, &log)
	for _, reason := range []string{strings.Repeat("é", wire.MaxReasonLen), "bad \xff\xfe" + strings.Repeat("x", 3*wire.MaxReasonLen), "\x1b]52;c;cHduZWQ=\x07"} {
		rec, err := s.Failed(toast, reason)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := s.Failure(toast)
		if !ok || got.Reason != rec.Reason || got.Reason != wire.TruncateReason(reason) || len(got.Reason) > wire.MaxReasonLen || !utf8.ValidString(got.Reason) {
			t.Errorf("reason %.20q recorded as %.20q (%d bytes), read back as %.20q", reason, rec.Reason, len(rec.Reason), got.Reason)
		}
	}
	if len(log.String()) > 8*wire.MaxReasonLen {
		t.Errorf("the log took %d bytes for three reasons", log.Len())
	}
}

// FuzzStartsReason: whatever reason hostd run reports, the record holds
// at most wire.MaxReasonLen bytes of valid UTF-8, and reads back as
// written.
func FuzzStartsReason(f *testing.F) {
	f.Add("hostd is not running")
	f.Add("bad \xff" + strings.Repeat("é", 600))
	dir := f.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "gastown", "polecats", "toast"), 0o755); err != nil {
		f.Fatal(err)
	}
	s := &Starts{Dir: filepath.Join(dir, "failures"), Town: dir}
	f.Fuzz(func(t *testing.T, reason string) {
		rec, err := s.Failed(toast, reason)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := s.Failure(toast)
		if !ok || got.Reason != rec.Reason || len(got.Reason) > wire.MaxReasonLen || !utf8.ValidString(got.Reason) {
			t.Fatalf("reason %q recorded as %q, read back as %q", reason, rec.Reason, got.Reason)
		}
	})
}
