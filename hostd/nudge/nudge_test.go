package nudge

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/registry/registrytest"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/registry"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"

	"github.com/polecat-sidecar/sidecar/internal/settings/settingstest"
)

var furiosa = wire.Identity{Rig: "gastown", Name: "furiosa"}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// newService is a queue persisted in a fresh directory, with cfg's
// non-zero fields.
func newService(t *testing.T, cfg Config) (*Service, *registry.Registry) {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = filepath.Join(t.TempDir(), "nudges.json")
	}
	cfg.Logger = quiet()
	reg := registrytest.New(t)
	s, err := New(cfg, reg)
	if err != nil {
		t.Fatal(err)
	}
	return s, reg
}

func enqueue(t *testing.T, s *Service, r Request) Item {
	t.Helper()
	if r.Polecat.IsZero() {
		r.Polecat = furiosa
	}
	it, _, err := s.Enqueue(r)
	if err != nil {
		t.Fatalf("Enqueue(%q): %v", r.Text, err)
	}
	return it
}

func TestNewRefuses(t *testing.T) {
	corrupt := filepath.Join(t.TempDir(), "nudges.json")
	if err := os.WriteFile(corrupt, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		want string
	}{
		{"no path", "", "nudge: Path is required"},
		{"corrupt file", corrupt, "loading the nudge queue"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Config{Path: tc.path, Logger: quiet()}, registrytest.New(t))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error saying %q", err, tc.want)
			}
			if tc.path == corrupt {
				if _, ok := errors.AsType[*state.CorruptError](err); !ok {
					t.Errorf("New: %v, want a *state.CorruptError", err)
				}
			}
		})
	}
}

func TestEnqueueValidates(t *testing.T) {
	s, _ := newService(t, Config{TTL: time.Minute, UrgentTTL: time.Hour})
	tests := []struct {
		name string
		req  Request
		want string // in the error; "" for none
		// what a queued item carries
		mode, priority string
		ttl            time.Duration
	}{
		{"defaults", Request{Polecat: furiosa, Text: "hi"}, "", wire.NudgeWaitIdle, Normal, time.Minute},
		{"immediate", Request{Polecat: furiosa, Text: "hi", Mode: wire.NudgeImmediate}, "", wire.NudgeImmediate, Normal, time.Minute},
		{"queue", Request{Polecat: furiosa, Text: "hi", Mode: wire.NudgeQueue}, "", wire.NudgeQueue, Normal, time.Minute},
		{"urgent", Request{Polecat: furiosa, Text: "hi", Priority: Urgent}, "", wire.NudgeWaitIdle, Urgent, time.Hour},
		{"own ttl", Request{Polecat: furiosa, Text: "hi", Priority: Urgent, TTL: 5 * time.Second}, "", wire.NudgeWaitIdle, Urgent, 5 * time.Second},
		{"bad identity", Request{Polecat: wire.Identity{Rig: "gastown"}, Text: "hi"}, "polecat name is empty", "", "", 0},
		{"unknown mode", Request{Polecat: furiosa, Text: "hi", Mode: "shout"}, `unknown mode "shout"`, "", "", 0},
		{"unknown priority", Request{Polecat: furiosa, Text: "hi", Priority: "high"}, `unknown priority "high"`, "", "", 0},
		{"empty", Request{Polecat: furiosa}, "the nudge is empty", "", "", 0},
		{"too long", Request{Polecat: furiosa, Text: strings.Repeat("x", wire.MaxNudgeText+1)}, "at most", "", "", 0},
		{"not UTF-8", Request{Polecat: furiosa, Text: "\xff\xfe"}, "not valid UTF-8", "", "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(s.List(tc.req.Polecat))
			it, dropped, err := s.Enqueue(tc.req)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Enqueue: %v, want an error saying %q", err, tc.want)
				}
				if n := len(s.List(tc.req.Polecat)); n != before {
					t.Errorf("a refused nudge changed the queue: %d items, had %d", n, before)
				}
				return
			}
			if err != nil || dropped != nil {
				t.Fatalf("Enqueue: %v (dropped %v)", err, dropped)
			}
			if !strings.HasPrefix(it.ID, "n") || len(it.ID) != 13 || it.Polecat != furiosa || it.Text != tc.req.Text {
				t.Errorf("item %+v", it)
			}
			if it.Mode != tc.mode || it.Priority != tc.priority || it.Expires.Sub(it.Created) != tc.ttl {
				t.Errorf("mode %q priority %q ttl %v; want %q %q %v", it.Mode, it.Priority, it.Expires.Sub(it.Created), tc.mode, tc.priority, tc.ttl)
			}
		})
	}
	if d := s.Depth()[furiosa]; d != 5 {
		t.Errorf("Depth %d, want the 5 accepted nudges", d)
	}
}

// TestDepth: a full queue drops its oldest normal nudge for a new one,
// reports it, and refuses a new one when every nudge in it is urgent.
func TestDepth(t *testing.T) {
	tests := []struct {
		name       string
		priorities []string // of the nudges that fill the queue, in order
		dropped    int      // index of the one dropped, -1 for a refusal
	}{
		{"all normal", []string{Normal, Normal}, 0},
		{"urgent first", []string{Urgent, Normal}, 1},
		{"all urgent", []string{Urgent, Urgent}, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newService(t, Config{Depth: 2})
			var ids []string
			for _, p := range tc.priorities {
				ids = append(ids, enqueue(t, s, Request{Text: "fill", Priority: p}).ID)
			}
			it, dropped, err := s.Enqueue(Request{Polecat: furiosa, Text: "new"})
			if tc.dropped < 0 {
				if err == nil || !strings.Contains(err.Error(), "holds 2 urgent nudges") {
					t.Fatalf("Enqueue into a queue of urgent nudges: %v, want a refusal", err)
				}
				if n := len(s.List(furiosa)); n != 2 {
					t.Errorf("%d queued after a refusal, want 2", n)
				}
				return
			}
			if err != nil || dropped == nil {
				t.Fatalf("Enqueue into a full queue: dropped %v, err %v", dropped, err)
			}
			if dropped.ID != ids[tc.dropped] || dropped.Outcome != wire.NudgeDropped || !strings.Contains(dropped.Detail, "by nudge "+it.ID) {
				t.Errorf("dropped %+v, want %s dropped by %s", dropped, ids[tc.dropped], it.ID)
			}
			var left []string
			for _, q := range s.List(furiosa) {
				left = append(left, q.ID)
			}
			want := append(append([]string{}, ids[:tc.dropped]...), ids[tc.dropped+1:]...)
			if want = append(want, it.ID); strings.Join(left, ",") != strings.Join(want, ",") {
				t.Errorf("queue %v, want %v", left, want)
			}
			// The dropped nudge's waiter hears it.
			o, err := s.Wait(context.Background(), dropped.ID)
			if err != nil || o.Outcome != wire.NudgeDropped {
				t.Errorf("Wait for the dropped nudge: %+v, %v", o, err)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	s, _ := newService(t, Config{})
	keep := enqueue(t, s, Request{Text: "keep"})
	gone := enqueue(t, s, Request{Text: "cancel me"})
	o, err := s.Cancel(gone.ID)
	if err != nil || o.Outcome != wire.NudgeCancelled || o.ID != gone.ID || o.Polecat != api.Identity(furiosa) {
		t.Fatalf("Cancel: %+v, %v", o, err)
	}
	if l := s.List(furiosa); len(l) != 1 || l[0].ID != keep.ID {
		t.Errorf("queue after cancel: %+v", l)
	}
	tests := []struct {
		name, id, want string
	}{
		{"again", gone.ID, "already ended: cancelled"},
		{"unknown", "nnothere", "no queued nudge nnothere"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.Cancel(tc.id); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Cancel(%s): %v, want %q", tc.id, err, tc.want)
			}
		})
	}
	if o, err := s.Wait(context.Background(), gone.ID); err != nil || o.Outcome != wire.NudgeCancelled {
		t.Errorf("Wait for a cancelled nudge: %+v, %v", o, err)
	}
}

// TestCancelPolecat: every nudge queued for a polecat is cancelled, its
// waiters told why, and the file keeps only the others' nudges; a polecat
// with none has nothing cancelled.
func TestCancelPolecat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nudges.json")
	s, _ := newService(t, Config{Path: path})
	other := wire.Identity{Rig: "gastown", Name: "nux"}
	a := enqueue(t, s, Request{Text: "first"})
	enqueue(t, s, Request{Text: "second", Priority: Urgent})
	kept := enqueue(t, s, Request{Polecat: other, Text: "nux's"})
	n, err := s.CancelPolecat(furiosa, "the polecat was forgotten")
	if n != 2 || err != nil {
		t.Fatalf("CancelPolecat: %d, %v; want 2", n, err)
	}
	if l := s.List(furiosa); len(l) != 0 {
		t.Errorf("furiosa's queue after CancelPolecat: %+v", l)
	}
	if o, err := s.Wait(context.Background(), a.ID); err != nil || o.Outcome != wire.NudgeCancelled || o.Detail != "the polecat was forgotten" {
		t.Errorf("Wait for a cancelled nudge: %+v, %v", o, err)
	}
	restarted, _ := newService(t, Config{Path: path})
	if l := restarted.List(furiosa); len(l) != 0 {
		t.Errorf("furiosa's nudges came back from the file: %+v", l)
	}
	if l := restarted.List(other); len(l) != 1 || l[0].ID != kept.ID {
		t.Errorf("nux's queue after furiosa's were cancelled: %+v", l)
	}
	if n, err := s.CancelPolecat(furiosa, "again"); n != 0 || err != nil {
		t.Errorf("CancelPolecat with none queued: %d, %v", n, err)
	}
}

// TestRestart: a new service on the same file has every queued nudge, in
// order, and none that ended.
func TestRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nudges.json")
	s, _ := newService(t, Config{Path: path})
	other := wire.Identity{Rig: "gastown", Name: "nux"}
	a := enqueue(t, s, Request{Text: "first"})
	b := enqueue(t, s, Request{Text: "second", Priority: Urgent})
	c := enqueue(t, s, Request{Polecat: other, Text: "nux's"})
	gone := enqueue(t, s, Request{Text: "cancelled"})
	if _, err := s.Cancel(gone.ID); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("queue file: %v, %v; want it private", fi, err)
	}
	restarted, _ := newService(t, Config{Path: path})
	tests := []struct {
		id   wire.Identity
		want []Item
	}{
		{furiosa, []Item{a, b}},
		{other, []Item{c}},
	}
	for _, tc := range tests {
		got := restarted.List(tc.id)
		if len(got) != len(tc.want) {
			t.Fatalf("%s after restart: %+v, want %+v", tc.id, got, tc.want)
		}
		for i := range got {
			if got[i].ID != tc.want[i].ID || got[i].Text != tc.want[i].Text || got[i].Priority != tc.want[i].Priority || !got[i].Expires.Equal(tc.want[i].Expires) {
				t.Errorf("%s[%d] after restart: %+v, want %+v", tc.id, i, got[i], tc.want[i])
			}
		}
	}
	if _, err := restarted.Wait(context.Background(), gone.ID); err == nil {
		t.Error("a nudge that ended before the restart is still known")
	}
}

// TestReadsTodaysFile: testdata/nudges.json was written by the release
// before the queue had a stored type of its own; a service started on it
// has every nudge, field for field, and writes them back as they were.
func TestReadsTodaysFile(t *testing.T) {
	fixture, err := os.ReadFile(filepath.Join("testdata", "nudges.json"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "nudges.json")
	if err := os.WriteFile(path, fixture, 0o600); err != nil {
		t.Fatal(err)
	}
	s, _ := newService(t, Config{Path: path})
	at := func(v string) time.Time {
		tm, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	want := []api.NudgeItem{
		{ID: "nsj5a3dadfn52", Polecat: api.Identity(furiosa), Text: "check your mail", Mode: wire.NudgeWaitIdle, Priority: Normal,
			Created: at("2026-11-28T19:10:01.508982767Z"), Expires: at("2026-11-28T19:40:01.508982767Z")},
		{ID: "nunjhygpffwoo", Polecat: api.Identity(furiosa), Text: "stop: the convoy landed", Mode: wire.NudgeImmediate, Priority: Urgent,
			Created: at("2026-11-28T19:10:01.51136325Z"), Expires: at("2026-11-28T21:10:01.51136325Z")},
		{ID: "nnyemogyb3xk5", Polecat: api.Identity(furiosa), Text: "queued for later", Mode: wire.NudgeQueue, Priority: Normal,
			Created: at("2026-11-28T19:10:01.512215033Z"), Expires: at("2026-11-28T20:10:01.512215033Z"),
			Attempts: 2, Why: "busy: the agent is typing"},
	}
	got := s.List(furiosa)
	if len(got) != len(want) {
		t.Fatalf("queue read from today's file: %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("nudge %d read from today's file: %+v, want %+v", i, got[i], want[i])
		}
	}
	// Saving (an enqueue, then its cancel) writes the file back as it was.
	extra := enqueue(t, s, Request{Text: "extra"})
	if _, err := s.Cancel(extra.ID); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != string(fixture) {
		t.Errorf("today's file written back:\n%s\nwant\n%s (err %v)", b, fixture, err)
	}
}

// TestWaitQueued: a wait that ends before the nudge does answers queued,
// with why it waits and when it expires; an unknown id is an error.
func TestWaitQueued(t *testing.T) {
	s, _ := newService(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	it := enqueue(t, s, Request{Text: "hello"})
	wctx, wcancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer wcancel()
	o, err := s.Wait(wctx, it.ID)
	if err != nil || o.Outcome != wire.NudgeQueued || !o.Expires.Equal(it.Expires) || !strings.Contains(o.Detail, "not connected") {
		t.Errorf("Wait on a disconnected polecat's nudge: %+v, %v", o, err)
	}
	if _, err := s.Wait(context.Background(), "nnothere"); err == nil || !strings.Contains(err.Error(), "no nudge nnothere") {
		t.Errorf("Wait for an unknown nudge: %v", err)
	}
}

// TestNudge: an operator's nudge in queue mode answers queued at once,
// whatever wait was asked; in wait-idle mode it waits up to Wait; one
// dropped from a full queue is named in the outcome; a bad request is
// refused before anything is queued.
func TestNudge(t *testing.T) {
	s, _ := newService(t, Config{Depth: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	start := time.Now()
	first, err := s.Nudge(ctx, furiosa, api.NudgeRequest{Text: "one", Mode: wire.NudgeQueue, Wait: time.Minute})
	if err != nil || first.Outcome != wire.NudgeQueued || time.Since(start) > 10*time.Second {
		t.Fatalf("queue mode: %+v, %v after %v; want queued at once", first, err, time.Since(start))
	}
	start = time.Now()
	second, err := s.Nudge(ctx, furiosa, api.NudgeRequest{Text: "two", Wait: 300 * time.Millisecond})
	if err != nil || second.Outcome != wire.NudgeQueued || time.Since(start) < 300*time.Millisecond {
		t.Fatalf("wait-idle: %+v, %v after %v; want queued after the wait", second, err, time.Since(start))
	}
	if second.Dropped == nil || second.Dropped.ID != first.ID || second.Dropped.Outcome != wire.NudgeDropped {
		t.Errorf("the nudge dropped from the full queue: %+v, want %s", second.Dropped, first.ID)
	}
	if _, err := s.Nudge(ctx, furiosa, api.NudgeRequest{Text: "x", Mode: "shout"}); err == nil || !strings.Contains(err.Error(), "unknown mode") {
		t.Errorf("a bad mode: %v", err)
	}
	if n := len(s.List(furiosa)); n != 1 {
		t.Errorf("%d queued, want 1", n)
	}
}

// TestConfig: New takes zero fields as the defaults and refuses a field
// out of its range, naming it.
func TestConfig(t *testing.T) {
	valid := func() Config {
		c := DefaultConfig()
		c.Path, c.Logger = filepath.Join(t.TempDir(), "nudges.json"), slog.New(slog.DiscardHandler)
		return c
	}
	settingstest.Run(t, valid, func(c Config) error { _, err := New(c, nil); return err }, []settingstest.Case[Config]{
		{Name: "defaults"},
		{Name: "zero is the default", Set: func(c *Config) { *c = Config{Path: c.Path} }},
		{Name: "no path", Set: func(c *Config) { c.Path = "" }, Want: "nudge: Path is required"},
		{Name: "negative TTL", Set: func(c *Config) { c.TTL = -time.Second }, Want: "TTL is -1s: it must be above 0"},
		{Name: "negative urgent TTL", Set: func(c *Config) { c.UrgentTTL = -time.Second }, Want: "UrgentTTL is -1s: it must be above 0"},
		{Name: "negative depth", Set: func(c *Config) { c.Depth = -1 }, Want: "Depth is -1: it must be above 0"},
		{Name: "negative attempt", Set: func(c *Config) { c.Attempt = -time.Second }, Want: "Attempt is -1s: it must be above 0"},
		{Name: "negative retry", Set: func(c *Config) { c.Retry = -time.Second }, Want: "Retry is -1s: it must be above 0"},
	})
}
