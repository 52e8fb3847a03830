// Package liveness is hostd's half of the heartbeat channel: it reads
// every polecat's beats, hears connects and disconnects from the
// registry, has the judge (package heartbeat) turn them and time into
// states, keeps those states on disk across restarts, and gives hostd
// status its rows.
package liveness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polecat-sidecar/sidecar/heartbeat"
	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/limits"
	"github.com/polecat-sidecar/sidecar/hostd/registry"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/internal/logging"
	"github.com/polecat-sidecar/sidecar/internal/settings"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Config tunes the liveness service.
type Config struct {
	// Thresholds are what polecats are judged by.
	Thresholds heartbeat.Thresholds
	// Path is where states are kept (state.Dir.Liveness); empty keeps
	// nothing.
	Path string
	// Tick is how often every polecat is re-judged and changed states
	// saved.
	Tick time.Duration
	// StateLogs bounds the state-change and refused-beat log lines per
	// polecat per minute; the next line let through says how many were
	// not logged (the states themselves are all kept).
	StateLogs int
	// Logger receives state changes and refused beats.
	Logger *slog.Logger
}

// DefaultConfig judges by heartbeat.DefaultThresholds every second and
// logs at most 20 state changes per polecat per minute. Path has no
// default: states are not kept.
func DefaultConfig() Config {
	return Config{
		Thresholds: heartbeat.DefaultThresholds(), // each field above 0
		Tick:       time.Second,                   // above 0
		StateLogs:  20,                            // at least 1
		Logger:     slog.Default(),
	}
}

// Validate names each field out of its range; New calls it once zero
// fields have their defaults.
func (c Config) Validate() error {
	return errors.Join(
		settings.Positive("Thresholds.Interval", c.Thresholds.Interval),
		settings.Positive("Thresholds.StaleBeats", c.Thresholds.StaleBeats),
		settings.Positive("Thresholds.IdleAfter", c.Thresholds.IdleAfter),
		settings.Positive("Thresholds.Grace", c.Thresholds.Grace),
		settings.Positive("Tick", c.Tick),
		settings.Positive("StateLogs", c.StateLogs),
	)
}

// Service is safe for concurrent use.
type Service struct {
	cfg     Config
	log     *slog.Logger
	judge   *heartbeat.Judge
	reg     *registry.Registry
	metrics *metrics

	saveMu   sync.Mutex
	dirty    atomic.Bool
	logLimit *logging.Limiter // state changes and refused beats, per polecat
}

// New restores the states kept at cfg.Path and subscribes to reg's
// connects and disconnects; zero Config fields (and zero Thresholds
// fields) take DefaultConfig's.
func New(cfg Config, reg *registry.Registry) (*Service, error) {
	d := DefaultConfig()
	settings.FillZero(&cfg, d)
	settings.FillZero(&cfg.Thresholds, d.Thresholds)
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("liveness: %w", err)
	}
	var restored []heartbeat.Record
	if cfg.Path != "" {
		if err := state.Load(cfg.Path, &restored); err != nil {
			return nil, fmt.Errorf("restoring polecat states: %w", err)
		}
	}
	s := &Service{cfg: cfg, log: cfg.Logger, reg: reg, logLimit: logging.NewLimiter(cfg.StateLogs, time.Minute)}
	s.judge = heartbeat.NewJudge(cfg.Thresholds, time.Now, func(r heartbeat.Record, e heartbeat.Event) {
		s.dirty.Store(true)
		if ok, held := s.logLimit.Allow(r.Identity.String()); ok {
			s.log.Info("polecat state", "polecat", r.Identity, "from", e.From, "to", e.To, "reason", e.Reason, "changes_not_logged", held)
		}
	})
	s.judge.Restore(restored)
	s.metrics = newMetrics(s)
	reg.Subscribe(func(ev registry.Event) {
		id := ev.Conn.Identity()
		if ev.Connected {
			s.judge.Connected(id)
		} else {
			s.judge.Disconnected(id, disconnectReason(ev.Err))
		}
	})
	return s, nil
}

// disconnectReason is a short reason for a lost tunnel.
func disconnectReason(err error) string {
	if err == nil {
		return "closed"
	}
	msg := err.Error()
	if len(msg) > 120 {
		msg = msg[:120] + "..."
	}
	return msg
}

// ServeStream reads a polecat's beats (stream kind wire.KindHeartbeat). A
// beat that is oversized, malformed or invalid ends the stream with a
// logged reason and is never counted: it cannot make a polecat look alive.
// Beats less than minBeatGap apart on one tunnel end the stream too: each
// beat costs hostd a judgement.
func (s *Service) ServeStream(ctx context.Context, st *tunnel.Stream) {
	id := st.Session().Peer()
	r := heartbeat.NewReader(st)
	accepted := s.metrics.beats.WithLabelValues("accepted") // looked up once, not per beat
	for {
		b, err := r.Read()
		if err == nil && s.tooSoon(st.Session()) {
			limits.Hit(limits.Beats)
			err = fmt.Errorf("beats less than %v apart", minBeatGap)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && st.Session().Err() == nil && ctx.Err() == nil {
				if ok, held := s.logLimit.Allow(id.String()); ok {
					s.log.Warn("refused heartbeat", "polecat", id, "reason", err, "lines_not_logged", held)
				}
				s.metrics.beats.WithLabelValues("refused").Inc()
				_ = st.Reject(err.Error())
			}
			return
		}
		accepted.Inc()
		s.judge.Beat(id, b)
	}
}

// tooSoon says whether the last beat on sess, on any of its streams, was
// less than minBeatGap ago, and counts this one as its last. (Per tunnel:
// a restarted agent's first beat may follow its predecessor's closely.)
func (s *Service) tooSoon(sess *tunnel.Session) bool {
	c := s.reg.Lookup(sess)
	return c != nil && !c.Beat(minBeatGap)
}

// minBeatGap is the shortest gap between two beats hostd takes: the agent
// beats every few seconds (and at once on a state change, which its
// watcher debounces), never many times a second.
const minBeatGap = 100 * time.Millisecond

// Revoke marks the polecat revoked: its certificates were, all but those
// valid from validFrom on (zero: the one its tunnel stood on). It stays
// revoked until it connects at or after validFrom.
func (s *Service) Revoke(id wire.Identity, validFrom time.Time) { s.judge.Revoke(id, validFrom) }

// Forget removes a polecat whose tunnel is down from what hostd shows
// (status, /metrics) and keeps (liveness.json, saved at once), answering
// the row it had; it comes back if it connects again. ok is false when
// hostd knows no such polecat; a connected one is refused.
func (s *Service) Forget(id wire.Identity) (row api.Polecat, ok bool, err error) {
	row, _, known := s.Detail(id)
	found, err := s.judge.Forget(id)
	switch {
	case !known || !found:
		return api.Polecat{}, false, nil
	case err != nil:
		return row, true, fmt.Errorf("%s is connected (%w): hostd forgets only a polecat whose tunnel is down; stop its agent, or revoke it ('hostd cert revoke %s'), first", id, err, id)
	}
	s.log.Info("polecat forgotten", "polecat", id, "state", row.State, "since", row.StateSince)
	s.dirty.Store(true)
	s.save()
	return row, true, nil
}

// Run re-judges every polecat each Tick and saves what changed, until ctx
// ends.
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.Tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			s.save()
			return
		case <-t.C:
			s.judge.Tick()
			s.save()
		}
	}
}

// Flush saves every polecat's state now, changed or not (at shutdown, so
// the next start has the last known states).
func (s *Service) Flush() {
	s.dirty.Store(true)
	s.save()
}

// save keeps every polecat's state and events on disk. State changes only
// mark them dirty; the tick saves at most once per Tick, so a thousand
// polecats changing state at once (hostd restarting) cost one write, not a
// thousand.
func (s *Service) save() {
	if s.cfg.Path == "" || !s.dirty.Swap(false) {
		return
	}
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	if err := state.Save(s.cfg.Path, s.judge.Snapshot()); err != nil {
		s.log.Error("saving polecat states failed", "err", err)
	}
}
