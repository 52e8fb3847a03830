//go:build linux

package confine

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// needLandlock skips where the kernel has no Landlock: hostd refuses to
// relay there (TestStart's point cannot be made).
func needLandlock(t *testing.T) {
	t.Helper()
	if s := Probe(); !s.Available() {
		t.Skipf("no Landlock here: %s", s)
	}
}

// run starts a shell script confined by p and returns its combined output.
func run(t *testing.T, p Policy, script string) string {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	var out bytes.Buffer
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	cmd.Stdin = devnull
	if err := Start(cmd, p); err != nil {
		t.Fatalf("Start: %v", err)
	}
	w.Close()
	_, _ = out.ReadFrom(r)
	r.Close()
	_ = cmd.Wait()
	return out.String()
}

func TestStart(t *testing.T) {
	needLandlock(t)
	base := t.TempDir()
	dirs := map[string]string{}
	for _, d := range []string{"readable", "writable", "secret", "writable/deny-inside-is-not-possible"} {
		dirs[d] = filepath.Join(base, d)
		if err := os.MkdirAll(dirs[d], 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dirs[d], "f"), []byte("content of "+d+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dirs["readable"], "to-secret")
	if err := os.Symlink(filepath.Join(dirs["secret"], "f"), link); err != nil {
		t.Fatal(err)
	}
	p := Policy{Rules: append(System(),
		Rule{dirs["readable"], Read},
		Rule{dirs["writable"], Read | Write},
		Rule{dirs["secret"], List},
		Rule{filepath.Join(base, "missing"), Read}, // grants nothing, refuses nothing
		Rule{link, Read},                           // a symlink: grants nothing, not even its target
	)}
	cases := []struct {
		name, script string
		ok           bool
	}{
		{"read a granted file", "cat " + dirs["readable"] + "/f", true},
		{"list a granted directory", "ls " + dirs["readable"], true},
		{"read a file outside", "cat " + dirs["secret"] + "/f", false},
		{"list a directory granted List", "ls " + dirs["secret"], true},
		{"list a directory outside", "ls " + base, false},
		{"read outside through a symlink inside", "cat " + link, false},
		{"read outside through /proc/self/root", "cat /proc/self/root" + dirs["secret"] + "/f", false},
		{"write where read is granted", "echo x > " + dirs["readable"] + "/new", false},
		{"write where write is granted", "echo x > " + dirs["writable"] + "/new && cat " + dirs["writable"] + "/new", true},
		{"remove where write is granted", "rm " + dirs["writable"] + "/f", true},
		{"make a directory where write is granted", "mkdir " + dirs["writable"] + "/d", true},
		{"make a symlink where write is granted", "ln -s /etc " + dirs["writable"] + "/l", false},
		{"make a fifo where write is granted", "mkfifo " + dirs["writable"] + "/p", false},
		{"move a file out of the writable tree", "mv " + dirs["writable"] + "/deny-inside-is-not-possible/f " + dirs["readable"] + "/moved", false},
		{"a grandchild is confined too", "sh -c 'sh -c \"cat " + dirs["secret"] + "/f\"'", false},
		{"write /dev/null", "echo x > /dev/null", true},
		{"signal a process outside (the test)", "kill -0 " + strconv.Itoa(os.Getpid()), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := run(t, p, c.script+" && echo CONFINE-OK")
			if got := strings.Contains(out, "CONFINE-OK"); got != c.ok {
				t.Errorf("%s: succeeded %v, want %v; output:\n%s", c.script, got, c.ok, out)
			}
			if !c.ok && strings.Contains(out, "content of secret") {
				t.Errorf("the secret was read:\n%s", out)
			}
		})
	}
	// hostd (this process) is not confined, on any of its threads.
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := os.ReadFile(filepath.Join(dirs["secret"], "f")); err != nil {
				t.Errorf("the starting process was confined: %v", err)
			}
		}()
	}
	wg.Wait()
}

func TestStartRefusesBadRules(t *testing.T) {
	for _, p := range []Policy{
		{Rules: []Rule{{"relative", Read}}},
		{Rules: []Rule{{"/a/../b", Read}}},
		{Rules: []Rule{{"/usr", 0}}},
	} {
		if err := Start(exec.Command("/bin/true"), p); err == nil {
			t.Errorf("%v: started", p.Rules)
		}
	}
}

// TestStartNeverConfinesTheMainThread: however many processes are started
// and wherever their goroutines land, hostd's main thread (its
// thread-group leader, which the runtime parks rather than ends) is never
// left confined; nor is any thread that stays.
func TestStartNeverConfinesTheMainThread(t *testing.T) {
	needLandlock(t)
	p := Policy{Rules: System()}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				cmd := exec.Command("/bin/true")
				if err := Start(cmd, p); err != nil {
					t.Error(err)
					return
				}
				_ = cmd.Wait()
			}
		}()
	}
	wg.Wait()
	// A confined thread ends just after its Start has returned: wait for
	// that, a while.
	var confined []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if confined = confinedThreads(t); len(confined) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, task := range confined {
		main := ""
		if task == strconv.Itoa(os.Getpid()) {
			main = " (the main thread)"
		}
		t.Errorf("thread %s%s is left confined", task, main)
	}
}

// confinedThreads are the ids of this process's threads under
// PR_SET_NO_NEW_PRIVS, which Start sets on the thread it confines.
func confinedThreads(t *testing.T) []string {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	var confined []string
	for _, task := range tasks {
		status, err := os.ReadFile(filepath.Join("/proc/self/task", task.Name(), "status"))
		if err != nil {
			continue // a thread that ended as we looked
		}
		if strings.Contains(string(status), "NoNewPrivs:\t1") {
			confined = append(confined, task.Name())
		}
	}
	return confined
}

// TestMain lets the test binary be the confined process for
// TestStartNetwork: CONFINE_TEST_DIAL dials a TCP address, and
// CONFINE_TEST_LISTEN listens on one, saying what happened; otherwise it
// runs the tests, failing them on a goroutine left running.
func TestMain(m *testing.M) {
	if addr := os.Getenv("CONFINE_TEST_DIAL"); addr != "" {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			fmt.Println("refused:", err)
			os.Exit(1)
		}
		c.Close()
		fmt.Println("connected")
		os.Exit(0)
	}
	if addr := os.Getenv("CONFINE_TEST_MPTCP"); addr != "" {
		var d net.Dialer
		d.SetMultipathTCP(true)
		c, err := d.Dial("tcp", addr)
		if err != nil {
			fmt.Println("refused:", err)
			os.Exit(1)
		}
		c.Close()
		fmt.Println("connected over MPTCP")
		os.Exit(0)
	}
	if addr := os.Getenv("CONFINE_TEST_LISTEN"); addr != "" {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Println("refused:", err)
			os.Exit(1)
		}
		l.Close()
		fmt.Println("listening")
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// TestStartNetwork: a confined process connects over TCP to the policy's
// ports alone and binds none of its choosing (Landlock ABI 4), and makes
// no Multipath TCP socket, which Landlock's rules do not see (Go's
// listeners use one by default: the listen case failed without the
// seccomp filter, and a Multipath TCP dial reached any port).
func TestStartNetwork(t *testing.T) {
	needLandlock(t)
	if Probe().Version < 4 {
		t.Skip("Landlock before ABI 4 leaves TCP alone")
	}
	open := func() (net.Listener, uint16) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		return l, uint16(l.Addr().(*net.TCPAddr).Port)
	}
	allowed, port := open()
	other, _ := open()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free := l.Addr().String()
	l.Close()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := Policy{Rules: append(System(), Rule{self, Read | Exec}), ConnectTCP: []uint16{port}}
	for _, c := range []struct {
		env string
		ok  bool
	}{
		{"CONFINE_TEST_DIAL=" + allowed.Addr().String(), true},
		{"CONFINE_TEST_DIAL=" + other.Addr().String(), false},
		{"CONFINE_TEST_LISTEN=" + free, false},
		{"CONFINE_TEST_MPTCP=" + other.Addr().String(), false},
	} {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), c.env)
		var out bytes.Buffer
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = w, w
		devnull, _ := os.Open(os.DevNull)
		cmd.Stdin = devnull
		if err := Start(cmd, p); err != nil {
			t.Fatal(err)
		}
		w.Close()
		_, _ = out.ReadFrom(r)
		r.Close()
		devnull.Close()
		err = cmd.Wait()
		if got := err == nil; got != c.ok {
			t.Errorf("%s: succeeded %v, want %v: %s", c.env, got, c.ok, out.String())
		}
	}
}
