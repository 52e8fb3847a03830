package merge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/archive"
)

// BenchmarkReceive100 is hostd's half of BenchmarkSync's delta pull in
// process: 100 of 10,000 small files in 100 directories changed in the
// container, packed against the base (untimed), then received, planned,
// applied and closed in the host's copy.
func BenchmarkReceive100(b *testing.B) {
	ctr, host := b.TempDir(), b.TempDir()
	old := time.Now().Add(-time.Hour) // settled: Pack trusts times this old
	for i := range 10000 {
		p := filepath.Join(ctr, "results", fmt.Sprintf("d%02d", i%100), fmt.Sprintf("f%05d.txt", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, bytes.Repeat([]byte{byte(i)}, 1<<10+i%(3<<10)), 0o644); err != nil {
			b.Fatal(err)
		}
		_ = os.Chtimes(p, old, old)
	}
	if out, err := exec.Command("cp", "-a", filepath.Join(ctr, "results"), host).CombinedOutput(); err != nil {
		b.Fatalf("%v %s", err, out)
	}
	ctx, lim := context.Background(), sync.DefaultLimits()
	base, _, err := archive.Pack(ctx, ctr, receivePolicy, &bytes.Buffer{})
	if err != nil {
		b.Fatal(err)
	}
	var phase [4]time.Duration
	defer func() {
		for i, name := range []string{"receive", "plan", "apply", "close"} {
			b.ReportMetric(float64(phase[i].Milliseconds())/float64(b.N), name+"-ms")
		}
	}()
	for n := 0; b.Loop(); n++ {
		b.StopTimer()
		for i := range 100 {
			p := filepath.Join(ctr, "results", fmt.Sprintf("d%02d", i), fmt.Sprintf("f%05d.txt", i))
			if err := os.WriteFile(p, fmt.Appendf(nil, "changed %d %d\n", n, i), 0o644); err != nil {
				b.Fatal(err)
			}
			_ = os.Chtimes(p, old, old.Add(time.Duration(n)*time.Second))
		}
		var buf bytes.Buffer
		if _, _, err := archive.Pack(ctx, ctr, receivePolicy, &buf, archive.Since(base)); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0 := time.Now()
		in, err := Receive(ctx, &buf, host, "furiosa", receivePolicy, lim, base)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		plan, err := in.Plan(ctx, base, Options{Polecat: "furiosa", Now: time.Now(), Policy: receivePolicy})
		t2 := time.Now()
		if err == nil {
			err = plan.Apply()
		}
		t3 := time.Now()
		if err := errors.Join(err, in.Close()); err != nil {
			b.Fatal(err)
		}
		t4 := time.Now()
		phase[0] += t1.Sub(t0)
		phase[1] += t2.Sub(t1)
		phase[2] += t3.Sub(t2)
		phase[3] += t4.Sub(t3)
		base = in.Manifest.Resolved()
	}
}
