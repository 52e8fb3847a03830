// Command releasecheck checks what 'goreleaser release --snapshot' left in
// dist/ against what a release promises: exactly the archives named in
// .goreleaser.yaml, each holding its files and its static binaries for its
// own platform (read with debug/elf and debug/macho), stamped with the
// release's version and commit; the checksums file agreeing with them; the
// linux/amd64 hostd and gt-agent answering 'version' with the release's
// version, commit and date; and the Homebrew formula installing hostd, with
// its service, from those archives. It prints one line a check and ends
// with "N passed, N failed"; it exits 1 when any failed.
//
//	cd tools && go run ./releasecheck -dist ../dist   # make release-check
package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// release is what goreleaser's dist/metadata.json says of the run.
type release struct {
	ProjectName string `json:"project_name"`
	Version     string `json:"version"`
	Commit      string `json:"commit"`
	Date        string `json:"date"`
}

// archive is one release archive expected in dist/ and what it holds,
// under one directory named as the archive.
type archive struct {
	program      string // hostd or gt-agent: the archive's name starts with it
	goos, goarch string
	binaries     []string
	files        []string          // the other regular files
	links        map[string]string // symlink: its target
}

// name is the archive's file name for version.
func (a archive) name(version string) string {
	return fmt.Sprintf("%s_%s_%s_%s.tar.gz", a.program, version, a.goos, a.goarch)
}

// expected is every archive a release has: hostd for Linux and macOS,
// gt-agent with its gt shim (and bd linked to it) for Linux.
func expected() []archive {
	var all []archive
	for _, goos := range []string{"darwin", "linux"} {
		for _, goarch := range []string{"amd64", "arm64"} {
			all = append(all, archive{program: "hostd", goos: goos, goarch: goarch, binaries: []string{"hostd"},
				files: []string{"LICENSE", "README.md", "docs/service/com.polecat-sidecar.hostd.plist", "docs/service/hostd.service"}})
		}
	}
	for _, goarch := range []string{"amd64", "arm64"} {
		all = append(all, archive{program: "gt-agent", goos: "linux", goarch: goarch, binaries: []string{"gt", "gt-agent"},
			files: []string{"LICENSE", "README.md"}, links: map[string]string{"bd": "gt"}})
	}
	return all
}

// checker counts and prints the checks' outcomes.
type checker struct{ passed, failed int }

func (c *checker) check(what string, err error) {
	if err != nil {
		c.failed++
		fmt.Printf("FAIL %s: %v\n", what, err)
		return
	}
	c.passed++
	fmt.Printf("ok   %s\n", what)
}

func main() {
	dist := flag.String("dist", "dist", "goreleaser's output directory")
	flag.Parse()
	var c checker
	if err := run(&c, *dist); err != nil {
		c.check("reading "+*dist, err)
	}
	fmt.Printf("releasecheck: %d passed, %d failed\n", c.passed, c.failed)
	if c.failed > 0 || c.passed == 0 {
		os.Exit(1)
	}
}

func run(c *checker, dist string) error {
	var rel release
	if err := readJSON(filepath.Join(dist, "metadata.json"), &rel); err != nil {
		return fmt.Errorf("reading goreleaser's metadata (run make release-snapshot first): %w", err)
	}
	if rel.Version == "" {
		return fmt.Errorf("metadata.json names no version: %+v", rel)
	}
	head, err := exec.Command("git", "-C", filepath.Join(dist, ".."), "rev-parse", "HEAD").Output()
	if err != nil {
		return fmt.Errorf("reading the commit dist/ was built from: %w", err)
	}
	c.check("metadata.json's commit is HEAD's", isHead(rel.Commit, string(head)))
	sumsFile := filepath.Join(dist, rel.ProjectName+"_"+rel.Version+"_checksums.txt")
	sums, err := readChecksums(sumsFile)
	if err != nil {
		return err
	}
	var names []string
	for _, a := range expected() {
		names = append(names, a.name(rel.Version))
	}
	c.check(fmt.Sprintf("%s lists exactly the %d archives", filepath.Base(sumsFile), len(names)), sameSet(keys(sums), names))
	for _, a := range expected() {
		name := a.name(rel.Version)
		data, err := os.ReadFile(filepath.Join(dist, name))
		if err != nil {
			c.check(name, err)
			continue
		}
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != sums[name] {
			c.check(name+": checksum", fmt.Errorf("sha256 %x, the checksums file says %q", sum, sums[name]))
		}
		c.check(fmt.Sprintf("%s (%d bytes)", name, len(data)), checkArchive(a, strings.TrimSuffix(name, ".tar.gz"), data, rel))
	}
	c.check("hostd and gt-agent for linux/amd64 say their version", checkVersions(dist, rel))
	formula := filepath.Join(dist, "homebrew", "Formula", "hostd.rb")
	c.check("the Homebrew formula "+formula, checkFormula(formula, rel, sums))
	return nil
}

// isHead is nil when goreleaser read the commit git says is HEAD ("none"
// is what it stamps when it could not read one).
func isHead(commit, head string) error {
	if commit != strings.TrimSpace(head) {
		return fmt.Errorf("%q, but HEAD is %s", commit, strings.TrimSpace(head))
	}
	return nil
}

// checkArchive reads one archive: the entries under dir, exactly a's, each
// binary built for a's platform, and the program it is named for stamped
// with rel's version and commit.
func checkArchive(a archive, dir string, data []byte, rel release) error {
	entries, err := readTarGz(data)
	if err != nil {
		return err
	}
	var names []string
	for path := range entries {
		names = append(names, path)
	}
	var want []string
	for _, f := range slices.Concat(a.binaries, a.files, keys(a.links)) {
		want = append(want, dir+"/"+f)
	}
	if err := sameSet(names, want); err != nil {
		return fmt.Errorf("its entries: %w", err)
	}
	var errs []error
	for link, target := range a.links {
		if e := entries[dir+"/"+link]; e.hdr.Typeflag != tar.TypeSymlink || e.hdr.Linkname != target {
			errs = append(errs, fmt.Errorf("%s is not a link to %s (type %q, to %q)", link, target, e.hdr.Typeflag, e.hdr.Linkname))
		}
	}
	for _, bin := range a.binaries {
		e := entries[dir+"/"+bin]
		if e.hdr.Mode&0o111 == 0 {
			errs = append(errs, fmt.Errorf("%s is not executable (mode %o)", bin, e.hdr.Mode))
		}
		if err := checkBinary(e.data, a.goos, a.goarch); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", bin, err))
		}
		if bin != a.program {
			continue // the gt shim has no version to stamp
		}
		for _, stamp := range []string{rel.Version, rel.Commit} {
			if !bytes.Contains(e.data, []byte(stamp)) {
				errs = append(errs, fmt.Errorf("%s is not stamped with %q", bin, stamp))
			}
		}
	}
	return errors.Join(errs...)
}

// entry is one archive member.
type entry struct {
	hdr  *tar.Header
	data []byte
}

func readTarGz(data []byte) (map[string]entry, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not gzip: %w", err)
	}
	entries := map[string]entry{}
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return entries, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the tar: %w", err)
		}
		if hdr.Typeflag == tar.TypeDir {
			continue
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", hdr.Name, err)
		}
		entries[strings.TrimPrefix(hdr.Name, "./")] = entry{hdr: hdr, data: body}
	}
}

// readChecksums reads goreleaser's "<sha256>  <file>" lines.
func readChecksums(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the checksums: %w", err)
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 {
			return nil, fmt.Errorf("%s: not a checksum line: %q", path, sc.Text())
		}
		sums[name] = sum
	}
	return sums, sc.Err()
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// sameSet is nil when got and want hold the same strings, else names the
// missing and the unexpected ones.
func sameSet(got, want []string) error {
	var missing, extra []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			missing = append(missing, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			extra = append(extra, g)
		}
	}
	if len(missing)+len(extra) == 0 {
		return nil
	}
	slices.Sort(missing)
	slices.Sort(extra)
	return fmt.Errorf("missing %q, unexpected %q", missing, extra)
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
