// Package relay is gt-agent's side of the gt/bd relay: the forwarder in
// 'gt-agent up' that turns each shim connection (package shim) on the
// local unix socket into one relay stream on the tunnel, copied verbatim.
package relay

import (
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/polecat-sidecar/sidecar/agent/forward"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// NewForwarder forwards shim connections as relay streams. It tells the
// shim FrameAttached once the stream is open, or FrameError with the
// reason when the tunnel is not there within wait.
func NewForwarder(sessions tunnel.Sessions, wait time.Duration, log *slog.Logger) *forward.Forwarder {
	return &forward.Forwarder{
		Kind:     wire.KindRelay,
		Wait:     wait,
		Sessions: sessions,
		Attached: func(c net.Conn) error { return wire.WriteRelayFrame(c, wire.RelayFrameAttached, nil) },
		Unavailable: func(c net.Conn, reason string) {
			_ = wire.WriteRelayFrame(c, wire.RelayFrameError, []byte(reason))
		},
		Gone:   func(st io.Writer) { _ = wire.WriteRelayFrame(st, wire.RelayFrameGone, nil) },
		Logger: log,
	}
}
