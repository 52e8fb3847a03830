// Package git is gt-agent's half of the git channel (hostd's is hostd/git):
// a plain HTTP origin on loopback inside the container, each of whose
// connections becomes one git stream to hostd, so git needs no
// certificates or GIT_SSL_* settings.
package git

import (
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/polecat-sidecar/sidecar/agent/forward"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// DefaultListen is the loopback address git's origin points at.
const DefaultListen = "127.0.0.1:9878"

// Origin is the remote URL of rig's repository when the agent serves git
// on addr.
func Origin(addr, rig string) string { return "http://" + addr + wire.GitPathPrefix + rig }

// NewForwarder forwards git's HTTP connections as git streams. When the
// tunnel is not there within wait, git is answered 503 with the reason.
func NewForwarder(sessions tunnel.Sessions, wait time.Duration, log *slog.Logger) *forward.Forwarder {
	return &forward.Forwarder{Kind: wire.KindGit, Wait: wait, Sessions: sessions, Unavailable: httpUnavailable, Logger: log}
}

// httpUnavailable answers a local HTTP client (git) with 503 and the
// reason, which git shows as "remote: <reason>".
func httpUnavailable(c net.Conn, reason string) {
	body := "gt-agent: " + reason + "\n"
	_, _ = fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
}
