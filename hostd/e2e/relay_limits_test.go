package e2e

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// highWater is a process's peak resident memory in KiB.
func highWater(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			n, _ := strconv.Atoi(strings.Fields(line)[1])
			return n
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

func TestRelayStreams100MB(t *testing.T) {
	const size = 100 << 20
	r := newRelayRig(t, rigOpts{})
	r.run(t, nil, "gt", "nudge", "zeros", "1048576") // warm up both sides
	hostd0, agent0 := highWater(t, r.hostd.Cmd.Process.Pid), highWater(t, r.agent.Cmd.Process.Pid)

	cmd := r.command("gt", "nudge", "zeros", strconv.Itoa(size))
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil || n != size {
		t.Fatalf("stdout: %d bytes, %v; want %d", n, err, size)
	}

	data := make([]byte, size)
	_, _ = rand.Read(data)
	sum := sha256.Sum256(data)
	res := r.run(t, bytes.NewReader(data), "gt", "nudge", "sha")
	if strings.TrimSpace(string(res.stdout)) != hex.EncodeToString(sum[:]) {
		t.Fatalf("stdin: host hashed %q, want %x (stderr %s)", res.stdout, sum, res.stderr)
	}
	hostd1, agent1 := highWater(t, r.hostd.Cmd.Process.Pid), highWater(t, r.agent.Cmd.Process.Pid)
	t.Logf("peak RSS: hostd %d -> %d KiB, agent %d -> %d KiB", hostd0, hostd1, agent0, agent1)
	const budget = 40 << 10 // KiB; 100 MiB streamed each way
	if hostd1-hostd0 > budget || agent1-agent0 > budget {
		t.Errorf("memory grew with the stream: hostd +%d KiB, agent +%d KiB", hostd1-hostd0, agent1-agent0)
	}
}

func TestRelayConcurrencyLimit(t *testing.T) {
	r := newRelayRig(t, rigOpts{serve: []string{"--relay-max-concurrent", "4"}})
	dir := r.scratch(t)
	var wg sync.WaitGroup
	results := make([]result, 50)
	for i := range results {
		wg.Add(1)
		go func() { defer wg.Done(); results[i] = r.run(t, nil, "gt", "nudge", "conc", dir, "0.1") }()
	}
	wg.Wait()
	for i, res := range results {
		if res.code != 0 {
			t.Errorf("relay %d: exit %d, %s", i, res.code, res.stderr)
		}
	}
	counts, _ := os.ReadFile(filepath.Join(dir, "counts"))
	most := 0
	for _, f := range strings.Fields(string(counts)) {
		n, _ := strconv.Atoi(f)
		most = max(most, n)
	}
	if lines := len(strings.Fields(string(counts))); lines != 50 || most > 4 || most < 2 {
		t.Errorf("%d commands ran, at most %d at once; want 50 with at most 4 (and some overlap)", lines, most)
	}

	// With no patience in the queue, the extra commands fail clearly.
	q := newRelayRig(t, rigOpts{serve: []string{"--relay-max-concurrent", "2", "--relay-queue-wait", "50ms"}})
	results = make([]result, 8)
	for i := range results {
		wg.Add(1)
		go func() { defer wg.Done(); results[i] = q.run(t, nil, "gt", "nudge", "conc", q.scratch(t), "1") }()
	}
	wg.Wait()
	ok, refused := 0, 0
	for _, res := range results {
		switch {
		case res.code == 0:
			ok++
		case res.code == 255 && strings.Contains(string(res.stderr), "too many concurrent gt/bd commands from this polecat (limit 2"):
			refused++
		default:
			t.Errorf("unclear failure: exit %d, %q", res.code, res.stderr)
		}
	}
	if ok < 2 || refused == 0 || ok+refused != 8 {
		t.Errorf("%d completed, %d refused; want 2+ completed and the rest refused clearly", ok, refused)
	}
}

func TestRelayTimeout(t *testing.T) {
	r := newRelayRig(t, rigOpts{serve: []string{"--relay-timeout", "500ms"}})
	pidFile := filepath.Join(r.scratch(t), "pid")
	start := time.Now()
	res := r.run(t, nil, "gt", "nudge", "sleep", pidFile, "30")
	if res.code != 255 || !strings.Contains(string(res.stderr), "relay timeout of 500ms") {
		t.Fatalf("exit %d, %q; want 255 and the timeout named", res.code, res.stderr)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("timed out after %v, want about 500ms", d)
	}
	waitGone(t, pidFrom(t, pidFile), time.Second)
	if res := r.run(t, nil, "gt", "nudge", "exit", "0"); res.code != 0 {
		t.Errorf("a quick command after a timeout: exit %d, %s", res.code, res.stderr)
	}
}
