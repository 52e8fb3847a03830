package sync

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

var receivePolicy = Policy{Include: []string{"results"}}

func link(name, target string) member {
	return member{hdr: tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target, Mode: 0o777, ModTime: time.Unix(1700000000, 0)}}
}

// sandbox is a host data root with neighbours a polecat must never reach:
// another polecat's root, a hooks directory, and a directory anywhere.
type sandbox struct {
	dir, host string
}

func newSandbox(t testing.TB) sandbox {
	dir := t.TempDir()
	s := sandbox{dir: dir, host: filepath.Join(dir, "town", "rig", "polecats", "furiosa")}
	writeTree(t, dir, map[string]string{
		"town/rig/polecats/furiosa/results/keep.txt": "furiosa's",
		"town/rig/polecats/nux/results/victim.txt":   "nux's",
		"town/.runtime/hostd/hooks/README":           "hooks",
		"outside/victim":                             "anywhere",
	})
	return s
}

// outside is everything in the sandbox but the host root: kind, mode and
// content or target of each path.
func (s sandbox) outside(t testing.TB) map[string]string {
	out := map[string]string{}
	err := filepath.WalkDir(s.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == s.host {
			return filepath.SkipDir
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		v := fi.Mode().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			v += " -> " + target
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			v += " " + string(b)
		}
		out[strings.TrimPrefix(p, s.dir)] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// transfer receives a hand-made archive of ms into the host root against
// base and applies the merge, as hostd does; it returns the new base.
func (s sandbox) transfer(t testing.TB, base *Manifest, ms []member) (*Manifest, []Change, error) {
	return s.transferTo(t, receivePolicy, time.Unix(1700000000, 0), base, ms)
}

// receivePlan receives data into the host root and plans its merge
// against base, as hostd does; the caller closes the Incoming.
func (s sandbox) receivePlan(data []byte, p Policy, now time.Time, base *Manifest) (*Incoming, *Plan, error) {
	in, err := Receive(context.Background(), bytes.NewReader(data), s.host, "furiosa", p, Limits{}, base)
	if err != nil {
		return nil, nil, err
	}
	plan, err := in.Plan(context.Background(), base, MergeOptions{Polecat: "furiosa", Now: now, Policy: p})
	if err != nil {
		in.Close()
		return nil, nil, err
	}
	return in, plan, nil
}

// archiveTB is archive for fuzz targets too: members, then their manifest.
func archiveTB(t testing.TB, ms []member) []byte {
	return archiveRaw(t, append(ms, manifestOf(ms)))
}

// TestReceiveChainAcrossTransfers is the escape, tried by a sender
// that judges nothing: a link that resolves inside while l is a
// directory, then l made a link so that it would lead out, then the link
// sent as a directory with a hook in it, then a file under it deleted.
// Nothing outside the host root is ever written or removed.
func TestReceiveChainAcrossTransfers(t *testing.T) {
	s := newSandbox(t)
	before := s.outside(t)
	dirs := []member{dir("results"), dir("results/a"), dir("results/a/b"), dir("results/a/b/c")}
	steps := []struct {
		name    string
		members []member
		refused string // "" when the transfer must be taken
	}{
		{"links that resolve inside while l is a directory", append(dirs[:4:4], dir("results/a/b/c/l"),
			link("results/a/b/c/hooks", "l/../../../../.runtime/hostd/hooks"),
			link("results/a/b/c/nux", "l/../../nux/results")), ""},
		{"l made a link: the kernel would now take hooks and nux out", append(dirs[:4:4], link("results/a/b/c/l", "../../.."),
			link("results/a/b/c/hooks", "l/../../../../.runtime/hostd/hooks"),
			link("results/a/b/c/nux", "l/../../nux/results")), "through the symlink results/a/b/c/l"},
		{"the links sent as directories with files in them", append(dirs[:4:4], dir("results/a/b/c/l"),
			dir("results/a/b/c/hooks"), file("results/a/b/c/hooks/update", "#!/bin/sh\necho owned\n"),
			dir("results/a/b/c/nux"), file("results/a/b/c/nux/victim.txt", "nux's")), ""},
		{"a file under the former link deleted", append(dirs[:4:4], dir("results/a/b/c/l"),
			dir("results/a/b/c/hooks"), file("results/a/b/c/hooks/update", "#!/bin/sh\necho owned\n"),
			dir("results/a/b/c/nux")), ""},
	}
	var base *Manifest
	for _, st := range steps {
		next, _, err := s.transfer(t, base, st.members)
		switch {
		case st.refused == "" && err != nil:
			t.Fatalf("%s: refused: %v", st.name, err)
		case st.refused != "" && (err == nil || !strings.Contains(err.Error(), st.refused)):
			t.Fatalf("%s: %v, want it refused saying %q", st.name, err, st.refused)
		}
		base = next
		if after := s.outside(t); !equalMaps(before, after) {
			t.Fatalf("%s: outside the host root changed:\nbefore %v\nafter  %v", st.name, before, after)
		}
	}
	// What the polecat sent is in its own root, as plain directories.
	if got := read(t, filepath.Join(s.host, "results/a/b/c/hooks/update")); got != "#!/bin/sh\necho owned\n" {
		t.Errorf("the hook file in the polecat's own root: %q", got)
	}
	if fi, err := os.Lstat(filepath.Join(s.host, "results/a/b/c/nux")); err != nil || !fi.IsDir() {
		t.Errorf("results/a/b/c/nux is not a plain directory in the host root: %v %v", fi, err)
	}
	if _, err := os.Lstat(filepath.Join(s.host, "results/a/b/c/nux/victim.txt")); err == nil {
		t.Error("the deletion did not happen in the polecat's own root")
	}
}

// TestReceiveWriteThroughHostLink: a symlink the operator (or an earlier
// version of hostd) left on the host root is never written through: the
// container's directory of that name goes to a conflict copy.
func TestReceiveWriteThroughHostLink(t *testing.T) {
	s := newSandbox(t)
	if err := os.Symlink("../../nux/results", filepath.Join(s.host, "results", "away")); err != nil {
		t.Fatal(err)
	}
	before := s.outside(t)
	_, changes, err := s.transfer(t, nil, []member{dir("results"), dir("results/away"), file("results/away/victim.txt", "overwritten")})
	if err != nil {
		t.Fatal(err)
	}
	if after := s.outside(t); !equalMaps(before, after) {
		t.Fatalf("outside the host root changed:\nbefore %v\nafter  %v", before, after)
	}
	copyDir := "results/away.conflict-furiosa-" + time.Unix(1700000000, 0).UTC().Format("20060102T150405Z")
	if got := read(t, filepath.Join(s.host, copyDir, "victim.txt")); got != "overwritten" {
		t.Errorf("the container's file went to %q (changes %v), want it under %s", got, changes, copyDir)
	}
}

func TestReceiveKindChanges(t *testing.T) {
	s := newSandbox(t)
	steps := []struct {
		name    string
		members []member
		want    map[string]string // path -> content, "dir", or "-> target"
	}{
		{"a file and a directory", []member{dir("results"), file("results/x", "file"), dir("results/d"), file("results/d/in", "in")},
			map[string]string{"results/x": "file", "results/d/in": "in"}},
		{"file to directory, directory to file", []member{dir("results"), dir("results/x"), file("results/x/y", "y"), file("results/d", "now a file")},
			map[string]string{"results/x/y": "y", "results/d": "now a file"}},
		{"directory to symlink, file to symlink", []member{dir("results"), link("results/x", "d"), link("results/d", "gone")},
			map[string]string{"results/x": "-> d", "results/d": "-> gone"}},
		{"symlink to directory", []member{dir("results"), dir("results/x"), file("results/x/z", "z"), file("results/d", "file again")},
			map[string]string{"results/x/z": "z", "results/d": "file again"}},
	}
	var base *Manifest
	for _, st := range steps {
		next, changes, err := s.transfer(t, base, st.members)
		if err != nil {
			t.Fatalf("%s: %v (changes %v)", st.name, err, changes)
		}
		base = next
		for p, want := range st.want {
			got := read(t, filepath.Join(s.host, p))
			if strings.HasPrefix(want, "-> ") {
				target, _ := os.Readlink(filepath.Join(s.host, p))
				got = "-> " + target
			}
			if got != want {
				t.Errorf("%s: %s holds %q, want %q", st.name, p, got, want)
			}
		}
	}
}

// TestReceiveKindChangeKeepsHostFiles: a directory the container turned
// into a file, but to which the host added a file, stays; the container's
// file goes beside it, and the whole transfer applies.
func TestReceiveKindChangeKeepsHostFiles(t *testing.T) {
	s := newSandbox(t)
	base, _, err := s.transfer(t, nil, []member{dir("results"), dir("results/d"), file("results/d/old", "old")})
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, s.host, map[string]string{"results/d/added-on-host": "host's"})
	_, changes, err := s.transfer(t, base, []member{dir("results"), file("results/d", "a file now"), file("results/new", "new")})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(s.host, "results/d/added-on-host")); got != "host's" {
		t.Errorf("the host's file under the directory: %q", got)
	}
	if got := read(t, filepath.Join(s.host, "results/new")); got != "new" {
		t.Errorf("the rest of the transfer did not apply: results/new = %q", got)
	}
	found := false
	for _, c := range changes {
		if c.Path == "results/d" && c.Action == Conflicted && read(t, filepath.Join(s.host, c.Copy)) == "a file now" {
			found = true
		}
	}
	if !found {
		t.Errorf("changes %v: want results/d conflicted with the container's file beside it", changes)
	}
}

// TestReceiveBothChangedBound: a transfer changing more paths on both
// sides than the bound is refused whole: no merge process, no conflict
// copy, nothing changed.
func TestReceiveBothChangedBound(t *testing.T) {
	s := newSandbox(t)
	var ms []member
	ms = append(ms, dir("results"))
	for i := range 5 {
		ms = append(ms, file(fmt.Sprintf("results/f%d", i), "base"))
	}
	base, _, err := s.transfer(t, nil, ms)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		writeTree(t, s.host, map[string]string{fmt.Sprintf("results/f%d", i): "host's"})
		ms[i+1] = file(fmt.Sprintf("results/f%d", i), "container's")
	}
	var buf bytes.Buffer
	buf.Write(archiveTB(t, ms))
	in, err := Receive(context.Background(), &buf, s.host, "furiosa", receivePolicy, Limits{}, base)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	_, err = in.Plan(context.Background(), base, MergeOptions{Polecat: "furiosa", Now: time.Now(), Policy: receivePolicy, MaxBothChanged: 3})
	var le *LimitError
	if !errors.As(err, &le) || le.Setting != "sync.max_conflicts" {
		t.Fatalf("plan: %v, want the sync.max_conflicts limit", err)
	}
	ents, _ := os.ReadDir(filepath.Join(s.host, "results"))
	if len(ents) != 6 { // keep.txt and f0-f4, no conflict copies
		t.Errorf("the host's results after a refused merge: %v", ents)
	}
}

// TestReceiveManifestMemory: a manifest of many more entries than the
// limit is refused at the entry past it, without decoding the rest: the
// memory it costs is that of the limit, not of the manifest.
func TestReceiveManifestMemory(t *testing.T) {
	const limit, sent = 1000, 200_000
	var b strings.Builder
	b.WriteString(`{"version":1,"entries":[`)
	for i := range sent {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"path":"results/%d","type":"dir","mode":493}`, i)
	}
	b.WriteString(`]}`)
	manifest := b.String()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := readManifest(strings.NewReader(manifest), limit)
	runtime.ReadMemStats(&after)
	var le *LimitError
	if !errors.As(err, &le) || le.Setting != "sync.max_files" {
		t.Fatalf("a manifest of %d entries with a limit of %d: %v", sent, limit, err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > uint64(len(manifest))/4 {
		t.Errorf("decoding allocated %d bytes for a %d-byte manifest refused at entry %d", grew, len(manifest), limit)
	}
	// And its size is checked before it is read at all.
	ms := []member{dir("results"), file(ManifestName, strings.Repeat(" ", 2<<20))}
	_, err = Unpack(context.Background(), bytes.NewReader(archiveRaw(t, ms)), t.TempDir(), receivePolicy, Limits{MaxManifest: 1 << 20})
	if !errors.As(err, &le) || le.Setting != "sync.max_manifest_bytes" {
		t.Fatalf("a 2 MiB manifest with a 1 MiB limit: %v", err)
	}
}

// archiveRaw packs members as they are, no manifest added.
func archiveRaw(t testing.TB, ms []member) []byte {
	var buf bytes.Buffer
	w := newArchiveWriter(&buf)
	for _, m := range ms {
		if err := w.add(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The fuzz target's vocabulary: paths a member may have, targets a link
// may point to (relative, absolute, chained, ..-laden).
var (
	fuzzPaths = []string{"results", "results/a", "results/a/b", "results/a/b/c", "results/l", "results/a/l", "results/a/b/c/l",
		"results/e", "results/a/b/c/e", "results/e/x", "results/a/b/c/e/x", "results/l/x", "results/a/b/c/e/update", "results/keep.txt"}
	fuzzTargets = []string{"..", "../..", "../../..", "l/../../..", "l/../../../../../../outside", "l/../../nux/results",
		"../outside", "/tmp", "a", "l", "e", "b/c", "../../../../../../outside/victim", "l/x", "e/x", "keep.txt", "."}
)

// fuzzMembers turns bytes into archive members, three bytes a member:
// kind, path, link target.
func fuzzMembers(b []byte) []member {
	var ms []member
	for i := 0; i+2 < len(b); i += 3 {
		p := fuzzPaths[int(b[i+1])%len(fuzzPaths)]
		switch b[i] % 3 {
		case 0:
			ms = append(ms, dir(p))
		case 1:
			ms = append(ms, file(p, string(b[i:i+3])))
		default:
			ms = append(ms, link(p, fuzzTargets[int(b[i+2])%len(fuzzTargets)]))
		}
	}
	return ms
}

// FuzzReceive builds random trees of files, directories and symlinks and
// sends them as two transfers, the second against the base the first
// left, from a sender that judges nothing; after each, no path outside
// the host root may have been created, changed or removed.
func FuzzReceive(f *testing.F) {
	// The chain, in two transfers: e resolves inside while l is a
	// directory, then l becomes a link and e a directory with a file.
	chain := []byte{0, 0, 0, 0, 1, 0, 0, 2, 0, 0, 3, 0, 0, 6, 0, 2, 8, 4}
	chain = append(chain, 0, 0, 0, 0, 1, 0, 0, 2, 0, 0, 3, 0, 2, 6, 3, 0, 8, 0, 1, 10, 0)
	f.Add(chain, uint8(18))
	f.Add([]byte{0, 0, 0, 2, 4, 1, 1, 11, 0}, uint8(6))
	f.Add([]byte{0, 0, 0, 2, 7, 6, 0, 7, 0, 1, 9, 0}, uint8(3))
	f.Fuzz(func(t *testing.T, b []byte, split uint8) {
		if len(b) > 120 {
			return
		}
		cut := min(int(split), len(b))
		s := newSandbox(t)
		before := s.outside(t)
		base, _, _ := s.transfer(t, nil, fuzzMembers(b[:cut]))
		if after := s.outside(t); !equalMaps(before, after) {
			t.Fatalf("the first transfer changed what is outside the host root:\nbefore %v\nafter  %v", before, after)
		}
		_, _, _ = s.transfer(t, base, fuzzMembers(b[cut:]))
		if after := s.outside(t); !equalMaps(before, after) {
			t.Fatalf("the second transfer changed what is outside the host root:\nbefore %v\nafter  %v", before, after)
		}
	})
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestConflictCopyNameTaken: a conflict copy never replaces what is at its
// name already; it takes the next free one.
func TestConflictCopyNameTaken(t *testing.T) {
	s := newSandbox(t)
	base, _, err := s.transfer(t, nil, []member{dir("results"), file("results/a", "base")})
	if err != nil {
		t.Fatal(err)
	}
	taken := "results/a.conflict-furiosa-" + time.Unix(1700000000, 0).UTC().Format("20060102T150405Z")
	writeTree(t, s.host, map[string]string{"results/a": "host's", taken: "already here"})
	_, changes, err := s.transfer(t, base, []member{dir("results"), file("results/a", "container's")})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(s.host, taken)); got != "already here" {
		t.Errorf("the file at the copy's first name: %q", got)
	}
	if got := read(t, filepath.Join(s.host, taken+"-2")); got != "container's" {
		t.Errorf("the copy at %s-2: %q (changes %v)", taken, got, changes)
	}
}

// TestSurvey: the budget counts the paths that cross and the conflict
// copies beside an included file or directory, which do not cross
// themselves, every entry at least entryCost; not the rest of the root.
func TestSurvey(t *testing.T) {
	root := t.TempDir()
	p := Policy{Include: []string{"CLAUDE.md", "results"}}
	writeTree(t, root, map[string]string{
		"CLAUDE.md":                       strings.Repeat("c", 10),
		"CLAUDE.md.conflict-nux-20261123": strings.Repeat("x", 100),
		"results/r":                       strings.Repeat("r", 1000),
		"results/r.conflict-nux-20261123": strings.Repeat("y", 10000),
		"results/link":                    "->r",
		"results.conflict-nux-1/in":       strings.Repeat("z", 100000),
		"worktree/big":                    strings.Repeat("w", 1000000),
	})
	sv, err := SurveyRoot(root, p)
	if err != nil {
		t.Fatal(err)
	}
	// 8 entries: CLAUDE.md, its copy, results, r, r's copy, link, the
	// copied directory and what is in it.
	if want := int64(111110 + 8*entryCost); sv.Bytes != want {
		t.Errorf("surveyed %d bytes, want %d (copies counted, the worktree not)", sv.Bytes, want)
	}
	if len(sv.Links) != 1 || sv.Links[0] != "results/link" {
		t.Errorf("links %v, want [results/link]", sv.Links)
	}
}

// transferTo is sandbox.transfer with a policy and the transfer's time.
func (s sandbox) transferTo(t testing.TB, p Policy, now time.Time, base *Manifest, ms []member) (*Manifest, []Change, error) {
	in, plan, err := s.receivePlan(archiveTB(t, ms), p, now, base)
	if err != nil {
		return base, nil, err
	}
	defer in.Close()
	if err := plan.Apply(); err != nil {
		return base, plan.Changes, err
	}
	return in.Manifest.Resolved(), plan.Changes, nil
}

// TestReceiveReadOnlyDirectory: a directory sent read-only (0555) once
// stopped a merge half-way, stayed in staging for good and refused every
// later transfer; now what is staged stays the owner's to move and remove.
func TestReceiveReadOnlyDirectory(t *testing.T) {
	s := newSandbox(t)
	ro := dir("results/ro")
	ro.hdr.Mode = 0o555
	locked := file("results/ro/f", "f")
	locked.hdr.Mode = 0o000
	base, _, err := s.transfer(t, nil, []member{dir("results"), file("results/0new", "new"), ro, locked})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(s.host, "results/ro/f")); got != "f" {
		t.Errorf("results/ro/f on the host: %q", got)
	}
	if left, _ := filepath.Glob(filepath.Join(s.host, ".sidecar-incoming-*")); len(left) != 0 {
		t.Errorf("staging left behind: %v", left)
	}
	if _, _, err := s.transfer(t, base, []member{dir("results"), file("results/0new", "newer")}); err != nil {
		t.Errorf("the next transfer: %v", err)
	}
}

// TestReceiveUnchangedUnderRedirect: a file the container left out as
// unchanged, in a directory that goes to a conflict copy (the host made
// a file of the directory), is not moved from a staging path that does
// not exist: the transfer applies whole.
func TestReceiveUnchangedUnderRedirect(t *testing.T) {
	s := newSandbox(t)
	base, _, err := s.transfer(t, nil, []member{dir("results"), dir("results/d"), file("results/d/f", "f")})
	if err != nil {
		t.Fatal(err)
	}
	_ = os.RemoveAll(filepath.Join(s.host, "results/d"))
	writeTree(t, s.host, map[string]string{"results/d": "operator's"})
	ms := []member{dir("results"), file("results/aaa", "new"), dir("results/d")}
	m := manifestOf(ms)
	var man Manifest
	if err := json.Unmarshal([]byte(m.body), &man); err != nil {
		t.Fatal(err)
	}
	for _, e := range base.Entries {
		if e.Path == "results/d/f" {
			e.Unchanged = true
			man.Entries = append(man.Entries, e)
		}
	}
	b, _ := json.Marshal(man)
	in, plan, err := s.receivePlan(archiveRaw(t, append(ms, file(ManifestName, string(b)))), receivePolicy, time.Now(), base)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := plan.Apply(); err != nil {
		t.Fatalf("apply: %v (changes %v)", err, plan.Changes)
	}
	if read(t, filepath.Join(s.host, "results/aaa")) != "new" || read(t, filepath.Join(s.host, "results/d")) != "operator's" {
		t.Error("the transfer did not apply whole, or the host's file changed")
	}
}

// TestConflictCopyLongName: a conflict copy of a name near the
// filesystem's 255 bytes is shortened to fit, not failed half-way.
func TestConflictCopyLongName(t *testing.T) {
	s := newSandbox(t)
	long := "results/" + strings.Repeat("a", 240)
	base, _, err := s.transfer(t, nil, []member{dir("results"), file(long, "v1")})
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, s.host, map[string]string{long: "host's edit"})
	_, changes, err := s.transfer(t, base, []member{dir("results"), file("results/0new", "new"), file(long, "container's edit")})
	if err != nil {
		t.Fatalf("%v (changes %v)", err, changes)
	}
	for _, c := range changes {
		if c.Action == Conflicted {
			if n := len(filepath.Base(c.Copy)); n > 255 {
				t.Errorf("copy name of %d bytes", n)
			}
			if got := read(t, filepath.Join(s.host, c.Copy)); got != "container's edit" {
				t.Errorf("the copy holds %q", got)
			}
		}
	}
}

// TestReceiveHostLinkRetargeted: a symlink on the host the merge does not
// look at (the operator's, resolving inside) is judged again with the tree
// the merge leaves: a transfer that would make it lead out is refused.
func TestReceiveHostLinkRetargeted(t *testing.T) {
	s := newSandbox(t)
	base, _, err := s.transfer(t, nil, []member{dir("results"), dir("results/a"), dir("results/a/b"), dir("results/a/b/d")})
	if err != nil {
		t.Fatal(err)
	}
	// results/x while d is a directory.
	if err := os.Symlink("d/../../../x", filepath.Join(s.host, "results/a/b/L")); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.transfer(t, base, []member{dir("results"), dir("results/a"), dir("results/a/b"), link("results/a/b/d", "../..")})
	if err == nil || !strings.Contains(err.Error(), "results/a/b/L") {
		t.Fatalf("retargeting the host's link out of the root: %v, want it refused naming it", err)
	}
	if bad, _ := EscapingLinks(s.host, receivePolicy); len(bad) != 0 {
		t.Errorf("escaping links after the refusal: %v", bad)
	}
}

// TestReceiveDeepPath: a path deeper than maxDepth is refused at its
// member, before the work a deep tree costs every later operation.
func TestReceiveDeepPath(t *testing.T) {
	s := newSandbox(t)
	deep := "results"
	ms := []member{dir(deep)}
	for range maxDepth {
		deep += "/d"
		ms = append(ms, dir(deep))
	}
	start := time.Now()
	_, _, err := s.transfer(t, nil, ms)
	if err == nil || !strings.Contains(err.Error(), "deeper than 256") {
		t.Fatalf("a tree %d deep: %v", maxDepth+1, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("refusing it took %v", d)
	}
}

// TestPackNonUTF8: a name that is not UTF-8 is left out and reported, not
// sent in an archive its receiver would refuse whole.
func TestPackNonUTF8(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"results/caf\xe9": "x", "results/ok": "ok"})
	var buf bytes.Buffer
	m, skipped, err := Pack(context.Background(), root, receivePolicy, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 1 || len(m.Skipped) != 1 {
		t.Errorf("skipped %v (manifest %v), want the one name", skipped, m.Skipped)
	}
	if _, err := Unpack(context.Background(), &buf, t.TempDir(), receivePolicy, Limits{}); err != nil {
		t.Errorf("the receiver refused it: %v", err)
	}
}

// TestReceiveLockWaits: a transfer into a root another is merging into
// waits for it no longer than its context lets it.
func TestReceiveLockWaits(t *testing.T) {
	s := newSandbox(t)
	first, err := Receive(context.Background(), bytes.NewReader(archiveTB(t, []member{dir("results")})), s.host, "furiosa", receivePolicy, Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = Receive(ctx, bytes.NewReader(archiveTB(t, []member{dir("results")})), s.host, "nux", receivePolicy, Limits{}, nil)
	if err == nil || !strings.Contains(err.Error(), "waiting for another transfer") {
		t.Fatalf("a second transfer while the first holds the root: %v", err)
	}
}

// TestConflictCopyNamesExhausted: when the numbered names a copy would
// take are all taken (a polecat can send them), the copy takes a random
// suffix at once; before, the name grew past NAME_MAX, every later try
// failed as "taken", and planning spun for ever with the root locked.
func TestConflictCopyNamesExhausted(t *testing.T) {
	s := newSandbox(t)
	now := time.Unix(1700000000, 0)
	long := "results/" + strings.Repeat("a", 200)
	base, _, err := s.transferTo(t, receivePolicy, now, nil, []member{dir("results"), file(long, "v1")})
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, s.host, map[string]string{long: "host's edit"})
	ms := []member{dir("results"), file(long, "container's edit")}
	first := long + ".conflict-furiosa-" + now.UTC().Format("20060102T150405Z")
	ms = append(ms, file(first, "taken"))
	for i := 2; i <= maxCopyTries+5; i++ {
		ms = append(ms, file(fmt.Sprintf("%s-%d", first, i), "taken"))
	}
	done := make(chan error, 1)
	var changes []Change
	go func() {
		var err error
		_, changes, err = s.transferTo(t, receivePolicy, now, base, ms)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("planning did not end")
	}
	for _, c := range changes {
		if c.Path == long && (c.Action != Conflicted || read(t, filepath.Join(s.host, c.Copy)) != "container's edit") {
			t.Errorf("the conflict: %+v", c)
		}
	}
}

// TestDeletesCountsContentTakenAway: a host file the container made a
// directory, a link or empty counts as deleted for the delete hold, as a
// removed one does.
func TestDeletesCountsContentTakenAway(t *testing.T) {
	s := newSandbox(t)
	ms := []member{dir("results")}
	for i := range 4 {
		ms = append(ms, file(fmt.Sprintf("results/f%d", i), "content"))
	}
	base, _, err := s.transfer(t, nil, ms)
	if err != nil {
		t.Fatal(err)
	}
	evil := []member{dir("results"), dir("results/f0"), link("results/f1", "f3"), file("results/f2", ""), file("results/f3", "changed")}
	in, plan, err := s.receivePlan(archiveTB(t, evil), receivePolicy, time.Now(), base)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if want := []string{"results/f0", "results/f1", "results/f2"}; !slices.Equal(plan.Lost, want) {
		t.Errorf("Lost %v, want %v (a directory, a link, emptied)", plan.Lost, want)
	}
}

// TestApplyHostChangedSincePlan: an edit on the host between the plan
// and Apply (the plan may spend minutes in text merges) is not
// overwritten: nothing is applied, and the next transfer merges it.
func TestApplyHostChangedSincePlan(t *testing.T) {
	s := newSandbox(t)
	base, _, err := s.transfer(t, nil, []member{dir("results"), file("results/notes", "base")})
	if err != nil {
		t.Fatal(err)
	}
	ms := []member{dir("results"), file("results/notes", "container's"), file("results/new", "new")}
	in, plan, err := s.receivePlan(archiveTB(t, ms), receivePolicy, time.Unix(1700000000, 0), base)
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, s.host, map[string]string{"results/notes": "the operator's edit"})
	if err := plan.Apply(); err == nil || !strings.Contains(err.Error(), "changed on the host") {
		t.Fatalf("apply after the host changed: %v", err)
	}
	in.Close()
	if read(t, filepath.Join(s.host, "results/notes")) != "the operator's edit" || read(t, filepath.Join(s.host, "results/new")) != "<missing>" {
		t.Fatal("the transfer applied over the operator's edit, or in part")
	}
	_, changes, err := s.transfer(t, base, ms)
	if err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(s.host, "results/notes")) != "the operator's edit" || len(changes) != 2 {
		t.Errorf("the next transfer: changes %v", changes)
	}
}
