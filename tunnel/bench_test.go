package tunnel_test

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/polecat-sidecar/sidecar/tunnel/internal/yamux"
	"github.com/quic-go/quic-go"

	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Benchmarks pair our tunnel (impl=ours) with the bare transport beneath it
// (impl=baseline), same run, same certificates, same flow-control windows:
// quic-go for QUIC; for TCP, bare yamux over TLS (stream open) and bare TLS
// (bulk, handshake). 'make bench' prints them side by side with
// benchstat -col /impl.

const bulkSize = 64 << 20

type bench struct {
	ca             *tunneltest.CA
	srvTLS, cliTLS *tls.Config
	sc             tunnel.ServerConfig
	cc             tunnel.ClientConfig
}

func newBench(b *testing.B) *bench {
	ca := tunneltest.NewCA(b)
	srv, cli := ca.Server(b), ca.Client(b, testID)
	be := &bench{ca: ca, sc: ca.ServerConfig(srv), cc: ca.ClientConfig(cli)}
	be.sc.Logger = slog.New(slog.DiscardHandler)
	be.srvTLS = &tls.Config{Certificates: []tls.Certificate{srv}, ClientCAs: ca.Pool, ClientAuth: tls.RequireAndVerifyClientCert,
		MinVersion: tls.VersionTLS13, NextProtos: []string{"bench"}, SessionTicketsDisabled: true}
	be.cliTLS = &tls.Config{Certificates: []tls.Certificate{cli}, RootCAs: ca.Pool, ServerName: "localhost",
		MinVersion: tls.VersionTLS13, NextProtos: []string{"bench"}}
	return be
}

// quicConf is quic-go configured as the tunnel configures it by default.
func quicConf() *quic.Config {
	d := tunnel.DefaultConfig()
	return &quic.Config{MaxIdleTimeout: d.IdleTimeout, KeepAlivePeriod: min(d.IdleTimeout/2, tunnel.MaxKeepAlive), MaxIncomingStreams: int64(d.MaxStreams),
		InitialStreamReceiveWindow: 1 << 20, MaxStreamReceiveWindow: uint64(d.StreamWindow),
		InitialConnectionReceiveWindow: 2 << 20, MaxConnectionReceiveWindow: uint64(d.ConnWindow)}
}

// yamuxConf is yamux configured as the tunnel configures it by default.
func yamuxConf() *yamux.Config {
	y := yamux.DefaultConfig()
	y.MaxStreamWindowSize = uint32(tunnel.DefaultConfig().StreamWindow)
	y.LogOutput = io.Discard
	return y
}

// sink reads a stream to EOF and answers one byte.
func sink(rw io.ReadWriter) {
	_, _ = io.Copy(io.Discard, rw)
	_, _ = rw.Write([]byte{1})
}

// echoOne answers each byte read with the same byte.
func echoOne(rw io.ReadWriter) { _, _ = io.Copy(rw, rw) }

// server starts our tunnel server with echo and sink streams.
func (be *bench) server(b *testing.B) string {
	ln, err := tunnel.Listen("127.0.0.1:0", be.sc)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	mux := tunnel.NewServeMux()
	mux.HandleFunc(wire.KindPing, func(_ context.Context, st *tunnel.Stream) { echoOne(st); _ = st.CloseWrite() })
	mux.HandleFunc("sink", func(_ context.Context, st *tunnel.Stream) { sink(st) })
	go func() {
		for {
			s, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			go s.Serve(context.Background(), mux)
		}
	}()
	return ln.Addr()
}

// dial establishes a session; the caller closes it.
func (be *bench) dial(b *testing.B, addr, transport string) *tunnel.Session {
	cc := be.cc
	cc.Transport = transport
	s, err := tunnel.Dial(context.Background(), addr, cc)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// ours runs body on a new stream of kind each iteration, on one session
// established beforehand; size, when not 0, is the bytes moved per
// iteration.
func (be *bench) ours(b *testing.B, transport, kind string, size int64, body func(*tunnel.Stream)) {
	s := be.dial(b, be.server(b), transport)
	defer s.Close()
	if size > 0 {
		b.SetBytes(size)
	}
	for b.Loop() {
		st, err := s.OpenStream(context.Background(), kind, nil)
		if err != nil {
			b.Fatal(err)
		}
		body(st)
		_ = st.Close()
	}
}

// rawQUIC starts a bare quic-go server running serve on every stream.
func (be *bench) rawQUIC(b *testing.B, serve func(*quic.Stream)) string {
	ln, err := quic.ListenAddr("127.0.0.1:0", be.srvTLS, quicConf())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			go func() {
				for {
					s, err := c.AcceptStream(context.Background())
					if err != nil {
						return
					}
					go func() { serve(s); _ = s.Close() }()
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func (be *bench) rawQUICConn(b *testing.B, addr string) *quic.Conn {
	c, err := quic.DialAddr(context.Background(), addr, be.cliTLS, quicConf())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.CloseWithError(0, "") })
	return c
}

// rawTLS starts a bare TLS server; with mux, each connection is a yamux
// session whose streams run serve, else the connection itself does.
func (be *bench) rawTLS(b *testing.B, mux bool, serve func(net.Conn)) string {
	ln, err := tls.Listen("tcp", "127.0.0.1:0", be.srvTLS)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !mux {
				go func() { serve(c); c.Close() }()
				continue
			}
			go func() {
				ys, err := yamux.Server(c, yamuxConf())
				if err != nil {
					return
				}
				for {
					s, err := ys.Accept()
					if err != nil {
						return
					}
					go func() { serve(s); s.Close() }()
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// BenchmarkStreamRTT opens a stream on an established session, sends one
// byte and reads the echo.
func BenchmarkStreamRTT(b *testing.B) {
	be := newBench(b)
	one, buf := []byte{1}, make([]byte, 1)
	exchange := func(b *testing.B, rw io.ReadWriter) {
		if _, err := rw.Write(one); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(rw, buf); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("transport=quic/impl=baseline", func(b *testing.B) {
		c := be.rawQUICConn(b, be.rawQUIC(b, func(s *quic.Stream) { echoOne(s) }))
		for b.Loop() {
			s, err := c.OpenStreamSync(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			exchange(b, s)
			s.CancelRead(0)
			_ = s.Close()
		}
	})
	b.Run("transport=quic/impl=ours", func(b *testing.B) {
		be.ours(b, tunnel.TransportQUIC, wire.KindPing, 0, func(st *tunnel.Stream) { exchange(b, st) })
	})
	b.Run("transport=tcp/impl=baseline", func(b *testing.B) {
		c, err := tls.Dial("tcp", be.rawTLS(b, true, func(c net.Conn) { echoOne(c) }), be.cliTLS)
		if err != nil {
			b.Fatal(err)
		}
		ys, err := yamux.Client(c, yamuxConf())
		if err != nil {
			b.Fatal(err)
		}
		defer ys.Close()
		for b.Loop() {
			s, err := ys.OpenStream()
			if err != nil {
				b.Fatal(err)
			}
			exchange(b, s)
			_ = s.Close()
		}
	})
	b.Run("transport=tcp/impl=ours", func(b *testing.B) {
		be.ours(b, tunnel.TransportTCP, wire.KindPing, 0, func(st *tunnel.Stream) { exchange(b, st) })
	})
}

// BenchmarkBulk sends 64 MiB on one stream and waits for the receiver's
// acknowledgement.
func BenchmarkBulk(b *testing.B) {
	be := newBench(b)
	data := make([]byte, 256<<10)
	push := func(b *testing.B, w io.Writer, closeWrite func() error, r io.Reader) {
		for sent := 0; sent < bulkSize; sent += len(data) {
			if _, err := w.Write(data); err != nil {
				b.Fatal(err)
			}
		}
		if err := closeWrite(); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(r, make([]byte, 1)); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("transport=quic/impl=baseline", func(b *testing.B) {
		c := be.rawQUICConn(b, be.rawQUIC(b, func(s *quic.Stream) { sink(s) }))
		b.SetBytes(bulkSize)
		for b.Loop() {
			s, err := c.OpenStreamSync(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			push(b, s, s.Close, s)
		}
	})
	b.Run("transport=quic/impl=ours", func(b *testing.B) {
		be.ours(b, tunnel.TransportQUIC, "sink", bulkSize, func(st *tunnel.Stream) { push(b, st, st.CloseWrite, st) })
	})
	b.Run("transport=tcp/impl=baseline", func(b *testing.B) {
		addr := be.rawTLS(b, false, func(c net.Conn) { sink(c) })
		b.SetBytes(bulkSize)
		for b.Loop() {
			b.StopTimer()
			c, err := tls.Dial("tcp", addr, be.cliTLS)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			push(b, c, c.CloseWrite, c)
			c.Close()
		}
	})
	b.Run("transport=tcp/impl=ours", func(b *testing.B) {
		be.ours(b, tunnel.TransportTCP, "sink", bulkSize, func(st *tunnel.Stream) { push(b, st, st.CloseWrite, st) })
	})
}

// BenchmarkConnect establishes a session from cold: our Dial includes the
// server's welcome; the baselines end when the handshake does.
func BenchmarkConnect(b *testing.B) {
	be := newBench(b)
	b.Run("transport=quic/impl=baseline", func(b *testing.B) {
		addr := be.rawQUIC(b, func(*quic.Stream) {})
		for b.Loop() {
			c, err := quic.DialAddr(context.Background(), addr, be.cliTLS, quicConf())
			if err != nil {
				b.Fatal(err)
			}
			c.CloseWithError(0, "")
		}
	})
	b.Run("transport=quic/impl=ours", func(b *testing.B) { be.connect(b, tunnel.TransportQUIC) })
	b.Run("transport=tcp/impl=baseline", func(b *testing.B) {
		addr := be.rawTLS(b, false, func(c net.Conn) { _, _ = c.Read(make([]byte, 1)) })
		for b.Loop() {
			c, err := tls.Dial("tcp", addr, be.cliTLS)
			if err != nil {
				b.Fatal(err)
			}
			c.Close()
		}
	})
	b.Run("transport=tcp/impl=ours", func(b *testing.B) { be.connect(b, tunnel.TransportTCP) })
}

// connect dials and closes a session each iteration.
func (be *bench) connect(b *testing.B, transport string) {
	addr := be.server(b)
	for b.Loop() {
		be.dial(b, addr, transport).Close()
	}
}
