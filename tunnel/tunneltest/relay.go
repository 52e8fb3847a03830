package tunneltest

import (
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Relay forwards UDP datagrams and TCP connections from one loopback port
// (UDP and TCP share its number, as with hostd) to a target, and can block
// UDP, cut everything (a silent partition: bytes are dropped, nothing is
// reset), or add a one-way delay in each direction. It stands in for the
// network, with no privileges needed.
type Relay struct {
	// Addr is where clients connect.
	Addr string

	target   string
	tcp      net.Listener
	udp      *net.UDPConn
	blockUDP atomic.Bool
	cut      atomic.Bool
	mute     atomic.Bool
	delay    atomic.Int64
	tcpOpen  atomic.Int64 // client connections both of whose directions still copy

	mu      sync.Mutex
	conns   map[string]*net.UDPConn // client addr -> socket to target
	closing []io.Closer
	done    chan struct{}
}

// NewRelay starts a relay to target ("host:port") on 127.0.0.1; it is
// closed when the test ends.
func NewRelay(t testing.TB, target string) *Relay {
	t.Helper()
	r := &Relay{target: target, conns: map[string]*net.UDPConn{}, done: make(chan struct{})}
	for i := 0; ; i++ {
		tcp, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("relay: %v", err)
		}
		port := tcp.Addr().(*net.TCPAddr).Port
		udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
		if err != nil {
			_ = tcp.Close()
			if i < 10 {
				continue
			}
			t.Fatalf("relay: %v", err)
		}
		r.tcp, r.udp, r.Addr = tcp, udp, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		break
	}
	go r.serveTCP()
	go r.serveUDP()
	t.Cleanup(r.Close)
	return r
}

// BlockUDP drops every datagram while on is true.
func (r *Relay) BlockUDP(on bool) { r.blockUDP.Store(on) }

// Cut drops all traffic, both transports, while on is true.
func (r *Relay) Cut(on bool) { r.cut.Store(on) }

// Mute drops what clients send, both transports, while on is true: the
// target still reaches them, as it would a frozen peer it keeps writing to.
func (r *Relay) Mute(on bool) { r.mute.Store(on) }

// SetDelay delays every datagram and TCP chunk by d in each direction, so a
// round trip costs 2d more; a new TCP connection also waits 2d before its
// first byte, for the handshake it would have paid.
func (r *Relay) SetDelay(d time.Duration) { r.delay.Store(int64(d)) }

// Close stops the relay and every connection through it.
func (r *Relay) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.done:
		return
	default:
	}
	close(r.done)
	_ = r.tcp.Close()
	_ = r.udp.Close()
	for _, c := range r.conns {
		_ = c.Close()
	}
	for _, c := range r.closing {
		_ = c.Close()
	}
}

func (r *Relay) track(c io.Closer) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.done:
		_ = c.Close()
		return false
	default:
		r.closing = append(r.closing, c)
		return true
	}
}

func (r *Relay) serveTCP() {
	for {
		c, err := r.tcp.Accept()
		if err != nil {
			return
		}
		go r.connect(c)
	}
}

// connect joins a client connection to the target. With a delay set, the
// connection first waits one round trip, as its SYN and SYN-ACK would have.
func (r *Relay) connect(c net.Conn) {
	time.Sleep(2 * time.Duration(r.delay.Load()))
	up, err := net.Dial("tcp", r.target)
	if err != nil {
		_ = c.Close()
		return
	}
	if !r.track(c) || !r.track(up) {
		return
	}
	r.tcpOpen.Add(1)
	var both sync.WaitGroup
	both.Add(2)
	go func() { defer both.Done(); r.pipe(up, c, &r.mute) }()
	go func() { defer both.Done(); r.pipe(c, up, nil) }()
	go func() { both.Wait(); r.tcpOpen.Add(-1) }()
}

// OpenTCP is how many TCP connections run through the relay now.
func (r *Relay) OpenTCP() int { return int(r.tcpOpen.Load()) }

// pipe copies src to dst in order, dropping bytes while cut (or while
// muted, when mute is not nil) and holding each chunk for the current
// delay.
func (r *Relay) pipe(dst, src net.Conn, mute *atomic.Bool) {
	type chunk struct {
		b  []byte
		at time.Time
	}
	q := make(chan chunk, 1024)
	go func() {
		defer func() { _ = dst.Close() }()
		for c := range q {
			time.Sleep(time.Until(c.at))
			if r.cut.Load() || (mute != nil && mute.Load()) {
				continue
			}
			if _, err := dst.Write(c.b); err != nil {
				return
			}
		}
	}()
	defer close(q)
	for {
		buf := make([]byte, 64<<10)
		n, err := src.Read(buf)
		if n > 0 && !r.cut.Load() && (mute == nil || !mute.Load()) {
			q <- chunk{buf[:n], time.Now().Add(time.Duration(r.delay.Load()))}
		}
		if err != nil {
			return
		}
	}
}

func (r *Relay) serveUDP() {
	buf := make([]byte, 64<<10)
	for {
		n, from, err := r.udp.ReadFromUDP(buf)
		if err != nil {
			return
		}
		if r.blockUDP.Load() || r.cut.Load() || r.mute.Load() {
			continue
		}
		up, err := r.upstream(from)
		if err != nil {
			continue
		}
		r.later(append([]byte(nil), buf[:n]...), func(b []byte) { _, _ = up.Write(b) })
	}
}

// upstream returns the socket that carries from's datagrams to the target,
// creating it (and its reverse path) on first use.
func (r *Relay) upstream(from *net.UDPAddr) (*net.UDPConn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.conns[from.String()]; ok {
		return c, nil
	}
	taddr, err := net.ResolveUDPAddr("udp", r.target)
	if err != nil {
		return nil, err
	}
	up, err := net.DialUDP("udp", nil, taddr)
	if err != nil {
		return nil, err
	}
	r.conns[from.String()] = up
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := up.Read(buf)
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					continue
				}
				return
			}
			if r.blockUDP.Load() || r.cut.Load() {
				continue
			}
			r.later(append([]byte(nil), buf[:n]...), func(b []byte) { _, _ = r.udp.WriteToUDP(b, from) })
		}
	}()
	return up, nil
}

// later runs send(b) after the current delay (at once when there is none).
func (r *Relay) later(b []byte, send func([]byte)) {
	d := time.Duration(r.delay.Load())
	if d <= 0 {
		send(b)
		return
	}
	time.AfterFunc(d, func() { send(b) })
}
