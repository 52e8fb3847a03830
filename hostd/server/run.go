package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/control"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/internal/parts"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// shutdownWait bounds how long Run waits, once its context has ended or a
// part has failed, for its parts (sessions among them) to return; a part
// still running then is logged by name and left behind, so that a stuck
// part cannot keep hostd from exiting.
const shutdownWait = 5 * time.Second

// Run listens for tunnels, on the control socket and on the admin and
// metrics addresses when set, and runs the services' loops, until ctx
// ends or one of them fails. Each is a part Run owns (internal/parts): the
// first to fail ends the others and is what Run returns, and Run returns
// once every part has, sessions among them, or once shutdownWait has
// passed, logging the parts still running. A listener it cannot open
// fails Run before any part starts.
func (s *Server) Run(ctx context.Context) error {
	resetKey, err := s.dir.QUICResetKey()
	if err != nil {
		return err
	}
	ln, err := tunnel.Listen(s.cfg.Listen, tunnel.ServerConfig{
		StatelessResetKey: resetKey,
		GetCertificate:    s.certs.GetCertificate,
		ClientCAs:         s.certs.CA().Pool(),
		TrustDomain:       s.certs.CA().TrustDomain,
		Authorize:         s.certs.Authorize,
		Join:              s.certs.ServeJoin,
		ServerVersion:     s.cfg.Version,
		Config:            s.cfg.Tunnel,
		Logger:            s.log,
	})
	if err != nil {
		return err
	}
	s.ln.Store(ln)
	defer ln.Close()
	ctlLn, adminLn, metricsLn, err := s.listen()
	if err != nil {
		return err
	}

	p, pctx := parts.New(ctx, s.log)
	p.Go("control socket", func(ctx context.Context) error {
		return serveHTTP(ctx, &http.Server{Handler: control.Handler(s.services(ln)), ReadHeaderTimeout: 5 * time.Second}, ctlLn)
	})
	if adminLn != nil {
		s.log.Warn("serving the admin API over plain HTTP: any local user, and on Docker Desktop any container (host.docker.internal reaches the host's loopback), can issue certificates there", "addr", adminLn.Addr().String())
		p.Go("admin API", func(ctx context.Context) error {
			return serveHTTP(ctx, &http.Server{Handler: control.AdminHandler(s.certs), ReadHeaderTimeout: 5 * time.Second}, adminLn)
		})
	}
	if metricsLn != nil {
		p.Go("metrics", func(ctx context.Context) error { return s.metrics.serve(ctx, metricsLn, s.log) })
	}
	p.Go("git", s.git.Serve)
	p.Go("liveness", parts.UntilDone(s.live.Run))
	p.Go("nudges", parts.UntilDone(s.nudge.Run))
	p.Go("revocations watch", parts.UntilDone(s.certs.Watch))
	p.Go("memory reclaim", parts.UntilDone(func(ctx context.Context) { s.reclaim(ctx, 5*time.Second) }))
	if s.queue != nil {
		p.Go("upstream queue", parts.UntilDone(s.queue.Run))
	}
	if s.cfg.SandboxReap > 0 {
		r := &sandbox.Reaper{Town: s.cfg.Town, Runtime: s.cfg.SandboxRuntime, Interval: s.cfg.SandboxReap, Logger: s.log,
			Revoke: func(id wire.Identity) error { _, err := s.certs.Revoke(id.String()); return err },
			Forget: func(ctx context.Context, id wire.Identity) error {
				_, err := s.Forget(ctx, id, reapForgetWait)
				return err
			}}
		p.Go("sandbox reaper", parts.UntilDone(r.Run))
	}
	s.log.Info("hostd listening", "addr", ln.Addr(), "transports", "quic+tcp", "control", s.dir.Socket(), "ca", s.certs.CA().Dir)
	s.starts.LogFailures()
	p.Go("tunnel accept", func(ctx context.Context) error { return s.accept(ctx, ln, p) })

	<-pctx.Done() // ctx ended, or a part failed
	err = p.Stop(shutdownWait)
	s.live.Flush() // the last known states, for the next start
	return err
}

// listen opens the control socket and, when set, the admin and metrics
// addresses (nil when not); on an error none stays open.
func (s *Server) listen() (ctl, admin, metrics net.Listener, err error) {
	if ctl, err = control.Listen(s.cfg.Town); err != nil {
		return nil, nil, nil, err
	}
	if s.cfg.AdminListen != "" {
		if admin, err = control.ListenAdmin(s.cfg.AdminListen); err != nil {
			ctl.Close()
			return nil, nil, nil, fmt.Errorf("serving the admin API (admin_listen): %w: stop what holds the address, or give another", err)
		}
	}
	if s.cfg.MetricsListen != "" {
		if metrics, err = net.Listen("tcp", s.cfg.MetricsListen); err != nil {
			ctl.Close()
			if admin != nil {
				admin.Close()
			}
			return nil, nil, nil, fmt.Errorf("serving metrics (metrics_listen): %w: stop what holds the address, or give another", err)
		}
	}
	return ctl, admin, metrics, nil
}

// accept serves each tunnel as a part of p, named after its polecat, until
// ctx ends; a listener that stops before is an error.
func (s *Server) accept(ctx context.Context, ln *tunnel.Listener, p *parts.Group) error {
	for {
		sess, err := ln.Accept(ctx)
		if ctx.Err() != nil {
			if sess != nil {
				_ = sess.CloseWithReason("hostd shutting down")
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("accepting tunnels: %w", err)
		}
		p.Go("session "+sess.Peer().String(), parts.UntilDone(func(ctx context.Context) { s.serveSession(ctx, sess) }))
	}
}
