package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/cli/clitest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

func TestNudgeExit(t *testing.T) {
	for outcome, want := range map[string]int{
		wire.NudgeSubmitted: 0, wire.NudgeQueued: 3, wire.NudgeExpired: 4,
		wire.NudgeFailed: 1, wire.NudgeDropped: 1, wire.NudgeCancelled: 1, "unheard-of": 1,
	} {
		if got := nudgeExit(outcome); got != want {
			t.Errorf("nudgeExit(%q) = %d, want %d", outcome, got, want)
		}
	}
}

// TestNudgeCommand: against a running hostd with the polecat away (a
// join token made, the container not yet joined), a nudge is queued (exit
// 3), listed, cancelled (exit 0), and one whose time runs out expires
// (exit 4); the message comes from the arguments or standard input. A
// nudge to a name hostd never heard of fails at once.
func TestNudgeCommand(t *testing.T) {
	town, _ := clitest.StartHostd(t)
	if got, code := hostd.Run(t, town, "", "token", "create", "gastown/furiosa"); code != 0 {
		t.Fatalf("token create: exit %d, %q", code, got)
	}
	start := time.Now()
	if got, code := hostd.Run(t, town, "", "nudge", "gastown/furiosaa", "hello"); code != 1 || time.Since(start) > 5*time.Second ||
		!strings.HasPrefix(got, "hostd: no polecat gastown/furiosaa: it has never connected") {
		t.Fatalf("nudge to a mistyped name: exit %d after %v, %q; want 1 at once, saying it is unknown", code, time.Since(start), got)
	}
	got, code := hostd.Run(t, town, "", "nudge", "gastown/furiosa", "--no-wait", "hello", "there")
	m := regexp.MustCompile(`^gastown/furiosa: nudge (\S+) queued until \S+: `).FindStringSubmatch(got)
	if code != 3 || m == nil || strings.Contains(got, "hostd:") {
		t.Fatalf("nudge --no-wait: exit %d, %q; want 3 and the queued line alone", code, got)
	}
	if got, code := hostd.Run(t, town, "", "nudge", "gastown/furiosa", "--list"); code != 0 || !strings.Contains(got, m[1]) || !strings.Contains(got, "hello there") {
		t.Fatalf("nudge --list: exit %d, %q; want 0 and nudge %s", code, got, m[1])
	}
	if got, code := hostd.Run(t, town, "", "nudge", "gastown/furiosa", "--cancel", m[1]); code != 0 || got != "gastown/furiosa: nudge "+m[1]+" cancelled\n" {
		t.Fatalf("nudge --cancel: exit %d, %q", code, got)
	}
	got, code = hostd.Run(t, town, "from stdin\n", "nudge", "gastown/furiosa", "--json", "--mode", "queue", "-")
	var o api.NudgeOutcome
	if err := json.Unmarshal([]byte(got), &o); code != 3 || err != nil || o.Outcome != wire.NudgeQueued {
		t.Fatalf("nudge --json from stdin: exit %d, %v: %q", code, err, got)
	}
	if got, code := hostd.Run(t, town, "", "nudge", "gastown/furiosa", "--list", "--json"); code != 0 || !strings.Contains(got, `"from stdin\n"`) {
		t.Fatalf("nudge --list --json: exit %d, %q; want the message read from stdin", code, got)
	}
	if got, code := hostd.Run(t, town, "", "nudge", "gastown/furiosa", "--ttl", "100ms", "--wait", "10s", "late"); code != 4 || !strings.Contains(got, " expired: ") {
		t.Fatalf("nudge that expires: exit %d, %q; want 4", code, got)
	}
	if got, code := hostd.Run(t, town, " \n", "nudge", "gastown/furiosa"); code != 1 || got != "hostd: no message: give it as arguments or on standard input\n" {
		t.Fatalf("nudge without a message: exit %d, %q", code, got)
	}
}
