package nudge

import (
	"fmt"
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
