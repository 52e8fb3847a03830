package heartbeat

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

var furiosa = wire.Identity{Rig: "gastown", Name: "furiosa"}

// clock is a fake clock for the judge.
type clock struct{ t time.Time }

func (c *clock) now() time.Time      { return c.t }
func (c *clock) add(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock               { return &clock{t: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)} }
func beat(state string, idle float64) *Beat {
	return &Beat{Seq: 1, Interval: 5, Session: Session{Name: "polecat", State: state, IdleSeconds: idle}}
}

func newJudge(c *clock) (*Judge, *[]Event) {
	var evs []Event
	j := NewJudge(Thresholds{}, c.now, func(_ Record, e Event) { evs = append(evs, e) })
	return j, &evs
}

func state(t *testing.T, j *Judge) State {
	t.Helper()
	r, ok := j.Get(furiosa)
	if !ok {
		t.Fatal("no record")
	}
	return r.State
}

func TestJudgeLifecycle(t *testing.T) {
	c := newClock()
	j, evs := newJudge(c)
	j.Connected(furiosa)
	if s := state(t, j); s != Starting {
		t.Fatalf("connected without a beat: %s, want starting (waiting for the first beat)", s)
	}
	j.Beat(furiosa, beat(SessionRunning, 1))
	if s := state(t, j); s != Working {
		t.Fatalf("after a beat: %s", s)
	}
	// Beats keep arriving with output: working.
	for range 10 {
		c.add(5 * time.Second)
		j.Beat(furiosa, beat(SessionRunning, 2))
		j.Tick()
	}
	if s := state(t, j); s != Working {
		t.Fatalf("beating: %s", s)
	}
	// Beats stop while the tunnel holds: stale after 3 intervals, not before.
	c.add(15 * time.Second)
	j.Tick()
	if s := state(t, j); s != Working {
		t.Fatalf("15s after the last beat: %s, want still working", s)
	}
	c.add(time.Second)
	j.Tick()
	if s := state(t, j); s != Stale {
		t.Fatalf("16s after the last beat: %s, want stale", s)
	}
	// Beats resume.
	j.Beat(furiosa, beat(SessionRunning, 0))
	if s := state(t, j); s != Working {
		t.Fatalf("beats resumed: %s", s)
	}
	// Tunnel cut: disconnected, then dead after the grace period.
	j.Disconnected(furiosa, "idle timeout")
	c.add(119 * time.Second)
	j.Tick()
	if s := state(t, j); s != Disconnected {
		t.Fatalf("119s disconnected: %s", s)
	}
	c.add(time.Second)
	j.Tick()
	if r, _ := j.Get(furiosa); r.State != Dead || !strings.Contains(r.Reason, "idle timeout") {
		t.Fatalf("120s disconnected: %s (%s), want dead with the reason", r.State, r.Reason)
	}
	// Back: working again.
	j.Connected(furiosa)
	j.Beat(furiosa, beat(SessionRunning, 0))
	if s := state(t, j); s != Working {
		t.Fatalf("after reconnecting: %s", s)
	}
	// The session's command exits: dead at the next beat, with the code.
	code := 3
	j.Beat(furiosa, &Beat{Seq: 2, Interval: 5, Session: Session{State: SessionExited, ExitCode: &code}})
	if r, _ := j.Get(furiosa); r.State != Dead || !strings.Contains(r.Reason, "code 3") {
		t.Fatalf("session exited: %s (%s)", r.State, r.Reason)
	}
	// Why it exited, when the agent could tell, is the reason's end.
	code = ExitNotFound
	j.Beat(furiosa, &Beat{Seq: 3, Interval: 5, Session: Session{State: SessionExited, ExitCode: &code, ExitReason: "gt-agent: command not found: claude"}})
	if r, _ := j.Get(furiosa); r.State != Dead || r.Reason != "session exited with code 127: gt-agent: command not found: claude" {
		t.Fatalf("session not run: %s (%s)", r.State, r.Reason)
	}
	j.Revoke(furiosa, time.Time{})
	if s := state(t, j); s != Revoked {
		t.Fatalf("revoked: %s", s)
	}
	want := []State{Starting, Working, Stale, Working, Disconnected, Dead, Starting, Working, Dead, Revoked}
	var got []State
	for _, e := range *evs {
		got = append(got, e.To)
		if e.Reason == "" || e.Time.IsZero() {
			t.Errorf("event without reason or time: %+v", e)
		}
	}
	if strings.Join(states(got), " ") != strings.Join(states(want), " ") {
		t.Errorf("transitions:\n got %v\nwant %v", got, want)
	}
}

func states(s []State) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = string(x)
	}
	return out
}

// TestJudgeIdleForAnHour: an alive session without output stays idle for an
// hour of beats and never becomes dead (Gas Town's false zombies).
func TestJudgeIdleForAnHour(t *testing.T) {
	c := newClock()
	j, evs := newJudge(c)
	j.Connected(furiosa)
	j.Beat(furiosa, beat(SessionRunning, 0))
	idle := 0.0
	for elapsed := time.Duration(0); elapsed < time.Hour; elapsed += 5 * time.Second {
		c.add(5 * time.Second)
		idle += 5
		j.Beat(furiosa, beat(SessionRunning, idle))
		j.Tick()
		s := state(t, j)
		if s == Dead || s == Stale || s == Disconnected {
			t.Fatalf("after %v idle: %s", elapsed, s)
		}
		if idle > 300 && s != Idle {
			t.Fatalf("after %v without output: %s, want idle", elapsed, s)
		}
	}
	if n := len(*evs); n != 3 {
		t.Errorf("%d transitions in an hour of idling, want 3 (starting until the first beat, working, idle)", n)
	}
	// Output resumes: working.
	j.Beat(furiosa, beat(SessionRunning, 0))
	if s := state(t, j); s != Working {
		t.Fatalf("output again: %s", s)
	}
}

func TestJudgeIdleAdvancesBetweenBeats(t *testing.T) {
	c := newClock()
	j, _ := newJudge(c)
	j.Connected(furiosa)
	j.Beat(furiosa, beat(SessionRunning, 298))
	c.add(3 * time.Second)
	j.Tick()
	if s := state(t, j); s != Idle {
		t.Fatalf("298s idle at the beat plus 3s since: %s, want idle", s)
	}
}

func TestJudgeRestore(t *testing.T) {
	c := newClock()
	j, _ := newJudge(c)
	j.Connected(furiosa)
	j.Beat(furiosa, beat(SessionRunning, 0))
	saved := j.Snapshot()

	c.add(time.Minute)
	j2, _ := newJudge(c)
	j2.Restore(saved)
	j2.Tick()
	r, _ := j2.Get(furiosa)
	if r.State != Working || !r.Restored {
		t.Fatalf("restored: %s restored=%v; want the last known state, marked", r.State, r.Restored)
	}
	if len(r.Events) == 0 {
		t.Error("events were not restored")
	}
	c.add(2 * time.Minute)
	j2.Tick()
	if r, _ := j2.Get(furiosa); r.State != Dead {
		t.Fatalf("not back within the grace after restart: %s", r.State)
	}
	j2.Connected(furiosa)
	j2.Beat(furiosa, beat(SessionRunning, 0))
	if r, _ := j2.Get(furiosa); r.State != Working || r.Restored {
		t.Fatalf("back: %s restored=%v", r.State, r.Restored)
	}
}

func TestJudgeNotFound(t *testing.T) {
	c := newClock()
	j, _ := newJudge(c)
	j.Connected(furiosa)
	j.Beat(furiosa, beat(SessionNotFound, -1))
	if r, _ := j.Get(furiosa); r.State != Dead || r.Reason != "session not found" {
		t.Fatalf("%s (%s)", r.State, r.Reason)
	}
	j.Beat(furiosa, beat(SessionRunning, -1))
	if s := state(t, j); s != Working {
		t.Fatalf("unknown idle time counts as working: %s", s)
	}
}

// TestJudgeForget: a polecat whose tunnel is down is forgotten (and
// comes back if it connects again, but not when revoked again); a
// connected one is refused, an unknown one is no record.
func TestJudgeForget(t *testing.T) {
	c := newClock()
	j, _ := newJudge(c)
	if found, err := j.Forget(furiosa); found || err != nil {
		t.Fatalf("unknown: %v, %v", found, err)
	}
	j.Connected(furiosa)
	if found, err := j.Forget(furiosa); !found || !errors.Is(err, ErrConnected) {
		t.Fatalf("connected: %v, %v; want ErrConnected", found, err)
	}
	j.Disconnected(furiosa, "gone")
	c.add(time.Hour)
	j.Tick()
	if found, err := j.Forget(furiosa); !found || err != nil {
		t.Fatalf("dead: %v, %v", found, err)
	}
	if _, ok := j.Get(furiosa); ok || len(j.Snapshot()) != 0 {
		t.Fatal("still recorded after Forget")
	}
	// A revocation hostd applies again (at each start) and a tick do not
	// bring a forgotten polecat back, nor make one never seen.
	j.Revoke(furiosa, time.Time{})
	j.Revoke(wire.Identity{Rig: "gastown", Name: "never"}, c.t)
	j.Tick()
	if snap := j.Snapshot(); len(snap) != 0 {
		t.Fatalf("a revocation made records of polecats the judge does not know: %+v", snap)
	}
	j.Connected(furiosa)
	if state(t, j) != Starting {
		t.Errorf("back after Forget as %s", state(t, j))
	}
}

// sandboxBeat is a beat from a sandbox's agent up for uptime: its
// session in state, never started when fresh.
func sandboxBeat(seq uint64, state string, fresh bool, uptime time.Duration) *Beat {
	return &Beat{Seq: seq, Interval: 5, Session: Session{Name: "polecat", State: state, NeverStarted: fresh, IdleSeconds: 0},
		Agent: Agent{Uptime: uptime.Seconds()}}
}

// TestJudgeStartsQuietly: a polecat coming up, coming back and being made
// never looks stale or dead for it: the time between a tunnel coming up
// and its first beat, and a sandbox's time before its first session, are
// starting (a reconnect says so); a newer tunnel replacing one still up is
// no change at all. What is wrong still shows: no beat for long enough is
// stale, a first session that never comes is dead after the grace from
// the first beat without one (hostd's clock: whatever the polecat says of
// its agent's uptime, however often it reconnects), and a session gone
// from a sandbox that had one is dead at once.
func TestJudgeStartsQuietly(t *testing.T) {
	type step struct {
		do     func(j *Judge, c *clock)
		state  State
		reason string // the reason contains it
	}
	connect := func(j *Judge, _ *clock) { j.Connected(furiosa) }
	disconnect := func(j *Judge, _ *clock) { j.Disconnected(furiosa, "idle timeout") }
	wait := func(d time.Duration) func(*Judge, *clock) {
		return func(j *Judge, c *clock) { c.add(d); j.Tick() }
	}
	send := func(b *Beat) func(*Judge, *clock) { return func(j *Judge, _ *clock) { j.Beat(furiosa, b) } }
	// noSession beats every 5 s for d from a sandbox without a session
	// yet whose agent says it has been up uptime(d so far).
	noSession := func(d time.Duration, uptime func(time.Duration) time.Duration) func(*Judge, *clock) {
		return func(j *Judge, c *clock) {
			for elapsed := 5 * time.Second; elapsed <= d; elapsed += 5 * time.Second {
				c.add(5 * time.Second)
				j.Beat(furiosa, sandboxBeat(2, SessionNotFound, true, uptime(elapsed)))
			}
		}
	}
	upFrom := func(start time.Duration) func(time.Duration) time.Duration {
		return func(elapsed time.Duration) time.Duration { return start + elapsed }
	}
	justStarted := func(time.Duration) time.Duration { return 0 }
	running := sandboxBeat(1, SessionRunning, false, time.Second)
	tests := []struct {
		name  string
		steps []step
		// events are the transitions, in order.
		events []State
	}{
		{"connected, then beating", []step{
			{connect, Starting, "connected, waiting for the first beat"},
			{wait(15 * time.Second), Starting, "waiting for the first beat"},
			{send(running), Working, "beating"},
		}, []State{Starting, Working}},
		{"connected, never beating", []step{
			{connect, Starting, ""},
			{wait(16 * time.Second), Stale, "no beat in 15s"},
		}, []State{Starting, Stale}},
		{"a reconnect", []step{
			{connect, Starting, ""},
			{send(running), Working, ""},
			{disconnect, Disconnected, "idle timeout"},
			{wait(3 * time.Second), Disconnected, ""},
			{connect, Starting, "reconnected, waiting for the first beat"},
			{send(sandboxBeat(2, SessionRunning, false, 10*time.Second)), Working, ""},
		}, []State{Starting, Working, Disconnected, Starting, Working}},
		{"a newer tunnel replacing one still up", []step{
			{connect, Starting, ""},
			{send(running), Working, ""},
			{wait(4 * time.Second), Working, ""},
			{connect, Working, "beating"},
			{wait(10 * time.Second), Working, ""},
			{wait(2 * time.Second), Stale, "no beat for 15s"},
		}, []State{Starting, Working, Stale}},
		{"a fresh sandbox until its first session", []step{
			{connect, Starting, ""},
			{send(sandboxBeat(1, SessionNotFound, true, time.Second)), Starting, "no session yet"},
			{wait(4 * time.Second), Starting, "no session yet"},
			{send(sandboxBeat(2, SessionNotFound, true, 6*time.Second)), Starting, "no session yet"},
			{send(sandboxBeat(3, SessionRunning, false, 11*time.Second)), Working, ""},
		}, []State{Starting, Working}},
		{"a sandbox whose first session never comes", []step{
			{connect, Starting, ""},
			{send(sandboxBeat(1, SessionNotFound, true, time.Second)), Starting, "no session yet"},
			{noSession(115*time.Second, upFrom(time.Second)), Starting, "no session yet"},
			{wait(4 * time.Second), Starting, ""},
			{wait(time.Second), Dead, "no session has started in the 2m0s since hostd first heard the sandbox had none"},
			{send(sandboxBeat(2, SessionRunning, false, 125*time.Second)), Working, ""},
		}, []State{Starting, Dead, Working}},
		// The polecat says what it likes of its agent's uptime: the bound
		// is hostd's clock.
		{"a sandbox whose agent always says it just started", []step{
			{connect, Starting, ""},
			{send(sandboxBeat(1, SessionNotFound, true, 0)), Starting, "no session yet"},
			{noSession(115*time.Second, justStarted), Starting, "no session yet"},
			{noSession(5*time.Second, justStarted), Dead, "no session has started in the 2m0s"},
			{send(sandboxBeat(99, SessionNotFound, true, 0)), Dead, ""},
		}, []State{Starting, Dead}},
		{"a sandbox whose agent reconnects every minute, never with a session", []step{
			{connect, Starting, ""},
			{send(sandboxBeat(1, SessionNotFound, true, 0)), Starting, "no session yet"},
			{noSession(50*time.Second, justStarted), Starting, "no session yet"},
			{disconnect, Disconnected, ""},
			{wait(5 * time.Second), Disconnected, ""},
			{connect, Starting, "reconnected"},
			{send(sandboxBeat(1, SessionNotFound, true, 0)), Starting, "no session yet"},
			{noSession(50*time.Second, justStarted), Starting, "no session yet"},
			{disconnect, Disconnected, ""},
			{wait(5 * time.Second), Disconnected, ""},
			{connect, Starting, "reconnected"},
			{send(sandboxBeat(1, SessionNotFound, true, 0)), Starting, "no session yet"},
			{noSession(5*time.Second, justStarted), Starting, "no session yet"},
			{wait(4 * time.Second), Starting, "no session yet"},
			{wait(time.Second), Dead, "no session has started in the 2m0s"},
			{disconnect, Disconnected, ""},
			{connect, Starting, "reconnected"},
			{send(sandboxBeat(1, SessionNotFound, true, 0)), Dead, "no session has started in the 2m0s"},
		}, []State{Starting, Disconnected, Starting, Disconnected, Starting, Dead, Disconnected, Starting, Dead}},
		// Its first session is what ends the bound: one never started
		// after it (a sandbox made again under its name) has its own.
		{"a sandbox made again after a session", []step{
			{connect, Starting, ""},
			{send(sandboxBeat(1, SessionNotFound, true, 0)), Starting, "no session yet"},
			{noSession(115*time.Second, justStarted), Starting, ""},
			{send(running), Working, ""},
			{disconnect, Disconnected, ""},
			{wait(time.Minute), Disconnected, ""},
			{connect, Starting, "reconnected"},
			{send(sandboxBeat(1, SessionNotFound, true, 0)), Starting, "no session yet"},
			{noSession(115*time.Second, justStarted), Starting, ""},
			{wait(4 * time.Second), Starting, ""},
			{wait(time.Second), Dead, "no session has started in the 2m0s"},
		}, []State{Starting, Working, Disconnected, Starting, Dead}},
		{"a sandbox whose session is gone", []step{
			{connect, Starting, ""},
			{send(running), Working, ""},
			{send(sandboxBeat(2, SessionNotFound, false, 6*time.Second)), Dead, "session not found"},
		}, []State{Starting, Working, Dead}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClock()
			j, evs := newJudge(c)
			for i, st := range tt.steps {
				st.do(j, c)
				r, _ := j.Get(furiosa)
				if r.State != st.state || !strings.Contains(r.Reason, st.reason) {
					t.Fatalf("step %d: %s (%s), want %s (%q)", i, r.State, r.Reason, st.state, st.reason)
				}
			}
			var got []State
			for _, e := range *evs {
				got = append(got, e.To)
			}
			if strings.Join(states(got), " ") != strings.Join(states(tt.events), " ") {
				t.Errorf("transitions %v, want %v", got, tt.events)
			}
		})
	}
}

// TestJudgeRestoredComesBack: a polecat restored after hostd restarted is
// starting when its agent reconnects, not stale, until its first beat.
func TestJudgeRestoredComesBack(t *testing.T) {
	c := newClock()
	j, _ := newJudge(c)
	j.Connected(furiosa)
	j.Beat(furiosa, beat(SessionRunning, 0))
	saved := j.Snapshot()
	c.add(time.Minute)
	j2, evs := newJudge(c)
	j2.Restore(saved)
	j2.Connected(furiosa)
	if r, _ := j2.Get(furiosa); r.State != Starting || r.Restored || r.Reason != "reconnected, waiting for the first beat" {
		t.Fatalf("restored, then connected: %s (%s) restored=%v", r.State, r.Reason, r.Restored)
	}
	j2.Beat(furiosa, beat(SessionRunning, 0))
	if s := state(t, j2); s != Working {
		t.Fatalf("restored, connected and beating: %s", s)
	}
	if len(*evs) != 2 {
		t.Errorf("transitions %+v, want starting, then working", *evs)
	}
}
