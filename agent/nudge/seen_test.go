package nudge

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestRememberKeepsNewest: past maxRecords the oldest records go, by the
// order they were made, not by their times: after this machine's clock
// stepped back, the newest outcome has the oldest time, and evicting it
// would let a retried nudge be typed again. The order survives a restart.
func TestRememberKeepsNewest(t *testing.T) {
	dir := t.TempDir()
	s, err := New(Config{StateDir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	// maxRecords outcomes made in order (each remember writes them all,
	// so they are put in place and the last one remembered).
	for i := range maxRecords - 1 {
		s.seq++
		s.seen[fmt.Sprintf("n%d", i)] = record{Result: wire.NudgeResult{Outcome: wire.NudgeSubmitted, At: now}, Seq: s.seq}
	}
	s.remember(fmt.Sprintf("n%d", maxRecords-1), wire.NudgeResult{Outcome: wire.NudgeSubmitted, At: now}, false)
	s.remember("stepped", wire.NudgeResult{Outcome: wire.NudgeSubmitted, At: now.Add(-time.Hour)}, false)
	if _, ok := s.lookup("stepped"); !ok {
		t.Fatal("the newest record, made after a clock step back, was evicted")
	}
	if _, ok := s.lookup("n0"); ok {
		t.Error("the first record was kept past maxRecords")
	}
	again, err := New(Config{StateDir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	again.remember("after-restart", wire.NudgeResult{Outcome: wire.NudgeSubmitted, At: now.Add(-2 * time.Hour)}, false)
	for _, id := range []string{"stepped", "after-restart"} {
		if _, ok := again.lookup(id); !ok {
			t.Errorf("%s evicted after a restart", id)
		}
	}
	if _, ok := again.lookup("n1"); ok {
		t.Error("the oldest record before the restart was kept")
	}
}

// TestLoadSeen: the records a previous agent left are read back; records
// that cannot be read are said, and the agent starts without them.
func TestLoadSeen(t *testing.T) {
	for _, c := range []struct {
		name, file string // file: nudges.json's content, "" for none
		wantIDs    int
		wantLog    string // "" for no log line
	}{
		{name: "none yet"},
		{name: "read back", file: `{"n1":{"result":{"outcome":"submitted"},"seq":7}}`, wantIDs: 1},
		{name: "corrupt", file: `{"n1":`, wantLog: "the records of delivered nudges cannot be read"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.file != "" {
				if err := os.WriteFile(filepath.Join(dir, "nudges.json"), []byte(c.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var logs bytes.Buffer
			s, err := New(Config{StateDir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.seen) != c.wantIDs {
				t.Errorf("%d records read back, want %d", len(s.seen), c.wantIDs)
			}
			if c.wantIDs > 0 && s.seq != 7 {
				t.Errorf("seq %d, want the newest record's, 7", s.seq)
			}
			if c.wantLog == "" && logs.Len() > 0 || !strings.Contains(logs.String(), c.wantLog) {
				t.Errorf("logged %q, want %q", logs.String(), c.wantLog)
			}
		})
	}
}
