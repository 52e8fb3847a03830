package linkem

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
)

// The sysctls of TCP's congestion control, of the network namespace of
// whoever opens them: the default, those the kernel has loaded, and
// those a namespace other than the host's may choose.
const (
	tcpCongestion = "/proc/sys/net/ipv4/tcp_congestion_control"
	tcpAvailable  = "/proc/sys/net/ipv4/tcp_available_congestion_control"
	tcpAllowed    = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"
)

// HasTCP says whether the kernel has the TCP congestion control name
// loaded, so that Config.TCP may name it.
func HasTCP(name string) bool {
	list, err := os.ReadFile(tcpAvailable)
	return err == nil && slices.Contains(strings.Fields(string(list)), name)
}

// BenchTCP is the TCP congestion control of the WAN benchmarks' links:
// $SIDECAR_BENCH_WAN_TCP, else cubic, the default of Linux and macOS,
// which an operator's host and a cluster's nodes run unless someone
// chose another.
func BenchTCP() string {
	if tcp := os.Getenv("SIDECAR_BENCH_WAN_TCP"); tcp != "" {
		return tcp
	}
	return "cubic"
}

// added counts, for each name allowTCP added to the host's allowed list,
// the links that still need it there.
var (
	addedMu sync.Mutex
	added   = map[string]int{}
)

// allowTCP lets a namespace choose the congestion control name: outside
// the host's namespace the kernel takes only those the host's
// tcp_allowed_congestion_control lists, so one it lacks is added there
// until undo has been called by every link that needed it.
func allowTCP(name string) (undo func() error, err error) {
	addedMu.Lock()
	defer addedMu.Unlock()
	names, err := allowedTCP()
	if err != nil {
		return nil, err
	}
	if added[name] == 0 && slices.Contains(names, name) {
		return func() error { return nil }, nil
	}
	if added[name] == 0 {
		if err := setAllowedTCP(append(names, name)); err != nil {
			return nil, err
		}
	}
	added[name]++
	return func() error {
		addedMu.Lock()
		defer addedMu.Unlock()
		if added[name]--; added[name] > 0 {
			return nil
		}
		delete(added, name)
		names, err := allowedTCP()
		if err != nil {
			return err
		}
		return setAllowedTCP(slices.DeleteFunc(names, func(n string) bool { return n == name }))
	}, nil
}

// allowedTCP is the host's list of congestion controls a namespace may
// choose.
func allowedTCP() ([]string, error) {
	list, err := os.ReadFile(tcpAllowed)
	if err != nil {
		return nil, fmt.Errorf("linkem: reading the TCP congestion controls namespaces may choose: %w", err)
	}
	return strings.Fields(string(list)), nil
}

// setAllowedTCP makes names the host's list of congestion controls a
// namespace may choose.
func setAllowedTCP(names []string) error {
	if err := os.WriteFile(tcpAllowed, []byte(strings.Join(names, " ")), 0); err != nil {
		return fmt.Errorf("linkem: letting namespaces choose TCP congestion controls %q: %w", names, err)
	}
	return nil
}
