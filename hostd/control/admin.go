package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// The admin API of Gas Town's gt-proxy-server (its 127.0.0.1:9877
// listener), with the same paths and JSON, so operators' scripts and Gas
// Town's admin client keep working: on the control socket, and over plain
// HTTP on a loopback address when admin_listen is set. Revocation here is
// persisted and closes live tunnels. docs/migrating.md ("Endpoints") lists
// where it differs from gt-proxy-server's.

// maxAdminBody bounds an admin request.
const maxAdminBody = 64 << 10

// Certs issues and revokes certificates (certs.Service).
type Certs interface {
	// IssueCert issues a certificate and key for id, valid for ttl (0:
	// the configured lifetime).
	IssueCert(id wire.Identity, ttl time.Duration) (api.IssuedCert, error)
	// Revoke revokes by serial or <rig>/<name>, persistently, and closes
	// the live tunnels that stood on what it revoked.
	Revoke(target string) (revoked int, err error)
	// ReloadRevocations re-reads the revocation records and closes the
	// live tunnels of revoked certificates, returning how many it closed.
	ReloadRevocations() (int, error)
	// Expected says whether id was issued a certificate or holds a join
	// token not yet spent.
	Expected(id wire.Identity) (bool, error)
}

// AdminHandler serves the admin API alone, for the opt-in TCP listener
// (ListenAdmin) at the address Gas Town's admin client targets.
func AdminHandler(c Certs) http.Handler {
	mux := http.NewServeMux()
	adminHandlers(mux, c)
	return mux
}

// CheckLoopback refuses an admin address whose host is not a loopback IP
// or "localhost": the admin API issues certificates to whoever asks, so
// it must not be reachable from another machine (or a container).
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port (e.g. 127.0.0.1:9877): %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%q is not a loopback address, and the admin API issues certificates to whoever reaches it: give 127.0.0.1, ::1 or localhost", addr)
	}
	return nil
}

// ListenAdmin opens the admin API's TCP listener on addr, which must be
// on loopback (CheckLoopback), and checks the address it got.
func ListenAdmin(addr string) (net.Listener, error) {
	if err := CheckLoopback(addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin listener: %w", err)
	}
	if a, ok := ln.Addr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() {
		ln.Close()
		return nil, fmt.Errorf("admin listener: %s resolved to %s, not a loopback address", addr, ln.Addr())
	}
	return ln, nil
}

func adminHandlers(mux *http.ServeMux, b Certs) {
	mux.HandleFunc("GET /v1/admin/health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("POST /v1/admin/issue-cert", func(w http.ResponseWriter, r *http.Request) {
		var req api.IssueCertRequest
		if err := decodeBody(r, &req); err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		id := wire.Identity{Rig: req.Rig, Name: req.Name}
		if err := id.Validate(); err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		var ttl time.Duration
		if req.TTL != "" {
			d, err := time.ParseDuration(req.TTL)
			if err != nil || d <= 0 {
				writeError(w, http.StatusBadRequest, fmt.Errorf("ttl %q is not a positive duration (e.g. 24h)", req.TTL))
				return
			}
			ttl = d
		}
		issued, err := b.IssueCert(id, ttl)
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		writeJSON(w, http.StatusOK, issued)
	})
	mux.HandleFunc("POST /v1/admin/deny-cert", func(w http.ResponseWriter, r *http.Request) {
		var req api.DenyCertRequest
		if err := decodeBody(r, &req); err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		if req.Serial == "" {
			writeError(w, http.StatusBadRequest, errors.New("serial is required (hex)"))
			return
		}
		if _, err := b.Revoke(req.Serial); err != nil {
			writeError(w, http.StatusNotFound, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// decodeBody decodes one bounded JSON object, refusing unknown fields.
func decodeBody(r *http.Request, v any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxAdminBody+1))
	if err != nil {
		return fmt.Errorf("reading request: %w", err)
	}
	if len(body) > maxAdminBody {
		return fmt.Errorf("request larger than %d bytes", maxAdminBody)
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("request is not the expected JSON: %w", err)
	}
	if d.More() {
		return errors.New("request has data after the JSON object")
	}
	return nil
}

func writeError(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, map[string]string{"error": err.Error()})
}
