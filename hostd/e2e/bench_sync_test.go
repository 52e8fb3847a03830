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
// BenchmarkWANSync runs the push, the 100-file pull and their rsync rows
// across an emulated link, on a smaller root, with rsync over ssh.

// benchData returns a data root of small files of 1-4 KiB in 100
// directories and large files of largeSize, made once under bin/ as name.
func benchData(b *testing.B, name string, small, large, largeSize int) (dir string, size int64) {
	dir, _ = filepath.Abs("../bin/" + name)
	buf := make([]byte, max(4<<10, largeSize))
	if _, err := os.Stat(filepath.Join(dir, "done")); err != nil {
		b.Logf("generating the data root in %s (once)", dir)
		_ = os.RemoveAll(dir)
		for i := range small {
			p := filepath.Join(dir, "results", fmt.Sprintf("d%02d", i%100), fmt.Sprintf("f%05d.txt", i))
			_ = os.MkdirAll(filepath.Dir(p), 0o755)
			_, _ = rand.Read(buf[:4<<10])
			if err := os.WriteFile(p, buf[:1<<10+i%(3<<10)], 0o644); err != nil {
				b.Fatal(err)
			}
		}
		for i := range large {
			_, _ = rand.Read(buf[:largeSize])
			if err := os.WriteFile(filepath.Join(dir, "results", fmt.Sprintf("large%d.bin", i)), buf[:largeSize], 0o644); err != nil {
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
	sb := newSyncBench(b, ends{}, "bench-sync-data", 10000, 4, 120<<20)
	b.Run("op=push/impl=ours", sb.push("furiosa"))
	b.Run("op=push/impl=ourstcp", sb.push("nux"))
	b.Run("op=push/impl=pipeline", func(b *testing.B) {
		b.SetBytes(sb.size)
		dst := b.TempDir()
		for b.Loop() {
			b.StopTimer()
			_ = os.RemoveAll(filepath.Join(dst, "results"))
			settle(b)
			sh := fmt.Sprintf("tar -C %q -cf - results | zstd -q -1 | zstd -q -d | tar -C %q -xf -", sb.data, dst)
			if out, err := exec.Command("sh", "-c", sh).CombinedOutput(); err != nil {
				b.Fatalf("%v %s", err, out)
			}
		}
	})
	b.Run("op=push/impl=rsync", sb.rsyncPush)
	b.Run("op=pull/impl=ours", func(b *testing.B) {
		b.SetBytes(sb.size)
		n := 0
		for b.Loop() {
			b.StopTimer()
			// Every file touched in the container: all of it is read,
			// hashed and sent (the content is the same, so nothing merges).
			n++
			at := time.Now().Add(-time.Duration(n) * time.Minute)
			_ = filepath.Walk(sb.containers["furiosa"], func(p string, fi os.FileInfo, err error) error {
				if err == nil && fi.Mode().IsRegular() {
					_ = os.Chtimes(p, at, at)
				}
				return nil
			})
			settle(b)
			sb.transfer(b, "furiosa", true)
		}
	})
	b.Run("op=pull-unchanged/impl=ours", func(b *testing.B) {
		for b.Loop() {
			sb.transfer(b, "furiosa", true)
		}
	})
	b.Run("op=pull-100changed/impl=ours", sb.pull100)
	b.Run("op=pull-100changed/impl=rsync", sb.rsyncPull100)
}

// BenchmarkWANSync: BenchmarkSync's first push and 100-file pull across an
// emulated link (20 Mbit/s, 50 ms round trip, each loss rate) beside rsync
// over ssh on the same link (sshd at the polecat's end), on a root of
// 1,000 small files and one of 8 MiB (~10.5 MB).
func BenchmarkWANSync(b *testing.B) {
	eachLoss(b, wanRate, func(b *testing.B, e ends) {
		sb := newSyncBench(b, e, "bench-sync-wan-data", 1000, 1, 8<<20)
		b.Run("op=push/impl=ours", sb.push("furiosa"))
		b.Run("op=push/impl=ourstcp", sb.push("nux"))
		b.Run("op=push/impl=rsync", sb.rsyncPush)
		b.Run("op=pull-100changed/impl=ours", sb.pull100)
		b.Run("op=pull-100changed/impl=rsync", sb.rsyncPull100)
	})
}

// syncBench is hostd with two polecats' data roots, each holding a copy of
// the benchmark's data, and their agents (furiosa on QUIC, nux on the TCP
// fallback) with empty container roots, on the ends given.
type syncBench struct {
	tw           *Town
	e            ends
	hostd, agent *Proc // agent is furiosa's
	metrics      string
	data         string
	size         int64
	containers   map[string]string // by polecat name
}

func newSyncBench(b *testing.B, e ends, name string, small, large, largeSize int) *syncBench {
	sb := &syncBench{tw: NewTown(b), e: e, metrics: tunneltest.FreeAddr(b), containers: map[string]string{}}
	sb.data, sb.size = benchData(b, name, small, large, largeSize)
	sb.tw.Netns = e.netns()
	addr := e.hostAddr(b)
	sb.hostd = sb.tw.ServeOn(addr, "--metrics-listen", sb.metrics, "--config", writeConfig(b, fmt.Sprintf("sync:\n  roots:\n    gastown: %s/{name}\n", b.TempDir())))
	for _, a := range []struct{ name, transport string }{{"furiosa", "auto"}, {"nux", "tcp"}} {
		sb.containers[a.name] = b.TempDir()
		p := StartIn(b, sb.tw.Netns.Agent, AgentEnv(addr, sb.tw.Issue("gastown/"+a.name, time.Hour)), "gt-agent", "up", "--transport", a.transport,
			"--data-root", sb.containers[a.name], "--state-dir", b.TempDir(), "--sync-checkpoint", "-1s")
		if a.name == "furiosa" {
			sb.agent = p
		}
	}
	for _, name := range []string{"furiosa", "nux"} {
		sb.tw.WaitStatus(10*time.Second, Connected(name, ""))
		// Each polecat's host data root holds a copy of the benchmark's data.
		root := rootOf(b, sb.tw, name)
		if err := os.MkdirAll(root, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := exec.Command("cp", "-a", filepath.Join(sb.data, "results"), root).Run(); err != nil {
			b.Fatal(err)
		}
	}
	return sb
}

// transfer pushes the polecat's data root to its container, or pulls it.
func (sb *syncBench) transfer(b *testing.B, name string, pull bool) {
	id, c := api.Identity{Rig: "gastown", Name: name}, sb.tw.Client()
	var res api.SyncResult
	var err error
	if pull {
		res, err = c.SyncPull(context.Background(), id, api.PullOptions{}, nil)
	} else {
		res, err = c.SyncPush(context.Background(), id, nil)
	}
	if err == nil && res.Error != "" {
		err = fmt.Errorf("%s", res.Error)
	}
	if err != nil {
		b.Fatal(err)
	}
}

// push is a first push to the polecat's container, as the baselines make:
// its copy from the last one is removed first.
func (sb *syncBench) push(name string) func(*testing.B) {
	return func(b *testing.B) {
		b.SetBytes(sb.size)
		for b.Loop() {
			b.StopTimer()
			if err := os.RemoveAll(filepath.Join(sb.containers[name], "results")); err != nil {
				b.Fatal(err)
			}
			settle(b)
			sb.transfer(b, name, false)
		}
	}
}

// pull100 pulls 100 small files changed in furiosa's container: where a
// delta pull's time goes, each side's CPU per pull, and hostd's CPU
// profile over the first 10 s with SIDECAR_BENCH_CPUPROFILE set (locally).
func (sb *syncBench) pull100(b *testing.B) {
	wait := func() {}
	if sb.e.link == nil {
		wait = profileHostd(b, sb.metrics, 10*time.Second)
	}
	hostd0, agent0, n := cpuTicks(b, sb.hostd.Cmd.Process.Pid), cpuTicks(b, sb.agent.Cmd.Process.Pid), 0
	for ; b.Loop(); n++ {
		change100(b, sb.containers["furiosa"], n)
		sb.transfer(b, "furiosa", true)
	}
	b.ReportMetric(float64(cpuTicks(b, sb.hostd.Cmd.Process.Pid)-hostd0)*10/float64(n), "hostd-cpu-ms")
	b.ReportMetric(float64(cpuTicks(b, sb.agent.Cmd.Process.Pid)-agent0)*10/float64(n), "agent-cpu-ms")
	wait()
}

// rsyncPush is rsync -a of the data into an empty directory.
func (sb *syncBench) rsyncPush(b *testing.B) {
	rsync := sb.rsync(b)
	b.SetBytes(sb.size)
	dst := b.TempDir()
	for b.Loop() {
		b.StopTimer()
		_ = os.RemoveAll(filepath.Join(dst, "results"))
		settle(b)
		rsync(filepath.Join(sb.data, "results"), dst, true)
	}
}

// rsyncPull100 is rsync -a of a copy of the tree with the same 100 files
// changed as pull100 (the container's side) onto another copy (the
// host's).
func (sb *syncBench) rsyncPull100(b *testing.B) {
	rsync := sb.rsync(b)
	// src is a copy (its files are rewritten in place); dst links to
	// the data root's files, which rsync replaces, never writes into.
	src, dst := b.TempDir(), b.TempDir()
	for _, cp := range [][]string{{"-a", filepath.Join(sb.data, "results"), src}, {"-al", filepath.Join(sb.data, "results"), dst}} {
		if out, err := exec.Command("cp", cp...).CombinedOutput(); err != nil {
			b.Fatalf("%v %s", err, out)
		}
	}
	for n := 0; b.Loop(); n++ {
		change100(b, src, n)
		rsync(filepath.Join(src, "results"), dst, false)
	}
}

// rsync gives a function that runs rsync -a from src to dst, skipping b
// where rsync is not installed. Across a link it runs at the host's end
// over ssh to an sshd at the polecat's, which holds dst when toContainer
// is set, else src.
func (sb *syncBench) rsync(b *testing.B) func(src, dst string, toContainer bool) {
	if _, err := exec.LookPath("rsync"); err != nil {
		b.Skip("rsync is not installed (make bench-deps)")
	}
	var rsh, host string
	if sb.e.link != nil {
		rsh, host = sb.e.sshd(b)
	}
	return func(src, dst string, toContainer bool) {
		args := []string{"-a"}
		if rsh != "" {
			args = append(args, "-e", rsh)
			if toContainer {
				dst = host + ":" + dst
			} else {
				src = host + ":" + src
			}
		}
		if out, err := Command(sb.e.netns().Host, "rsync", append(args, src, dst)...).CombinedOutput(); err != nil {
			b.Fatalf("rsync %v: %v %s", args, err, out)
		}
	}
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
