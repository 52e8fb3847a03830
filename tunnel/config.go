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
// one address, and windows sized for bulk git and archive transfers.
//
// The keepalive is half the idle timeout, the longest quic-go allows, and
// a ping goes out only after that long without hearing the peer. An agent
// beats every 5 s and hears hostd acknowledge each beat, so with these
// defaults its beats are its keepalives and it sends no pings: one packet
// each way per agent per beat, which is most of what idle agents cost
// hostd. With a 5 s idle timeout (pings every 2-2.5 s) a thousand agents
// cost hostd 12-17% of a core; with 10 s, 9%. A frozen agent is still
// disconnected before it would be stale (three missed beats, 15 s), and a
// restarted hostd is noticed as soon as an agent next sends (its stateless
// reset answers).
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
