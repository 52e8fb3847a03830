package merge

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	datasync "github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/archive"
	"github.com/polecat-sidecar/sidecar/sync/internal/fixture"
)

var mergePolicy = datasync.Policy{Include: []string{"results", "notes.md"}}

// pull packs the container's tree and merges it into host against base,
// as hostd does with what it receives; with dry, it only plans.
func pull(t *testing.T, container, host string, base *datasync.Manifest, o Options, dry bool) ([]Change, error) {
	t.Helper()
	var buf bytes.Buffer
	if _, _, err := archive.Pack(context.Background(), container, mergePolicy, &buf); err != nil {
		t.Fatal(err)
	}
	in, err := Receive(context.Background(), &buf, host, o.Polecat, mergePolicy, datasync.Limits{}, nil)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	if o.Policy.Include == nil {
		o.Policy = mergePolicy
	}
	plan, err := in.Plan(context.Background(), base, o)
	if err != nil {
		return nil, err
	}
	if !dry {
		err = plan.Apply()
	}
	return plan.Changes, err
}

// keptBase packs src as hostd does a push, keeping its contents in a tar
// file under parent, and opens them.
func keptBase(t *testing.T, src, parent string) (*datasync.Manifest, *archive.Contents) {
	t.Helper()
	kept, err := os.Create(filepath.Join(parent, "base.tar"))
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := archive.Pack(context.Background(), src, mergePolicy, io.Discard, archive.KeepContents(kept))
	if err = errors.Join(err, kept.Close()); err != nil {
		t.Fatal(err)
	}
	c, err := archive.OpenContents(kept.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return m, c
}

// copyTree copies a tree (files only, enough here).
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	_ = filepath.Walk(from, func(p string, fi os.FileInfo, err error) error {
		rel, _ := filepath.Rel(from, p)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, _ := os.ReadFile(p)
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
}

func read(t testing.TB, p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return "<missing>"
	}
	return string(b)
}

const lines = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n"

func TestMerge(t *testing.T) {
	work := t.TempDir()
	host := filepath.Join(work, "host")
	fixture.WriteTree(t, host, map[string]string{
		"notes.md":              lines,
		"results/container.txt": "base",
		"results/host.txt":      "base",
		"results/both.txt":      lines,
		"results/clash.txt":     lines,
		"results/image.bin":     "\x00\x01base",
		"results/gone.txt":      "bye",
		"results/gone-edited":   "bye",
		"results/same.txt":      "base",
		"untracked.txt":         "host only",
	})
	base, kept := keptBase(t, host, work)
	container := filepath.Join(work, "container")
	copyTree(t, host, container)
	_ = os.Remove(filepath.Join(container, "untracked.txt"))

	// The container's changes.
	fixture.WriteTree(t, container, map[string]string{
		"results/container.txt": "container",
		"results/both.txt":      strings.Replace(lines, "two", "TWO (container)", 1),
		"results/clash.txt":     strings.Replace(lines, "four", "FOUR (container)", 1),
		"results/image.bin":     "\x00\x01container",
		"results/new.txt":       "new in the container",
		"results/same.txt":      "both",
	})
	_ = os.Remove(filepath.Join(container, "results/gone.txt"))
	_ = os.Remove(filepath.Join(container, "results/gone-edited"))
	// The host's, meanwhile.
	fixture.WriteTree(t, host, map[string]string{
		"results/host.txt":    "host",
		"results/both.txt":    strings.Replace(lines, "seven", "SEVEN (host)", 1),
		"results/clash.txt":   strings.Replace(lines, "four", "FOUR (host)", 1),
		"results/image.bin":   "\x00\x01host",
		"results/gone-edited": "edited here",
		"results/same.txt":    "both",
	})
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	o := Options{Polecat: "furiosa", Now: now, Base: kept}

	dry, err := pull(t, container, host, base, o, true)
	if err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(host, "results/container.txt")) != "base" {
		t.Fatal("a dry run changed the host")
	}
	changes, err := pull(t, container, host, base, o, false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Change{}
	for _, c := range changes {
		got[c.Path] = c
	}
	want := map[string]string{
		"results/container.txt": Applied,
		"results/new.txt":       Applied,
		"results/both.txt":      Merged,
		"results/clash.txt":     Conflicted,
		"results/image.bin":     Conflicted,
		"results/gone.txt":      Deleted,
		"results/gone-edited":   Kept,
	}
	for p, action := range want {
		if got[p].Action != action {
			t.Errorf("%s: %q, want %q", p, got[p].Action, action)
		}
	}
	if len(changes) != len(want) {
		t.Errorf("changes %v, want exactly %v", changes, want)
	}
	if len(dry) != len(changes) {
		t.Errorf("the dry run said %v, the merge did %v", dry, changes)
	}
	for p, content := range map[string]string{
		"results/container.txt": "container",
		"results/new.txt":       "new in the container",
		"results/host.txt":      "host",
		"results/both.txt":      strings.Replace(strings.Replace(lines, "two", "TWO (container)", 1), "seven", "SEVEN (host)", 1),
		"results/clash.txt":     strings.Replace(lines, "four", "FOUR (host)", 1),
		"results/image.bin":     "\x00\x01host",
		"results/gone.txt":      "<missing>",
		"results/gone-edited":   "edited here",
		"results/same.txt":      "both",
		"untracked.txt":         "host only",
		"results/clash.txt.conflict-furiosa-20261122T100000Z": strings.Replace(lines, "four", "FOUR (container)", 1),
		"results/image.bin.conflict-furiosa-20261122T100000Z": "\x00\x01container",
	} {
		if got := read(t, filepath.Join(host, p)); got != content {
			t.Errorf("%s: %q, want %q", p, got, content)
		}
	}
	if got["results/clash.txt"].Copy != "results/clash.txt.conflict-furiosa-20261122T100000Z" {
		t.Errorf("conflict copy named %q", got["results/clash.txt"].Copy)
	}
}

// TestMergeTwoPolecats: two polecats, sent the same base, change different
// lines of one host file and pull at once; both changes survive.
func TestMergeTwoPolecats(t *testing.T) {
	work := t.TempDir()
	host := filepath.Join(work, "host")
	fixture.WriteTree(t, host, map[string]string{"notes.md": lines})
	base, kept := keptBase(t, host, work)
	var containers []string
	for i, edit := range [][2]string{{"one", "ONE (furiosa)"}, {"eight", "EIGHT (nux)"}} {
		c := filepath.Join(work, "c"+string(rune('0'+i)))
		fixture.WriteTree(t, c, map[string]string{"notes.md": strings.Replace(lines, edit[0], edit[1], 1)})
		containers = append(containers, c)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, c := range containers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = pull(t, c, host, base, Options{Polecat: []string{"furiosa", "nux"}[i], Now: time.Now(), Base: kept}, false)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	want := strings.Replace(strings.Replace(lines, "one", "ONE (furiosa)", 1), "eight", "EIGHT (nux)", 1)
	if got := read(t, filepath.Join(host, "notes.md")); got != want {
		t.Errorf("after both pulls:\n%s\nwant:\n%s", got, want)
	}
}

// TestMergeIgnoresWhatNoLongerCrosses: a path of the base that the policy
// has stopped letting cross (the whitelist shrank since the base was
// taken) is not deleted on the host for being missing from the
// container's archive, nor listed as a change.
func TestMergeIgnoresWhatNoLongerCrosses(t *testing.T) {
	s := newSandbox(t)
	before := datasync.Policy{Include: []string{"results", "notes"}}
	base, _, err := s.transferTo(t, before, time.Unix(1700000000, 0), nil, []fixture.Member{
		fixture.Dir("results"), fixture.File("results/a", "a"), fixture.Dir("notes"), fixture.File("notes/n", "n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	_, changes, err := s.transferTo(t, receivePolicy, time.Unix(1700000100, 0), base, []fixture.Member{fixture.Dir("results"), fixture.File("results/a", "a2")})
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0] != (Change{Path: "results/a", Action: Applied}) {
		t.Errorf("changes %v, want results/a applied alone", changes)
	}
	if got := read(t, filepath.Join(s.host, "notes/n")); got != "n" {
		t.Errorf("notes/n on the host: %q, want it kept", got)
	}
}

// TestComparePaths: a directory comes right before what is under it, as
// '/' read as the lowest byte orders them.
func TestComparePaths(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"a", "a", 0},
		{"a", "b", -1},
		{"a/b", "a-b", -1}, // '-' is below '/' in ASCII, above it here
		{"a-b", "a/b", 1},
		{"a", "a/b", -1},
		{"a/b", "a", 1},
		{"a/b/c", "a/bc", -1},
		{"results/d01/f", "results/d01.txt", -1},
		{"", "a", -1},
	}
	for _, tt := range tests {
		t.Run(tt.a+" "+tt.b, func(t *testing.T) {
			reference := strings.Compare(strings.ReplaceAll(tt.a, "/", "\x00"), strings.ReplaceAll(tt.b, "/", "\x00"))
			if got := comparePaths(tt.a, tt.b); got != tt.want || got != reference {
				t.Errorf("comparePaths(%q, %q) = %d, want %d (with '/' as NUL: %d)", tt.a, tt.b, got, tt.want, reference)
			}
		})
	}
}
