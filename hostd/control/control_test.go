package control

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/heartbeat"
	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/internal/unixsock/unixsocktest"

	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// fakeDaemon stands in for the daemon behind the HTTP layer; the real one
// answers the same calls in hostd/e2e.
type fakeDaemon struct {
	reloads  int
	dryRuns  []bool
	issued   []wire.Identity
	ttls     []time.Duration
	revoked  []string
	nudges   []api.NudgeRequest
	attached []wire.PaneRequest
	failures map[wire.Identity]api.StartFailure
	waits    []time.Duration
	opened   []time.Duration // the sandbox opens' waits
}

func (f *fakeDaemon) IssueCert(id wire.Identity, ttl time.Duration) (api.IssuedCert, error) {
	f.issued, f.ttls = append(f.issued, id), append(f.ttls, ttl)
	return api.IssuedCert{CN: id.CommonName(), Serial: "abc"}, nil
}

func (f *fakeDaemon) Revoke(target string) (int, error) {
	if target != "abc" {
		return 0, errors.New("no certificate matches")
	}
	f.revoked = append(f.revoked, target)
	return 1, nil
}

// services is the fake in every role the API calls.
func (f *fakeDaemon) services() Services {
	return Services{Daemon: Daemon{Version: "v1"}, Polecats: f, Certs: f, Data: f, Nudges: f, Panes: f, Sandboxes: f, Upstream: f, Starts: f, Forget: f}
}

func (f *fakeDaemon) Failed(id wire.Identity, reason string) (api.StartFailure, error) {
	if f.failures == nil {
		f.failures = map[wire.Identity]api.StartFailure{}
	}
	f.failures[id] = api.StartFailure{Identity: api.Identity(id), At: time.Now(), Reason: reason}
	return f.failures[id], nil
}

func (f *fakeDaemon) Started(id wire.Identity) (bool, error) {
	_, ok := f.failures[id]
	delete(f.failures, id)
	return ok, nil
}

func (f *fakeDaemon) Failure(id wire.Identity) (api.StartFailure, bool) {
	rec, ok := f.failures[id]
	return rec, ok
}

func (f *fakeDaemon) Failures() []api.StartFailure {
	var list []api.StartFailure
	for _, rec := range f.failures {
		list = append(list, rec)
	}
	return list
}

func (f *fakeDaemon) Rows() []api.Polecat {
	return []api.Polecat{{Identity: api.Identity{Rig: "r", Name: "n"}, Rig: "r", Name: "n", Transport: "quic", RTTMillis: 0.5}}
}

func (f *fakeDaemon) Detail(id wire.Identity) (api.Polecat, heartbeat.Record, bool) {
	if id.Name != "n" {
		return api.Polecat{}, heartbeat.Record{}, false
	}
	return f.Rows()[0], heartbeat.Record{Identity: id, LastBeat: &heartbeat.Beat{Seq: 7, Session: heartbeat.Session{State: heartbeat.SessionRunning}},
		Events: []heartbeat.Event{{To: heartbeat.Working, Reason: "beat"}}}, true
}

// Forget knows r/n, connected, r/gone, whose tunnel is down, and r/left,
// which status no longer lists but whose files are left; it records each
// wait asked for.
func (f *fakeDaemon) Forget(_ context.Context, id wire.Identity, wait time.Duration) (api.Forgotten, error) {
	f.waits = append(f.waits, wait)
	switch id.Name {
	case "n":
		return api.Forgotten{}, errors.New("r/n is connected")
	case "gone":
		return api.Forgotten{Polecat: api.Identity(id), Listed: true, Last: &api.Polecat{Identity: api.Identity(id), State: "dead"}, Nudges: 1}, nil
	case "left":
		return api.Forgotten{Polecat: api.Identity(id), Removed: []string{"data/r/left"}}, nil
	}
	return api.Forgotten{Polecat: api.Identity(id)}, nil
}

func (f *fakeDaemon) Depth() map[wire.Identity]int {
	return map[wire.Identity]int{{Rig: "r", Name: "n"}: 2}
}

func (f *fakeDaemon) Conflicts() int { return 3 }

func (f *fakeDaemon) Pending() []api.UpstreamItem {
	return []api.UpstreamItem{{Rig: "r", Branch: "polecat/n"}}
}

// Expected: the CA issued furiosa and ghost; ghost never connected.
func (f *fakeDaemon) Expected(id wire.Identity) (bool, error) {
	return id.Name == "furiosa" || id.Name == "ghost", nil
}

func (f *fakeDaemon) ReloadRevocations() (int, error) {
	f.reloads++
	if f.reloads > 1 {
		return 0, errors.New("records unreadable")
	}
	return 2, nil
}

func TestSocket(t *testing.T) {
	town := unixsocktest.Dir(t)
	c := api.NewSocketClient(state.For(town).Socket())
	if _, err := c.Status(context.Background()); !errors.Is(err, api.ErrNotRunning) {
		t.Fatalf("no daemon: %v, want api.ErrNotRunning", err)
	}
	// A stale socket file from a crashed daemon is replaced.
	_ = os.MkdirAll(state.For(town).Path(), 0o755)
	stale, _ := net.Listen("unix", state.For(town).Socket())
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()

	ln, err := Listen(town)
	if err != nil {
		t.Fatalf("over a stale socket: %v", err)
	}
	defer ln.Close()
	if st, _ := os.Stat(state.For(town).Path()); st.Mode().Perm() != 0o700 {
		t.Errorf("runtime dir mode %v, want 0700", st.Mode().Perm())
	}
	if st, _ := os.Stat(state.For(town).Socket()); st.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want 0600", st.Mode().Perm())
	}
	if _, err := Listen(town); err == nil {
		t.Fatal("a second daemon could listen on a live socket")
	}
	d := &fakeDaemon{}
	srv := &http.Server{Handler: Handler(d.services()), ReadHeaderTimeout: time.Second}
	go srv.Serve(ln)
	defer srv.Close()

	st, err := c.Status(context.Background())
	if err != nil || st.Version != "v1" || len(st.Polecats) != 1 || st.Polecats[0].Identity.Name != "n" {
		t.Fatalf("status %+v, %v", st, err)
	}
	// Status joins each service's part: queued nudges per polecat, the
	// data conflicts and the upstream queue.
	if st.Polecats[0].Nudges != 2 || st.SyncConflicts != 3 || len(st.Upstream) != 1 || st.Upstream[0].Branch != "polecat/n" {
		t.Errorf("status did not join the services: nudges %d, conflicts %d, upstream %+v", st.Polecats[0].Nudges, st.SyncConflicts, st.Upstream)
	}
	if d, err := c.Polecat(context.Background(), api.Identity{Rig: "r", Name: "n"}); err != nil || d.Transport != "quic" || d.Nudges != 2 ||
		d.Beat == nil || d.Beat.Seq != 7 || d.Beat.Session.State != "running" || len(d.Events) != 1 || d.Events[0].To != "working" {
		t.Fatalf("polecat: %+v, %v", d, err)
	}
	// A polecat hostd has no state for: the answer says why and what to do.
	for name, want := range map[string]string{
		"x":     "no polecat r/x: it has never connected and this town's CA never issued it a certificate or join token: check the name",
		"ghost": "polecat r/ghost has not connected: it has a certificate or join token: start 'gt-agent up' in its container",
	} {
		if _, err := c.Polecat(context.Background(), api.Identity{Rig: "r", Name: name}); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("polecat r/%s: %v, want %q...", name, err, want)
		}
	}
	for _, tt := range []struct {
		name string
		wait time.Duration
		want string // the error, "" for none
	}{
		{"gone", 0, ""},
		{"left", 0, ""},
		{"n", 0, "r/n is connected"},
		{"x", 0, "hostd knows no polecat r/x"},
		{"gone", 3 * time.Second, ""},
		{"gone", 2 * time.Minute, `wait "2m0s": a duration from 0 to 1m0s`},
	} {
		f, err := c.Forget(context.Background(), api.Identity{Rig: "r", Name: tt.name}, tt.wait)
		if (tt.want == "" && (err != nil || f.Nothing())) || (tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want))) {
			t.Errorf("forget r/%s, wait %v: %+v, %v; want %q", tt.name, tt.wait, f, err, tt.want)
		}
	}
	if want := []time.Duration{0, 0, 0, 0, 3 * time.Second}; !slices.Equal(d.waits, want) {
		t.Errorf("the waits the daemon was asked for: %v, want %v", d.waits, want)
	}
	if n, err := c.ReloadRevocations(context.Background()); err != nil || n != 2 {
		t.Fatalf("reload: %d, %v", n, err)
	}
	if _, err := c.ReloadRevocations(context.Background()); err == nil || !strings.Contains(err.Error(), "records unreadable") {
		t.Fatalf("failed reload: %v", err)
	}
	if _, err := os.Stat(state.For(town).Socket()); err != nil {
		t.Fatal(err)
	}
}
