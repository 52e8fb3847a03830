package partstest

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

// TestGo: a run's result comes with the goroutines it started, or they
// started, that still run when it returns, and none it waited for.
func TestGo(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range []struct {
		name     string
		run      func(release <-chan struct{}) error
		wantLeft []string // a function on top of each goroutine left
	}{
		{name: "joins", run: func(<-chan struct{}) error {
			var wg sync.WaitGroup
			wg.Go(func() {})
			wg.Wait()
			return boom
		}},
		{name: "leaves one", wantLeft: []string{"leftBehind"}, run: func(release <-chan struct{}) error {
			started := make(chan struct{})
			go leftBehind(release, started)
			<-started
			return boom
		}},
		{name: "leaves a grandchild", wantLeft: []string{"leftBehind", "startsAnother"}, run: func(release <-chan struct{}) error {
			started := make(chan struct{})
			go startsAnother(release, started)
			<-started
			return boom
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			release := make(chan struct{})
			t.Cleanup(func() { close(release) })
			r := <-Go(func() error { return c.run(release) })
			if r.Err != boom {
				t.Errorf("Err = %v, want %v", r.Err, boom)
			}
			if len(r.Left) != len(c.wantLeft) {
				t.Fatalf("%d goroutines left, want %d: %+v", len(r.Left), len(c.wantLeft), r.Left)
			}
			for _, want := range c.wantLeft {
				found := false
				for _, g := range r.Left {
					found = found || strings.Contains(g.Stack, "partstest."+want+"(")
				}
				if !found {
					t.Errorf("no goroutine in %s left, in %+v", want, r.Left)
				}
			}
		})
	}
}

// leftBehind says it has started, then waits for release.
func leftBehind(release <-chan struct{}, started chan<- struct{}) {
	close(started)
	<-release
}

// startsAnother starts leftBehind, says it has started once that has, then
// waits for release.
func startsAnother(release <-chan struct{}, started chan<- struct{}) {
	child := make(chan struct{})
	go leftBehind(release, child)
	<-child
	close(started)
	<-release
}
