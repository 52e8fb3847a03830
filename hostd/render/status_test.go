package render

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/polecat-sidecar/sidecar/heartbeat"
	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/internal/termsafe"
)

// TestStatusEscapesPolecatText: whatever a polecat puts in what hostd
// shows (its close reason, command, process names, version), the
// operator's terminal gets no control character from it, coloured (when
// status writes under the escaping writer) or not.
func TestStatusEscapesPolecatText(t *testing.T) {
	hostile := []string{
		"\x1b]0;pwned\x07", "\x1b[2J\x1b[H", "line\nbreak", "\r overwrite", "bell\x07", "\x9b31m", "del\x7f", "\u202eevil", "tab\there",
	}
	for _, h := range hostile {
		p := api.Polecat{Identity: api.Identity{Rig: "gastown", Name: "furiosa"}, Rig: "gastown", Name: "furiosa",
			State: "disconnected", Reason: "tunnel gone: peer closed the session: " + h, Command: h, StateSince: time.Now(), LastBeat: time.Now()}
		failure := api.StartFailure{Identity: p.Identity, At: time.Now(), Reason: "cloning gastown into the sandbox: " + h}
		d := api.PolecatDetail{Polecat: p,
			Beat:         &api.Beat{Seq: 1, Interval: 5, Session: api.Session{Name: h, Command: "claude " + h, State: heartbeat.SessionRunning, Names: []string{h}}, Agent: api.Agent{Version: h}},
			Events:       []api.Event{{Time: time.Now(), To: string(heartbeat.Disconnected), Reason: h}},
			StartFailure: &failure}
		var out bytes.Buffer
		for _, colour := range []bool{false, true} {
			Status(&out, api.Status{Polecats: []api.Polecat{p}, Upstream: []api.UpstreamItem{{Rig: "gastown", Branch: "polecat/furiosa-" + h, LastError: h}},
				StartFailures: []api.StartFailure{failure}}, StatusOptions{Width: 40, Colour: colour})
			Detail(&out, d, DetailOptions{Width: 40, Colour: colour})
		}
		text := out.String()
		for _, c := range stateColour { // the colours on a terminal are hostd's own
			text = strings.ReplaceAll(text, c, "")
		}
		text = strings.ReplaceAll(text, "\033[0m", "")
		if !utf8.ValidString(text) {
			t.Fatalf("%q reached the terminal as invalid UTF-8 (a raw C1 byte):\n%s", h, text)
		}
		for i, r := range text {
			if r != '\n' && termsafe.Unsafe(r) {
				t.Fatalf("%q reached the terminal as %q at byte %d:\n%s", h, r, i, text)
			}
		}
		if !strings.Contains(text, `\`) {
			t.Errorf("%q not shown escaped:\n%s", h, text)
		}
	}
}

// TestStatusShowsStartFailures: the polecats hostd run could not start
// are listed under the table, each with how long ago and its whole
// reason, which says what to do, whatever the width; a polecat's detail
// has its own; nothing is said when none failed.
func TestStatusShowsStartFailures(t *testing.T) {
	now := time.Now()
	toast := api.Identity{Rig: "gastown", Name: "toast"}
	why := "image polecat:1 is not among docker's images: build it ('make image'), pull or load it ('docker pull polecat:1'), or set sandbox.image in /home/op/gt/.runtime/hostd/config.yaml to one that is"
	failures := []api.StartFailure{
		{Identity: api.Identity{Rig: "gastown", Name: "nux"}, At: now.Add(-90 * time.Second), Reason: "hostd is not running"},
		{Identity: toast, At: now.Add(-5 * time.Second), Reason: why},
	}
	tests := []struct {
		name  string
		st    api.Status
		width int
		want  string
	}{
		{"none", api.Status{}, 80, ""},
		{"two, at 80 columns", api.Status{StartFailures: failures}, 80,
			"\n2 polecats hostd run could not start (each shown until its next start):\n  gastown/nux, 1m ago: hostd is not running\n  gastown/toast, 5s ago: " + why + "\n"},
		{"one, beside a polecat", api.Status{Polecats: polecats25(now)[:1], StartFailures: failures[1:]}, 0,
			"\n1 polecat hostd run could not start (each shown until its next start):\n  gastown/toast, 5s ago: " + why + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			Status(&out, tt.st, StatusOptions{Width: tt.width})
			if got := strings.Contains(out.String(), "could not start"); (tt.want == "") == got || !strings.HasSuffix(out.String(), tt.want) {
				t.Errorf("status:\n%s\nwant it to end with\n%s", out.String(), tt.want)
			}
		})
	}
	var out bytes.Buffer
	Detail(&out, api.PolecatDetail{Polecat: api.Polecat{Identity: toast, State: "dead", StateSince: now.Add(-5 * time.Second), Reason: "never connected: hostd run could not start it"},
		StartFailure: &failures[1]}, DetailOptions{})
	want := "gastown/toast: dead for 5s: never connected: hostd run could not start it\n  start:     failed 5s ago (hostd run; shown until its next start): " + why + "\n"
	if !strings.HasPrefix(out.String(), want) {
		t.Errorf("detail:\n%s\nwant it to start with\n%s", out.String(), want)
	}
}

func TestStatusShowsListenerTrouble(t *testing.T) {
	cases := []struct {
		name string
		l    api.ListenerHealth
		want string
	}{
		{"healthy", api.ListenerHealth{Transport: "tcp", Up: true}, ""},
		{"old errors", api.ListenerHealth{Transport: "tcp", Up: true, AcceptErrors: 3, LastError: "x", LastErrorAt: time.Now().Add(-time.Hour)}, ""},
		{"failing", api.ListenerHealth{Transport: "tcp", Up: true, AcceptErrors: 9, LastError: "accept4: too many open files", LastErrorAt: time.Now()},
			"tcp listener failing to accept (9 in all"},
		{"stopped", api.ListenerHealth{Transport: "quic", LastError: "closed", LastErrorAt: time.Now()}, "quic listener STOPPED"},
	}
	for _, c := range cases {
		var out bytes.Buffer
		Status(&out, api.Status{Listeners: []api.ListenerHealth{c.l}}, StatusOptions{})
		got := strings.Contains(out.String(), "listener")
		if (c.want == "" && got) || (c.want != "" && !strings.Contains(out.String(), c.want)) {
			t.Errorf("%s: status shows %q, want %q", c.name, out.String(), c.want)
		}
	}
}

// TestStatusShowsRelayConfinement: status names a host that cannot
// confine relayed commands, whether hostd refuses to relay there or the
// operator let it relay unconfined, and says nothing when it confines.
func TestStatusShowsRelayConfinement(t *testing.T) {
	cases := []struct {
		name string
		st   api.Status
		want string
	}{
		{"confined", api.Status{RelayConfinement: "landlock (ABI 7)", RelayConfined: true}, ""},
		{"refused", api.Status{RelayConfinement: "the kernel has no Landlock", RelayRefused: true},
			"relay REFUSED: this host cannot confine relayed gt and bd (the kernel has no Landlock); fix that, or set relay.allow_unconfined"},
		{"unconfined", api.Status{RelayConfinement: "the kernel has no Landlock"}, "relay UNCONFINED (relay.allow_unconfined): the kernel has no Landlock"},
		{"no relay", api.Status{}, ""},
	}
	for _, c := range cases {
		var out bytes.Buffer
		Status(&out, c.st, StatusOptions{})
		got := strings.Contains(out.String(), "relay")
		if (c.want == "" && got) || (c.want != "" && !strings.Contains(out.String(), c.want)) {
			t.Errorf("%s: status shows %q, want %q", c.name, out.String(), c.want)
		}
	}
}

var update = flag.Bool("update", false, "rewrite testdata/status-*.txt from what Status prints")

// polecats25 are 25 polecats in every state, restored ones among them,
// with long names, on both transports, RTTs on both sides of 100 ms and
// 1 s, and commands long, short and hostile; their times are mid-way
// through what they show, so the table is the same on every run.
func polecats25(now time.Time) []api.Polecat {
	names := []string{
		"gastown/furiosa", "gastown/nux", "gastown/slit", "gastown/rictus", "gastown/bullet-farmer", "gastown/road-warrior",
		"gastown/people-eater", "gastown/immortan", "gastown/capable", "gastown/toast", "gastown/dag", "gastown/cheedo",
		"gastown/angharad", "gastown/organic-mechanic", "gastown/keeper-of-the-seeds", "gastown/war-boy-with-a-long-name",
		"beads-and-bullets/ace", "beads-and-bullets/valkyrie", "beads-and-bullets/corpus-colossus",
		"beads-and-bullets/bullet-farmers-lieutenant", "beads-and-bullets/splendid", "beads-and-bullets/glory",
		"beads-and-bullets/miss-giddy", "beads-and-bullets/max", "beads-and-bullets/dementus",
	}
	states := []heartbeat.State{heartbeat.Working, heartbeat.Idle, heartbeat.Stale, heartbeat.Disconnected, heartbeat.Dead, heartbeat.Revoked}
	rtts := []float64{0.4, 9.94, 12.3, 99.9, 100.2, 999.4, 1534, 250000}
	commands := []string{"claude --dangerously-skip-permissions", "claude", "bash -c 'while :; do gt prime --hook; sleep 30; done'", "claude\x1b]0;owned\x07"}
	var ps []api.Polecat
	for i, n := range names {
		var id api.Identity
		if err := id.UnmarshalText([]byte(n)); err != nil {
			panic(err)
		}
		st := states[i%len(states)]
		p := api.Polecat{Identity: id, Rig: id.Rig, Name: id.Name, State: string(st), Restored: i%7 == 6,
			StateSince: now.Add(-time.Duration(i*7+1)*time.Minute - 30*time.Second), IdleSeconds: -1}
		if st == heartbeat.Working || st == heartbeat.Idle || st == heartbeat.Stale {
			p.Connected, p.Transport, p.RTTMillis = true, []string{"quic", "tcp"}[i%2], rtts[i%len(rtts)]
		}
		if st != heartbeat.Revoked && i%5 != 4 {
			p.LastBeat, p.SessionState, p.Command = now.Add(-time.Duration(i%4)*10*time.Second-5*time.Second), heartbeat.SessionRunning, commands[i%len(commands)]
			p.CPUPercent, p.RSSBytes, p.IdleSeconds = float64(i*17%230), uint64(i+1)*97<<20, float64(i*41)+0.5
		}
		if st == heartbeat.Dead && p.LastBeat.IsZero() {
			p.SessionState = heartbeat.SessionExited
		}
		ps = append(ps, p)
	}
	return ps
}

// TestStatusFits: with 25 polecats in every state, the table fits 80 and
// 200 columns without cutting a name or a state, dropping the least
// important columns first; every column but the command stays where it
// is whatever its values (an RTT of 100 ms or more included); the polecats
// are counted by state; --state lists only its states. The tables are
// testdata/status-80.txt and status-200.txt (go test -update rewrites
// them).
func TestStatusFits(t *testing.T) {
	now := time.Now()
	st := api.Status{Version: "v0.22.0", Listen: ":9876", Started: now.Add(-3*time.Hour - 30*time.Minute), Polecats: polecats25(now)}
	for _, c := range []struct {
		width   int
		columns string
	}{
		{80, "POLECAT STATE FOR LINK BEAT IDLE"},
		{200, "POLECAT STATE FOR LINK RTT BEAT CPU RSS IDLE COMMAND"},
	} {
		t.Run(fmt.Sprint(c.width), func(t *testing.T) {
			var out bytes.Buffer
			Status(&out, st, StatusOptions{Width: c.width})
			text := out.String()
			golden := filepath.Join("testdata", fmt.Sprintf("status-%d.txt", c.width))
			if *update {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil || string(want) != text {
				t.Errorf("status at %d columns differs from %s (go test -update rewrites it):\n%s", c.width, golden, text)
			}
			lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
			if lines[1] != "25 polecats: 5 working, 4 idle, 4 stale, 4 disconnected, 4 dead, 4 revoked" {
				t.Errorf("counts: %q", lines[1])
			}
			if got := strings.Join(strings.Fields(lines[2]), " "); got != c.columns {
				t.Errorf("columns %q, want %q", got, c.columns)
			}
			for _, p := range st.Polecats {
				if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(p.Identity.String()) + ` +` + p.State + `\??( |$)`).MatchString(text) {
					t.Errorf("%s %s not shown whole", p.Identity, p.State)
				}
			}
			for _, l := range lines[2:] {
				if n := utf8.RuneCountInString(l); n > c.width {
					t.Errorf("%d columns: %q", n, l)
				}
			}
			// Every row's RTT ends where its title does.
			if rtt := strings.Index(lines[2], " RTT"); rtt > 0 {
				for _, l := range lines[3:] {
					if l[rtt+3] == ' ' || l[rtt+4] != ' ' {
						t.Errorf("the RTT column moved: %q", l)
					}
				}
			}
			if c.width == 200 && !strings.Contains(text, `claude\x1b]0;owned\x07`) {
				t.Errorf("a hostile command not shown escaped:\n%s", text)
			}
		})
	}
	var out bytes.Buffer
	Status(&out, st, StatusOptions{Width: 80, States: []string{"stale", "dead"}})
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if lines[1] != "25 polecats: 5 working, 4 idle, 4 stale, 4 disconnected, 4 dead, 4 revoked; listing 8 (stale, dead)" || len(lines) != 3+8 {
		t.Errorf("--state stale,dead:\n%s", out.String())
	}
	for _, l := range lines[3:] {
		if f := strings.Fields(l); f[1] != "stale" && f[1] != "dead" && f[1] != "dead?" && f[1] != "stale?" {
			t.Errorf("listed %q", l)
		}
	}
}

// TestRTTShort: an RTT takes at most 5 characters, whatever its size.
func TestRTTShort(t *testing.T) {
	for ms, want := range map[float64]string{0.04: "0.0ms", 0.4: "0.4ms", 9.94: "9.9ms", 9.96: "10ms", 99.9: "100ms", 100.2: "100ms",
		999.4: "999ms", 999.6: "1.0s", 1534: "1.5s", 99940: "99.9s", 250000: "250s"} {
		if got := rttShort(ms); got != want || len(got) > 5 {
			t.Errorf("rttShort(%v) = %q, want %q", ms, got, want)
		}
	}
}

// TestDetailCommand: one polecat's command has a line of its own, cut to
// the terminal's width like the table's (a Gas Town command carries
// Claude's first prompt: hundreds of characters), whole with no width.
func TestDetailCommand(t *testing.T) {
	long := "claude --dangerously-skip-permissions \"" + strings.Repeat("You are nux, a polecat. ", 16) + "\""
	tests := []struct {
		name    string
		command string
		width   int
		want    string // the command's line
	}{
		{"short", "claude --dangerously-skip-permissions", 80, "  command:   claude --dangerously-skip-permissions"},
		{"long, on 80 columns", long, 80, "  command:   " + long[:80-len("  command:   ")-1] + "~"},
		{"long, on a narrow terminal", long, 20, "  command:   " + long[:minCommand-1] + "~"},
		{"long, whole", long, 0, "  command:   " + long},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := api.PolecatDetail{Polecat: api.Polecat{Identity: api.Identity{Rig: "gastown", Name: "nux"}, State: "working", StateSince: time.Now(), LastBeat: time.Now()},
				Beat: &api.Beat{Seq: 1, Interval: 5, Session: api.Session{Name: "polecat", State: heartbeat.SessionRunning, Command: tt.command}}}
			var out bytes.Buffer
			Detail(&out, d, DetailOptions{Width: tt.width})
			var line string
			for _, l := range strings.Split(out.String(), "\n") {
				if strings.HasPrefix(l, "  command:") {
					line = l
				}
			}
			if line != tt.want {
				t.Errorf("command line %q, want %q\n%s", line, tt.want, out.String())
			}
		})
	}
}

// TestDetailNotStartedYet: a sandbox before its first session says so in
// its session's line, and is counted and coloured as starting.
func TestDetailNotStartedYet(t *testing.T) {
	d := api.PolecatDetail{Polecat: api.Polecat{Identity: api.Identity{Rig: "gastown", Name: "nux"}, State: "starting", Reason: "no session yet: the sandbox's first session has not started",
		StateSince: time.Now(), LastBeat: time.Now()},
		Beat: &api.Beat{Seq: 1, Interval: 5, Session: api.Session{Name: "polecat", State: heartbeat.SessionNotFound, NeverStarted: true}}}
	var out bytes.Buffer
	Detail(&out, d, DetailOptions{Colour: true})
	if text := out.String(); !strings.Contains(text, "\033[34mstarting\033[0m for 0s: no session yet") || !strings.Contains(text, "session:   polecat not_found (no session has run in the container yet)\n") {
		t.Errorf("detail of a sandbox before its first session:\n%s", text)
	}
	out.Reset()
	Status(&out, api.Status{Polecats: []api.Polecat{d.Polecat}}, StatusOptions{})
	if !strings.Contains(out.String(), "1 polecat: 1 starting") {
		t.Errorf("status of a sandbox before its first session:\n%s", out.String())
	}
}
