package render

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/polecat-sidecar/sidecar/heartbeat"
	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/internal/termsafe"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
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
		p := api.Polecat{Identity: wire.Identity{Rig: "gastown", Name: "furiosa"}, Rig: "gastown", Name: "furiosa",
			State: "disconnected", Reason: "tunnel gone: peer closed the session: " + h, Command: h, StateSince: time.Now(), LastBeat: time.Now()}
		d := api.PolecatDetail{Polecat: p,
			Beat:   &heartbeat.Beat{Seq: 1, Interval: 5, Session: heartbeat.Session{Name: h, State: heartbeat.SessionRunning, Names: []string{h}}, Agent: heartbeat.Agent{Version: h}},
			Events: []heartbeat.Event{{Time: time.Now(), To: heartbeat.Disconnected, Reason: h}}}
		var out bytes.Buffer
		for _, colour := range []bool{false, true} {
			Status(&out, api.Status{Polecats: []api.Polecat{p}, Upstream: []api.UpstreamItem{{Rig: "gastown", Branch: "polecat/furiosa-" + h, LastError: h}}}, colour)
			Detail(&out, d, colour)
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

func TestStatusShowsListenerTrouble(t *testing.T) {
	cases := []struct {
		name string
		l    tunnel.ListenerHealth
		want string
	}{
		{"healthy", tunnel.ListenerHealth{Transport: "tcp", Up: true}, ""},
		{"old errors", tunnel.ListenerHealth{Transport: "tcp", Up: true, AcceptErrors: 3, LastError: "x", LastErrorAt: time.Now().Add(-time.Hour)}, ""},
		{"failing", tunnel.ListenerHealth{Transport: "tcp", Up: true, AcceptErrors: 9, LastError: "accept4: too many open files", LastErrorAt: time.Now()},
			"tcp listener failing to accept (9 in all"},
		{"stopped", tunnel.ListenerHealth{Transport: "quic", LastError: "closed", LastErrorAt: time.Now()}, "quic listener STOPPED"},
	}
	for _, c := range cases {
		var out bytes.Buffer
		Status(&out, api.Status{Listeners: []tunnel.ListenerHealth{c.l}}, false)
		got := strings.Contains(out.String(), "listener")
		if (c.want == "" && got) || (c.want != "" && !strings.Contains(out.String(), c.want)) {
			t.Errorf("%s: status shows %q, want %q", c.name, out.String(), c.want)
		}
	}
}
