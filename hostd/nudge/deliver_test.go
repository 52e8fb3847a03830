package nudge

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/registry"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// offer is one delivery attempt as the agent received it.
type offer struct {
	req  wire.NudgeRequest
	text string
}

// agent is a scripted agent at the far end of a real tunnel: each attempt
// is answered by answer, called with the attempt's number (from 1).
type agent struct {
	answer func(n int, st *tunnel.Stream)

	mu     sync.Mutex
	offers []offer
}

func (a *agent) ServeStream(_ context.Context, st *tunnel.Stream) {
	var req wire.NudgeRequest
	if err := st.DecodeMeta(&req); err != nil {
		_ = st.Reject(err.Error())
		return
	}
	text, err := wire.ReadNudgeText(st, req)
	if err != nil {
		return
	}
	a.mu.Lock()
	a.offers = append(a.offers, offer{req, text})
	n := len(a.offers)
	a.mu.Unlock()
	a.answer(n, st)
	_ = st.CloseWrite()
}

func (a *agent) got() []offer {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]offer(nil), a.offers...)
}

// answers answers every attempt with the same results.
func answers(rs ...wire.NudgeResult) func(int, *tunnel.Stream) {
	return func(_ int, st *tunnel.Stream) {
		for _, r := range rs {
			_ = wire.WriteNudgeResult(st, r)
		}
	}
}

// connect connects a as furiosa over a real tunnel registered in reg.
func connect(t *testing.T, reg *registry.Registry, a *agent) {
	t.Helper()
	client, server := tunneltest.Pair(t, furiosa)
	mux := tunnel.NewServeMux()
	mux.Handle(wire.KindNudge, a)
	tunneltest.Serve(t, client, mux)
	reg.Add(server)
}

// run runs s until the test ends.
func run(t *testing.T, s *Service) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func wait(t *testing.T, s *Service, id string) Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	o, err := s.Wait(ctx, id)
	if err != nil {
		t.Fatalf("Wait(%s): %v", id, err)
	}
	return o
}

// TestDeliverStampsHostdTime: an outcome's time is hostd's, not what the
// agent wrote: a container's clock can be hours behind (a laptop's VM
// after a sleep) and the polecat may write anything there.
func TestDeliverStampsHostdTime(t *testing.T) {
	s, reg := newService(t, Config{Retry: 50 * time.Millisecond})
	connect(t, reg, &agent{answer: answers(wire.NudgeResult{Outcome: wire.NudgeSubmitted, At: time.Now().Add(-3 * time.Hour), Detail: "prompt cleared"})})
	run(t, s)
	before := time.Now()
	o := wait(t, s, enqueue(t, s, Request{Text: "run the tests"}).ID)
	if o.At.Before(before) || o.At.After(time.Now()) {
		t.Errorf("outcome at %v, want hostd's time between %v and now", o.At, before)
	}
}

func TestDeliver(t *testing.T) {
	submitted := wire.NudgeResult{Outcome: wire.NudgeSubmitted, At: time.Now(), Detail: "prompt cleared"}
	tests := []struct {
		name     string
		mode     string
		answer   func(int, *tunnel.Stream)
		outcome  string
		detail   string // in the outcome's detail
		attempts int
		sentMode string // the mode the agent is asked for
	}{
		{"submitted", "", answers(submitted), wire.NudgeSubmitted, "prompt cleared", 1, wire.NudgeWaitIdle},
		{"immediate", wire.NudgeImmediate, answers(submitted), wire.NudgeSubmitted, "prompt cleared", 1, wire.NudgeImmediate},
		{"queue mode waits for idle", wire.NudgeQueue, answers(submitted), wire.NudgeSubmitted, "prompt cleared", 1, wire.NudgeWaitIdle},
		{"reported again", "", answers(wire.NudgeResult{Outcome: wire.NudgeSubmitted, Detail: "earlier", Repeat: true}), wire.NudgeSubmitted,
			"earlier (reported again: the agent had delivered it before)", 1, wire.NudgeWaitIdle},
		{"failed", "", answers(wire.NudgeResult{Outcome: wire.NudgeFailed, Detail: "pane gone"}), wire.NudgeFailed, "pane gone", 1, wire.NudgeWaitIdle},
		{"busy, then submitted on one stream", "", answers(wire.NudgeResult{Outcome: wire.NudgeBusy, Detail: "typing"}, submitted),
			wire.NudgeSubmitted, "prompt cleared", 1, wire.NudgeWaitIdle},
		{"busy, offered again", "", func(n int, st *tunnel.Stream) {
			if n == 1 {
				_ = wire.WriteNudgeResult(st, wire.NudgeResult{Outcome: wire.NudgeBusy, Detail: "typing"})
				return
			}
			_ = wire.WriteNudgeResult(st, submitted)
		}, wire.NudgeSubmitted, "prompt cleared", 2, wire.NudgeWaitIdle},
		{"no answer, offered again", "", func(n int, st *tunnel.Stream) {
			if n > 1 {
				_ = wire.WriteNudgeResult(st, submitted)
			}
		}, wire.NudgeSubmitted, "prompt cleared", 2, wire.NudgeWaitIdle},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, reg := newService(t, Config{Retry: 50 * time.Millisecond})
			a := &agent{answer: tc.answer}
			connect(t, reg, a)
			run(t, s)
			it := enqueue(t, s, Request{Text: "run the tests", Mode: tc.mode})
			o := wait(t, s, it.ID)
			if o.Outcome != tc.outcome || o.ID != it.ID || o.Polecat != api.Identity(furiosa) || !strings.Contains(o.Detail, tc.detail) {
				t.Errorf("outcome %+v, want %s saying %q", o, tc.outcome, tc.detail)
			}
			offers := a.got()
			if len(offers) != tc.attempts {
				t.Fatalf("%d attempts, want %d", len(offers), tc.attempts)
			}
			for _, of := range offers {
				if of.req.ID != it.ID || of.req.Mode != tc.sentMode || of.text != "run the tests" || of.req.Size != len(of.text) || of.req.Deadline.After(it.Expires) {
					t.Errorf("offer %+v %q for %+v", of.req, of.text, it)
				}
			}
			if len(s.List(furiosa)) != 0 || len(s.Depth()) != 0 {
				t.Errorf("queue after the outcome: %+v", s.List(furiosa))
			}
		})
	}
}

// TestDeliverOnConnect: nudges wait for a polecat that is not connected,
// including those a restarted hostd found on disk, and go when it
// connects.
func TestDeliverOnConnect(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nudges.json")
	before, _ := newService(t, Config{Path: path})
	first := enqueue(t, before, Request{Text: "from before the restart"})
	s, reg := newService(t, Config{Path: path})
	run(t, s)
	second := enqueue(t, s, Request{Text: "from after"})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		l := s.List(furiosa)
		if len(l) == 2 && strings.Contains(l[0].Why, "not connected") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue of a disconnected polecat: %+v, want both nudges waiting as not connected", l)
		}
	}
	a := &agent{answer: answers(wire.NudgeResult{Outcome: wire.NudgeSubmitted})}
	connect(t, reg, a)
	for _, it := range []Item{first, second} {
		if o := wait(t, s, it.ID); o.Outcome != wire.NudgeSubmitted {
			t.Errorf("%s: %+v", it.Text, o)
		}
	}
	var texts []string
	for _, of := range a.got() {
		texts = append(texts, of.text)
	}
	if got := strings.Join(texts, "|"); got != "from before the restart|from after" {
		t.Errorf("delivered %q, want both in order", got)
	}
}

// TestExpiry: a nudge not delivered within its TTL ends expired, saying
// why it was not.
func TestExpiry(t *testing.T) {
	s, _ := newService(t, Config{})
	run(t, s)
	it := enqueue(t, s, Request{Text: "too late", TTL: 300 * time.Millisecond})
	o := wait(t, s, it.ID)
	if o.Outcome != wire.NudgeExpired || !strings.Contains(o.Detail, "(last: the polecat is not connected") {
		t.Errorf("outcome %+v, want expired because the polecat was not connected", o)
	}
	if len(s.List(furiosa)) != 0 {
		t.Errorf("an expired nudge is still queued: %+v", s.List(furiosa))
	}
}

// TestCancelAbandonsAttempt: cancelling a nudge the agent is waiting to
// type closes its stream, so the agent types nothing.
func TestCancelAbandonsAttempt(t *testing.T) {
	s, reg := newService(t, Config{})
	abandoned := make(chan error, 1)
	a := &agent{answer: func(_ int, st *tunnel.Stream) {
		_ = wire.WriteNudgeResult(st, wire.NudgeResult{Outcome: wire.NudgeBusy, Detail: "typing"})
		_, err := st.Read(make([]byte, 1))
		abandoned <- err
	}}
	connect(t, reg, a)
	run(t, s)
	it := enqueue(t, s, Request{Text: "never mind"})
	deadline := time.Now().Add(5 * time.Second)
	for len(s.List(furiosa)) == 1 && s.List(furiosa)[0].Why != "typing" {
		if time.Now().After(deadline) {
			t.Fatal("the agent's busy answer never reached the queue")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if o, err := s.Cancel(it.ID); err != nil || o.Outcome != wire.NudgeCancelled {
		t.Fatalf("Cancel: %+v, %v", o, err)
	}
	select {
	case err := <-abandoned:
		if err == nil {
			t.Error("the agent read more of a cancelled nudge's stream")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the agent's stream stayed open after the nudge was cancelled")
	}
	if o := wait(t, s, it.ID); o.Outcome != wire.NudgeCancelled {
		t.Errorf("outcome %+v, want cancelled", o)
	}
}
