package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/limits"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// ServeStream runs one relayed command.
func (s *Service) ServeStream(ctx context.Context, st *tunnel.Stream) {
	id := st.Session().Peer()
	arrived := time.Now() // for the trace, which logs nothing before the request is accepted
	w := wire.NewRelayFrameWriter(st)
	fr := wire.NewRelayFrameReader(st)
	_ = st.SetReadDeadline(time.Now().Add(10 * time.Second))
	typ, payload, err := fr.Next()
	_ = st.SetReadDeadline(time.Time{})
	if err == nil && typ != wire.RelayFrameRequest {
		err = fmt.Errorf("first frame is %q, want a request", typ)
	}
	var req wire.RelayRequest
	if err == nil {
		req, err = wire.DecodeRelayRequest(payload)
	}
	if err != nil {
		s.refuse(w, id, "", "", fmt.Errorf("bad relay request: %w", err))
		return
	}
	line, err := s.check(req)
	cmd, sub, _ := strings.Cut(line.Path, " ")
	if err != nil {
		s.refuse(w, id, cmd, sub, err)
		return
	}
	bin := s.bins[cmd]
	if bin == "" {
		s.refuse(w, id, cmd, sub, fmt.Errorf("%s is not installed on the host (set relay.%s in hostd's config)", cmd, cmd))
		return
	}
	if how, _, refused := s.Confinement(); refused {
		s.refuse(w, id, cmd, sub, fmt.Errorf("hostd cannot confine relayed commands on this host (%s): the operator must fix that or set relay.allow_unconfined", how))
		return
	}
	if ok, wait := s.rate.Take(id); !ok {
		limits.Hit(limits.RelayRate)
		s.refuse(w, id, cmd, sub, fmt.Errorf("more than %d gt/bd commands in a minute from this polecat (relay.commands_per_minute): try again in %v",
			s.cfg.CommandsPerMinute, wait.Truncate(100*time.Millisecond)+100*time.Millisecond))
		return
	}
	release, err := s.acquire(ctx, id)
	if err != nil {
		s.refuse(w, id, cmd, sub, err)
		return
	}
	defer release()
	s.trace(ctx, id, "request", "stream_at", arrived)
	start := time.Now()
	exit, err := s.run(ctx, st.Session().Done(), bin, id, req, line, fr, w)
	s.metrics.observe(cmd, exit, err, time.Since(start))
	if err != nil {
		s.log.Warn("relayed command failed", "polecat", id, "command", cmd, "subcommand", sub, "duration", time.Since(start), "err", err)
		_ = w.Frame(wire.RelayFrameError, []byte(err.Error()))
		return
	}
	s.log.Info("relayed command", "polecat", id, "command", cmd, "subcommand", sub, "exit", exit.Code, "signal", exit.Signal, "duration", time.Since(start))
	b, _ := json.Marshal(exit)
	s.trace(ctx, id, "exit")
	_ = w.Frame(wire.RelayFrameExit, b)
	_ = st.CloseWrite()
	if s.cfg.Cycle != nil && exit.Code == 0 && exit.Signal == 0 && line.Cycles() {
		s.cfg.Cycle(ctx, id)
	}
}

// trace logs, at debug level, that a relayed command reached step: with
// the agent's forward trace, the timeline BenchmarkRelayTrace reads. Only
// an accepted command is traced, so its lines are as many as the
// commands a polecat's slots let it run, never one per refused stream.
func (s *Service) trace(ctx context.Context, id wire.Identity, step string, attrs ...any) {
	if s.log.Enabled(ctx, slog.LevelDebug) {
		s.log.Debug("relay trace", append([]any{"polecat", id, "step", step}, attrs...)...)
	}
}

func (s *Service) refuse(w *wire.RelayFrameWriter, id wire.Identity, cmd, sub string, err error) {
	s.metrics.refused(cmd)
	if ok, held := s.logLimit.Allow(id.String()); ok {
		s.log.Warn("refused relayed command", "polecat", id, "command", cmd, "subcommand", sub, "reason", err, "lines_not_logged", held)
	}
	_ = w.Frame(wire.RelayFrameError, []byte(err.Error()))
}

// acquire takes one of the polecat's command slots, waiting up to
// QueueWait.
func (s *Service) acquire(ctx context.Context, id wire.Identity) (func(), error) {
	release, err := s.slots.Take(ctx, id, s.cfg.QueueWait)
	if errors.Is(err, limits.ErrBusy) {
		return nil, fmt.Errorf("too many concurrent gt/bd commands from this polecat (limit %d, waited %v); try again", s.cfg.MaxConcurrent, s.cfg.QueueWait)
	}
	return release, err
}
