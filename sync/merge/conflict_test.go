package merge

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/sync/internal/fixture"
)

// TestConflictCopyNameTaken: a conflict copy never replaces what is at its
// name already; it takes the next free one.
func TestConflictCopyNameTaken(t *testing.T) {
	s := newSandbox(t)
	base, _, err := s.transfer(t, nil, []fixture.Member{fixture.Dir("results"), fixture.File("results/a", "base")})
	if err != nil {
		t.Fatal(err)
	}
	taken := "results/a.conflict-furiosa-" + time.Unix(1700000000, 0).UTC().Format("20060102T150405Z")
	fixture.WriteTree(t, s.host, map[string]string{"results/a": "host's", taken: "already here"})
	_, changes, err := s.transfer(t, base, []fixture.Member{fixture.Dir("results"), fixture.File("results/a", "container's")})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(s.host, taken)); got != "already here" {
		t.Errorf("the file at the copy's first name: %q", got)
	}
	if got := read(t, filepath.Join(s.host, taken+"-2")); got != "container's" {
		t.Errorf("the copy at %s-2: %q (changes %v)", taken, got, changes)
	}
}

// TestConflictCopyLongName: a conflict copy of a name near the
// filesystem's 255 bytes is shortened to fit, not failed half-way.
func TestConflictCopyLongName(t *testing.T) {
	s := newSandbox(t)
	long := "results/" + strings.Repeat("a", 240)
	base, _, err := s.transfer(t, nil, []fixture.Member{fixture.Dir("results"), fixture.File(long, "v1")})
	if err != nil {
		t.Fatal(err)
	}
	fixture.WriteTree(t, s.host, map[string]string{long: "host's edit"})
	_, changes, err := s.transfer(t, base, []fixture.Member{fixture.Dir("results"), fixture.File("results/0new", "new"), fixture.File(long, "container's edit")})
	if err != nil {
		t.Fatalf("%v (changes %v)", err, changes)
	}
	for _, c := range changes {
		if c.Action == Conflicted {
			if n := len(filepath.Base(c.Copy)); n > 255 {
				t.Errorf("copy name of %d bytes", n)
			}
			if got := read(t, filepath.Join(s.host, c.Copy)); got != "container's edit" {
				t.Errorf("the copy holds %q", got)
			}
		}
	}
}

// TestConflictCopyNamesExhausted: when the numbered names a copy would
// take are all taken (a polecat can send them), the copy takes a random
// suffix at once; before, the name grew past NAME_MAX, every later try
// failed as "taken", and planning spun for ever with the root locked.
func TestConflictCopyNamesExhausted(t *testing.T) {
	s := newSandbox(t)
	now := time.Unix(1700000000, 0)
	long := "results/" + strings.Repeat("a", 200)
	base, _, err := s.transferTo(t, receivePolicy, now, nil, []fixture.Member{fixture.Dir("results"), fixture.File(long, "v1")})
	if err != nil {
		t.Fatal(err)
	}
	fixture.WriteTree(t, s.host, map[string]string{long: "host's edit"})
	ms := []fixture.Member{fixture.Dir("results"), fixture.File(long, "container's edit")}
	first := long + ".conflict-furiosa-" + now.UTC().Format("20060102T150405Z")
	ms = append(ms, fixture.File(first, "taken"))
	for i := 2; i <= maxCopyTries+5; i++ {
		ms = append(ms, fixture.File(fmt.Sprintf("%s-%d", first, i), "taken"))
	}
	done := make(chan error, 1)
	var changes []Change
	go func() {
		var err error
		_, changes, err = s.transferTo(t, receivePolicy, now, base, ms)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("planning did not end")
	}
	for _, c := range changes {
		if c.Path == long && (c.Action != Conflicted || read(t, filepath.Join(s.host, c.Copy)) != "container's edit") {
			t.Errorf("the conflict: %+v", c)
		}
	}
}
