package merge

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/sync/internal/fixture"
)

// TestApplyHostChangedSincePlan: an edit on the host between the plan
// and Apply (the plan may spend minutes in text merges) is not
// overwritten: nothing is applied, and the next transfer merges it.
func TestApplyHostChangedSincePlan(t *testing.T) {
	s := newSandbox(t)
	base, _, err := s.transfer(t, nil, []fixture.Member{fixture.Dir("results"), fixture.File("results/notes", "base")})
	if err != nil {
		t.Fatal(err)
	}
	ms := []fixture.Member{fixture.Dir("results"), fixture.File("results/notes", "container's"), fixture.File("results/new", "new")}
	in, plan, err := s.receivePlan(fixture.Archive(t, ms), receivePolicy, time.Unix(1700000000, 0), base)
	if err != nil {
		t.Fatal(err)
	}
	fixture.WriteTree(t, s.host, map[string]string{"results/notes": "the operator's edit"})
	if err := plan.Apply(); err == nil || !strings.Contains(err.Error(), "changed on the host") {
		t.Fatalf("apply after the host changed: %v", err)
	}
	in.Close()
	if read(t, filepath.Join(s.host, "results/notes")) != "the operator's edit" || read(t, filepath.Join(s.host, "results/new")) != "<missing>" {
		t.Fatal("the transfer applied over the operator's edit, or in part")
	}
	_, changes, err := s.transfer(t, base, ms)
	if err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(s.host, "results/notes")) != "the operator's edit" || len(changes) != 2 {
		t.Errorf("the next transfer: changes %v", changes)
	}
}
