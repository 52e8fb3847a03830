package linkem

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// Run calls f on a goroutine of its own, locked to an OS thread that has
// entered the namespace, and gives f's error. Sockets f opens stay in the
// namespace (net.Listen, net.ListenPacket, a Dialer with an IP address):
// use them anywhere afterwards. Goroutines f starts run outside it, and f
// must not call t.Fatal (it is not the test's goroutine).
func (n *Namespace) Run(f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		back, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("linkem: opening this thread's network namespace: %w", err)
			return
		}
		defer back.Close()
		if err := enter(n.path()); err != nil {
			runtime.UnlockOSThread()
			done <- err
			return
		}
		err = f()
		// Left locked if it cannot go back: the thread then ends with
		// this goroutine, and no other goroutine runs in the namespace.
		if unix.Setns(int(back.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		done <- err
	}()
	return <-done
}

// enter moves the calling thread into the namespace at path.
func enter(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("linkem: opening network namespace %s: %w", path, err)
	}
	defer unix.Close(fd)
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("linkem: entering network namespace %s: %w", path, err)
	}
	return nil
}

// openTUN makes the namespace's TUN device, IPv6 off so that nothing
// but what the test sends crosses the link, and sets n.Dev to its name.
func (n *Namespace) openTUN() (*os.File, error) {
	var tun *os.File
	err := n.Run(func() error {
		err := os.WriteFile("/proc/sys/net/ipv6/conf/default/disable_ipv6", []byte("1"), 0)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("linkem: turning IPv6 off in %s: %w", n.Name, err)
		}
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return fmt.Errorf("linkem: opening /dev/net/tun: %w", err)
		}
		ifr, err := unix.NewIfreq("lkm%d")
		if err == nil {
			ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
			err = unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr)
		}
		if err != nil {
			unix.Close(fd)
			return fmt.Errorf("linkem: making a TUN device in %s: %w", n.Name, err)
		}
		n.Dev = ifr.Name()
		tun = os.NewFile(uintptr(fd), "/dev/net/tun:"+n.Dev) // non-blocking: Close ends a Read
		return nil
	})
	return tun, err
}

// unavailable says why no link can be made here, or "".
func unavailable() string {
	if os.Geteuid() != 0 {
		return "needs root, for network namespaces and TUN devices"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return "needs iproute2's ip: " + err.Error()
	}
	f, err := os.OpenFile("/dev/net/tun", os.O_RDWR, 0)
	if err != nil {
		return "needs /dev/net/tun: " + err.Error()
	}
	f.Close()
	return ""
}
