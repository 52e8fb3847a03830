package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Data channel benchmarks on a data root of 10,000 small files (1-4 KiB)
// and four of 120 MiB, ~500 MB in all, random so nothing compresses away,
// generated once under bin/:
//   op=push  impl=ours      hostd sync push into an empty container root: pack, the tunnel (QUIC), extract in the container
//            impl=ourstcp   the same to an agent on the TCP fallback (another polecat, with its own copy of the data)
//            impl=pipeline  tar -c | zstd -1 | zstd -d | tar -x between two local directories, the baseline
//                           (zstd -1 is our level, zstd.SpeedFastest)
//            impl=rsync     rsync -a into an empty directory
//   op=pull  impl=ours      hostd sync pull with every file touched in the container, so all are sent
//   op=pull-unchanged, op=pull-100changed  impl=ours  a pull's whole cost when nothing, or 100 small files, changed
//   op=pull-100changed  impl=rsync  rsync -a of a copy of the tree with the same 100 files changed onto another copy

// benchData returns the data root, made once.
func benchData(b *testing.B) (dir string, size int64) {
	dir, _ = filepath.Abs("../bin/bench-sync-data")
	small := make([]byte, 4<<10)
	if _, err := os.Stat(filepath.Join(dir, "done")); err != nil {
		b.Logf("generating the data root in %s (once)", dir)
		_ = os.RemoveAll(dir)
		for i := range 10000 {
			p := filepath.Join(dir, "results", fmt.Sprintf("d%02d", i%100), fmt.Sprintf("f%05d.txt", i))
			_ = os.MkdirAll(filepath.Dir(p), 0o755)
			_, _ = rand.Read(small)
			if err := os.WriteFile(p, small[:1<<10+i%(3<<10)], 0o644); err != nil {
				b.Fatal(err)
			}
		}
		big := make([]byte, 120<<20)
		for i := range 4 {
			_, _ = rand.Read(big)
			if err := os.WriteFile(filepath.Join(dir, "results", fmt.Sprintf("large%d.bin", i)), big, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		_ = os.WriteFile(filepath.Join(dir, "done"), nil, 0o644)
	}
	_ = filepath.Walk(filepath.Join(dir, "results"), func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			size += fi.Size()
		}
		return nil
	})
	return dir, size
}

func BenchmarkSync(b *testing.B) {
	data, size := benchData(b)
	tw := NewTown(b)
	metrics := tunneltest.FreeAddr(b)
	hostd, addr := tw.Serve("--metrics-listen", metrics, "--config", writeConfig(b, fmt.Sprintf("sync:\n  roots:\n    gastown: %s/{name}\n", b.TempDir())))
	id := wire.Identity{Rig: "gastown", Name: "furiosa"}
	container := b.TempDir()
	agent := Start(b, AgentEnv(addr, tw.Issue(id.String(), time.Hour)), "gt-agent", "up", "--data-root", container, "--state-dir", b.TempDir(), "--sync-checkpoint", "-1s")
	nux, nuxContainer := wire.Identity{Rig: "gastown", Name: "nux"}, b.TempDir()
	Start(b, AgentEnv(addr, tw.Issue(nux.String(), time.Hour)), "gt-agent", "up", "--transport", "tcp", "--data-root", nuxContainer, "--state-dir", b.TempDir(), "--sync-checkpoint", "-1s")
	tw.WaitStatus(10*time.Second, Connected("furiosa", ""))
	tw.WaitStatus(10*time.Second, Connected("nux", ""))
	// Each polecat's host data root holds a copy of the benchmark's data.
	for _, name := range []string{"furiosa", "nux"} {
		root := rootOf(b, tw, name)
		if err := os.MkdirAll(root, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := exec.Command("cp", "-a", filepath.Join(data, "results"), root).Run(); err != nil {
			b.Fatal(err)
		}
	}
	c := tw.Client()
	transferAs := func(b *testing.B, id wire.Identity, pull bool) {
		var res api.SyncResult
		var err error
		if pull {
			res, err = c.SyncPull(context.Background(), api.Identity(id), api.PullOptions{}, nil)
		} else {
			res, err = c.SyncPush(context.Background(), api.Identity(id), nil)
		}
		if err == nil && res.Error != "" {
			err = fmt.Errorf("%s", res.Error)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	transfer := func(b *testing.B, pull bool) { transferAs(b, id, pull) }
	push := func(id wire.Identity, container string) func(*testing.B) {
		return func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				b.StopTimer()
				// A first push, as the baselines make: the container's copy
				// from the last one is removed first.
				if err := os.RemoveAll(filepath.Join(container, "results")); err != nil {
					b.Fatal(err)
				}
				settle(b)
				transferAs(b, id, false)
			}
		}
	}
	b.Run("op=push/impl=ours", push(id, container))
	b.Run("op=push/impl=ourstcp", push(nux, nuxContainer))
	b.Run("op=push/impl=pipeline", func(b *testing.B) {
		b.SetBytes(size)
		dst := b.TempDir()
		for b.Loop() {
			b.StopTimer()
			_ = os.RemoveAll(filepath.Join(dst, "results"))
			settle(b)
			b.StartTimer()
			sh := fmt.Sprintf("tar -C %q -cf - results | zstd -q -1 | zstd -q -d | tar -C %q -xf -", data, dst)
			if out, err := exec.Command("sh", "-c", sh).CombinedOutput(); err != nil {
				b.Fatalf("%v %s", err, out)
			}
		}
	})
	b.Run("op=push/impl=rsync", func(b *testing.B) {
		if _, err := exec.LookPath("rsync"); err != nil {
			b.Skip("rsync is not installed (make bench-deps)")
		}
		b.SetBytes(size)
		dst := b.TempDir()
		for b.Loop() {
			b.StopTimer()
			_ = os.RemoveAll(filepath.Join(dst, "results"))
			settle(b)
			b.StartTimer()
			if out, err := exec.Command("rsync", "-a", filepath.Join(data, "results"), dst).CombinedOutput(); err != nil {
				b.Fatalf("%v %s", err, out)
			}
		}
	})
	b.Run("op=pull/impl=ours", func(b *testing.B) {
		b.SetBytes(size)
		n := 0
		for b.Loop() {
			b.StopTimer()
			// Every file touched in the container: all of it is read,
			// hashed and sent (the content is the same, so nothing merges).
			n++
			at := time.Now().Add(-time.Duration(n) * time.Minute)
			_ = filepath.Walk(container, func(p string, fi os.FileInfo, err error) error {
				if err == nil && fi.Mode().IsRegular() {
					_ = os.Chtimes(p, at, at)
				}
				return nil
			})
			settle(b)
			b.StartTimer()
			transfer(b, true)
		}
	})
	b.Run("op=pull-unchanged/impl=ours", func(b *testing.B) {
		for b.Loop() {
			transfer(b, true)
		}
	})
	b.Run("op=pull-100changed/impl=ours", func(b *testing.B) {
		// Where a delta pull's time goes: each side's CPU per pull, and
		// hostd's CPU profile over the first 10 s with
		// SIDECAR_BENCH_CPUPROFILE set.
		wait := profileHostd(b, metrics, 10*time.Second)
		hostd0, agent0, n := cpuTicks(b, hostd.Cmd.Process.Pid), cpuTicks(b, agent.Cmd.Process.Pid), 0
		for ; b.Loop(); n++ {
			change100(b, container, n)
			transfer(b, true)
		}
		b.ReportMetric(float64(cpuTicks(b, hostd.Cmd.Process.Pid)-hostd0)*10/float64(n), "hostd-cpu-ms")
		b.ReportMetric(float64(cpuTicks(b, agent.Cmd.Process.Pid)-agent0)*10/float64(n), "agent-cpu-ms")
		wait()
	})
	b.Run("op=pull-100changed/impl=rsync", func(b *testing.B) {
		if _, err := exec.LookPath("rsync"); err != nil {
			b.Skip("rsync is not installed (make bench-deps)")
		}
		// src is a copy (its files are rewritten in place); dst links to
		// the data root's files, which rsync replaces, never writes into.
		src, dst := b.TempDir(), b.TempDir()
		for _, cp := range [][]string{{"-a", filepath.Join(data, "results"), src}, {"-al", filepath.Join(data, "results"), dst}} {
			if out, err := exec.Command("cp", cp...).CombinedOutput(); err != nil {
				b.Fatalf("%v %s", err, out)
			}
		}
		for n := 0; b.Loop(); n++ {
			change100(b, src, n)
			if out, err := exec.Command("rsync", "-a", filepath.Join(src, "results"), dst).CombinedOutput(); err != nil {
				b.Fatalf("%v %s", err, out)
			}
		}
	})
}

// change100 rewrites 100 of the data root's small files under dir, one in
// each of its directories, with the timer stopped.
func change100(b *testing.B, dir string, n int) {
	b.StopTimer()
	for i := range 100 {
		p := filepath.Join(dir, "results", fmt.Sprintf("d%02d", i), fmt.Sprintf("f%05d.txt", i))
		if err := os.WriteFile(p, []byte(fmt.Sprintf("changed %d %d\n", n, i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	settle(b) // starts the timer
}

// settle writes out what earlier iterations left in the page cache, with
// the timer stopped, so that no run pays for another's writes (this
// machine's disk made the same pipeline take 1.3 s or 11 s depending on
// what ran before it).
func settle(b *testing.B) {
	b.StopTimer()
	syscall.Sync()
	b.StartTimer()
}

// rootOf is a polecat's host data root, from hostd sync status.
func rootOf(b *testing.B, tw *Town, name string) string {
	st, err := tw.Client().SyncStatus(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range st.Roots {
		if r.Polecat.Name == name {
			return r.Host
		}
	}
	b.Fatalf("no data root for %s in %+v", name, st)
	return ""
}

// writeConfig writes a hostd config file and returns its path.
func writeConfig(b testing.TB, yaml string) string {
	p := filepath.Join(b.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}
