package importgraph

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the Imports section of docs/architecture.md from the table")

// The Imports section of docs/architecture.md is the lines between these.
const (
	docFile  = "docs/architecture.md"
	docStart = "<!-- imports"
	docEnd   = "<!-- /imports -->"
)

// TestImports: every import of ours the module's files make is in its
// package's row of the table, every entry of the table is an import some
// file makes, and no import crosses a boundary.
func TestImports(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	g, err := loadGraph(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(g) < 10 {
		t.Fatalf("found %d packages under %s: the walk is wrong", len(g), root)
	}
	for _, p := range check(g, table, boundaries) {
		t.Error(p)
	}
}

// TestImportsDoc: the Imports section of docs/architecture.md is the table
// as render renders it. With -update it is rewritten so.
func TestImportsDoc(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, docFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before, section, after, err := cutSection(string(b))
	if err != nil {
		t.Fatalf("%s: %v", docFile, err)
	}
	want := render(table, boundaries)
	if section == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(before+want+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's Imports section is not the table in internal/importgraph/imports_test.go: change the table (not the page), then run\n"+
		"  go test ./internal/importgraph -run TestImportsDoc -update\n"+
		"to rewrite the section. The page (-) against the table (+):\n%s", docFile, lineDiff(section, want))
}

// cutSection splits doc around the lines between its docStart line and
// its docEnd line.
func cutSection(doc string) (before, section, after string, err error) {
	i := strings.Index(doc, "\n"+docStart)
	if i < 0 {
		return "", "", "", fmt.Errorf("no line beginning %q", docStart)
	}
	nl := strings.IndexByte(doc[i+1:], '\n')
	if nl < 0 {
		return "", "", "", fmt.Errorf("nothing after %q", docStart)
	}
	start := i + 1 + nl + 1
	j := strings.Index(doc[start:], docEnd+"\n")
	if j < 0 || (j > 0 && doc[start+j-1] != '\n') {
		return "", "", "", fmt.Errorf("no line %q after the line beginning %q", docEnd, docStart)
	}
	return doc[:start], doc[start : start+j], doc[start+j:], nil
}

// rowFor is the row of pkg: the one with the pattern naming it most
// closely.
func rowFor(rows []row, pkg string) (r *row, pattern string) {
	best := -1
	for i := range rows {
		for _, p := range rows[i].pkgs {
			if !matches(p, pkg) {
				continue
			}
			score := 1 << 20 // x itself, before any x/...
			if base, ok := strings.CutSuffix(p, "/..."); ok {
				score = len(base) // a longer x/... before a shorter one
			} else if p == "..." {
				score = 0
			}
			if score > best {
				r, pattern, best = &rows[i], p, score
			}
		}
	}
	return r, pattern
}

// check is what is wrong with g against rows and bounds, each a sentence
// saying what to do.
func check(g graph, rows []row, bounds []boundary) []string {
	var problems []string
	seen := map[string]bool{}
	for _, r := range rows {
		for _, p := range r.pkgs {
			if seen[p] {
				problems = append(problems, fmt.Sprintf("the table has two rows for %s: keep one", p))
			}
			seen[p] = true
		}
	}
	type use struct {
		row     *row
		pattern string
	}
	named, may, tests := map[use]bool{}, map[use]bool{}, map[use]bool{}
	reported := map[string]bool{}
	for _, pkg := range sortedKeys(g) {
		r, pattern := rowFor(rows, pkg)
		if r == nil {
			problems = append(problems, fmt.Sprintf("%s has no row in the table: add one saying what it imports of ours and what for", pkg))
			continue
		}
		named[use{r, pattern}] = true
		for _, e := range g[pkg] {
			if p, ok := matchesAny(r.may, e.to); ok {
				if !e.inTest() { // an entry only tests use belongs in tests
					may[use{r, p}] = true
				}
				continue
			}
			if p, ok := matchesAny(r.tests, e.to); ok && e.inTest() {
				tests[use{r, p}] = true
				continue
			}
			key := pkg + " " + e.to
			if reported[key] {
				continue
			}
			reported[key] = true
			allowed := list(r.may)
			if e.inTest() && len(r.tests) > 0 {
				allowed += ", and in tests " + list(r.tests)
			}
			problems = append(problems, fmt.Sprintf("%s imports %s, which the table does not allow (the row %s: %s): import something else, or change the table and docs/architecture.md with it",
				e.file, e.to, list(r.pkgs), allowed))
		}
	}
	for i := range rows {
		r := &rows[i]
		for _, p := range r.pkgs {
			if !named[use{r, p}] {
				problems = append(problems, fmt.Sprintf("the row %s is no package's: remove %s from it", list(r.pkgs), p))
			}
		}
		for _, p := range r.may {
			if !may[use{r, p}] {
				problems = append(problems, fmt.Sprintf("the row %s allows %s, which none of its packages imports outside tests: remove it, or move it to tests if their tests import it", list(r.pkgs), p))
			}
		}
		for _, p := range r.tests {
			if !tests[use{r, p}] {
				problems = append(problems, fmt.Sprintf("the row %s allows its tests %s, which none of them imports (or its packages do, outside tests too): remove it", list(r.pkgs), p))
			}
		}
	}
	return append(problems, checkBoundaries(g, bounds)...)
}

// checkBoundaries is every import of g that crosses one of bounds, and
// every exception of theirs that no import needs.
func checkBoundaries(g graph, bounds []boundary) []string {
	var problems []string
	for _, b := range bounds {
		used := map[string]bool{}
		reported := map[string]bool{}
		for _, pkg := range sortedKeys(g) {
			if _, ok := matchesAny(b.from, pkg); !ok {
				continue
			}
			for _, e := range g[pkg] {
				if _, ok := matchesAny(b.to, e.to); !ok {
					continue
				}
				if _, ok := matchesAny(b.exceptTo, e.to); ok {
					continue
				}
				if p, ok := matchesAny(b.exceptFrom, pkg); ok {
					used[p] = true
					continue
				}
				if p, ok := matchesAny(b.exceptTestsOf, pkg); ok && e.inTest() {
					used["tests of "+p] = true
					continue
				}
				if key := pkg + " " + e.to; !reported[key] {
					reported[key] = true
					problems = append(problems, fmt.Sprintf("%s imports %s, against the rule %q", e.file, e.to, b.String()))
				}
			}
		}
		for _, p := range b.exceptFrom {
			if !used[p] {
				problems = append(problems, fmt.Sprintf("the rule %q excepts %s, which imports nothing it would forbid: remove the exception", b.String(), p))
			}
		}
		for _, p := range b.exceptTestsOf {
			if !used["tests of "+p] {
				problems = append(problems, fmt.Sprintf("the rule %q excepts the tests of %s, which import nothing it would forbid: remove the exception", b.String(), p))
			}
		}
	}
	return problems
}

// String is the rule in words, as docs/architecture.md states it.
func (b boundary) String() string {
	var s strings.Builder
	if slices.Equal(b.from, []string{"..."}) {
		fmt.Fprintf(&s, "Only %s %s %s", list(b.exceptFrom), verb(b.exceptFrom, "imports", "import"), list(b.to))
		if len(b.exceptTestsOf) > 0 {
			fmt.Fprintf(&s, " (and the tests of %s)", list(b.exceptTestsOf))
		}
	} else {
		what := listOr(b.to)
		if slices.Equal(b.to, []string{"..."}) {
			what = "ours"
		}
		fmt.Fprintf(&s, "%s %s nothing of %s", list(b.from), verb(b.from, "imports", "import"), what)
		if len(b.exceptTo) > 0 {
			fmt.Fprintf(&s, " but %s", list(b.exceptTo))
		}
		if len(b.exceptFrom) > 0 {
			fmt.Fprintf(&s, ", save %s", list(b.exceptFrom))
		}
		if len(b.exceptTestsOf) > 0 {
			fmt.Fprintf(&s, ", save in the tests of %s", list(b.exceptTestsOf))
		}
	}
	fmt.Fprintf(&s, ": %s.", b.why)
	return s.String()
}

// render is the Imports section of docs/architecture.md: the boundaries,
// then the table.
func render(rows []row, bounds []boundary) string {
	var s strings.Builder
	s.WriteString("\n")
	for _, b := range bounds {
		fmt.Fprintf(&s, "- %s\n", b)
	}
	s.WriteString("\n| package | imports of ours | what for |\n|---|---|---|\n")
	for _, r := range rows {
		imports := list(r.may)
		if len(r.may) == 0 {
			imports = "nothing"
		}
		if len(r.tests) > 0 {
			imports += "; in tests also " + list(r.tests)
		}
		fmt.Fprintf(&s, "| %s | %s | %s |\n", list(r.pkgs), imports, r.note)
	}
	s.WriteString("\n")
	return s.String()
}

// list is patterns as code, comma-separated.
func list(patterns []string) string {
	if len(patterns) == 0 {
		return "nothing"
	}
	quoted := make([]string, len(patterns))
	for i, p := range patterns {
		quoted[i] = "`" + p + "`"
	}
	return strings.Join(quoted, ", ")
}

// listOr is patterns as code, the last after "or".
func listOr(patterns []string) string {
	if len(patterns) < 2 {
		return list(patterns)
	}
	return list(patterns[:len(patterns)-1]) + " or " + list(patterns[len(patterns)-1:])
}

// verb is singular for one pattern, plural for more.
func verb(patterns []string, singular, plural string) string {
	if len(patterns) == 1 {
		return singular
	}
	return plural
}

// sortedKeys is g's packages in order.
func sortedKeys(g graph) []string {
	keys := make([]string, 0, len(g))
	for k := range g {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// lineDiff is the lines of a and b that differ, marked - and +, found by
// their longest common subsequence.
func lineDiff(a, b string) string {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	// lcs[i][j] is the length of the longest common subsequence of x[i:] and y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var s strings.Builder
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			i, j = i+1, j+1
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			fmt.Fprintf(&s, "- %s\n", x[i])
			i++
		default:
			fmt.Fprintf(&s, "+ %s\n", y[j])
			j++
		}
	}
	return s.String()
}
