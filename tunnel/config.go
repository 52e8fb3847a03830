package tunnel

import (
	"errors"
	"fmt"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/settings"
	"github.com/polecat-sidecar/sidecar/tunnel/internal/connection"
)

// Config tunes a tunnel. The zero value of any field means its default;
// DefaultConfig lists them.
type Config struct {
	// HandshakeTimeout bounds a transport handshake, welcome included,
	// and a stream header from its first byte (which the acceptor waits
	// for as long as the session lasts).
	HandshakeTimeout time.Duration
	// FallbackDelay is how long Dial gives QUIC before it tries TCP.
	FallbackDelay time.Duration
	// KeepAlive is how often an idle connection is pinged; it also paces
	// the round-trip measurement on TCP. It must be below IdleTimeout (a
	// ping must fit in it); zero derives it: half the idle timeout, at most
	// MaxKeepAlive.
	KeepAlive time.Duration
	// IdleTimeout is how long a connection may go without hearing from the
	// peer before it is closed: a dead or frozen peer is noticed within it.
	IdleTimeout time.Duration
	// MaxStreams bounds the concurrent streams each side may have open in
	// one session, each direction counted separately. A server also holds
	// each client identity to it across all that identity's sessions, so
	// more tunnels buy a polecat no more streams.
	MaxStreams int
	// MaxHandshakes bounds the TCP handshakes a server has in progress
	// (joins included); connections over it are closed unanswered.
	MaxHandshakes int
	// MaxHandshakesPerSource bounds those from one IP address.
	MaxHandshakesPerSource int
	// StreamWindow is the largest per-stream receive window in bytes; a
	// single bulk stream can have this much in flight. The default, 4 MiB,
	// covers 800 Mbit/s at 40 ms RTT; larger windows make yamux regrow its
	// receive buffers and measured slower on loopback.
	StreamWindow int
	// ConnWindow is the largest per-connection receive window in bytes
	// (QUIC only; yamux has no connection-level window).
	ConnWindow int
}

// MaxKeepAlive is the longest keepalive a zero KeepAlive derives.
const MaxKeepAlive = 5 * time.Second

// DefaultConfig returns the defaults: a dead peer noticed within 10 s and a
// keepalive every 5 s (derived from it), 128 streams each way (on TCP a stream the peer
// fills but nobody reads holds at most yamux's 256 KiB initial window, so a
// polecat can pin at most 32 MiB), 256 TCP handshakes at once and 16 from
// one address, and windows sized for bulk git and archive transfers. With
// these an agent's beats are its keepalives (docs/liveness.md says why).
func DefaultConfig() Config {
	return Config{
		HandshakeTimeout: 5 * time.Second,  // above 0
		FallbackDelay:    2 * time.Second,  // above 0
		KeepAlive:        0,                // 0 or above, below IdleTimeout; 0: derived
		IdleTimeout:      10 * time.Second, // above 0
		MaxStreams:       128,              // at least 1
		StreamWindow:     4 << 20,          // at least yamux's minimum, 256 KiB
		ConnWindow:       64 << 20,         // at least 1

		MaxHandshakes:          256, // at least 1
		MaxHandshakesPerSource: 16,  // at least 1
	}
}

// Validate names each field out of its range, and a KeepAlive not below
// IdleTimeout; Dial and Listen call it once zero fields have their
// defaults.
func (c Config) Validate() error {
	var fits error
	if c.KeepAlive > 0 {
		fits = settings.Below("KeepAlive", c.KeepAlive, "IdleTimeout", c.IdleTimeout)
	}
	return errors.Join(
		settings.Positive("HandshakeTimeout", c.HandshakeTimeout),
		settings.Positive("FallbackDelay", c.FallbackDelay),
		settings.AtLeast("KeepAlive", c.KeepAlive, 0),
		fits,
		settings.Positive("IdleTimeout", c.IdleTimeout),
		settings.Positive("MaxStreams", c.MaxStreams),
		settings.Positive("MaxHandshakes", c.MaxHandshakes),
		settings.Positive("MaxHandshakesPerSource", c.MaxHandshakesPerSource),
		settings.AtMost("MaxHandshakesPerSource", c.MaxHandshakesPerSource, "MaxHandshakes", c.MaxHandshakes),
		settings.AtLeast("StreamWindow", c.StreamWindow, 256<<10),
		settings.Positive("ConnWindow", c.ConnWindow),
	)
}

// withDefaults is c with its zero fields from DefaultConfig, refused if
// out of range, and a zero KeepAlive derived from IdleTimeout.
func (c Config) withDefaults() (Config, error) {
	settings.FillZero(&c, DefaultConfig())
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("tunnel config: %w", err)
	}
	if c.KeepAlive == 0 {
		c.KeepAlive = min(c.IdleTimeout/2, MaxKeepAlive)
	}
	return c, nil
}

// transport is what the transports take of c.
func (c Config) transport() connection.Config {
	return connection.Config{
		HandshakeTimeout: c.HandshakeTimeout,
		KeepAlive:        c.KeepAlive,
		IdleTimeout:      c.IdleTimeout,
		MaxStreams:       c.MaxStreams,
		StreamWindow:     c.StreamWindow,
		ConnWindow:       c.ConnWindow,
	}
}
