// Package nudge is hostd's half of the nudge channel (the agent's is
// agent/nudge): a persisted queue per polecat of what operators asked to
// type into the polecat's pane, delivered in order, one at a time, over a
// nudge stream to the agent, which waits for idle, types, submits and
// reports. A nudge stays queued until the agent reports a final outcome
// (submitted or failed), it expires, or it is cancelled; a disconnected
// polecat's nudges wait for it, and a restarted hostd loses none. The
// agent de-duplicates by id, so sending one again is safe.
package nudge

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/registry"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/internal/settings"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Priorities.
const (
	Normal = "normal"
	Urgent = "urgent"
)

// Item is one queued nudge, as the queue's file (Config.Path) holds it:
// the service's own type, so that a change to the control API does not
// change what is on disk. Its JSON is the file's format; a field renamed
// here would leave the queues written before unread.
type Item struct {
	ID       string        `json:"id"`
	Polecat  wire.Identity `json:"polecat"`
	Text     string        `json:"text"`
	Mode     string        `json:"mode"`
	Priority string        `json:"priority"`
	Created  time.Time     `json:"created"`
	Expires  time.Time     `json:"expires"`
	// Attempts counts delivery attempts; Why says why the last did not
	// deliver it (busy, not connected, ...).
	Attempts int    `json:"attempts"`
	Why      string `json:"why,omitempty"`
}

// API is it as the control API shows it (hostd nudge --list).
func (it Item) API() api.NudgeItem {
	return api.NudgeItem{ID: it.ID, Polecat: api.Identity(it.Polecat), Text: it.Text, Mode: it.Mode, Priority: it.Priority,
		Created: it.Created, Expires: it.Expires, Attempts: it.Attempts, Why: it.Why}
}

// Outcome is what became of a nudge. It is never stored, only answered:
// the control API's type.
type Outcome = api.NudgeOutcome

// Request is what an operator asks for.
type Request struct {
	Polecat wire.Identity
	Text    string
	// Mode is wire.NudgeImmediate, wire.NudgeWaitIdle (when empty) or
	// wire.NudgeQueue.
	Mode string
	// Priority is Normal (when empty) or Urgent.
	Priority string
	// TTL overrides the priority's.
	TTL time.Duration
}

// Service is safe for concurrent use.
type Service struct {
	cfg     Config
	reg     *registry.Registry
	log     *slog.Logger
	metrics *metrics

	mu         sync.Mutex
	ctx        context.Context // Run's: deliverers live as long as it; nil before Run
	queues     map[wire.Identity][]*Item
	running    map[wire.Identity]*deliverer
	delivering sync.WaitGroup     // the deliverers Run waits for
	outcomes   map[string]Outcome // recent final outcomes, for Wait
	waiters    map[string][]chan Outcome
	recent     []string // outcome ids, oldest first, to bound outcomes
}

// maxOutcomes bounds the final outcomes kept for late waiters.
const maxOutcomes = 1000

// New loads the queue; zero Config fields take DefaultConfig's.
func New(cfg Config, reg *registry.Registry) (*Service, error) {
	settings.FillZero(&cfg, DefaultConfig())
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("nudge: %w", err)
	}
	s := &Service{cfg: cfg, reg: reg, log: cfg.Logger, metrics: newMetrics(), queues: map[wire.Identity][]*Item{},
		running: map[wire.Identity]*deliverer{}, outcomes: map[string]Outcome{}, waiters: map[string][]chan Outcome{}}
	var items []*Item
	if err := state.Load(cfg.Path, &items); err != nil {
		return nil, fmt.Errorf("loading the nudge queue: %w", err)
	}
	for _, it := range items {
		s.queues[it.Polecat] = append(s.queues[it.Polecat], it)
	}
	return s, nil
}

// Run delivers queued nudges to connected polecats, and to each polecat as
// it connects, until ctx ends; it returns once its deliverers have.
func (s *Service) Run(ctx context.Context) {
	s.reg.Subscribe(func(ev registry.Event) {
		if ev.Connected {
			s.wake(ev.Conn.Identity())
		}
	})
	s.mu.Lock()
	s.ctx = ctx
	ids := make([]wire.Identity, 0, len(s.queues))
	for id := range s.queues {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	for _, id := range ids {
		s.wake(id)
	}
	<-ctx.Done()
	s.delivering.Wait() // none writes the queue's file once Run has returned
}

// Enqueue validates and persists a nudge and starts its delivery. It
// returns the queued item and, when the queue was full, the nudge dropped
// to make room.
func (s *Service) Enqueue(r Request) (Item, *Outcome, error) {
	if err := r.Polecat.Validate(); err != nil {
		return Item{}, nil, err
	}
	switch r.Mode {
	case "":
		r.Mode = wire.NudgeWaitIdle
	case wire.NudgeImmediate, wire.NudgeWaitIdle, wire.NudgeQueue:
	default:
		return Item{}, nil, fmt.Errorf("unknown mode %q: immediate, wait-idle or queue", r.Mode)
	}
	ttl := s.cfg.TTL
	switch r.Priority {
	case "", Normal:
		r.Priority = Normal
	case Urgent:
		ttl = s.cfg.UrgentTTL
	default:
		return Item{}, nil, fmt.Errorf("unknown priority %q: normal or urgent", r.Priority)
	}
	if r.TTL > 0 {
		ttl = r.TTL
	}
	switch {
	case r.Text == "":
		return Item{}, nil, errors.New("the nudge is empty")
	case len(r.Text) > wire.MaxNudgeText:
		return Item{}, nil, fmt.Errorf("the nudge is %d bytes; at most %d", len(r.Text), wire.MaxNudgeText)
	case !utf8.ValidString(r.Text):
		return Item{}, nil, errors.New("the nudge is not valid UTF-8")
	}
	now := time.Now()
	it := &Item{ID: newID(), Polecat: r.Polecat, Text: r.Text, Mode: r.Mode, Priority: r.Priority, Created: now, Expires: now.Add(ttl)}
	s.mu.Lock()
	q := s.queues[r.Polecat]
	var dropped *Outcome
	if len(q) >= s.cfg.Depth {
		i := slices.IndexFunc(q, func(o *Item) bool { return o.Priority == Normal })
		if i < 0 {
			s.mu.Unlock()
			return Item{}, nil, fmt.Errorf("%s's queue holds %d urgent nudges (nudge.depth); cancel one or wait", r.Polecat, len(q))
		}
		old := q[i]
		q = slices.Delete(q, i, i+1)
		o := Outcome{ID: old.ID, Polecat: api.Identity(old.Polecat), Outcome: wire.NudgeDropped, At: now,
			Detail: fmt.Sprintf("dropped from a full queue (%d, nudge.depth) by nudge %s", s.cfg.Depth, it.ID)}
		dropped = &o
		if d := s.running[r.Polecat]; d != nil {
			d.abandon(old.ID)
		}
	}
	s.queues[r.Polecat] = append(q, it)
	err := s.saveLocked()
	if err != nil {
		s.queues[r.Polecat] = slices.DeleteFunc(s.queues[r.Polecat], func(o *Item) bool { return o == it })
		s.mu.Unlock()
		return Item{}, nil, fmt.Errorf("persisting the nudge: %w", err)
	}
	if dropped != nil {
		s.finishLocked(*dropped)
	}
	s.metrics.queued.Inc()
	queued := *it // copied under the lock: its deliverer writes it.Why
	s.mu.Unlock()
	s.log.Info("nudge queued", "id", queued.ID, "polecat", queued.Polecat, "mode", queued.Mode, "priority", queued.Priority, "bytes", len(queued.Text))
	s.wake(r.Polecat)
	return queued, dropped, nil
}

// Nudge queues an operator's nudge for the polecat id and waits up to
// req.Wait for what becomes of it (not at all in queue mode: the caller
// is told it is queued). A nudge dropped from a full queue to make room
// is named in the outcome.
func (s *Service) Nudge(ctx context.Context, id wire.Identity, req api.NudgeRequest) (Outcome, error) {
	it, dropped, err := s.Enqueue(Request{Polecat: id, Text: req.Text, Mode: req.Mode, Priority: req.Priority, TTL: req.TTL})
	if err != nil {
		return Outcome{}, err
	}
	wait := req.Wait
	if it.Mode == wire.NudgeQueue {
		wait = 0
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	o, err := s.Wait(ctx, it.ID)
	o.Dropped = dropped
	return o, err
}

// Wait waits for a nudge's final outcome until ctx ends; then it answers
// wire.NudgeQueued, with why the nudge is still waiting.
func (s *Service) Wait(ctx context.Context, id string) (Outcome, error) {
	s.mu.Lock()
	if o, ok := s.outcomes[id]; ok {
		s.mu.Unlock()
		return o, nil
	}
	it := s.findLocked(id)
	if it == nil {
		s.mu.Unlock()
		return Outcome{}, fmt.Errorf("no nudge %s (it may have ended before hostd last started)", id)
	}
	ch := make(chan Outcome, 1)
	s.waiters[id] = append(s.waiters[id], ch)
	s.mu.Unlock()
	select {
	case o := <-ch:
		return o, nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		s.waiters[id] = slices.DeleteFunc(s.waiters[id], func(c chan Outcome) bool { return c == ch })
		if it := s.findLocked(id); it != nil {
			return Outcome{ID: id, Polecat: api.Identity(it.Polecat), Outcome: wire.NudgeQueued, At: time.Now(), Detail: it.Why, Expires: it.Expires}, nil
		}
		if o, ok := s.outcomes[id]; ok {
			return o, nil
		}
		return Outcome{}, fmt.Errorf("no nudge %s", id)
	}
}

// List is a polecat's queue, in delivery order, as the control API shows
// it.
func (s *Service) List(id wire.Identity) []api.NudgeItem {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]api.NudgeItem, 0, len(s.queues[id]))
	for _, it := range s.queues[id] {
		out = append(out, it.API())
	}
	return out
}

// Depth is how many nudges wait for each polecat that has any.
func (s *Service) Depth() map[wire.Identity]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[wire.Identity]int{}
	for id, q := range s.queues {
		if len(q) > 0 {
			out[id] = len(q)
		}
	}
	return out
}

// Cancel removes a queued nudge. An attempt under way is abandoned: the
// agent is told, and types nothing unless it had already started.
func (s *Service) Cancel(id string) (Outcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.findLocked(id)
	if it == nil {
		if o, ok := s.outcomes[id]; ok {
			return o, fmt.Errorf("nudge %s already ended: %s", id, o.Outcome)
		}
		return Outcome{}, fmt.Errorf("no queued nudge %s", id)
	}
	o := s.cancelLocked(it, "cancelled by an operator")
	return o, s.saveLocked()
}

// CancelPolecat removes every nudge queued for the polecat, as Cancel
// does, each with detail as its outcome's, and says how many it removed
// (hostd forget and nuke: a nudge must not wait for a polecat that is
// gone, nor reach the next one Gas Town gives its name).
func (s *Service) CancelPolecat(id wire.Identity, detail string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := slices.Clone(s.queues[id])
	if len(q) == 0 {
		return 0, nil
	}
	for _, it := range q {
		s.cancelLocked(it, detail)
	}
	if err := s.saveLocked(); err != nil {
		return len(q), fmt.Errorf("persisting the nudge queue without %s's nudges: %w", id, err)
	}
	return len(q), nil
}

// cancelLocked takes it out of its queue, abandons an attempt under way
// and records it cancelled, with detail.
func (s *Service) cancelLocked(it *Item, detail string) Outcome {
	s.removeLocked(it)
	if d := s.running[it.Polecat]; d != nil {
		d.abandon(it.ID)
	}
	o := Outcome{ID: it.ID, Polecat: api.Identity(it.Polecat), Outcome: wire.NudgeCancelled, At: time.Now(), Detail: detail}
	s.finishLocked(o)
	return o
}

// findLocked finds a queued nudge by id.
func (s *Service) findLocked(id string) *Item {
	for _, q := range s.queues {
		for _, it := range q {
			if it.ID == id {
				return it
			}
		}
	}
	return nil
}

// removeLocked takes it out of its queue.
func (s *Service) removeLocked(it *Item) {
	q := slices.DeleteFunc(s.queues[it.Polecat], func(o *Item) bool { return o == it })
	if len(q) == 0 {
		delete(s.queues, it.Polecat)
		return
	}
	s.queues[it.Polecat] = q
}

// finishLocked records a final outcome and tells its waiters.
func (s *Service) finishLocked(o Outcome) {
	s.outcomes[o.ID] = o
	s.recent = append(s.recent, o.ID)
	if len(s.recent) > maxOutcomes {
		delete(s.outcomes, s.recent[0])
		s.recent = s.recent[1:]
	}
	for _, ch := range s.waiters[o.ID] {
		ch <- o
	}
	delete(s.waiters, o.ID)
	s.metrics.outcomes.WithLabelValues(o.Outcome).Inc()
	level := slog.LevelInfo
	if o.Outcome != wire.NudgeSubmitted {
		level = slog.LevelWarn
	}
	s.log.Log(context.Background(), level, "nudge "+o.Outcome, "id", o.ID, "polecat", o.Polecat, "detail", o.Detail)
}

// saveLocked persists every queue.
func (s *Service) saveLocked() error {
	var all []*Item
	for _, q := range s.queues {
		all = append(all, q...)
	}
	slices.SortFunc(all, func(a, b *Item) int { return a.Created.Compare(b.Created) })
	return state.Save(s.cfg.Path, all)
}

// newID is a nudge id: short, random, safe in a tmux buffer name.
func newID() string {
	return "n" + strings.ToLower(rand.Text()[:12])
}
