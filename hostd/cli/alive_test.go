package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/heartbeat"
	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/cli/clitest"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestAliveJSON: alive --json prints one object with the polecat's state
// and keeps the exit status (3: connected but not beating yet, not known);
// a name hostd never heard of is an error saying so.
func TestAliveJSON(t *testing.T) {
	town, addr := clitest.StartHostd(t)
	furiosa := wire.Identity{Rig: "gastown", Name: "furiosa"}
	clitest.Connect(t, town, addr, furiosa)
	got, code := hostd.Run(t, town, "", "alive", "gastown/furiosa", "--json")
	var a aliveness
	if err := json.Unmarshal([]byte(got), &a); code != exitNotKnown || err != nil || strings.Count(got, "\n") != 1 {
		t.Fatalf("alive --json: exit %d, %v: %q; want 3 and one JSON object", code, err, got)
	}
	if want := (aliveness{Identity: furiosa, Alive: false, State: "starting", Reason: "connected, waiting for the first beat"}); a != want {
		t.Errorf("alive --json: %+v, want %+v", a, want)
	}
	if got, code := hostd.Run(t, town, "", "alive", "gastown/nobody", "--json"); code != 1 || !strings.HasPrefix(got, "hostd: no polecat gastown/nobody: it has never connected") {
		t.Errorf("alive --json of an unknown polecat: exit %d, %q", code, got)
	}
}

// TestAliveExit: alive's exit status for each state: 0 only for a state
// hostd judged since it started; a last known state from before it
// restarted, or a polecat starting, is not known (3), except a last known
// death or a revocation.
func TestAliveExit(t *testing.T) {
	for _, tt := range []struct {
		state    heartbeat.State
		restored bool
		want     int
	}{
		{heartbeat.Working, false, 0},
		{heartbeat.Idle, false, 0},
		{heartbeat.Starting, false, exitNotKnown},
		{heartbeat.Stale, false, exitNotAlive},
		{heartbeat.Disconnected, false, exitNotAlive},
		{heartbeat.Dead, false, exitNotAlive},
		{heartbeat.Revoked, false, exitNotAlive},
		{heartbeat.Working, true, exitNotKnown},
		{heartbeat.Idle, true, exitNotKnown},
		{heartbeat.Stale, true, exitNotKnown},
		{heartbeat.Disconnected, true, exitNotKnown},
		{heartbeat.Dead, true, exitNotAlive},
		{heartbeat.Revoked, true, exitNotAlive},
	} {
		if got := aliveExit(api.Polecat{State: string(tt.state), Restored: tt.restored}); got != tt.want {
			t.Errorf("%s (restored %v): exit %d, want %d", tt.state, tt.restored, got, tt.want)
		}
	}
}

// TestAliveRestored: after hostd restarts, a polecat that was working is
// not known (3) until its agent is back and beating, and --wait waits for
// that: 0 once it beats, 3 when the wait passes first.
func TestAliveRestored(t *testing.T) {
	town := clitest.NewTown(t)
	furiosa := wire.Identity{Rig: "gastown", Name: "furiosa"}
	working := []heartbeat.Record{{Identity: furiosa, State: heartbeat.Working, Since: time.Now().Add(-time.Hour), Reason: "beating, session running"}}
	if err := state.Save(state.For(town).Liveness(), working); err != nil {
		t.Fatal(err)
	}
	addr := clitest.Serve(t, town)
	hostd.Check(t, town, []clitest.Want{
		{Args: []string{"alive", "gastown/furiosa"}, Code: exitNotKnown, Out: "gastown/furiosa: working? (beating, session running; the last known state, from before hostd restarted"},
		{Args: []string{"alive", "gastown/furiosa", "--json"}, Code: exitNotKnown, Out: `"alive":false,"state":"working","restored":true`},
	})
	start := time.Now()
	if got, code := hostd.Run(t, town, "", "alive", "gastown/furiosa", "--wait", "300ms"); code != exitNotKnown || time.Since(start) < 300*time.Millisecond {
		t.Errorf("alive --wait 300ms with the agent away: exit %d after %v, %q; want 3 after the wait", code, time.Since(start), got)
	}
	// The agent is back (starting: not known either) and beats while
	// alive waits.
	s := clitest.Connect(t, town, addr, furiosa)
	beaten := make(chan struct{})
	go func() {
		defer close(beaten)
		time.Sleep(300 * time.Millisecond)
		sendBeat(t, s)
	}()
	start = time.Now()
	got, code := hostd.Run(t, town, "", "alive", "gastown/furiosa", "--wait", "20s")
	<-beaten
	if code != 0 || !strings.Contains(got, "gastown/furiosa: working (beating, session running)") || time.Since(start) < 300*time.Millisecond {
		t.Errorf("alive --wait 20s while the agent comes back: exit %d after %v, %q; want 0 once it beats", code, time.Since(start), got)
	}
	if got, code := hostd.Run(t, town, "", "alive", "gastown/furiosa", "--wait", "-1s"); code != 1 || !strings.Contains(got, "--wait -1s") {
		t.Errorf("alive --wait -1s: exit %d, %q; want it refused", code, got)
	}
}

// sendBeat sends one beat of a running session on s.
func sendBeat(t *testing.T, s *tunnel.Session) {
	st, err := s.OpenStream(context.Background(), wire.KindHeartbeat, nil)
	if err != nil {
		t.Error(err)
		return
	}
	b := heartbeat.Beat{Seq: 1, Interval: 5, Session: heartbeat.Session{Name: "polecat", State: heartbeat.SessionRunning}, Agent: heartbeat.Agent{Transport: "quic"}}
	if err := heartbeat.NewWriter(st).Write(&b); err != nil {
		t.Error(err)
	}
}
