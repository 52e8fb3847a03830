// Package control is the running hostd's local API: HTTP with JSON over a
// unix socket under <town>/.runtime/hostd (directory 0700, socket 0600),
// which the CLI subcommands use (through hostd/api's Client) to reach the
// daemon. Its handlers call the services through the narrow interfaces
// declared here (Services); the JSON they exchange is hostd/api's.
package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/polecat-sidecar/sidecar/heartbeat"
	"github.com/polecat-sidecar/sidecar/hostd/api"

	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/internal/unixsock"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Services are the daemon's services as the API calls them. Each field is
// the narrow interface its handlers use, declared beside them; hostd's
// services implement them as they are, with no adapter between.
type Services struct {
	// Daemon is hostd itself, as status shows it.
	Daemon Daemon
	// Polecats are the judged polecats (hostd/liveness).
	Polecats Polecats
	// Certs issues and revokes certificates (hostd/certs).
	Certs Certs
	// Data moves archives (hostd/data).
	Data Data
	// Nudges is the nudge queue (hostd/nudge).
	Nudges Nudges
	// Panes peeks at and attaches to polecats' sessions (hostd/pane).
	Panes Panes
	// Sandboxes carries hostd run's operations in polecats' sandboxes
	// (hostd/sandbox).
	Sandboxes Sandboxes
	// Upstream is the queue of branches for origin (hostd/upstream); nil
	// when upstream pushing is off.
	Upstream Upstream
	// Relay is the gt/bd relay (hostd/relay); nil in tests that have none.
	Relay Relay
	// Starts are hostd run's failed starts (hostd/sandbox).
	Starts Starts
	// Forget removes what the services keep of a polecat (hostd/server).
	Forget Forgetter
}

// Forgetter removes what hostd keeps of a polecat (server.Server, which
// asks each service).
type Forgetter interface {
	// Forget removes what hostd keeps of id, refusing while its tunnel is
	// up: at once with wait 0, else once wait has passed.
	Forget(ctx context.Context, id wire.Identity, wait time.Duration) (api.Forgotten, error)
}

// maxForgetWait bounds the wait a forget may ask for.
const maxForgetWait = time.Minute

// Relay is what status says of the gt/bd relay (hostd/relay.Service).
type Relay interface {
	// Confinement is how relayed commands are confined (or why they
	// cannot be), whether they are, and whether relaying is refused.
	Confinement() (how string, confined, refused bool)
}

// Daemon is what status says of hostd itself.
type Daemon struct {
	// Version is hostd's.
	Version string
	// Started is when it started.
	Started time.Time
	// Listener is the tunnel listener.
	Listener Listener
}

// Listener is the tunnel listener (tunnel.Listener).
type Listener interface {
	// Addr is the address it listens on.
	Addr() string
	// Health is each transport's accept loop.
	Health() []tunnel.ListenerHealth
}

// Polecats are the polecats hostd knows, connected or not
// (liveness.Service).
type Polecats interface {
	// Rows are every polecat, as status shows them.
	Rows() []api.Polecat
	// Detail is one polecat's row with its judged record, whose last beat
	// and recent state changes the detail shows.
	Detail(id wire.Identity) (api.Polecat, heartbeat.Record, bool)
}

// Upstream is the upstream queue (upstream.Queue).
type Upstream interface {
	// Pending lists the branches waiting for origin, oldest first.
	Pending() []api.UpstreamItem
}

// Listen opens the town's control socket (state.Dir.Socket), making the
// runtime directory 0700. A stale socket left by a crashed daemon is
// replaced; a live one is an error.
func Listen(town string) (net.Listener, error) {
	dir := state.For(town)
	if err := dir.Ensure(); err != nil {
		return nil, err
	}
	ln, err := unixsock.Listen(dir.Socket())
	if errors.Is(err, unixsock.ErrInUse) {
		return nil, fmt.Errorf("serving the control socket: another hostd already serves this town (%s answers): stop it first", dir.Socket())
	}
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	return ln, nil
}

// Handler serves the API on s.
func Handler(s Services) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.status())
	})
	mux.HandleFunc("GET /v1/polecats/{rig}/{name}", func(w http.ResponseWriter, r *http.Request) {
		id := wire.Identity{Rig: r.PathValue("rig"), Name: r.PathValue("name")}
		row, rec, ok := s.Polecats.Detail(id)
		d := api.PolecatDetail{Polecat: row, Beat: apiBeat(rec.LastBeat), Events: apiEvents(rec.Events)}
		d.Nudges = s.Nudges.Depth()[id]
		if f, failed := s.Starts.Failure(id); failed {
			d.StartFailure = &f
			if !ok {
				d.Polecat, ok = neverStarted(f), true
			}
		}
		if !ok {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": s.notSeen(id).Error()})
			return
		}
		writeJSON(w, http.StatusOK, d)
	})
	mux.HandleFunc("DELETE /v1/polecats/{rig}/{name}", func(w http.ResponseWriter, r *http.Request) {
		id := wire.Identity{Rig: r.PathValue("rig"), Name: r.PathValue("name")}
		if err := id.Validate(); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		var wait time.Duration
		if v := r.URL.Query().Get("wait"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 || d > maxForgetWait {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("wait %q: a duration from 0 to %v", v, maxForgetWait)})
				return
			}
			wait = d
		}
		f, err := s.Forget.Forget(r.Context(), id, wait)
		switch {
		case err != nil:
			writeJSON(w, http.StatusConflict, map[string]string{"error": err.Error()})
		case f.Nothing():
			writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("hostd knows no polecat %s", id)})
		default:
			writeJSON(w, http.StatusOK, f)
		}
	})
	adminHandlers(mux, s.Certs)
	syncHandlers(mux, s.Data)
	nudgeHandlers(mux, s.Nudges, s.known)
	paneHandlers(mux, s.Panes)
	sandboxHandlers(mux, s.Sandboxes)
	startHandlers(mux, s.Starts)
	mux.HandleFunc("POST /v1/revocations/reload", func(w http.ResponseWriter, r *http.Request) {
		n, err := s.Certs.ReloadRevocations()
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]int{"closed": n})
	})
	return mux
}

// status is every polecat hostd knows with its queued nudges, hostd's
// listeners, the relay's confinement, the data conflicts and the upstream
// queue.
func (s Services) status() api.Status {
	st := api.Status{Version: s.Daemon.Version, Started: s.Daemon.Started, Polecats: s.Polecats.Rows(), SyncConflicts: s.Data.Conflicts()}
	if ln := s.Daemon.Listener; ln != nil {
		st.Listen, st.Listeners = ln.Addr(), apiListeners(ln.Health())
	}
	depth := s.Nudges.Depth()
	for i := range st.Polecats {
		st.Polecats[i].Nudges = depth[wire.Identity(st.Polecats[i].Identity)]
	}
	if s.Upstream != nil {
		st.Upstream = s.Upstream.Pending()
	}
	if s.Relay != nil {
		st.RelayConfinement, st.RelayConfined, st.RelayRefused = s.Relay.Confinement()
	}
	st.StartFailures = s.Starts.Failures()
	return st
}

// neverStarted is how a polecat that has never connected, and whose start
// failed, shows: dead since then, for that reason (Gas Town's session of
// it died too).
func neverStarted(f api.StartFailure) api.Polecat {
	return api.Polecat{Identity: f.Identity, Rig: f.Identity.Rig, Name: f.Identity.Name, State: string(heartbeat.Dead), StateSince: f.At,
		Reason: "never connected: hostd run could not start it", IdleSeconds: -1}
}

// notSeen says why hostd has no state for id, which has not connected,
// and what to do: start its agent if the CA expects it, else check the
// name.
func (s Services) notSeen(id wire.Identity) error {
	expected, err := s.Certs.Expected(id)
	switch {
	case err != nil:
		return fmt.Errorf("no polecat %s has connected, and reading the CA's records failed: %w", id, err)
	case expected:
		return fmt.Errorf("polecat %s has not connected: it has a certificate or join token: start 'gt-agent up' in its container ('hostd status' lists it once it connects)", id)
	}
	return fmt.Errorf("no polecat %s: it has never connected and this town's CA never issued it a certificate or join token: check the name ('hostd status' lists the polecats that have connected, 'hostd cert list' those issued)", id)
}

// known is nil when hostd has seen id connect or its CA expects it, else
// notSeen's error: what a nudge to a mistyped name gets at once, instead
// of waiting in a queue no agent will ever take it from.
func (s Services) known(id wire.Identity) error {
	if _, _, ok := s.Polecats.Detail(id); ok {
		return nil
	}
	if ok, err := s.Certs.Expected(id); ok && err == nil {
		return nil
	}
	return s.notSeen(id)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
