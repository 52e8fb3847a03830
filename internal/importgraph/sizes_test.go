package importgraph

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The house rules on size, for the code the binaries link (tests aside):
// a file holds one concept, a package one concern, and a comment says what
// and why in a few lines, longer reasoning going to docs/ once.
const (
	maxFileLines    = 400
	maxPackageLines = 1500
	maxCommentLines = 7
)

// exempt are the directories the rules leave alone: the yamux copy stays
// as upstream wrote it.
var exempt = []string{"tunnel/internal/yamux"}

// goFile is one non-test Go file of the module: its path relative to the
// module's root and its lines.
type goFile struct {
	path  string
	lines []string
}

// sourceFiles reads every non-test Go file of the module under root that
// the rules cover, skipping what loadGraph skips.
func sourceFiles(root string) ([]goFile, error) {
	var files []goFile
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || slices.Contains(exempt, rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files = append(files, goFile{rel, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")})
		return nil
	})
	return files, err
}

// oversized lists the files over maxFileLines and the packages (the
// non-test files of one directory) over maxPackageLines.
func oversized(files []goFile) []string {
	var problems []string
	perPackage := map[string]int{}
	for _, f := range files {
		perPackage[filepath.Dir(f.path)] += len(f.lines)
		if len(f.lines) > maxFileLines {
			problems = append(problems, fmt.Sprintf("%s: %d lines, over %d: split it where its concepts part", f.path, len(f.lines), maxFileLines))
		}
	}
	for pkg, n := range perPackage {
		if n > maxPackageLines {
			problems = append(problems, fmt.Sprintf("%s: %d lines of non-test Go, over %d: split the package where its concerns part", pkg, n, maxPackageLines))
		}
	}
	slices.Sort(problems)
	return problems
}

// longComments lists the comment blocks (consecutive // lines) over
// maxCommentLines, a package's doc comment aside.
func longComments(files []goFile) []string {
	var problems []string
	for _, f := range files {
		for i := 0; i < len(f.lines); {
			if !isComment(f.lines[i]) {
				i++
				continue
			}
			j := i
			for j < len(f.lines) && isComment(f.lines[j]) {
				j++
			}
			packageDoc := j < len(f.lines) && strings.HasPrefix(f.lines[j], "package ")
			if n := j - i; n > maxCommentLines && !packageDoc {
				problems = append(problems, fmt.Sprintf("%s:%d: a comment of %d lines, over %d: say what and why, and move the reasoning to docs/", f.path, i+1, n, maxCommentLines))
			}
			i = j
		}
	}
	return problems
}

func isComment(line string) bool {
	line = strings.TrimSpace(line)
	return strings.HasPrefix(line, "//") && !strings.HasPrefix(line, "//go:")
}

// TestSizes: no file over maxFileLines, no package over maxPackageLines.
func TestSizes(t *testing.T) {
	files := moduleFiles(t)
	for _, p := range oversized(files) {
		t.Error(p)
	}
}

// TestCommentBlocks: no comment block over maxCommentLines.
func TestCommentBlocks(t *testing.T) {
	files := moduleFiles(t)
	for _, p := range longComments(files) {
		t.Error(p)
	}
}

// TestSizeRulesCatch: the checks find what they look for, in files made
// to break them.
func TestSizeRulesCatch(t *testing.T) {
	long := make([]string, maxFileLines+1)
	comment := append(slices.Repeat([]string{"// a line"}, maxCommentLines+1), "func f() {}")
	doc := append(slices.Repeat([]string{"// a line"}, maxCommentLines+1), "package p")
	for _, tc := range []struct {
		name  string
		check func([]goFile) []string
		files []goFile
		want  int
	}{
		{"a file one line over", oversized, []goFile{{"p/a.go", long}}, 1},
		{"a package over by its files", oversized, []goFile{{"p/a.go", long[:maxFileLines]}, {"p/b.go", long[:maxFileLines]}, {"p/c.go", long[:maxFileLines]}, {"p/d.go", long[:maxFileLines]}}, 1},
		{"files within", oversized, []goFile{{"p/a.go", long[:maxFileLines]}, {"q/b.go", long[:maxFileLines]}}, 0},
		{"a long comment", longComments, []goFile{{"p/a.go", comment}}, 1},
		{"a comment at the limit", longComments, []goFile{{"p/a.go", comment[1:]}}, 0},
		{"a long package doc", longComments, []goFile{{"p/doc.go", doc}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.check(tc.files); len(got) != tc.want {
				t.Errorf("found %d problems, want %d: %q", len(got), tc.want, got)
			}
		})
	}
}

func moduleFiles(t *testing.T) []goFile {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := sourceFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("found %d files under %s: the walk is wrong", len(files), root)
	}
	return files
}
