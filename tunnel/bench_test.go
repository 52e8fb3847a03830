package tunnel_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/linkem"
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
// benchstat -col /impl. BenchmarkWANBulk runs the bulk rows across an
// emulated link (make bench-wan).

const bulkSize = 64 << 20

// The WAN rows' link, as hostd/e2e's (wan_test.go): 25 ms each way, 20
// Mbit/s, each loss rate; 8 MiB a bulk, seconds at the link's rate.
const (
	wanDelay    = 25 * time.Millisecond
	wanRate     = 20_000_000
	wanBulkSize = 8 << 20
)

type bench struct {
	ca             *tunneltest.CA
	srvTLS, cliTLS *tls.Config
	sc             tunnel.ServerConfig
	cc             tunnel.ClientConfig
	// link, when set, puts the servers in its A and the clients in its
	// B; else both are on loopback.
	link *linkem.Link
}

// onServer and onClient call f with the sockets it opens at that end.
func (be *bench) onServer(b *testing.B, f func() error) {
	be.on(b, func(l *linkem.Link) *linkem.Namespace { return l.A }, f)
}
func (be *bench) onClient(b *testing.B, f func() error) {
	be.on(b, func(l *linkem.Link) *linkem.Namespace { return l.B }, f)
}

func (be *bench) on(b *testing.B, end func(*linkem.Link) *linkem.Namespace, f func() error) {
	var err error
	if be.link == nil {
		err = f()
	} else {
		err = end(be.link).Run(f)
	}
	if err != nil {
		b.Fatal(err)
	}
}

// serverAddr is an address for a server to listen on, any port.
func (be *bench) serverAddr() string {
	if be.link == nil {
		return "127.0.0.1:0"
	}
	return be.link.A.Addr.String() + ":0"
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
	var ln *tunnel.Listener
	be.onServer(b, func() (err error) { ln, err = tunnel.Listen(be.serverAddr(), be.sc); return err })
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
	var s *tunnel.Session
	be.onClient(b, func() (err error) { s, err = tunnel.Dial(context.Background(), addr, cc); return err })
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
	var ln *quic.Listener
	be.onServer(b, func() (err error) { ln, err = quic.ListenAddr(be.serverAddr(), be.srvTLS, quicConf()); return err })
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
	var c *quic.Conn
	be.onClient(b, func() (err error) {
		c, err = quic.DialAddr(context.Background(), addr, be.cliTLS, quicConf())
		return err
	})
	b.Cleanup(func() { c.CloseWithError(0, "") })
	return c
}

// rawTLS starts a bare TLS server; with mux, each connection is a yamux
// session whose streams run serve, else the connection itself does.
func (be *bench) rawTLS(b *testing.B, mux bool, serve func(net.Conn)) string {
	var ln net.Listener
	be.onServer(b, func() (err error) { ln, err = tls.Listen("tcp", be.serverAddr(), be.srvTLS); return err })
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
	newBench(b).bulk(b, bulkSize, "transport=quic/impl=baseline", "transport=quic/impl=ours", "transport=tcp/impl=baseline", "transport=tcp/impl=ours")
}

// BenchmarkWANBulk: BenchmarkBulk's 8 MiB across an emulated link, 50 ms
// round trip, 20 Mbit/s, 0, 1 and 3% of the packets lost each way: ours
// on QUIC and on the TCP fallback beside bare TLS over TCP, TCP on cubic
// (Linux's and macOS's default); then the TCP rows again on bbr, which
// takes no random loss for congestion, where the kernel has it.
func BenchmarkWANBulk(b *testing.B) {
	for _, loss := range []int{0, 1, 3} {
		for _, tcp := range []string{"cubic", "bbr"} {
			b.Run(fmt.Sprintf("loss=%dpct/tcp=%s", loss, tcp), func(b *testing.B) {
				if !linkem.HasTCP(tcp) {
					b.Skipf("the kernel has no %s", tcp)
				}
				be := newBench(b)
				be.link = linkem.New(b, linkem.Config{Seed: 1, TCP: tcp,
					Shape: linkem.Shape{Delay: wanDelay, Loss: float64(loss) / 100, Rate: wanRate}})
				rows := []string{"transport=tcp/impl=ours", "transport=tcp/impl=baseline"}
				if tcp == "cubic" { // QUIC's own controller: once is enough
					rows = append(rows, "transport=quic/impl=ours")
				}
				be.bulk(b, wanBulkSize, rows...)
			})
		}
	}
}

// bulk runs the named bulk rows, each sending size bytes on one stream.
func (be *bench) bulk(b *testing.B, size int, rows ...string) {
	data := make([]byte, 256<<10)
	push := func(b *testing.B, w io.Writer, closeWrite func() error, r io.Reader) {
		for sent := 0; sent < size; sent += len(data) {
			if _, err := w.Write(data[:min(len(data), size-sent)]); err != nil {
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
	impls := map[string]func(*testing.B){
		"transport=quic/impl=baseline": func(b *testing.B) {
			c := be.rawQUICConn(b, be.rawQUIC(b, func(s *quic.Stream) { sink(s) }))
			b.SetBytes(int64(size))
			for b.Loop() {
				s, err := c.OpenStreamSync(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				push(b, s, s.Close, s)
			}
		},
		"transport=quic/impl=ours": func(b *testing.B) {
			be.ours(b, tunnel.TransportQUIC, "sink", int64(size), func(st *tunnel.Stream) { push(b, st, st.CloseWrite, st) })
		},
		"transport=tcp/impl=baseline": func(b *testing.B) {
			addr := be.rawTLS(b, false, func(c net.Conn) { sink(c) })
			b.SetBytes(int64(size))
			for b.Loop() {
				b.StopTimer()
				var c *tls.Conn
				be.onClient(b, func() (err error) { c, err = tls.Dial("tcp", addr, be.cliTLS); return err })
				b.StartTimer()
				push(b, c, c.CloseWrite, c)
				c.Close()
			}
		},
		"transport=tcp/impl=ours": func(b *testing.B) {
			be.ours(b, tunnel.TransportTCP, "sink", int64(size), func(st *tunnel.Stream) { push(b, st, st.CloseWrite, st) })
		},
	}
	for _, name := range rows {
		b.Run(name, impls[name])
	}
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
