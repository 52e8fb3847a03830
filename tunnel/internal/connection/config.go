package connection

import (
	"time"

	"github.com/quic-go/quic-go"

	"github.com/polecat-sidecar/sidecar/tunnel/internal/yamux"
)

// Config is what the transports take of tunnel.Config, defaults filled
// in; tunnel.Config says what each field is.
type Config struct {
	HandshakeTimeout time.Duration
	KeepAlive        time.Duration
	IdleTimeout      time.Duration
	MaxStreams       int
	StreamWindow     int
	ConnWindow       int
}

// QUIC is quic-go's configuration for a tunnel.
func (c Config) QUIC() *quic.Config {
	return &quic.Config{
		HandshakeIdleTimeout:           c.HandshakeTimeout,
		MaxIdleTimeout:                 c.IdleTimeout,
		KeepAlivePeriod:                c.KeepAlive,
		MaxIncomingStreams:             int64(c.MaxStreams),
		MaxIncomingUniStreams:          4, // the welcome only
		InitialStreamReceiveWindow:     1 << 20,
		MaxStreamReceiveWindow:         uint64(c.StreamWindow),
		InitialConnectionReceiveWindow: 2 << 20,
		MaxConnectionReceiveWindow:     uint64(c.ConnWindow),
		Allow0RTT:                      false,
	}
}

func (c Config) yamux() *yamux.Config {
	y := yamux.DefaultConfig()
	y.AcceptBacklog = c.MaxStreams
	y.EnableKeepAlive = false // TCP pings itself, to measure RTT too
	y.ConnectionWriteTimeout = c.IdleTimeout
	y.StreamOpenTimeout = c.IdleTimeout
	// A stream we closed whose peer never closes its side is reclaimed
	// after this, not yamux's 5 minutes: a hostile peer could otherwise
	// hold every closed stream's buffer that long.
	y.StreamCloseTimeout = 30 * time.Second
	y.MaxStreamWindowSize = uint32(c.StreamWindow)
	y.LogOutput = nil
	y.Logger = discardLogger{}
	return y
}

// discardLogger silences yamux, whose errors surface through TCP.Err.
type discardLogger struct{}

func (discardLogger) Print(...any)          {}
func (discardLogger) Printf(string, ...any) {}
func (discardLogger) Println(...any)        {}
