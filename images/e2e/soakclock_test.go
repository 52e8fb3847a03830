//go:build e2e && soak

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	harness "github.com/polecat-sidecar/sidecar/hostd/e2e"
)

// The clock-step fault steps one process agent's wall clock alone, as a
// container's clock is when its machine (a laptop's Docker VM after a
// sleep, a cloud host under NTP) disagrees with the operator's. The
// kernel cannot give one process a wall clock of its own (time namespaces
// offset only the monotonic and boot clocks), and gt-agent is a static Go
// program, so no library can be preloaded into it. The soak builds a
// second gt-agent, gt-agent-clock, from the same source with Go's runtime
// changed by a build overlay: time.Now's wall reading adds an offset in
// nanoseconds that it reads from a file the harness maps too
// (GT_SOAK_CLOCK), while its monotonic reading, which every duration and
// timer uses, is the kernel's, exactly as when a clock is stepped. Only
// the soak's binary has it; what ships is built without the overlay.

// clockEnv names the file whose first 8 bytes are the offset.
const clockEnv = "GT_SOAK_CLOCK"

// clockOverlayGo replaces the runtime's declaration of time.now for
// linux/amd64 (timeasm.go): the vDSO reading keeps its assembly under
// another name, and time.now adds the offset to its wall part.
const clockOverlayGo = `//go:build !faketime && linux && amd64

package runtime

import (
	"internal/runtime/atomic"
	_ "unsafe" // for go:linkname
)

// soakClock is the soak harness's offset of the wall clock in
// nanoseconds, mapped from the file ` + clockEnv + ` names; nil without it.
var soakClock *uint64

func soakRealNow() (sec int64, nsec int32, mono int64)

//go:linkname time_now time.now
//go:nosplit
func time_now() (sec int64, nsec int32, mono int64) {
	sec, nsec, mono = soakRealNow()
	if p := soakClock; p != nil {
		t := sec*1e9 + int64(nsec) + int64(atomic.Load64(p))
		sec, nsec = t/1e9, int32(t%1e9)
		if nsec < 0 {
			sec, nsec = sec-1, nsec+1e9
		}
	}
	return
}

func init() {
	path := gogetenv("` + clockEnv + `")
	if path == "" {
		return
	}
	fd := open(&[]byte(path + "\x00")[0], _O_RDONLY, 0)
	if fd < 0 {
		throw("` + clockEnv + `: cannot open the clock file")
	}
	p, err := mmap(nil, 8, _PROT_READ, 0x1 /* MAP_SHARED */, fd, 0)
	closefd(fd)
	if err != 0 {
		throw("` + clockEnv + `: cannot map the clock file")
	}
	soakClock = (*uint64)(p)
}
`

// buildClockAgent builds gt-agent-clock into harness.BinDir and returns
// its name for harness.Start, or "" (with the reason logged) where the
// overlay does not apply: it replaces linux/amd64's time.now.
func buildClockAgent(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Logf("soak: no clock-step fault on %s/%s (the runtime overlay is for linux/amd64)", runtime.GOOS, runtime.GOARCH)
		return ""
	}
	overlay := clockOverlay(t)
	cmd := exec.Command("go", "build", "-overlay", overlay, "-trimpath", "-ldflags", "-s -w",
		"-o", filepath.Join(harness.BinDir, "gt-agent-clock"), "github.com/polecat-sidecar/sidecar/agent")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building gt-agent with the stepped clock: %v\n%s", err, out)
	}
	checkClockOverlay(t, overlay)
	return "gt-agent-clock"
}

// clockOverlay writes the build overlay and returns its path: the
// runtime's time.now renamed in its assembly, and the Go above in place
// of timeasm.go.
func clockOverlay(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	rt := filepath.Join(strings.TrimSpace(string(out)), "src", "runtime")
	asm, err := os.ReadFile(filepath.Join(rt, "time_linux_amd64.s"))
	if err != nil {
		t.Fatalf("reading the runtime's time.now: %v", err)
	}
	const from, to = "TEXT time·now<ABIInternal>(SB)", "TEXT runtime·soakRealNow<ABIInternal>(SB)"
	if strings.Count(string(asm), from) != 1 {
		t.Fatalf("this Go's runtime/time_linux_amd64.s has no single %q: the soak's clock overlay needs updating", from)
	}
	dir := t.TempDir()
	files := map[string]string{
		"time_linux_amd64.s": strings.Replace(string(asm), from, to, 1),
		"timeasm.go":         clockOverlayGo,
	}
	replace := map[string]string{}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		replace[filepath.Join(rt, name)] = p
	}
	b, _ := json.Marshal(map[string]any{"Replace": replace})
	p := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkClockOverlay proves the overlay steps the wall clock and leaves
// the monotonic one alone, with a small program built the same way: a
// fault that stepped nothing would let the soak pass without testing it.
func checkClockOverlay(t *testing.T, overlay string) {
	t.Helper()
	dir := t.TempDir()
	prog := `package main

import (
	"fmt"
	"time"
)

// Prints its wall clock and the milliseconds its monotonic clock counts
// for a 50 ms sleep, waits for a line, and prints its wall clock again.
func main() {
	a := time.Now()
	time.Sleep(50 * time.Millisecond)
	fmt.Println(a.Unix(), time.Since(a).Milliseconds())
	fmt.Scanln()
	fmt.Println(time.Now().Unix())
}
`
	for name, text := range map[string]string{"go.mod": "module clockcheck\n\ngo 1.22\n", "main.go": prog} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "clockcheck")
	build := exec.Command("go", "build", "-overlay", overlay, "-o", bin, ".")
	build.Dir, build.Env = dir, append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the clock check: %v\n%s", err, out)
	}
	c := newClock(t, filepath.Join(dir, "clock"))
	const step = -90 * time.Minute
	c.step(step)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), c.env())
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatalf("running the clock check: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	var unix, elapsedMS int64
	if !lines.Scan() {
		t.Fatalf("the clock check printed nothing: %v", lines.Err())
	}
	if _, err := fmt.Sscan(lines.Text(), &unix, &elapsedMS); err != nil {
		t.Fatalf("the clock check printed %q: %v", lines.Text(), err)
	}
	if got := time.Unix(unix, 0).Sub(time.Now().Add(step)); got < -5*time.Second || got > 5*time.Second {
		t.Fatalf("the stepped clock is off by %v from now%v: the overlay did not step it", got, step)
	}
	if elapsedMS < 50 || elapsedMS > 5000 {
		t.Fatalf("the stepped program measured 50 ms as %d ms: its monotonic clock was stepped too", elapsedMS)
	}
	// A step while it runs, as the soak makes them: back to the real clock.
	c.step(0)
	_, _ = io.WriteString(stdin, "\n")
	if !lines.Scan() {
		t.Fatalf("the clock check printed no second reading: %v", lines.Err())
	}
	if _, err := fmt.Sscan(lines.Text(), &unix); err != nil || time.Since(time.Unix(unix, 0)).Abs() > 5*time.Second {
		t.Fatalf("after a step back to the real clock, the running clock check printed %q", lines.Text())
	}
}

// clock is one agent's clock offset, shared with its process through a
// mapped file.
type clock struct {
	path string
	off  *int64
}

// newClock creates the file at path with a zero offset and maps it.
func newClock(t *testing.T, path string) *clock {
	t.Helper()
	if err := os.WriteFile(path, make([]byte, 8), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := syscall.Mmap(int(f.Fd()), 0, 8, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		t.Fatalf("mapping the clock file %s: %v", path, err)
	}
	t.Cleanup(func() { _ = syscall.Munmap(m) })
	return &clock{path: path, off: (*int64)(unsafe.Pointer(&m[0]))}
}

// env is the environment entry that gives a process this clock.
func (c *clock) env() string { return clockEnv + "=" + c.path }

// step sets the offset from the real wall clock.
func (c *clock) step(d time.Duration) { atomic.StoreInt64(c.off, int64(d)) }

// clockStep is the chaos loop's offset for one clock-step fault, from a
// random number: behind or ahead by 2 s to 68 min, in powers of two, so
// small NTP corrections and a laptop's sleep both come up.
func clockStep(r uint64) time.Duration {
	d := 2 * time.Second << (r % 12)
	if r&(1<<8) != 0 {
		d = -d
	}
	return d
}

// TestClockOverlay builds gt-agent-clock and proves its clock steps
// (the soak does the same before it starts its agents).
func TestClockOverlay(t *testing.T) {
	if buildClockAgent(t) == "" {
		t.Skip("the clock overlay is for linux/amd64")
	}
	for r, want := range map[uint64]time.Duration{0: 2 * time.Second, 11: 2 * time.Second << 11, 1<<8 | 9: -4 * time.Second} {
		if got := clockStep(r); got != want {
			t.Errorf("clockStep(%d) = %v, want %v", r, got, want)
		}
	}
}
