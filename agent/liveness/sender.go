package liveness

import (
	"context"
	"log/slog"
	"time"

	"github.com/polecat-sidecar/sidecar/heartbeat"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// DefaultInterval is how often an agent beats; hostd's
// liveness.beat_interval must match.
const DefaultInterval = 5 * time.Second

// Sender sends a beat every Interval on a heartbeat stream, opening a new
// stream on each new tunnel, also when a newer one replaces a tunnel
// still up.
type Sender struct {
	Watcher  *Watcher
	Sessions tunnel.Sessions
	Interval time.Duration
	Version  string
	Logger   *slog.Logger

	started time.Time
	seq     uint64
}

// Run sends beats until ctx ends.
func (s *Sender) Run(ctx context.Context) {
	if s.Interval <= 0 {
		s.Interval = DefaultInterval
	}
	if s.Logger == nil {
		s.Logger = slog.Default()
	}
	s.started = time.Now()
	for ctx.Err() == nil {
		sess, err := s.Sessions.Session(ctx)
		if err != nil {
			continue
		}
		if err := s.stream(ctx, sess); err != nil && ctx.Err() == nil && sess.Err() == nil {
			s.Logger.Warn("heartbeat stream failed; reopening", "err", err)
			select {
			case <-time.After(s.Interval):
			case <-ctx.Done():
			}
		}
	}
}

// stream beats on one stream until it or the session fails.
func (s *Sender) stream(ctx context.Context, sess *tunnel.Session) error {
	st, err := sess.OpenStream(ctx, wire.KindHeartbeat, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	w := heartbeat.NewWriter(st)
	t := time.NewTicker(s.Interval)
	defer t.Stop()
	for {
		if err := w.Write(s.take(ctx, sess)); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-sess.Done():
			return nil
		case <-t.C:
			if s.replaced(ctx, sess) {
				return nil // Run opens a stream on the new tunnel
			}
		}
	}
}

// replaced says whether the tunnel has a newer session than sess (the
// supervisor moved back to QUIC): the beats move to it, so that the old
// session, which stays open while a stream is, drains and closes at once
// rather than at its drain limit, and hostd hears the transport in use.
func (s *Sender) replaced(ctx context.Context, sess *tunnel.Session) bool {
	now, cancel := context.WithCancel(ctx)
	cancel() // the current session, without waiting for one
	cur, err := s.Sessions.Session(now)
	return err == nil && cur != sess
}

// take measures one beat.
func (s *Sender) take(ctx context.Context, sess *tunnel.Session) *heartbeat.Beat {
	now := time.Now()
	s.seq++
	return &heartbeat.Beat{
		Seq:       s.seq,
		Interval:  s.Interval.Seconds(),
		Session:   s.Watcher.Measure(ctx, now),
		Container: s.Watcher.Container(),
		Agent: heartbeat.Agent{
			Version:   s.Version,
			Uptime:    now.Sub(s.started).Seconds(),
			Transport: sess.Transport(),
			RTTMillis: float64(sess.RTT().Microseconds()) / 1000,
		},
	}
}
