// Package linkem emulates a network link between two network namespaces
// for tests and benchmarks, on kernels without netem or tbf: each
// namespace holds a TUN device, and a forwarder in the test's own process
// reads the IP packets one end sends and writes them to the other after
// dropping, queueing, rate limiting, delaying and jittering them, seeded
// so that a seed gives every run the same decisions. QUIC, TCP, git and
// rsync all cross it as they would a real link. docs/benchmarks.md ("The
// link emulator") says what it emulates and what it does not.
package linkem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Link is an emulated link between two network namespaces, A and B, made
// by New and torn down when its test ends.
type Link struct {
	// A and B are the link's two ends.
	A, B *Namespace

	ab, ba     *pipe
	tuns       []*os.File
	done       chan struct{}
	wg         sync.WaitGroup
	errMu      sync.Mutex
	forwarding error // the first error that stopped a pipe
}

// Namespace is one end of a link: a network namespace holding a TUN
// device with the end's address, and its loopback, up.
type Namespace struct {
	// Name is the namespace's name for `ip netns`.
	Name string
	// Addr is this end's address; the other end is reached through Dev.
	Addr netip.Addr
	// Dev is the TUN device's name inside the namespace.
	Dev string
}

// Command gives a command that runs name with args in the namespace,
// through `ip netns exec`; ctx kills it as exec.CommandContext does.
func (n *Namespace) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
}

// linkSeq numbers the links of this process, for their namespaces' names.
var linkSeq atomic.Int64

// New makes two namespaces joined by a link that cfg describes, and
// starts forwarding; everything is torn down when tb ends, and an error
// that stopped the forwarder fails tb then. It skips tb where a link
// cannot be made: not Linux, not root, no /dev/net/tun or no `ip`.
func New(tb testing.TB, cfg Config) *Link {
	tb.Helper()
	if why := unavailable(); why != "" {
		tb.Skip("linkem: " + why)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		tb.Fatal(err)
	}
	prefix := fmt.Sprintf("linkem-%d-%d-", os.Getpid(), linkSeq.Add(1))
	l := &Link{
		A:    &Namespace{Name: prefix + "a", Addr: cfg.A},
		B:    &Namespace{Name: prefix + "b", Addr: cfg.B},
		done: make(chan struct{}),
	}
	tb.Cleanup(func() {
		if err := l.close(); err != nil {
			tb.Error(err)
		}
	})
	if cfg.TCP != "" {
		undo, err := allowTCP(cfg.TCP)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() {
			if err := undo(); err != nil {
				tb.Error(err)
			}
		})
	}
	for _, end := range []struct{ ns, peer *Namespace }{{l.A, l.B}, {l.B, l.A}} {
		tun, err := end.ns.setUp(end.peer.Addr, cfg.MTU, cfg.TCP)
		if tun != nil {
			l.tuns = append(l.tuns, tun)
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
	epoch := time.Now()
	l.ab = newPipe("A→B", l.tuns[0], l.tuns[1], newShaper(cfg.Shape, cfg.MTU, cfg.Seed, 1), epoch)
	l.ba = newPipe("B→A", l.tuns[1], l.tuns[0], newShaper(*cfg.Back, cfg.MTU, cfg.Seed, 2), epoch)
	for _, p := range []*pipe{l.ab, l.ba} {
		l.wg.Add(2)
		go func() { defer l.wg.Done(); l.fail(p.read()) }()
		go func() { defer l.wg.Done(); l.fail(p.write(l.done)) }()
	}
	return l
}

// Stats gives the counters of each direction: A to B, and B to A.
func (l *Link) Stats() (ab, ba Stats) { return l.ab.snapshot(), l.ba.snapshot() }

// fail keeps the first error that stopped a pipe.
func (l *Link) fail(err error) {
	l.errMu.Lock()
	defer l.errMu.Unlock()
	if l.forwarding == nil {
		l.forwarding = err
	}
}

// close stops the forwarder, which removes the devices, then removes the
// namespaces: whatever went wrong on the way.
func (l *Link) close() error {
	close(l.done)
	for _, tun := range l.tuns {
		tun.Close()
	}
	l.wg.Wait()
	errs := []error{l.forwarding}
	for _, ns := range []*Namespace{l.A, l.B} {
		if _, err := os.Stat(ns.path()); err == nil {
			errs = append(errs, ip("netns", "del", ns.Name))
		}
	}
	return errors.Join(errs...)
}

// setUp makes the namespace, its TUN device and its address with a route
// to peer's, sets its TCP congestion control unless tcp is empty, and
// gives the device (nil if it was not made).
func (n *Namespace) setUp(peer netip.Addr, mtu int, tcp string) (*os.File, error) {
	if err := ip("netns", "add", n.Name); err != nil {
		return nil, err
	}
	tun, err := n.openTUN()
	if err != nil {
		return nil, err
	}
	if tcp != "" {
		err := n.Run(func() error { return os.WriteFile(tcpCongestion, []byte(tcp), 0) })
		if err != nil {
			return tun, fmt.Errorf("linkem: TCP congestion control %q in %s: %w", tcp, n.Name, err)
		}
	}
	script := fmt.Sprintf("link set dev lo up\nlink set dev %s mtu %d up\naddr add %v peer %v dev %s\n", n.Dev, mtu, n.Addr, peer, n.Dev)
	return tun, ipBatch(n.Name, script)
}

// path is the namespace's file, which `ip netns add` mounts.
func (n *Namespace) path() string { return "/run/netns/" + n.Name }

// ip runs `ip args...`.
func ip(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("linkem: ip %v: %w: %s", args, err, bytes.TrimSpace(out))
	}
	return nil
}

// ipBatch runs script's ip commands in the namespace ns, one a line.
func ipBatch(ns, script string) error {
	cmd := exec.Command("ip", "-n", ns, "-batch", "-")
	cmd.Stdin = bytes.NewReader([]byte(script))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("linkem: ip -n %s -batch with %q: %w: %s", ns, script, err, bytes.TrimSpace(out))
	}
	return nil
}
