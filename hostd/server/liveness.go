package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/polecat-sidecar/sidecar/heartbeat"
	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/tunnel"
)

// serveHeartbeat reads a polecat's beats. A beat that is oversized,
// malformed or invalid ends the stream with a logged reason and is never
// counted: it cannot make a polecat look alive.
func (s *Server) serveHeartbeat(ctx context.Context, st *tunnel.Stream) {
	id := st.Session().Peer()
	r := heartbeat.NewReader(st)
	for {
		b, err := r.Read()
		if err != nil {
			if !errors.Is(err, io.EOF) && st.Session().Err() == nil && ctx.Err() == nil {
				s.log.Warn("refused heartbeat", "polecat", id, "reason", err)
				s.metrics.beats.WithLabelValues("refused").Inc()
			}
			return
		}
		s.metrics.beats.WithLabelValues("accepted").Inc()
		s.judge.Beat(id, b)
	}
}

// loadLiveness restores the last known states kept on disk.
func loadLiveness(path string) ([]heartbeat.Record, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var recs []heartbeat.Record
	if err := json.Unmarshal(b, &recs); err != nil {
		return nil, errors.New(path + " is corrupt (" + err.Error() + "); move it away to start afresh")
	}
	return recs, nil
}

// saveLiveness keeps every polecat's state and events on disk. State
// changes only mark the file dirty; the tick saves it at most once a
// second, so a thousand polecats changing state at once (hostd restarting)
// cost one write, not a thousand.
func (s *Server) saveLiveness() {
	if !s.livenessDirty.Swap(false) {
		return
	}
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	b, err := json.Marshal(s.judge.Snapshot())
	if err == nil {
		err = pki.WriteAtomic(s.livenessPath, b, 0o600)
	}
	if err != nil {
		s.log.Error("saving polecat states failed", "file", s.livenessPath, "err", err)
	}
}

// logTransition records a state change in the log.
func (s *Server) logTransition(r heartbeat.Record, e heartbeat.Event) {
	s.log.Info("polecat state", "polecat", r.Identity, "from", e.From, "to", e.To, "reason", e.Reason)
}

// tick re-judges every polecat each second and saves what changed.
func (s *Server) tick(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			s.saveLiveness()
			return
		case <-t.C:
			s.judge.Tick()
			s.saveLiveness()
		}
	}
}
