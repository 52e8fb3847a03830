package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/linkem"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
)

// The WAN rows (issue 40) are the local rows' benchmarks with the host's
// side (hostd, the baselines' servers) and the polecat's (agents, shims,
// clients) at the two ends of an emulated link (internal/linkem): 25 ms
// each way, a 50 ms round trip, with 0, 1 and 3% of the packets lost each
// way, and 20 Mbit/s for the rows that move data (git, the data channel).
// TCP runs cubic, Linux's and macOS's default, in both namespaces
// (linkem.BenchTCP: SIDECAR_BENCH_WAN_TCP sets another).

const (
	wanDelay = 25 * time.Millisecond
	wanRate  = 20_000_000 // bits a second
)

// wanLosses are the WAN rows' loss rates, in percent.
var wanLosses = []int{0, 1, 3}

// wanLink is a link of delay each way, loss percent of the packets lost
// each way (seeded: every run loses the same ones) and rate bits a second
// (0: no limit).
func wanLink(b testing.TB, delay time.Duration, loss int, rate int64) *linkem.Link {
	return linkem.New(b, linkem.Config{Seed: 1, TCP: linkem.BenchTCP(), Shape: linkem.Shape{Delay: delay, Loss: float64(loss) / 100, Rate: rate}})
}

// eachLoss runs f as the sub-benchmark loss=Npct on a new WAN link for each
// of wanLosses.
func eachLoss(b *testing.B, rate int64, f func(*testing.B, ends)) {
	for _, loss := range wanLosses {
		b.Run(fmt.Sprintf("loss=%dpct", loss), func(b *testing.B) { f(b, ends{wanLink(b, wanDelay, loss, rate)}) })
	}
}

// ends is where a benchmark's two sides run: with no link both on this
// process's loopback, with one the host's side in its A and the
// polecat's in its B.
type ends struct{ link *linkem.Link }

// netns is the town's namespaces.
func (e ends) netns() Netns {
	if e.link == nil {
		return Netns{}
	}
	return Netns{Host: e.link.A.Name, Agent: e.link.B.Name}
}

// hostIP and agentIP are the two sides' addresses.
func (e ends) hostIP() string  { return e.ip(func(l *linkem.Link) *linkem.Namespace { return l.A }) }
func (e ends) agentIP() string { return e.ip(func(l *linkem.Link) *linkem.Namespace { return l.B }) }

func (e ends) ip(side func(*linkem.Link) *linkem.Namespace) string {
	if e.link == nil {
		return "127.0.0.1"
	}
	return side(e.link).Addr.String()
}

// hostAddr is a free address on the host's side, for hostd to listen on.
func (e ends) hostAddr(t testing.TB) string {
	return net.JoinHostPort(e.hostIP(), tunneltest.FreePort(t, "127.0.0.1"))
}

// onHost and onAgent call f with the sockets it opens in that side's
// namespace (linkem.Namespace.Run).
func (e ends) onHost(f func() error) error  { return inNetns(e.netns().Host, f) }
func (e ends) onAgent(f func() error) error { return inNetns(e.netns().Agent, f) }

// inNetns calls f in the network namespace netns, or here when it is "".
func inNetns(netns string, f func() error) error {
	if netns == "" {
		return f()
	}
	return (&linkem.Namespace{Name: netns}).Run(f)
}

// listen is a TCP listener on the host's side, closed when b ends.
func (e ends) listen(t testing.TB) net.Listener {
	var ln net.Listener
	err := e.onHost(func() (err error) {
		ln, err = net.Listen("tcp4", net.JoinHostPort(e.hostIP(), "0"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// dialIn is a DialContext whose connections leave from the network
// namespace netns ("": this process's); addresses must be IP addresses.
func dialIn(netns string) func(context.Context, string, string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (c net.Conn, err error) {
		err = inNetns(netns, func() error {
			var derr error
			c, derr = d.DialContext(ctx, network, addr)
			return derr
		})
		return c, err
	}
}

// sshd starts an sshd on the polecat's side of a link, for rsync over
// ssh, and gives the ssh command (rsync -e) that logs in to it with a key
// of this run's. It skips b where sshd is not installed.
func (e ends) sshd(b *testing.B) (rsh, host string) {
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		if sshd, err = exec.LookPath("/usr/sbin/sshd"); err != nil {
			b.Skip("sshd is not installed (make bench-deps: openssh-server)")
		}
	}
	dir := b.TempDir()
	for _, key := range []string{"host", "user"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, key)).CombinedOutput(); err != nil {
			b.Fatalf("ssh-keygen: %v %s", err, out)
		}
	}
	pub, err := os.ReadFile(filepath.Join(dir, "user.pub"))
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600)
	}
	cfg := fmt.Sprintf("ListenAddress %s\nPort 22\nHostKey %s\nAuthorizedKeysFile %s\nPidFile none\nUsePAM no\nStrictModes no\n"+
		"PasswordAuthentication no\nKbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\nLogLevel ERROR\n",
		e.agentIP(), filepath.Join(dir, "host"), filepath.Join(dir, "authorized_keys"))
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(cfg), 0o600)
	}
	if err == nil {
		err = os.MkdirAll("/run/sshd", 0o755) // its privilege separation directory, which its package's service makes
	}
	if err != nil {
		b.Fatal(err)
	}
	cmd := Command(e.netns().Agent, sshd, "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	out := &Proc{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := net.JoinHostPort(e.agentIP(), "22")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := dialIn(e.netns().Agent)(context.Background(), "tcp4", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("sshd does not listen on %s: %v\n%s", addr, err, out.Output())
		}
	}
	return fmt.Sprintf("ssh -i %s -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
		filepath.Join(dir, "user")), "root@" + e.agentIP()
}
