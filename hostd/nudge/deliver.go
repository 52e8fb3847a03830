package nudge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/registry"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// A deliverer runs while a polecat has nudges queued: it offers the head
// of the queue to the agent, one attempt at a time, and ends the nudge
// when the agent reports a final outcome or it expires.
type deliverer struct {
	s    *Service
	id   wire.Identity
	wake chan struct{}

	mu      sync.Mutex
	current string             // the nudge of the attempt under way
	cancel  context.CancelFunc // abandons it
}

// wake makes sure a deliverer runs for id if it has nudges, and nudges it
// to look again (a new nudge, a connect, a cancel).
func (s *Service) wake(id wire.Identity) {
	s.mu.Lock()
	d := s.running[id]
	if d == nil && len(s.queues[id]) > 0 && s.ctx != nil {
		d = &deliverer{s: s, id: id, wake: make(chan struct{}, 1)}
		s.running[id] = d
		s.delivering.Add(1)
		go func() {
			defer s.delivering.Done()
			d.run(s.ctx)
		}()
	}
	s.mu.Unlock()
	if d != nil {
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
}

// abandon ends the attempt under way if it is for nudge id.
func (d *deliverer) abandon(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.current == id && d.cancel != nil {
		d.cancel()
	}
}

func (d *deliverer) run(ctx context.Context) {
	s := d.s
	for ctx.Err() == nil {
		head, next, ok := d.head()
		if !ok {
			return
		}
		conn, connected := s.reg.Current(d.id)
		if !connected {
			d.note(head.ID, "the polecat is not connected; it goes when the polecat connects")
			d.sleep(ctx, time.Until(next))
			continue
		}
		start := time.Now()
		res, err := d.attempt(ctx, conn, head)
		switch {
		case err != nil:
			d.note(head.ID, err.Error())
		case res.Outcome == wire.NudgeBusy:
			d.note(head.ID, res.Detail)
		default:
			detail := res.Detail
			if res.Repeat {
				detail += " (reported again: the agent had delivered it before)"
			}
			// At is when hostd heard, by its clock: the agent's is the
			// polecat's word, and its clock may be hours off.
			d.end(head.ID, Outcome{ID: head.ID, Polecat: api.Identity(d.id), Outcome: res.Outcome, At: time.Now(), Detail: detail})
			continue
		}
		d.sleep(ctx, s.cfg.Retry-time.Since(start)) // no faster than one attempt per Retry
	}
}

// head is the queue's first nudge, once the expired ones are ended; next
// is when the earliest left expires. ok is false (and the deliverer
// stopped) when the queue is empty.
func (d *deliverer) head() (head *Item, next time.Time, ok bool) {
	s := d.s
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	var expired []*Item
	for _, it := range s.queues[d.id] {
		if now.After(it.Expires) {
			expired = append(expired, it)
		}
	}
	for _, it := range expired {
		s.removeLocked(it)
		why := it.Why
		if why == "" {
			why = "never offered"
		}
		s.finishLocked(Outcome{ID: it.ID, Polecat: api.Identity(d.id), Outcome: wire.NudgeExpired, At: now,
			Detail: fmt.Sprintf("not delivered within its %v (last: %s)", it.Expires.Sub(it.Created).Round(time.Second), why)})
	}
	if len(expired) > 0 {
		if err := s.saveLocked(); err != nil {
			s.log.Warn("nudge: could not persist the queue", "err", err)
		}
	}
	q := s.queues[d.id]
	if len(q) == 0 {
		delete(s.running, d.id)
		return nil, time.Time{}, false
	}
	next = q[0].Expires
	for _, it := range q {
		if it.Expires.Before(next) {
			next = it.Expires
		}
	}
	cp := *q[0]
	return &cp, next, true
}

// attempt offers one nudge to the agent and waits for its answer.
func (d *deliverer) attempt(ctx context.Context, conn *registry.Conn, it *Item) (wire.NudgeResult, error) {
	s := d.s
	wait := s.cfg.Attempt
	mode := it.Mode
	if mode == wire.NudgeQueue {
		mode = wire.NudgeWaitIdle
	}
	if mode == wire.NudgeImmediate {
		wait = 10 * time.Second // only for someone's typing to clear
	}
	deadline := time.Now().Add(wait)
	if it.Expires.Before(deadline) {
		deadline = it.Expires
	}
	// Typing and submitting take a few seconds after the wait.
	actx, cancel := context.WithDeadline(ctx, deadline.Add(30*time.Second))
	defer cancel()
	d.mu.Lock()
	d.current, d.cancel = it.ID, cancel
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.current, d.cancel = "", nil
		d.mu.Unlock()
	}()
	s.metrics.attempts.Inc()
	d.count(it.ID)
	st, err := conn.Session().OpenStream(actx, wire.KindNudge, wire.NudgeRequest{ID: it.ID, Mode: mode, Deadline: deadline, Size: len(it.Text)})
	if err != nil {
		return wire.NudgeResult{}, fmt.Errorf("could not reach the agent: %w", err)
	}
	defer st.Close()
	// Closing the stream is how the agent learns the nudge is no longer
	// wanted (cancelled, hostd stopping).
	stop := context.AfterFunc(actx, func() { st.Close() })
	defer stop()
	if dl, ok := actx.Deadline(); ok {
		_ = st.SetDeadline(dl)
	}
	if _, err := st.Write([]byte(it.Text)); err != nil {
		return wire.NudgeResult{}, fmt.Errorf("sending the nudge to the agent: %w", err)
	}
	results := wire.NewNudgeResults(st)
	var last *wire.NudgeResult
	for {
		res, err := results.Next()
		switch {
		case errors.Is(err, io.EOF) && last != nil:
			return *last, nil
		case errors.Is(err, io.EOF):
			return res, errors.New("the agent closed the nudge stream without an answer")
		case err != nil:
			return res, fmt.Errorf("the agent's answer: %w", err)
		case res.Outcome != wire.NudgeBusy:
			return res, nil
		}
		last = &res
		d.note(it.ID, res.Detail) // why it still waits, while it waits
	}
}

// note records why the nudge is still waiting. It is not saved by itself
// (the agent says it as often as its reason changes; the queue's next
// change saves it).
func (d *deliverer) note(id, why string) {
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	if it := d.s.findLocked(id); it != nil {
		it.Why = why
	}
}

// count counts an attempt on the queued item.
func (d *deliverer) count(id string) {
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	if it := d.s.findLocked(id); it != nil {
		it.Attempts++
	}
}

// end removes a delivered (or failed) nudge and reports its outcome.
func (d *deliverer) end(id string, o Outcome) {
	s := d.s
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.findLocked(id)
	if it == nil {
		return // cancelled meanwhile; its outcome is told already
	}
	s.removeLocked(it)
	s.finishLocked(o)
	if err := s.saveLocked(); err != nil {
		s.log.Warn("nudge: could not persist the queue", "err", err)
	}
}

// sleep waits d, or for a wake or ctx.
func (d *deliverer) sleep(ctx context.Context, dur time.Duration) {
	if dur <= 0 {
		return
	}
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-t.C:
	case <-d.wake:
	case <-ctx.Done():
	}
}
