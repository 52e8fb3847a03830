package git

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
)

// OnlyUIDs admits a local connection only from a process running as one of
// uids: git's port is plain TCP on loopback, which any user in the
// container can reach, and whoever reaches it pushes as the polecat. The
// peer's uid is the owner of its socket in /proc/net/tcp (or tcp6).
func OnlyUIDs(uids ...int) func(net.Conn) error {
	return func(c net.Conn) error {
		local, err1 := netip.ParseAddrPort(c.RemoteAddr().String())
		remote, err2 := netip.ParseAddrPort(c.LocalAddr().String())
		if err := errors.Join(err1, err2); err != nil {
			return fmt.Errorf("reading the peer's address: %w", err)
		}
		uid, err := socketOwner(local, remote)
		if err != nil {
			return err
		}
		if !slices.Contains(uids, uid) {
			return fmt.Errorf("git connection from uid %d refused: only uid %v may use the polecat's git (gt-agent up --git-allow-uid)", uid, uids)
		}
		return nil
	}
}

// socketOwner finds the uid owning the TCP socket local->remote.
func socketOwner(local, remote netip.AddrPort) (int, error) {
	for _, path := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		uid, found, err := findSocketOwner(f, local, remote)
		f.Close()
		if err != nil {
			return 0, fmt.Errorf("reading %s: %w", path, err)
		}
		if found {
			return uid, nil
		}
	}
	return 0, fmt.Errorf("the connection from %s is in neither /proc/net/tcp nor tcp6", local)
}

// findSocketOwner reads /proc/net/tcp's format: after a header line,
// "sl local rem st queues tr retrnsmt uid ...", addresses as hex in the
// kernel's byte order.
func findSocketOwner(r io.Reader, local, remote netip.AddrPort) (uid int, found bool, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64<<10)
	first := true
	for sc.Scan() {
		if first {
			first = false
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 8 {
			continue
		}
		l, errL := parseProcAddr(f[1])
		rm, errR := parseProcAddr(f[2])
		if errL != nil || errR != nil || l != unmap(local) || rm != unmap(remote) {
			continue
		}
		uid, err := strconv.Atoi(f[7])
		if err != nil || uid < 0 {
			return 0, false, fmt.Errorf("bad uid %q", f[7])
		}
		return uid, true, nil
	}
	return 0, false, sc.Err()
}

// parseProcAddr parses "0100007F:1F90" (IPv4) or 32 hex digits and a port
// (IPv6): the address as 32-bit words in host (little-endian) order.
func parseProcAddr(s string) (netip.AddrPort, error) {
	a, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, errors.New("no port")
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, err
	}
	raw, err := hex.DecodeString(a)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, errors.New("bad address")
	}
	for i := 0; i < len(raw); i += 4 {
		binary.BigEndian.PutUint32(raw[i:], binary.LittleEndian.Uint32(raw[i:]))
	}
	ip, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(ip.Unmap(), uint16(port)), nil
}

func unmap(ap netip.AddrPort) netip.AddrPort { return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()) }
