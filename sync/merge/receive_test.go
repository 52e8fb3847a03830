package merge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/archive"
	"github.com/polecat-sidecar/sidecar/sync/internal/fixture"
)

var receivePolicy = sync.Policy{Include: []string{"results"}}

// sandbox is a host data root with neighbours a polecat must never reach:
// another polecat's root, the settings the rig's polecats share, a hooks
// directory, and a directory anywhere.
type sandbox struct {
	dir, host string
}

func newSandbox(t testing.TB) sandbox {
	dir := t.TempDir()
	s := sandbox{dir: dir, host: filepath.Join(dir, "town", "rig", "polecats", "furiosa")}
	fixture.WriteTree(t, dir, map[string]string{
		"town/rig/polecats/furiosa/results/keep.txt": "furiosa's",
		"town/rig/polecats/nux/results/victim.txt":   "nux's",
		"town/rig/polecats/.claude/settings.json":    `{"hooks": {}}`,
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
func (s sandbox) transfer(t testing.TB, base *sync.Manifest, ms []fixture.Member) (*sync.Manifest, []Change, error) {
	return s.transferTo(t, receivePolicy, time.Unix(1700000000, 0), base, ms)
}

// receivePlan receives data into the host root and plans its merge
// against base, as hostd does; the caller closes the Incoming.
func (s sandbox) receivePlan(data []byte, p sync.Policy, now time.Time, base *sync.Manifest) (*Incoming, *Plan, error) {
	in, err := Receive(context.Background(), bytes.NewReader(data), s.host, "furiosa", p, sync.Limits{}, base)
	if err != nil {
		return nil, nil, err
	}
	plan, err := in.Plan(context.Background(), base, Options{Polecat: "furiosa", Now: now, Policy: p})
	if err != nil {
		in.Close()
		return nil, nil, err
	}
	return in, plan, nil
}

// TestReceiveChainAcrossTransfers is the escape, tried by a sender
// that judges nothing: a link that resolves inside while l is a
// directory, then l made a link so that it would lead out, then the link
// sent as a directory with a hook in it, then a file under it deleted.
// Nothing outside the host root is ever written or removed.
func TestReceiveChainAcrossTransfers(t *testing.T) {
	s := newSandbox(t)
	before := s.outside(t)
	dirs := []fixture.Member{fixture.Dir("results"), fixture.Dir("results/a"), fixture.Dir("results/a/b"), fixture.Dir("results/a/b/c")}
	steps := []struct {
		name    string
		members []fixture.Member
		refused string // "" when the transfer must be taken
	}{
		{"links that resolve inside while l is a directory", append(dirs[:4:4], fixture.Dir("results/a/b/c/l"),
			fixture.Link("results/a/b/c/hooks", "l/../../../../.runtime/hostd/hooks"),
			fixture.Link("results/a/b/c/nux", "l/../../nux/results")), ""},
		{"l made a link: the kernel would now take hooks and nux out", append(dirs[:4:4], fixture.Link("results/a/b/c/l", "../../.."),
			fixture.Link("results/a/b/c/hooks", "l/../../../../.runtime/hostd/hooks"),
			fixture.Link("results/a/b/c/nux", "l/../../nux/results")), "through the symlink results/a/b/c/l"},
		{"the links sent as directories with files in them", append(dirs[:4:4], fixture.Dir("results/a/b/c/l"),
			fixture.Dir("results/a/b/c/hooks"), fixture.File("results/a/b/c/hooks/update", "#!/bin/sh\necho owned\n"),
			fixture.Dir("results/a/b/c/nux"), fixture.File("results/a/b/c/nux/victim.txt", "nux's")), ""},
		{"a file under the former link deleted", append(dirs[:4:4], fixture.Dir("results/a/b/c/l"),
			fixture.Dir("results/a/b/c/hooks"), fixture.File("results/a/b/c/hooks/update", "#!/bin/sh\necho owned\n"),
			fixture.Dir("results/a/b/c/nux")), ""},
	}
	var base *sync.Manifest
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
	_, changes, err := s.transfer(t, nil, []fixture.Member{fixture.Dir("results"), fixture.Dir("results/away"), fixture.File("results/away/victim.txt", "overwritten")})
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
		members []fixture.Member
		want    map[string]string // path -> content, "dir", or "-> target"
	}{
		{"a file and a directory", []fixture.Member{fixture.Dir("results"), fixture.File("results/x", "file"), fixture.Dir("results/d"), fixture.File("results/d/in", "in")},
			map[string]string{"results/x": "file", "results/d/in": "in"}},
		{"file to directory, directory to file", []fixture.Member{fixture.Dir("results"), fixture.Dir("results/x"), fixture.File("results/x/y", "y"), fixture.File("results/d", "now a file")},
			map[string]string{"results/x/y": "y", "results/d": "now a file"}},
		{"directory to symlink, file to symlink", []fixture.Member{fixture.Dir("results"), fixture.Link("results/x", "d"), fixture.Link("results/d", "gone")},
			map[string]string{"results/x": "-> d", "results/d": "-> gone"}},
		{"symlink to directory", []fixture.Member{fixture.Dir("results"), fixture.Dir("results/x"), fixture.File("results/x/z", "z"), fixture.File("results/d", "file again")},
			map[string]string{"results/x/z": "z", "results/d": "file again"}},
	}
	var base *sync.Manifest
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
	base, _, err := s.transfer(t, nil, []fixture.Member{fixture.Dir("results"), fixture.Dir("results/d"), fixture.File("results/d/old", "old")})
	if err != nil {
		t.Fatal(err)
	}
	fixture.WriteTree(t, s.host, map[string]string{"results/d/added-on-host": "host's"})
	_, changes, err := s.transfer(t, base, []fixture.Member{fixture.Dir("results"), fixture.File("results/d", "a file now"), fixture.File("results/new", "new")})
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
	var ms []fixture.Member
	ms = append(ms, fixture.Dir("results"))
	for i := range 5 {
		ms = append(ms, fixture.File(fmt.Sprintf("results/f%d", i), "base"))
	}
	base, _, err := s.transfer(t, nil, ms)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		fixture.WriteTree(t, s.host, map[string]string{fmt.Sprintf("results/f%d", i): "host's"})
		ms[i+1] = fixture.File(fmt.Sprintf("results/f%d", i), "container's")
	}
	var buf bytes.Buffer
	buf.Write(fixture.Archive(t, ms))
	in, err := Receive(context.Background(), &buf, s.host, "furiosa", receivePolicy, sync.Limits{}, base)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	_, err = in.Plan(context.Background(), base, Options{Polecat: "furiosa", Now: time.Now(), Policy: receivePolicy, MaxBothChanged: 3})
	var le *sync.LimitError
	if !errors.As(err, &le) || le.Setting != "sync.max_conflicts" {
		t.Fatalf("plan: %v, want the sync.max_conflicts limit", err)
	}
	ents, _ := os.ReadDir(filepath.Join(s.host, "results"))
	if len(ents) != 6 { // keep.txt and f0-f4, no conflict copies
		t.Errorf("the host's results after a refused merge: %v", ents)
	}
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
// kind, path, link target; in the order a walk lists them, which is the
// only one an archive may have, so that the fuzz reaches the merge.
func fuzzMembers(b []byte) []fixture.Member {
	var ms []fixture.Member
	for i := 0; i+2 < len(b); i += 3 {
		p := fuzzPaths[int(b[i+1])%len(fuzzPaths)]
		switch b[i] % 3 {
		case 0:
			ms = append(ms, fixture.Dir(p))
		case 1:
			ms = append(ms, fixture.File(p, string(b[i:i+3])))
		default:
			ms = append(ms, fixture.Link(p, fuzzTargets[int(b[i+2])%len(fuzzTargets)]))
		}
	}
	slices.SortStableFunc(ms, func(a, b fixture.Member) int { return comparePaths(a.Hdr.Name, b.Hdr.Name) })
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

// transferTo is sandbox.transfer with a policy and the transfer's time.
func (s sandbox) transferTo(t testing.TB, p sync.Policy, now time.Time, base *sync.Manifest, ms []fixture.Member) (*sync.Manifest, []Change, error) {
	in, plan, err := s.receivePlan(fixture.Archive(t, ms), p, now, base)
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
	ro := fixture.Dir("results/ro")
	ro.Hdr.Mode = 0o555
	locked := fixture.File("results/ro/f", "f")
	locked.Hdr.Mode = 0o000
	base, _, err := s.transfer(t, nil, []fixture.Member{fixture.Dir("results"), fixture.File("results/0new", "new"), ro, locked})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(s.host, "results/ro/f")); got != "f" {
		t.Errorf("results/ro/f on the host: %q", got)
	}
	if left, _ := filepath.Glob(filepath.Join(s.host, ".sidecar-incoming-*")); len(left) != 0 {
		t.Errorf("staging left behind: %v", left)
	}
	if _, _, err := s.transfer(t, base, []fixture.Member{fixture.Dir("results"), fixture.File("results/0new", "newer")}); err != nil {
		t.Errorf("the next transfer: %v", err)
	}
}

// TestReceiveUnchangedUnderRedirect: a file the container left out as
// unchanged, in a directory that goes to a conflict copy (the host made
// a file of the directory), is not moved from a staging path that does
// not exist: the transfer applies whole.
func TestReceiveUnchangedUnderRedirect(t *testing.T) {
	s := newSandbox(t)
	base, _, err := s.transfer(t, nil, []fixture.Member{fixture.Dir("results"), fixture.Dir("results/d"), fixture.File("results/d/f", "f")})
	if err != nil {
		t.Fatal(err)
	}
	_ = os.RemoveAll(filepath.Join(s.host, "results/d"))
	fixture.WriteTree(t, s.host, map[string]string{"results/d": "operator's"})
	ms := []fixture.Member{fixture.Dir("results"), fixture.File("results/aaa", "new"), fixture.Dir("results/d")}
	m := fixture.ManifestOf(ms)
	var man sync.Manifest
	if err := json.Unmarshal([]byte(m.Body), &man); err != nil {
		t.Fatal(err)
	}
	for _, e := range base.Entries {
		if e.Path == "results/d/f" {
			e.Unchanged = true
			man.Entries = append(man.Entries, e)
		}
	}
	b, _ := json.Marshal(man)
	in, plan, err := s.receivePlan(fixture.ArchiveRaw(t, append(ms, fixture.File(sync.ManifestName, string(b)))), receivePolicy, time.Now(), base)
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

// TestReceiveHostLinkRetargeted: a symlink on the host the merge does not
// look at (the operator's, resolving inside) is judged again with the tree
// the merge leaves: a transfer that would make it lead out is refused.
func TestReceiveHostLinkRetargeted(t *testing.T) {
	s := newSandbox(t)
	base, _, err := s.transfer(t, nil, []fixture.Member{fixture.Dir("results"), fixture.Dir("results/a"), fixture.Dir("results/a/b"), fixture.Dir("results/a/b/d")})
	if err != nil {
		t.Fatal(err)
	}
	// results/x while d is a directory.
	if err := os.Symlink("d/../../../x", filepath.Join(s.host, "results/a/b/L")); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.transfer(t, base, []fixture.Member{fixture.Dir("results"), fixture.Dir("results/a"), fixture.Dir("results/a/b"), fixture.Link("results/a/b/d", "../..")})
	if err == nil || !strings.Contains(err.Error(), "results/a/b/L") {
		t.Fatalf("retargeting the host's link out of the root: %v, want it refused naming it", err)
	}
	if bad, _ := archive.EscapingLinks(s.host, receivePolicy); len(bad) != 0 {
		t.Errorf("escaping links after the refusal: %v", bad)
	}
}

// TestReceiveDeepPath: a path deeper than sync.MaxDepth is refused at its
// member, before the work a deep tree costs every later operation.
func TestReceiveDeepPath(t *testing.T) {
	s := newSandbox(t)
	deep := "results"
	ms := []fixture.Member{fixture.Dir(deep)}
	for range sync.MaxDepth {
		deep += "/d"
		ms = append(ms, fixture.Dir(deep))
	}
	start := time.Now()
	_, _, err := s.transfer(t, nil, ms)
	if err == nil || !strings.Contains(err.Error(), "deeper than 256") {
		t.Fatalf("a tree %d deep: %v", sync.MaxDepth+1, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("refusing it took %v", d)
	}
}

// TestReceiveLockWaits: a transfer into a root another is merging into
// waits for it no longer than its context lets it.
func TestReceiveLockWaits(t *testing.T) {
	s := newSandbox(t)
	first, err := Receive(context.Background(), bytes.NewReader(fixture.Archive(t, []fixture.Member{fixture.Dir("results")})), s.host, "furiosa", receivePolicy, sync.Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = Receive(ctx, bytes.NewReader(fixture.Archive(t, []fixture.Member{fixture.Dir("results")})), s.host, "nux", receivePolicy, sync.Limits{}, nil)
	if err == nil || !strings.Contains(err.Error(), "waiting for another transfer") {
		t.Fatalf("a second transfer while the first holds the root: %v", err)
	}
}

// TestDeletesCountsContentTakenAway: a host file the container made a
// directory, a link or empty counts as deleted for the delete hold, as a
// removed one does.
func TestDeletesCountsContentTakenAway(t *testing.T) {
	s := newSandbox(t)
	ms := []fixture.Member{fixture.Dir("results")}
	for i := range 4 {
		ms = append(ms, fixture.File(fmt.Sprintf("results/f%d", i), "content"))
	}
	base, _, err := s.transfer(t, nil, ms)
	if err != nil {
		t.Fatal(err)
	}
	evil := []fixture.Member{fixture.Dir("results"), fixture.Dir("results/f0"), fixture.Link("results/f1", "f3"), fixture.File("results/f2", ""), fixture.File("results/f3", "changed")}
	in, plan, err := s.receivePlan(fixture.Archive(t, evil), receivePolicy, time.Now(), base)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if want := []string{"results/f0", "results/f1", "results/f2"}; !slices.Equal(plan.Lost, want) {
		t.Errorf("Lost %v, want %v (a directory, a link, emptied)", plan.Lost, want)
	}
}
