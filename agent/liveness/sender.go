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
// stream on each new tunnel.
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
			time.Sleep(s.Interval)
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
		}
	}
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
