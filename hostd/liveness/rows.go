package liveness

import (
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"

	"github.com/polecat-sidecar/sidecar/heartbeat"
	"github.com/polecat-sidecar/sidecar/hostd/registry"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Rows are every polecat hostd knows, connected or not, as hostd status
// shows them.
func (s *Service) Rows() []api.Polecat {
	conns := s.reg.Snapshot()
	recs := s.judge.Snapshot()
	rows := make([]api.Polecat, 0, len(recs))
	for _, r := range recs {
		rows = append(rows, row(r, conns))
	}
	return rows
}

// Detail is one polecat's row with its judged record: its last beat and
// recent state changes, which hostd/control shows with the row.
func (s *Service) Detail(id wire.Identity) (api.Polecat, heartbeat.Record, bool) {
	r, ok := s.judge.Get(id)
	if !ok {
		return api.Polecat{}, heartbeat.Record{}, false
	}
	return row(r, s.reg.Snapshot()), r, true
}

// row joins a judged record with its tunnel, if connected.
func row(r heartbeat.Record, conns map[wire.Identity]registry.Info) api.Polecat {
	p := api.Polecat{
		Identity: api.Identity(r.Identity), Rig: r.Identity.Rig, Name: r.Identity.Name,
		State: string(r.State), StateSince: r.Since, Reason: r.Reason, Restored: r.Restored,
		LastBeat: r.LastBeatAt, IdleSeconds: -1,
	}
	if c, ok := conns[r.Identity]; ok {
		p.Connected, p.Transport, p.Remote, p.Since = true, c.Transport, c.Remote, c.Since
		p.RTTMillis, p.Streams, p.CertSerial, p.CertExpires = float64(c.RTT.Microseconds())/1000, c.Streams, c.Serial, c.Expires
	}
	if b := r.LastBeat; b != nil {
		if p.Connected && b.Agent.RTTMillis > 0 {
			// The agent measures RTT continuously (its keepalives); hostd's
			// own estimate only moves when hostd sends, which is rarely.
			p.RTTMillis = b.Agent.RTTMillis
		}
		p.SessionState, p.Command, p.Processes = b.Session.State, b.Session.Command, b.Session.Processes
		p.CPUPercent, p.RSSBytes = b.Session.CPUPercent, b.Session.RSSBytes
		if b.Session.IdleSeconds >= 0 {
			p.IdleSeconds = b.Session.IdleSeconds + time.Since(r.LastBeatAt).Seconds()
		}
	}
	return p
}
