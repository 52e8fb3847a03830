package heartbeat

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// BenchmarkTakeBeat measures one beat's process-tree sample on a tree of
// 50 processes (impl=ours), beside what a shell-based liveness check runs
// for the same information, one 'ps' over all processes (impl=ps).
func BenchmarkTakeBeat(b *testing.B) {
	cmd := exec.Command("sh", "-c", strings.Repeat("sleep 60 & ", 49)+"wait")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = exec.Command("pkill", "-P", fmt.Sprint(cmd.Process.Pid)).Run()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	s, err := NewTreeSampler("")
	if err != nil {
		b.Fatal(err)
	}
	root, _ := s.Identify(cmd.Process.Pid)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		st, _, _ := s.Sample(root, time.Now())
		if st.Processes == 50 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the tree has %d processes after 10 s, want 50", st.Processes)
		}
	}
	b.Run("impl=ps", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("ps", "-e", "-o", "pid=,ppid=,rss=,time=,comm=").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=ours", func(b *testing.B) {
		var st TreeStats
		for b.Loop() {
			st, _, _ = s.Sample(root, time.Now())
		}
		if st.Processes != 50 {
			b.Fatalf("tree of %d processes, want 50", st.Processes)
		}
		var buf strings.Builder
		_ = NewWriter(&buf).Write(&Beat{Seq: 1, Interval: 5, Session: Session{Name: "polecat", State: SessionRunning,
			Processes: st.Processes, Names: st.Names, CPUSeconds: st.CPUSeconds, RSSBytes: st.RSSBytes, Threads: st.Threads}})
		b.ReportMetric(float64(buf.Len()), "beat-bytes")
	})
}
