package main

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/agent/nudge"
	"github.com/polecat-sidecar/sidecar/internal/parts/partstest"
	"github.com/polecat-sidecar/sidecar/internal/unixsock/unixsocktest"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestUpRefusesSettings: gt-agent up stops before it joins or connects on
// any setting it cannot use as given, naming the key, the value, where it
// came from and what it must be; a config key or GT_AGENT_* variable that
// is no flag of any command is refused with the nearest that is.
func TestUpRefusesSettings(t *testing.T) {
	cases := []struct {
		name, yaml string
		env        map[string]string
		args       []string
		want       string
	}{
		{name: "misspelt key", yaml: "idle-timout: 3s\n", want: "idle-timout is not a setting (did you mean idle-timeout?)"},
		{name: "misspelt variable", env: map[string]string{"GT_AGENT_BEAT_INTERAVL": "1s"},
			want: "environment variable GT_AGENT_BEAT_INTERAVL is not a setting (did you mean GT_AGENT_BEAT_INTERVAL?)"},
		{name: "duration without a unit", yaml: "beat-interval: 5\n", want: "setting beat-interval: 5 has no unit: give one, as in 5s or 5m"},
		{name: "keepalive not below the idle timeout", args: []string{"--keepalive", "10s"}, env: map[string]string{"GT_AGENT_IDLE_TIMEOUT": "10s"},
			want: "setting keepalive is 10s (flag --keepalive): it must be below idle-timeout, 10s (env GT_AGENT_IDLE_TIMEOUT)"},
		{name: "zero beat interval", args: []string{"--beat-interval", "0s"}, want: "setting beat-interval is 0s (flag --beat-interval): it must be above 0"},
		{name: "zero checkpoint", yaml: "sync-checkpoint: 0s\n", want: "setting sync-checkpoint is 0s (config file "},
		{name: "negative connect timeout", args: []string{"--connect-timeout", "-1s"}, want: "setting connect-timeout is -1s (flag --connect-timeout): it must be above 0"},
		{name: "unknown transport", env: map[string]string{"GT_AGENT_TRANSPORT": "udp"}, want: `setting transport is "udp" (env GT_AGENT_TRANSPORT): it must be auto, quic or tcp`},
		{name: "bad busy pattern", args: []string{"--nudge-busy", "("}, want: `setting nudge-busy is "(" (flag --nudge-busy): error parsing regexp`},
		{name: "bad uid", args: []string{"--git-allow-uid", "root"}, want: `setting git-allow-uid is [root] (flag --git-allow-uid): --git-allow-uid "root": want a uid, or "any"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			dir := t.TempDir()
			args := []string{}
			if c.yaml != "" {
				cfg := filepath.Join(dir, "agent.yaml")
				if err := os.WriteFile(cfg, []byte(c.yaml), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--config", cfg)
			}
			args = append(append(args, "up", "--url", "https://localhost:1", "--state-dir", filepath.Join(dir, "state"), "--join", "token"), c.args...)
			out, code := runAgent(t, args...)
			if code != 1 || !strings.Contains(out, c.want) {
				t.Fatalf("gt-agent %v: exit %d, output:\n%s\nwant exit 1 and %q", args, code, out, c.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "state")); err == nil {
				t.Errorf("gt-agent started (made its state directory) before refusing its settings")
			}
		})
	}
}

// TestUpJoinsItsGoroutines: when gt-agent up returns, stopped while it
// serves a relayed command, a git request, a hook event and a nudge, or
// failed on a hostd its CA does not vouch for, no goroutine it started
// (or that one of those started) is left running.
func TestUpJoinsItsGoroutines(t *testing.T) {
	for _, c := range []struct {
		name    string
		foreign bool   // hostd's certificate is from another CA
		wantErr string // "": stopped while serving
	}{
		{name: "stopped"},
		{name: "hostd not vouched for", foreign: true, wantErr: "tunnel: hostd at 127.0.0.1:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ca := tunneltest.NewCA(t)
			hostd := newFakeHostd(t, ca, c.foreign)
			dir := unixsocktest.Dir(t)
			cfg := defaultUpConfig()
			cfg.URL, cfg.StateDir = "https://"+hostd.ln.Addr(), filepath.Join(dir, "state")
			cfg.Socket, cfg.HookSocket, cfg.TmuxSocket = filepath.Join(dir, "gt.sock"), filepath.Join(dir, "hooks.sock"), filepath.Join(dir, "tmux.sock")
			cfg.GitListen, cfg.Watch.WorkDir = tunneltest.FreeAddr(t), t.TempDir()
			writeCreds(t, ca, cfg.StateDir)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := partstest.Go(func() error { return runUp(ctx, &cfg, nil) })
			if c.wantErr == "" {
				hostd.exercise(t, &cfg)
				cancel()
			}
			var r partstest.Result
			select {
			case r = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("up did not return")
			}
			if c.wantErr == "" && r.Err != nil || c.wantErr != "" && (r.Err == nil || !strings.Contains(r.Err.Error(), c.wantErr)) {
				t.Errorf("up: %v, want %q", r.Err, c.wantErr)
			}
			for _, g := range r.Left {
				t.Errorf("goroutine %d, started by up, still runs after up returned:\n%s", g.ID, g.Stack)
			}
		})
	}
}

// fakeHostd is a tunnel listener playing hostd: it takes beats, holds
// the relay and git streams the agent opens (saying so on held), and
// opens a nudge stream on the agent's tunnel, which it holds too.
type fakeHostd struct {
	ln   *tunnel.Listener
	held chan string // the kind of each stream held
}

func newFakeHostd(t *testing.T, ca *tunneltest.CA, foreign bool) *fakeHostd {
	t.Helper()
	signer := ca
	if foreign {
		signer = tunneltest.NewCA(t)
	}
	sc := ca.ServerConfig(signer.Server(t))
	ln, err := tunnel.Listen("127.0.0.1:0", sc)
	if err != nil {
		t.Fatal(err)
	}
	h := &fakeHostd{ln: ln, held: make(chan string, 8)}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	t.Cleanup(func() { cancel(); ln.Close(); <-served })
	mux := tunnel.NewServeMux()
	mux.HandleFunc(wire.KindHeartbeat, func(_ context.Context, st *tunnel.Stream) { _, _ = io.Copy(io.Discard, st) })
	hold := func(_ context.Context, st *tunnel.Stream) {
		if _, err := st.Read(make([]byte, 1)); err == nil {
			h.held <- st.Kind()
			_, _ = io.Copy(io.Discard, st)
		}
	}
	mux.HandleFunc(wire.KindRelay, hold)
	mux.HandleFunc(wire.KindGit, hold)
	go func() {
		defer close(served)
		sess, err := ln.Accept(ctx)
		if err != nil {
			return
		}
		defer sess.Close()
		go h.nudge(ctx, sess)
		_ = sess.Serve(ctx, mux)
	}()
	return h
}

// nudge opens a nudge stream and holds it until the agent's tunnel ends,
// once the agent has answered.
func (h *fakeHostd) nudge(ctx context.Context, sess *tunnel.Session) {
	st, err := sess.OpenStream(ctx, wire.KindNudge, wire.NudgeRequest{ID: "n1", Mode: wire.NudgeImmediate, Deadline: time.Now().Add(time.Hour), Size: 5})
	if err != nil {
		return
	}
	defer st.Close()
	if _, err := st.Write([]byte("hello")); err != nil {
		return
	}
	if _, err := io.Copy(io.Discard, st); err == nil {
		h.held <- wire.KindNudge
		<-sess.Done()
	}
}

// exercise makes the agent serve a relayed command and a git request,
// both held open, a hook event and a nudge.
func (h *fakeHostd) exercise(t *testing.T, cfg *upConfig) {
	t.Helper()
	var local []net.Conn
	t.Cleanup(func() {
		for _, c := range local {
			c.Close()
		}
	})
	dial := func(network, addr, first string) {
		var c net.Conn
		var err error
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if c, err = net.Dial(network, addr); err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		local = append(local, c)
		if _, err := io.WriteString(c, first); err != nil {
			t.Fatal(err)
		}
	}
	dial("unix", cfg.Socket, "relay request")
	dial("tcp", cfg.GitListen, "GET /v1/git/gastown/info/refs HTTP/1.1\r\n\r\n")
	if err := nudge.SendHook(cfg.HookSocket, nudge.HookStop); err != nil {
		t.Error(err)
	}
	want := map[string]bool{wire.KindRelay: true, wire.KindGit: true, wire.KindNudge: true}
	for len(want) > 0 {
		select {
		case kind := <-h.held:
			delete(want, kind)
		case <-time.After(20 * time.Second):
			t.Fatalf("hostd never held these streams of the agent's: %v", want)
		}
	}
}

// writeCreds puts a certificate for gastown/furiosa of ca, its key and ca
// where up looks for them in stateDir.
func writeCreds(t *testing.T, ca *tunneltest.CA, stateDir string) {
	t.Helper()
	cert := ca.Client(t, wire.Identity{Rig: "gastown", Name: "furiosa"})
	key, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, block := range map[string]*pem.Block{
		"client.crt": {Type: "CERTIFICATE", Bytes: cert.Certificate[0]},
		"client.key": {Type: "PRIVATE KEY", Bytes: key},
		"ca.crt":     {Type: "CERTIFICATE", Bytes: ca.Cert.Raw},
	} {
		if err := os.WriteFile(filepath.Join(stateDir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
