package api

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestFormatUnchanged: api's own types encode every answer byte for byte
// as the types they replaced did (heartbeat's beats and events, tunnel's
// listener health, wire's identities and sync results), and decode those
// bytes to the same values. testdata/ was written by the code before the
// change (its commit says how), every field set once.
func TestFormatUnchanged(t *testing.T) {
	at := time.Date(2026, 11, 27, 9, 30, 15, 123456789, time.UTC)
	nux := Identity{Rig: "gastown", Name: "nux"}
	toast := Identity{Rig: "gastown", Name: "Toast"}
	code := 127
	p := Polecat{Identity: nux, Rig: "gastown", Name: "nux", State: "working", StateSince: at, Reason: "busy: 3 processes", Restored: true,
		Connected: true, Transport: "quic", Remote: "10.0.0.2:4242", Since: at.Add(-time.Hour), RTTMillis: 0.4, Streams: 3,
		CertSerial: "3f2a1b", CertExpires: at.Add(24 * time.Hour), LastBeat: at.Add(-2 * time.Second), SessionState: "running",
		Command: "claude --dangerously-skip-permissions", Processes: 12, CPUPercent: 37.5, RSSBytes: 512 << 20, IdleSeconds: 4.25, Nudges: 2}
	dead := Polecat{Identity: toast, Rig: "gastown", Name: "Toast", State: "dead", StateSince: at, Reason: "never connected: hostd run could not start it", IdleSeconds: -1}
	failure := StartFailure{Identity: toast, At: at.Add(-time.Minute), Reason: "the image polecat:latest is missing: build it first"}
	status := Status{Version: "v0.22.0", Listen: ":9876", Started: at.Add(-3 * time.Hour), Polecats: []Polecat{p, dead},
		Upstream: []UpstreamItem{{Rig: "gastown", Branch: "polecat/nux-m1", Owner: "nux", Since: at, Attempts: 2, LastError: "rejected", NextTry: at.Add(time.Minute)}},
		Listeners: []ListenerHealth{
			{Transport: "quic", Up: true},
			{Transport: "tcp", Up: true, AcceptErrors: 3, LastError: "accept4: too many open files", LastErrorAt: at, Handshakes: 5, Shed: 7}},
		SyncConflicts: 4, RelayConfinement: "landlock (ABI 7)", RelayConfined: true, RelayRefused: false,
		StartFailures: []StartFailure{failure}}
	detail := PolecatDetail{Polecat: p,
		Beat: &Beat{Seq: 42, Interval: 5,
			Session: Session{Name: "polecat", Command: "claude", State: "exited", NeverStarted: true, ExitCode: &code,
				ExitReason: "gt-agent: command not found: claude", Processes: 12, Names: []string{"claude", "node"},
				CPUSeconds: 81.5, CPUPercent: 37.5, RSSBytes: 512 << 20, Threads: 40, IdleSeconds: 4.25},
			Container: Container{Load1: 1.5, MemAvailable: 2 << 30, DiskFree: 10 << 30, DiskFreeError: "statfs: denied"},
			Agent:     Agent{Version: "v0.22.0", Uptime: 3600.5, Transport: "quic", RTTMillis: 0.35}},
		Events: []Event{
			{Time: at.Add(-time.Minute), To: "working", Reason: "connected"},
			{Time: at, From: "working", To: "idle", Reason: "idle 60s"}},
		StartFailure: &failure}
	bare := PolecatDetail{Polecat: dead, Events: []Event{}}
	result := SyncResult{Files: 10004, Bytes: 500 << 20,
		Changes: []SyncChange{{Path: "notes.md", Action: "merged"}, {Path: "a.txt", Action: "conflict", Copy: "a.txt.container"}},
		More:    3, Skipped: []string{"link-out"}, Error: "refused: too many deletions"}
	lines := []SyncLine{{Progress: &SyncProgress{Files: 5, Bytes: 4096, TotalFiles: 10, TotalBytes: 8192}}, {Result: &result}, {Result: &SyncResult{}}}
	forgotten := Forgotten{Polecat: nux, Listed: true, Last: &dead, Nudges: 1, Removed: []string{"data/gastown/nux"}}
	outcome := NudgeOutcome{ID: "n1", Polecat: nux, Outcome: "dropped", At: at, Detail: "full", Expires: at.Add(time.Hour),
		Dropped: &NudgeOutcome{ID: "n0", Polecat: nux, Outcome: "dropped", At: at}}
	items := []NudgeItem{{ID: "n2", Polecat: nux, Text: "hello", Mode: "wait-idle", Priority: "urgent", Created: at, Expires: at.Add(2 * time.Hour), Attempts: 1, Why: "busy"}}
	syncStatus := SyncStatus{Include: []string{".claude"}, Exclude: []string{"*.key"}, RigInclude: []string{".claude/settings.json"}, MaxStoredBytes: 2 << 30,
		Roots: []SyncRoot{{Polecat: nux, Host: "/town/data/nux", Rig: "/town/gastown/polecats", StoredBytes: 1234, EscapingLinks: []string{"out"}}}}

	for _, tc := range []struct {
		file string
		v    any // the value, as api's types hold it
	}{
		{"status.json", status},
		{"detail.json", []PolecatDetail{detail, bare}},
		{"sync-lines.json", lines},
		{"forgotten.json", forgotten},
		{"nudge-outcome.json", outcome},
		{"nudge-items.json", items},
		{"start-failure.json", failure},
		{"sync-status.json", syncStatus},
	} {
		t.Run(tc.file, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(tc.v, "", "\t")
			if err != nil {
				t.Fatal(err)
			}
			if got = append(got, '\n'); !bytes.Equal(got, want) {
				t.Errorf("encoded:\n%s\nwant, as before:\n%s", got, want)
			}
			decoded := reflect.New(reflect.TypeOf(tc.v))
			if err := json.Unmarshal(want, decoded.Interface()); err != nil {
				t.Fatalf("decoding the old bytes: %v", err)
			}
			if !reflect.DeepEqual(decoded.Elem().Interface(), tc.v) {
				t.Errorf("decoded %+v, want %+v", decoded.Elem().Interface(), tc.v)
			}
		})
	}
}

// TestIdentityText: an identity is "rig/name" both ways, "" the zero one;
// anything else is refused.
func TestIdentityText(t *testing.T) {
	for _, tc := range []struct {
		text string
		want Identity
		ok   bool
	}{
		{`"gastown/nux"`, Identity{Rig: "gastown", Name: "nux"}, true},
		{`""`, Identity{}, true},
		{`"gastown"`, Identity{}, false},
		{`"/nux"`, Identity{}, false},
		{`"gastown/"`, Identity{}, false},
	} {
		var got Identity
		err := json.Unmarshal([]byte(tc.text), &got)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v (ok %v)", tc.text, got, err, tc.want, tc.ok)
			continue
		}
		if b, _ := json.Marshal(got); tc.ok && string(b) != tc.text {
			t.Errorf("%+v encodes as %s, want %s", got, b, tc.text)
		}
	}
}
