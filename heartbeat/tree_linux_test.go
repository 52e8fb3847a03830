package heartbeat

import (
	"fmt"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// startTree starts sh with two sleeping children and a busy one.
func startTree(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", "sleep 30 & sleep 30 & (while :; do :; done) & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = exec.Command("pkill", "-KILL", "-P", fmt.Sprint(cmd.Process.Pid)).Run()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

func TestTreeSampler(t *testing.T) {
	cmd := startTree(t)
	s, err := NewTreeSampler("")
	if err != nil {
		t.Fatal(err)
	}
	root, err := s.Identify(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	var st TreeStats
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) { // until the children are there
		if st, _, _ = s.Sample(root, time.Now()); st.Processes >= 4 {
			break
		}
	}
	if st.Processes != 4 || !slices.Contains(st.Names, "sleep") || !slices.Contains(st.Names, "sh") {
		t.Fatalf("tree: %+v, want sh, two sleeps and a busy subshell", st)
	}
	time.Sleep(500 * time.Millisecond)
	st, found, err := s.Sample(root, time.Now())
	if err != nil || !found {
		t.Fatal(err)
	}
	// About 100 alone; make test runs this beside hostd/e2e's parallel
	// tests on two cores, where the loop got 13% (an idle tree gets 0).
	if st.CPUPercent < 5 || st.CPUPercent > 250 {
		t.Errorf("CPU%% of a tree with one busy loop: %.1f, want about 100 (at least 5 on a loaded machine)", st.CPUPercent)
	}
	if st.RSSBytes == 0 || st.Threads < 4 || st.CPUSeconds <= 0 {
		t.Errorf("stats: %+v", st)
	}
	// A ProcID with the right pid but another start time is another
	// process: pid reuse must not make a dead session look alive.
	if _, found, _ := s.Sample(ProcID{PID: root.PID, Start: root.Start + 1}, time.Now()); found {
		t.Error("a reused pid was taken for the session")
	}
	_ = exec.Command("pkill", "-KILL", "-P", fmt.Sprint(cmd.Process.Pid)).Run()
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if _, found, _ := s.Sample(root, time.Now()); found {
		t.Error("a killed root still found")
	}
	if _, ok := s.FindProcess("no-such-process-name"); ok {
		t.Error("found a process that does not exist")
	}
	c := s.ContainerStats(t.TempDir())
	if c.MemAvailable == 0 || c.DiskFree == 0 || c.DiskFreeError != "" {
		t.Errorf("container stats: %+v", c)
	}
	if e := s.ContainerStats("/nonexistent/dir"); e.DiskFreeError == "" {
		t.Error("no error for a missing work dir")
	}
}
