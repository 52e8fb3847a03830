package history_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/images/soak/history"
)

func TestWriterRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := history.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	fixed := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	w.Add(history.Event{T: fixed, Kind: history.KindRun, Phase: history.PhaseStart, Seed: 42})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				w.Add(history.Event{Kind: history.KindNudge, Phase: history.PhaseInvoke, Agent: "rig/a", Op: fmt.Sprintf("n-%d-%d", g, i), Mode: "immediate"})
			}
		})
	}
	wg.Wait()
	w.Add(history.Event{Kind: history.KindFault, Phase: history.PhaseStart, Op: "f1", Fault: history.FaultUDPBlock, Bound: history.Duration(30 * time.Second)})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w.Add(history.Event{Kind: history.KindRun, Phase: history.PhaseEnd}) // dropped after Close
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	evs, err := history.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1+8*50+1 {
		t.Fatalf("read %d events, want %d", len(evs), 1+8*50+1)
	}
	if !evs[0].T.Equal(fixed) || evs[0].Seed != 42 {
		t.Errorf("first event %+v, want the run start as added", evs[0])
	}
	for i, e := range evs[1:] {
		if e.T.IsZero() {
			t.Fatalf("event %d has no time", i+1)
		}
		if i > 0 && e.T.Before(evs[i].T) {
			t.Fatalf("event %d (%s) before the one written ahead of it (%s)", i+1, e.T, evs[i].T)
		}
	}
	if last := evs[len(evs)-1]; time.Duration(last.Bound) != 30*time.Second {
		t.Errorf("bound read back as %v", last.Bound)
	}
	raw, _ := os.ReadFile(path)
	if !strings.Contains(string(raw), `"bound":"30s"`) {
		t.Errorf("bound not written as a duration string: %s", raw[len(raw)-200:])
	}
}

func TestWriterFlushesWithoutClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := history.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Add(history.Event{Kind: history.KindRun, Phase: history.PhaseStart, Seed: 7})
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs, err := history.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 1 && evs[0].Seed == 7 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("event not in the file %s after Add; read %v", time.Since(deadline.Add(-10*time.Second)), evs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCreateFails(t *testing.T) {
	_, err := history.Create(filepath.Join(t.TempDir(), "missing", "history.jsonl"))
	if err == nil || !strings.Contains(err.Error(), "creating history") {
		t.Fatalf("Create in a missing directory: %v", err)
	}
}
