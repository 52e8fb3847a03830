package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	datasync "github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/archive"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// snapshot is every path under dirs: kind, mode, and content or target.
func snapshot(t *testing.T, dirs ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, dir := range dirs {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			fi, err := os.Lstat(p)
			if err != nil {
				return nil
			}
			v := fi.Mode().String()
			if fi.Mode()&fs.ModeSymlink != 0 {
				target, _ := os.Readlink(p)
				v += " -> " + target
			} else if fi.Mode().IsRegular() {
				b, _ := os.ReadFile(p)
				v += " " + string(b)
			}
			out[p] = v
			return nil
		})
	}
	return out
}

// sameSnapshot fails the test when what was outside changed.
func sameSnapshot(t *testing.T, step string, before, after map[string]string) {
	t.Helper()
	for p, v := range before {
		if after[p] != v {
			t.Errorf("%s: %s was %q, is %q", step, p, v, after[p])
		}
	}
	for p, v := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s: %s appeared (%q)", step, p, v)
		}
	}
}

// TestSyncSymlinkChainContained: a polecat with nothing but the real
// gt-agent and ln -s, mkdir and files in its data root tries the chain
// that once escaped (a link whose target looks inside once its .. are
// cancelled, then the link it goes through made a link), toward hostd's
// git hooks, another polecat's root and an absolute directory; then sends
// the links as directories with files, then deletes a file under one. The
// operator pulls after each step. Nothing outside the polecat's host root
// is written or removed, and the pulls say what was left out.
func TestSyncSymlinkChainContained(t *testing.T) {
	r := newSyncRig(t, map[string]string{"results/keep.txt": "furiosa's"})
	tw, host, c := r.tw, r.host, r.container
	hooks := filepath.Join(tw.Dir, ".runtime", "hostd", "hooks")
	nux := filepath.Join(tw.Dir, "gastown", "polecats", "nux", "results")
	abs := t.TempDir()
	for p, content := range map[string]string{filepath.Join(nux, "victim.txt"): "nux's", filepath.Join(abs, "victim"): "anywhere"} {
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		_ = os.WriteFile(p, []byte(content), 0o644)
	}
	waitFile(t, filepath.Join(c, "results", "keep.txt"), "furiosa's", 10*time.Second)
	_ = os.MkdirAll(hooks, 0o755)
	before := snapshot(t, hooks, nux, abs)

	in := func(rel string) string { return filepath.Join(c, "results", "a", "b", "c", rel) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name     string
		do       func()
		said     []string // what the pull must say
		notInOut []string
	}{
		{"l a link, and links through it toward hooks, nux and an absolute directory", func() {
			must(os.MkdirAll(in(""), 0o755))
			must(os.Symlink("../../..", in("l")))
			must(os.Symlink("l/../../../../.runtime/hostd/hooks", in("hooks")))
			must(os.Symlink("l/../../nux/results", in("nux")))
			must(os.Symlink(abs, filepath.Join(c, "results", "abs")))
		}, []string{"not sent   results/a/b/c/hooks", "not sent   results/a/b/c/nux", "not sent   results/abs"}, nil},
		{"the links made directories with files", func() {
			must(os.Remove(in("hooks")))
			must(os.Remove(in("nux")))
			must(os.MkdirAll(in("hooks"), 0o755))
			must(os.MkdirAll(in("nux"), 0o755))
			must(os.WriteFile(in("hooks/update"), []byte("#!/bin/sh\ntouch /tmp/owned\n"), 0o755))
			must(os.WriteFile(in("nux/victim.txt"), []byte("nux's"), 0o644))
		}, []string{"applied    results/a/b/c/hooks/update", "applied    results/a/b/c/nux/victim.txt"}, nil},
		{"a file under the former link deleted", func() {
			must(os.Remove(in("nux/victim.txt")))
		}, []string{"deleted    results/a/b/c/nux/victim.txt"}, nil},
		{"l made a directory, and a link that resolves inside through it", func() {
			must(os.Remove(in("l")))
			must(os.MkdirAll(in("l"), 0o755))
			must(os.Symlink("l/../../../../.runtime/hostd/hooks", in("hooks2")))
		}, []string{"applied    results/a/b/c/l", "applied    results/a/b/c/hooks2"}, nil},
		{"l a link again: hooks2 would lead out", func() {
			must(os.RemoveAll(in("l")))
			must(os.Symlink("../../..", in("l")))
		}, []string{"not sent   results/a/b/c/hooks2", "applied    results/a/b/c/l"}, nil},
	}
	for _, st := range steps {
		st.do()
		out, err := tw.Try("sync", "pull", "gastown/furiosa")
		if err != nil { // the next steps still run: what they reach matters most
			t.Errorf("%s: hostd sync pull: %v\n%s", st.name, err, out)
		}
		for _, s := range st.said {
			if !strings.Contains(out, s) {
				t.Errorf("%s: the pull did not say %q:\n%s", st.name, s, out)
			}
		}
		sameSnapshot(t, st.name, before, snapshot(t, hooks, nux, abs))
	}
	// What the polecat sent stayed in its own root, as plain directories.
	for _, rel := range []string{"hooks", "nux"} {
		fi, err := os.Lstat(filepath.Join(host, "results", "a", "b", "c", rel))
		if err != nil || !fi.IsDir() {
			t.Errorf("results/a/b/c/%s in the host root: %v %v, want a plain directory", rel, fi, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(host, "results", "a", "b", "c", "hooks", "update")); !strings.Contains(string(b), "owned") {
		t.Errorf("the polecat's hook file is not in its own root: %q", b)
	}
}

// TestSyncStorageBudget: with sync.max_stored_bytes at 10 MiB, a polecat
// that keeps adding fresh files is refused once the host would store more;
// what hostd stores for it stays within the budget.
func TestSyncStorageBudget(t *testing.T) {
	const budget = 10 << 20
	tw := NewTown(t)
	_, addr := tw.Serve("--sync-max-stored-bytes", fmt.Sprint(budget))
	host := filepath.Join(tw.Dir, "gastown", "polecats", "furiosa")
	_ = os.MkdirAll(filepath.Join(host, "results"), 0o755)
	_ = os.WriteFile(filepath.Join(host, "results", "seed.txt"), []byte("seed"), 0o644)
	container := t.TempDir()
	Start(t, AgentEnv(addr, tw.Issue("gastown/furiosa", time.Hour)), "gt-agent", "up", "--data-root", container, "--state-dir", t.TempDir())
	waitFile(t, filepath.Join(container, "results", "seed.txt"), "seed", 10*time.Second)
	chunk := make([]byte, 1<<20)
	refused := ""
	for i := range 20 {
		_, _ = rand.Read(chunk)
		_ = os.WriteFile(filepath.Join(container, "results", fmt.Sprintf("fresh-%02d.bin", i)), chunk, 0o644)
		out, err := tw.Try("sync", "pull", "gastown/furiosa")
		if err != nil {
			refused = out
			break
		}
	}
	if !strings.Contains(refused, "sync.max_stored_bytes") || !strings.Contains(refused, "nothing changed") {
		t.Fatalf("20 MiB of fresh files with a 10 MiB budget: the last pull said %q, want a refusal naming sync.max_stored_bytes", refused)
	}
	stored := du(t, host) + du(t, filepath.Join(tw.Dir, ".runtime", "hostd", "sync", "gastown", "furiosa"))
	if stored > budget {
		t.Errorf("hostd stores %d bytes for the polecat, over the %d budget", stored, budget)
	}
	t.Logf("refused at %d bytes stored: %s", stored, strings.TrimSpace(refused))
}

// du is the bytes of the regular files under dir.
func du(t *testing.T, dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// TestSyncDeleteHeld: a transfer deleting most of a polecat's files is
// held, nothing deleted, until the operator confirms with
// --allow-deletes.
func TestSyncDeleteHeld(t *testing.T) {
	files := map[string]string{}
	for i := range 4 {
		files[fmt.Sprintf("results/f%d.txt", i)] = fmt.Sprint("file ", i)
	}
	r := newSyncRig(t, files)
	waitFile(t, filepath.Join(r.container, "results", "f3.txt"), "file 3", 10*time.Second)
	for i := range 3 {
		_ = os.Remove(filepath.Join(r.container, "results", fmt.Sprintf("f%d.txt", i)))
	}
	out, err := r.tw.Try("sync", "pull", "gastown/furiosa")
	if err == nil || !strings.Contains(out, "held") || !strings.Contains(out, "--allow-deletes") || !strings.Contains(out, "3 of the 4 files hostd last confirmed") {
		t.Fatalf("a pull deleting 3 of 4 files: %v\n%s\nwant it held, naming --allow-deletes", err, out)
	}
	for i := range 4 {
		if _, err := os.Stat(filepath.Join(r.host, "results", fmt.Sprintf("f%d.txt", i))); err != nil {
			t.Errorf("f%d.txt is gone from the host after a held pull", i)
		}
	}
	out = r.tw.Run("sync", "pull", "gastown/furiosa", "--allow-deletes")
	if strings.Count(out, "deleted ") != 3 {
		t.Errorf("the confirmed pull:\n%s\nwant 3 deleted", out)
	}
	if _, err := os.Stat(filepath.Join(r.host, "results", "f0.txt")); err == nil {
		t.Error("f0.txt is still on the host after the confirmed pull")
	}
}

// TestSyncHoldAgentFetch: a polecat with root in its container and the
// real gt-agent cannot reset the delete hold by making its agent fetch.
// It writes 200 files of its own (the agent's final upload brings them
// home), removes the root's marker so that the next agent fetches them
// back with the operator's 40, then deletes the 40: that upload is held,
// and the host keeps every one. (Before, the fetch confirmed all 240 files
// afresh, and the 40 were deleted as a sixth of them.)
func TestSyncHoldAgentFetch(t *testing.T) {
	t.Parallel()
	ops := map[string]string{}
	for i := range 40 {
		ops[fmt.Sprintf("results/op-%02d.txt", i)] = fmt.Sprint("the operator's ", i)
	}
	tw := NewTown(t)
	host, container, state := filepath.Join(tw.Dir, "gastown", "polecats", "furiosa"), t.TempDir(), t.TempDir()
	for rel, content := range ops {
		_ = os.MkdirAll(filepath.Dir(filepath.Join(host, rel)), 0o755)
		_ = os.WriteFile(filepath.Join(host, rel), []byte(content), 0o644)
	}
	_, addr := tw.Serve()
	env := AgentEnv(addr, tw.Issue("gastown/furiosa", time.Hour))
	agent := func() *Proc {
		return Start(t, env, "gt-agent", "up", "--data-root", container, "--state-dir", state, "--sync-checkpoint", "-1s")
	}
	stop := func(p *Proc) {
		t.Helper()
		_ = p.Cmd.Process.Signal(syscall.SIGTERM)
		if err := p.Exited(t, 20*time.Second); err != nil {
			t.Fatalf("agent exit: %v\n%s", err, p.Output())
		}
	}
	isFetch := func(rec api.SyncRecord) bool {
		return rec.Op == wire.SyncPush && rec.Reason == "fetch" && rec.Error == ""
	}
	isUpload := func(rec api.SyncRecord) bool { return rec.Op == wire.SyncUpload }

	p := agent()
	waitJournal(t, tw, 1, isFetch)
	for i := range 200 {
		_ = os.WriteFile(filepath.Join(container, "results", fmt.Sprintf("junk-%03d.txt", i)), []byte("junk"), 0o644)
	}
	stop(p) // its final upload brings the junk home
	waitJournal(t, tw, 2, isUpload)
	if _, err := os.Stat(filepath.Join(host, "results", "junk-199.txt")); err != nil {
		t.Fatalf("the junk did not reach the host: %v", err)
	}
	_ = os.Remove(filepath.Join(container, ".sidecar-root-id"))
	p = agent() // an unmarked root: it fetches all 240 back
	waitJournal(t, tw, 3, isFetch)
	for rel := range ops {
		_ = os.Remove(filepath.Join(container, filepath.FromSlash(rel)))
	}
	stop(p) // its final upload, without the operator's 40
	recs := waitJournal(t, tw, 4, isUpload)
	if last := recs[len(recs)-1]; !strings.Contains(last.Error, "held") || !strings.Contains(last.Error, "40 of the 40 files hostd last confirmed") {
		t.Errorf("the upload deleting the operator's 40 files: %q, want it held, counting 40 of 40", last.Error)
	}
	gone := 0
	for rel, content := range ops {
		if b, err := os.ReadFile(filepath.Join(host, filepath.FromSlash(rel))); err != nil || string(b) != content {
			gone++
		}
	}
	if gone > 0 {
		t.Errorf("%d of the operator's 40 files are gone from the host or changed", gone)
	}
}

// waitJournal waits for hostd's journal to hold n records, the last one
// matching last, and returns them.
func waitJournal(t *testing.T, tw *Town, n int, last func(api.SyncRecord) bool) []api.SyncRecord {
	t.Helper()
	var recs []api.SyncRecord
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		recs = nil
		if err := json.Unmarshal([]byte(tw.Run("sync", "log", "--json")), &recs); err != nil {
			t.Fatal(err)
		}
		if len(recs) >= n && last(recs[len(recs)-1]) {
			return recs
		}
	}
	t.Fatalf("the journal holds %d records, want %d: %+v", len(recs), n, recs)
	return nil
}

// manifestArchive is an archive whose only member is a manifest of n
// entries (and pad bytes of spaces after them): what a hostile agent sends
// to make hostd decode a huge manifest.
func manifestArchive(t *testing.T, n, pad int) []byte {
	var m bytes.Buffer
	m.WriteString(`{"version":1,"entries":[`)
	for i := range n {
		if i > 0 {
			m.WriteByte(',')
		}
		fmt.Fprintf(&m, `{"path":"results/%08d","type":"dir","mode":493}`, i)
	}
	m.WriteString(`]}`)
	m.Write(bytes.Repeat([]byte{' '}, pad))
	var buf bytes.Buffer
	zw, _ := zstd.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	_ = tw.WriteHeader(&tar.Header{Name: ".sidecar-manifest.json", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(m.Len())})
	_, _ = tw.Write(m.Bytes())
	_ = tw.Close()
	_ = zw.Close()
	return buf.Bytes()
}

// peakRSS is hostd's high-water mark of resident memory, in KiB.
func peakRSS(t *testing.T, pid int) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.Atoi(strings.Fields(v)[0])
			return n
		}
	}
	t.Fatal("no VmHWM in /proc/<pid>/status")
	return 0
}

// TestHostileSyncManifest: a 100 MB manifest (under a megabyte
// compressed) was decoded before any limit: hostd peaked near 600 MiB and
// kept it. Now its size is refused before it is read, a manifest of more
// entries than sync.max_files is refused at the entry past the limit, and
// hostd gives back what the attempt cost.
func TestHostileSyncManifest(t *testing.T) {
	v := newVictim(t)
	a := newAttacker(t, v.tw, v.addr, "gastown/furiosa")
	s := a.mustDial(tunnel.TransportQUIC, tunnel.Config{})
	before := peakRSS(t, v.pid)
	for _, c := range []struct {
		name    string
		archive []byte
		want    string
	}{
		{"100 MB of manifest", manifestArchive(t, 1000, 100<<20), "sync.max_manifest_bytes"},
		{"600,000 entries in 30 MB", manifestArchive(t, 600_000, 0), "sync.max_files"},
	} {
		st, err := s.OpenStream(context.Background(), wire.KindSync, wire.SyncRequest{Op: wire.SyncUpload, Reason: "checkpoint"})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = st.Write(c.archive)
		_ = st.CloseWrite()
		res, err := wire.ReadSyncResult(st)
		st.Close()
		if err != nil || !strings.Contains(res.Error, c.want) {
			t.Errorf("%s (%d bytes compressed): %v %q, want it refused naming %s", c.name, len(c.archive), err, res.Error, c.want)
		}
	}
	grew := peakRSS(t, v.pid) - before
	t.Logf("hostd's peak resident memory grew %d MiB", grew>>10)
	if grew > 160<<10 {
		t.Errorf("hostd's peak resident memory grew %d MiB decoding refused manifests", grew>>10)
	}
	v.unharmed(t)
	v.recovered(t, 15*time.Second)
	// The decoded entries are garbage once refused: the heap goes back to
	// near what it was (the reclaim runs once the refusals stop).
	var heap int
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if heap = measure(t, v.pid, v.metrics).heapKiB; heap <= v.held.heapKiB+16<<10 {
			return
		}
	}
	t.Errorf("hostd's heap in use stayed at %d MiB after the refusals (baseline %d MiB)", heap>>10, v.held.heapKiB>>10)
}

// TestSyncDeepTreeCPU: what a transfer costs hostd grows with its entries,
// not with their depth. 2,000 files along a tree 256 levels deep (a
// 113 KB archive) cost hostd 4-5 s of CPU on the first upload and 9-10 s
// on a second that changed every file, five to seven times the same
// files in one directory: each path was resolved again from the top, one
// directory at a time. Now they cost about what the flat tree costs,
// measured beside it on the same hostd (its CPU, from /proc).
func TestSyncDeepTreeCPU(t *testing.T) {
	tw := NewTown(t)
	hostd, addr := tw.Serve()
	pid := hostd.Cmd.Process.Pid
	cost := map[string]time.Duration{}
	for _, shape := range []struct{ name, polecat string }{{"flat", "nux"}, {"deep", "furiosa"}} {
		dirOf := func(i int) string { return "results" }
		if shape.name == "deep" {
			// 255 directories, the files along them from the top to the
			// deepest, 256 elements with the file's name.
			dirOf = func(i int) string { return "results" + strings.Repeat("/d", i*254/1999) }
		}
		container := t.TempDir()
		s := newAttacker(t, tw, addr, "gastown/"+shape.polecat).mustDial(tunnel.TransportQUIC, tunnel.Config{})
		for _, round := range []string{"first", "every file changed"} {
			for i := range 2000 {
				p := filepath.Join(container, dirOf(i), fmt.Sprintf("f%04d", i))
				_ = os.MkdirAll(filepath.Dir(p), 0o755)
				_ = os.WriteFile(p, []byte(round+" "+p), 0o644)
			}
			var packed bytes.Buffer
			if _, _, err := archive.Pack(context.Background(), container, datasync.DefaultPolicy(), &packed); err != nil {
				t.Fatal(err)
			}
			before := cpuTicks(t, pid)
			if refused := upload(t, s, packed.Bytes()); refused != "" {
				t.Fatalf("%s tree, %s upload: %s", shape.name, round, refused)
			}
			spent := time.Duration(cpuTicks(t, pid)-before) * 10 * time.Millisecond
			cost[shape.name] += spent
			t.Logf("%s tree, %s upload (%d bytes): hostd spent %v of CPU", shape.name, round, packed.Len(), spent)
		}
	}
	if limit := 3*cost["flat"] + time.Second; cost["deep"] > limit {
		t.Errorf("the deep tree's two uploads cost hostd %v of CPU, over %v (three times the flat tree's %v, and a second)", cost["deep"], limit, cost["flat"])
	}
}

// linksArchive is an archive a hostile agent makes by hand: the results
// directory and n symlinks in it, each to target, with their manifest.
func linksArchive(t *testing.T, n int, target string) []byte {
	t.Helper()
	mtime := time.Unix(1700000000, 0).UTC()
	m := datasync.Manifest{Version: datasync.ManifestVersion, Entries: []datasync.Entry{{Path: "results", Type: datasync.TypeDir, Mode: 0o755, MTime: mtime}}}
	var buf bytes.Buffer
	zw, _ := zstd.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: "results/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: mtime}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		name := fmt.Sprintf("results/l%05d", i)
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target, Mode: 0o777, ModTime: mtime}); err != nil {
			t.Fatal(err)
		}
		m.Entries = append(m.Entries, datasync.Entry{Path: name, Type: datasync.TypeSymlink, Mode: 0o777, Target: target})
	}
	mj, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.WriteHeader(&tar.Header{Name: datasync.ManifestName, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(mj)), ModTime: mtime}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write(mj)
	_ = tw.Close()
	_ = zw.Close()
	return buf.Bytes()
}

// TestSyncLongLinkTargetsCPU: judging a symlink cost hostd time quadratic
// in its target's length (every prefix of the walk built and looked up
// again), so 100 links to a 4095-byte d/d/.../d cost seconds of CPU on
// an upload, and as much again on every later one, when the merge judges
// the host's links again; a 32 MiB manifest holds some 7,800 of them.
// Now what they cost is about what the same links to d cost, measured
// beside them on the same hostd (its CPU, from /proc), over two uploads
// of each.
func TestSyncLongLinkTargetsCPU(t *testing.T) {
	tw := NewTown(t)
	hostd, addr := tw.Serve()
	pid := hostd.Cmd.Process.Pid
	const links = 100
	cost := map[string]time.Duration{}
	for _, shape := range []struct{ name, polecat, target string }{
		{"short", "nux", "d"},
		{"long", "furiosa", strings.Repeat("d/", 2047) + "d"},
	} {
		s := newAttacker(t, tw, addr, "gastown/"+shape.polecat).mustDial(tunnel.TransportQUIC, tunnel.Config{})
		data := linksArchive(t, links, shape.target)
		for _, round := range []string{"first upload", "second upload (the links on the host)"} {
			before := cpuTicks(t, pid)
			if refused := upload(t, s, data); refused != "" {
				t.Fatalf("%s targets, %s: %s", shape.name, round, refused)
			}
			spent := time.Duration(cpuTicks(t, pid)-before) * 10 * time.Millisecond
			cost[shape.name] += spent
			t.Logf("%d links to %d-byte targets, %s (%d bytes): hostd spent %v of CPU", links, len(shape.target), round, len(data), spent)
		}
	}
	if limit := 3*cost["short"] + time.Second; cost["long"] > limit {
		t.Errorf("the long targets' two uploads cost hostd %v of CPU, over %v (three times the short ones' %v, and a second)", cost["long"], limit, cost["short"])
	}
}
