// Package partstest tells the goroutines a daemon's run left running when
// it returned: those it started, or that they started, as far as the
// "created by ... in goroutine N" lines of runtime.Stack tell. Unlike
// goleak, which sees every goroutine of the process, it looks at its own
// goroutines alone, from the instant the run returns for at most
// settleWait: a goroutine that signalled its end is still there, exiting,
// for a moment after.
package partstest

import (
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Goroutine is one goroutine of runtime.Stack's dump.
type Goroutine struct {
	ID, Parent int
	Stack      string
}

// Result is what a run returned and the goroutines it left running.
type Result struct {
	Err  error
	Left []Goroutine
}

// settleWait is how long a goroutine may take to exit once run returned.
const settleWait = 2 * time.Second

// Go calls run in a goroutine of its own; the Result comes on the channel
// once run has returned, its Left those still running settleWait later,
// or none as soon as none is.
func Go(run func() error) <-chan Result {
	done := make(chan Result, 1)
	go func() {
		err := run()
		me := current()
		left := descendants(me)
		for deadline := time.Now().Add(settleWait); len(left) > 0 && time.Now().Before(deadline); left = descendants(me) {
			time.Sleep(time.Millisecond)
		}
		done <- Result{err, left}
	}()
	return done
}

var (
	headerRE  = regexp.MustCompile(`^goroutine (\d+) `)
	createdRE = regexp.MustCompile(`(?m)^created by .* in goroutine (\d+)$`)
)

// goroutines parses every goroutine's stack.
func goroutines() []Goroutine {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var gs []Goroutine
	for _, block := range strings.Split(string(buf), "\n\n") {
		m := headerRE.FindStringSubmatch(block)
		if m == nil {
			continue
		}
		g := Goroutine{Stack: block}
		g.ID, _ = strconv.Atoi(m[1])
		if c := createdRE.FindStringSubmatch(block); c != nil {
			g.Parent, _ = strconv.Atoi(c[1])
		}
		gs = append(gs, g)
	}
	return gs
}

// current is the calling goroutine's id.
func current() int {
	buf := make([]byte, 64)
	m := headerRE.FindSubmatch(buf[:runtime.Stack(buf, false)])
	id, _ := strconv.Atoi(string(m[1]))
	return id
}

// unowned tells the goroutines a run cannot wait for: one that has
// returned and is being torn down; quic-go's, whose Transport.Close waits
// for its read loop but not for the send queues that return after it (the
// goroutines of ours that own quic-go's, the tunnel listener's accept
// loops and a session's, are waited for, and counted here); and the
// signal loop the process's first signal.Notify starts, for good.
func unowned(g Goroutine) bool {
	for _, mark := range []string{"\nruntime.goexit1(", "\ncreated by github.com/quic-go/quic-go.", "\ncreated by os/signal.Notify."} {
		if strings.Contains(g.Stack, mark) {
			return true
		}
	}
	return false
}

// descendants are the goroutines running now that root started, or that
// one of those started. One whose creator has ended is not counted (its
// line names a goroutine no longer in the dump): goleak's TestMain, at
// the package's end, catches those.
func descendants(root int) []Goroutine {
	gs := goroutines()
	parent := map[int]int{}
	for _, g := range gs {
		parent[g.ID] = g.Parent
	}
	var out []Goroutine
	for _, g := range gs {
		if unowned(g) {
			continue
		}
		for p := g.Parent; p != 0; p = parent[p] {
			if p == root {
				out = append(out, g)
				break
			}
		}
	}
	return out
}
