package pane

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/agent/tmux"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"

	"github.com/polecat-sidecar/sidecar/internal/parts/partstest"
	"github.com/polecat-sidecar/sidecar/internal/settings/settingstest"
)

var furiosa = wire.Identity{Rig: "gastown", Name: "furiosa"}

func TestAppended(t *testing.T) {
	tests := []struct {
		name      string
		prev, cur []string
		want      []string
	}{
		{"nothing new", []string{"a", "b"}, []string{"a", "b"}, nil},
		{"added below", []string{"a", "b"}, []string{"a", "b", "c"}, []string{"c"}},
		{"scrolled up", []string{"a", "b", "c"}, []string{"b", "c", "d", "e"}, []string{"d", "e"}},
		{"scrolled past everything", []string{"a", "b"}, []string{"x", "y"}, []string{"x", "y"}},
		{"redrawn in place", []string{"a", "b", "c"}, []string{"a", "B", "c"}, []string{"B", "c"}},
		{"from empty", nil, []string{"a"}, []string{"a"}},
		{"shrunk", []string{"a", "b"}, []string{"a"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := appended(tc.prev, tc.cur); !slices.Equal(got, tc.want) {
				t.Errorf("appended(%q, %q) = %q, want %q", tc.prev, tc.cur, got, tc.want)
			}
		})
	}
}

// fixture is a real tmux server on a private socket with a "polecat"
// session running cat after three lines, and hostd's end of a real tunnel
// whose agent end serves pane streams from it.
type fixture struct {
	tmux tmux.Server
	host *tunnel.Session
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	sock := []string{"-S", filepath.Join(t.TempDir(), "tmux.sock")}
	t.Cleanup(func() { _ = exec.Command("tmux", append(sock, "kill-server")...).Run() })
	srv := tmux.Server{Args: sock}
	if err := srv.NewSession(context.Background(), "polecat", tmux.Spawn{Argv: []string{"sh", "-c", "printf 'one\\ntwo\\nthree\\n'; exec cat"}}); err != nil {
		t.Fatal(err)
	}
	f := &fixture{tmux: srv}
	f.waitFor(t, "three")
	agent, host := tunneltest.Pair(t, furiosa)
	mux := tunnel.NewServeMux()
	svc, err := New(Config{Tmux: srv, Follow: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle(wire.KindPane, svc)
	tunneltest.Serve(t, agent, mux)
	f.host = host
	return f
}

// waitFor waits until the pane shows text.
func (f *fixture) waitFor(t *testing.T, text string) {
	t.Helper()
	for range 250 {
		if h, _ := f.tmux.History(context.Background(), "polecat", 50); strings.Contains(h, text) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	h, _ := f.tmux.History(context.Background(), "polecat", 50)
	t.Fatalf("the pane never showed %q: %q", text, h)
}

func (f *fixture) open(t *testing.T, req wire.PaneRequest) *tunnel.Stream {
	t.Helper()
	st, err := f.host.OpenStream(context.Background(), wire.KindPane, req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	_ = st.SetDeadline(time.Now().Add(10 * time.Second))
	return st
}

func TestPeek(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name    string
		req     wire.PaneRequest
		want    string // the whole answer
		refused string
	}{
		{"last lines", wire.PaneRequest{Op: wire.PanePeek, Lines: 2}, "two\nthree\n", ""},
		{"more than there are", wire.PaneRequest{Op: wire.PanePeek, Lines: 10}, "one\ntwo\nthree\n", ""},
		{"no lines", wire.PaneRequest{Op: wire.PanePeek}, "", "peek takes 1-"},
		{"attach without a size", wire.PaneRequest{Op: wire.PaneAttach}, "", "attach needs the terminal's size"},
		{"unknown operation", wire.PaneRequest{Op: "scroll"}, "", `unknown operation "scroll"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := io.ReadAll(f.open(t, tc.req))
			if tc.refused != "" {
				if _, ok := errors.AsType[*wire.RemoteError](err); !ok || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("answer %q, %v; want a refusal saying %q", got, err, tc.refused)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Errorf("answer %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestPeekFollow: a follow sends what is added to the pane, until hostd
// closes its side.
func TestPeekFollow(t *testing.T) {
	f := newFixture(t)
	st := f.open(t, wire.PaneRequest{Op: wire.PanePeek, Lines: 3, Follow: true})
	buf := make([]byte, 4096)
	var got []byte
	read := func(want string) {
		t.Helper()
		for !bytes.Contains(got, []byte(want)) {
			n, err := st.Read(buf)
			got = append(got, buf[:n]...)
			if err != nil {
				t.Fatalf("follow read %q, then %v; want %q", got, err, want)
			}
		}
	}
	read("one\ntwo\nthree\n")
	if err := exec.Command("tmux", append(slices.Clone(f.tmux.Args), "send-keys", "-t", "=polecat:", "four", "Enter")...).Run(); err != nil {
		t.Fatal(err)
	}
	read("four\n")
	_ = st.CloseWrite()
	if rest, err := io.ReadAll(st); err != nil {
		t.Errorf("the follow did not end cleanly when hostd closed its side: %q, %v", rest, err)
	}
}

func TestPeekNoSession(t *testing.T) {
	f := newFixture(t)
	if err := exec.Command("tmux", append(slices.Clone(f.tmux.Args), "kill-session", "-t", "=polecat")...).Run(); err != nil {
		t.Fatal(err)
	}
	_, err := io.ReadAll(f.open(t, wire.PaneRequest{Op: wire.PanePeek, Lines: 5}))
	if _, ok := errors.AsType[*wire.RemoteError](err); !ok || !strings.Contains(err.Error(), `capturing "polecat"`) {
		t.Errorf("peek of a missing session: %v, want a refusal", err)
	}
}

// TestAttach: an attach shows the pane in a terminal of the requested
// size, types what hostd sends only when it may write, and ends when
// hostd detaches.
func TestAttach(t *testing.T) {
	tests := []struct {
		name  string
		write bool
	}{
		{"read-write", true},
		{"read-only", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			st := f.open(t, wire.PaneRequest{Op: wire.PaneAttach, Write: tc.write, Cols: 100, Rows: 30})
			out := make(chan []byte, 1)
			go func() { b, _ := io.ReadAll(st); out <- b }()
			// The client is attached once tmux lists it, at the size asked.
			var clients string
			for range 250 {
				b, _ := exec.Command("tmux", append(slices.Clone(f.tmux.Args), "list-clients", "-F", "#{client_width}x#{client_height} #{client_readonly}")...).Output()
				if clients = strings.TrimSpace(string(b)); clients != "" {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			want := "100x30 0"
			if !tc.write {
				want = "100x30 1"
			}
			if clients != want {
				t.Fatalf("tmux clients %q, want %q", clients, want)
			}
			if err := wire.WritePaneFrame(st, wire.PaneInput, []byte("typed\r")); err != nil {
				t.Fatal(err)
			}
			if tc.write {
				f.waitFor(t, "typed\ntyped")
			} else {
				time.Sleep(300 * time.Millisecond)
				if h, _ := f.tmux.History(context.Background(), "polecat", 50); strings.Contains(h, "typed") {
					t.Errorf("a read-only attach typed: %q", h)
				}
			}
			_ = st.CloseWrite()
			select {
			case b := <-out:
				if !bytes.Contains(b, []byte("three")) {
					t.Errorf("the terminal's output never showed the pane: %q", b)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the attach outlived hostd's detach")
			}
		})
	}
}

// TestConfig: New takes zero fields as the defaults and refuses a field
// out of its range, naming it.
func TestConfig(t *testing.T) {
	settingstest.Run(t, DefaultConfig, func(c Config) error { _, err := New(c); return err }, []settingstest.Case[Config]{
		{Name: "defaults"},
		{Name: "zero is the default", Set: func(c *Config) { *c = Config{} }},
		{Name: "negative follow", Set: func(c *Config) { c.Follow = -time.Second }, Want: "pane: Follow is -1s: it must be above 0"},
	})
}

// TestAttachNoSession: an attach with no session is refused without
// running tmux attach, which would start a tmux server of its own: with
// the server gone (a sandbox between sessions), none appears.
func TestAttachNoSession(t *testing.T) {
	f := newFixture(t)
	if err := exec.Command("tmux", append(slices.Clone(f.tmux.Args), "kill-server")...).Run(); err != nil {
		t.Fatal(err)
	}
	_, err := io.ReadAll(f.open(t, wire.PaneRequest{Op: wire.PaneAttach, Write: true, Cols: 80, Rows: 24}))
	if _, ok := errors.AsType[*wire.RemoteError](err); !ok || !strings.Contains(err.Error(), `no tmux session "polecat"`) {
		t.Errorf("attach with no session: %v, want a refusal", err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := exec.Command("tmux", append(slices.Clone(f.tmux.Args), "list-sessions")...).Run(); err == nil {
		t.Error("a tmux server runs after an attach with none")
	}
}

// TestPeekJoinsItsReader: a peek has answered and returned with nothing
// of it left running, though hostd keeps its side open (the read that
// hears hostd end a follow is ended, and waited for).
func TestPeekJoinsItsReader(t *testing.T) {
	svc, err := New(Config{Session: "polecat", Tmux: tmux.Server{Args: []string{"-S", filepath.Join(t.TempDir(), "no-server.sock")}}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	agent, host := tunneltest.Pair(t, furiosa)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := host.OpenStream(ctx, wire.KindPane, wire.PaneRequest{Op: wire.PanePeek, Lines: 5, Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close() // only when the test ends
	answer := make(chan error, 1)
	go func() { _, err := io.ReadAll(st); answer <- err }() // the header goes with the read
	accepted, err := agent.AcceptStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer accepted.Close()
	r := <-partstest.Go(func() error { svc.ServeStream(ctx, accepted); return nil })
	for _, g := range r.Left {
		t.Errorf("goroutine %d, started by ServeStream, still runs after it returned:\n%s", g.ID, g.Stack)
	}
	if err := <-answer; err == nil || !strings.Contains(err.Error(), "capturing") {
		t.Errorf("peek of a missing session: %v, want a refusal", err)
	}
}
