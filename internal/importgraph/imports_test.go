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

// row is one line of the table: what some packages import of ours.
type row struct {
	// pkgs are the packages the row is for: "x" the package x, "x/..." x
	// and every package below it. A package's row is the one whose
	// pattern names it most closely (x before x/..., a longer x/... before
	// a shorter one).
	pkgs []string
	// may is what the row's packages import of ours, in the same patterns;
	// tests is what their test files import besides.
	may, tests []string
	// note says what for, in docs/architecture.md's words.
	note string
}

// boundary is a rule of the design no row may break: no package that from
// names imports one that to names ("..." in to: any of ours), but those
// exceptTo names; exceptFrom names importers the rule does not hold for,
// and exceptTestsOf those whose test files alone it does not hold for.
type boundary struct {
	from, to, exceptTo, exceptFrom, exceptTestsOf []string
	why                                           string
}

// boundaries are the design's rules, checked against every import.
var boundaries = []boundary{
	{from: []string{"agent/..."}, to: []string{"hostd/..."}, why: "gt-agent links nothing of hostd's"},
	{from: []string{"hostd/..."}, to: []string{"agent/..."}, exceptTestsOf: []string{"hostd/e2e"},
		why: "hostd links nothing of gt-agent's; the end-to-end suite's tests play agents in its own process"},
	{from: []string{"tunnel/...", "heartbeat", "sync/...", "internal/..."}, to: []string{"agent/...", "hostd/...", "images/..."},
		why: "what both binaries link knows neither binary"},
	{from: []string{"sync/..."}, to: []string{"tunnel/...", "heartbeat"}, why: "the data channel's formats, packing and merge are pure, with no tunnel and no CLI"},
	{from: []string{"internal/..."}, to: []string{"..."}, exceptTo: []string{"internal/..."}, why: "domain-free helpers"},
	{from: []string{"..."}, to: []string{"hostd/control"}, exceptFrom: []string{"hostd/server"},
		why: "`control` declares what it calls of each service, and `server` hands them to it"},
	{from: []string{"..."}, to: []string{"agent/supervisor"}, exceptFrom: []string{"agent"}, exceptTestsOf: []string{"hostd/e2e"},
		why: "the channels take the tunnel as a `tunnel.Sessions`"},
}

// table is what every package of the module imports of ours. Keep it in
// the order it reads best in docs/architecture.md: the packages both
// binaries link, then gt-agent's, then hostd's, then the suites.
var table = []row{
	{pkgs: []string{"internal/..."}, note: "the domain-free helpers"},
	{pkgs: []string{"internal/unixsock/..."}, tests: []string{"internal/unixsock/..."},
		note: "`unixsocktest` (short directories for sockets in tests) is tested with `unixsock`, and `unixsock` with it"},
	{pkgs: []string{"tunnel/wire"}, may: []string{"internal/jsonscan"}, note: "what crosses between the binaries; `jsonscan` reads the relay's exit status"},
	{pkgs: []string{"tunnel"}, may: []string{"tunnel/wire", "tunnel/internal/connection", "internal/accept", "internal/logging", "internal/settings"},
		tests: []string{"tunnel/internal/yamux", "tunnel/tunneltest", "internal/settings/settingstest"},
		note:  "the transport; `settings` validates its `Config`"},
	{pkgs: []string{"tunnel/internal/connection"}, may: []string{"tunnel/wire", "tunnel/internal/yamux"}, tests: []string{"tunnel/tunneltest"},
		note: "QUIC and TLS+yamux, hidden from everything above `tunnel`"},
	{pkgs: []string{"tunnel/internal/yamux"}, note: "hashicorp/yamux, kept in the tree"},
	{pkgs: []string{"tunnel/tunneltest"}, may: []string{"tunnel", "tunnel/wire"}, note: "a test CA and a relay for tests"},
	{pkgs: []string{"heartbeat"}, may: []string{"tunnel/wire", "internal/jsonscan"}, note: "beats, their codec and the judge"},
	{pkgs: []string{"sync"}, may: []string{"internal/jsonscan"}, note: "the data channel's policy, manifest and limits; `jsonscan` for the manifest's one-pass decoder"},
	{pkgs: []string{"sync/tree"}, may: []string{"sync", "internal/atomicfile"}, tests: []string{"sync/internal/fixture"}, note: "a data root, through `os.Root`"},
	{pkgs: []string{"sync/archive"}, may: []string{"sync", "sync/tree"}, tests: []string{"sync/internal/fixture"}, note: "pack and unpack"},
	{pkgs: []string{"sync/merge"}, may: []string{"sync", "sync/tree", "sync/archive"}, tests: []string{"sync/internal/fixture"}, note: "the host side of a transfer"},
	{pkgs: []string{"sync/claude"}, note: "Claude Code's settings rewritten"},
	{pkgs: []string{"sync/internal/fixture"}, may: []string{"sync"}, note: "the trees and archives the three packages' tests use"},

	{pkgs: []string{"agent"}, may: []string{"agent/...", "tunnel", "tunnel/wire", "internal/..."},
		note: "gt-agent's `main`: `up` starts the supervisor and every channel"},
	{pkgs: []string{"agent/..."}, may: []string{"agent/forward", "agent/tmux", "tunnel", "tunnel/wire", "heartbeat", "sync", "sync/archive", "internal/..."},
		tests: []string{"tunnel/tunneltest"},
		note:  "the channels' halves and their helpers: `relay` and `git` forward through `forward`; `liveness`, `nudge` and `pane` use `tmux`; `liveness` measures with `heartbeat`; `data` packs with `sync/archive`"},
	{pkgs: []string{"agent/supervisor"}, may: []string{"agent/creds", "tunnel", "tunnel/wire", "internal/settings"}, tests: []string{"tunnel/tunneltest", "internal/settings/settingstest"},
		note: "the tunnel's single owner; renews through `creds`"},
	{pkgs: []string{"agent/shim"}, may: []string{"tunnel/wire"}, note: "the relay's client: the standard library and `wire` alone, so a relayed command starts fast"},
	{pkgs: []string{"agent/gt"}, may: []string{"agent/shim"}, note: "`main` of `bin/gt`"},

	{pkgs: []string{"hostd"}, may: []string{"hostd/server", "hostd/api", "hostd/render", "hostd/pki", "hostd/sandbox", "hostd/state", "hostd/data", "hostd/git", "hostd/pane", "hostd/relay",
		"heartbeat", "tunnel/wire", "internal/..."},
		tests: []string{"tunnel", "tunnel/tunneltest"},
		note:  "hostd's `main`: `serve` builds `server` (its settings naming `data`'s default roots), the other subcommands ask through `api` and print with `render`; `ca`, `cert`, `token`, `run` and `nuke` open the CA through `pki`, `run` and `nuke` drive `sandbox`, `run` finds the worktree with `relay`; `alive` judges `heartbeat`'s states; `git`'s hooks; `pane`'s attach filter; `state` for the runtime directory's paths"},
	{pkgs: []string{"hostd/server"}, may: []string{"hostd/api", "hostd/certs", "hostd/control", "hostd/data", "hostd/git", "hostd/limits", "hostd/liveness", "hostd/nudge",
		"hostd/pane", "hostd/pki", "hostd/registry", "hostd/relay", "hostd/sandbox", "hostd/state", "hostd/upstream", "tunnel", "tunnel/wire", "internal/settings"},
		tests: []string{"tunnel/tunneltest", "internal/settings/settingstest", "internal/unixsock/unixsocktest"},
		note:  "the thin core: builds every service and `control`, and forgets a polecat across them"},
	{pkgs: []string{"hostd/control"}, may: []string{"hostd/api", "hostd/state", "heartbeat", "tunnel", "tunnel/wire", "internal/unixsock"},
		tests: []string{"internal/unixsock/unixsocktest"},
		note:  "the control socket's handlers, each calling a service through an interface declared beside it; `heartbeat` for the state a polecat that never connected shows"},
	{pkgs: []string{"hostd/api"}, may: []string{"hostd/state", "heartbeat", "tunnel", "tunnel/wire", "internal/unixsock"},
		tests: []string{"internal/unixsock/unixsocktest"},
		note:  "the control socket's JSON types (the services import it for the shapes in which status, the journal and the queues are shown) and client; it imports no service, but is not yet a leaf: it shows `heartbeat`'s beats and events, `tunnel`'s listener health and `wire`'s identities and sync results as they are, and finds the socket through `state`, its path checked by `unixsock` (issue 38: to convert them at the service boundary)"},
	{pkgs: []string{"hostd/render"}, may: []string{"hostd/api", "heartbeat", "tunnel/wire", "internal/termsafe"}, tests: []string{"tunnel"},
		note: "the CLI's text for the daemon's answers, escaped through `termsafe`"},
	{pkgs: []string{"hostd/registry"}, may: []string{"hostd/pki", "hostd/limits", "tunnel", "tunnel/wire", "internal/settings"},
		tests: []string{"tunnel/tunneltest", "internal/settings/settingstest"},
		note:  "live sessions; `pki` for serials"},
	{pkgs: []string{"hostd/registry/registrytest"}, may: []string{"hostd/registry"}, note: "the empty registry the services' tests are built on"},
	{pkgs: []string{"hostd/certs"}, may: []string{"hostd/api", "hostd/pki", "hostd/registry", "hostd/limits", "tunnel", "tunnel/wire", "internal/logging", "internal/settings"},
		tests: []string{"hostd/registry/registrytest", "tunnel/tunneltest", "internal/settings/settingstest"},
		note:  "join, renewal, revocation through the registry"},
	{pkgs: []string{"hostd/liveness"}, may: []string{"hostd/api", "hostd/registry", "hostd/state", "hostd/limits", "heartbeat", "tunnel", "tunnel/wire", "internal/logging", "internal/settings"},
		tests: []string{"hostd/registry/registrytest", "tunnel/tunneltest", "internal/settings/settingstest"},
		note:  "beats to `heartbeat`'s judge; `liveness.json` through `state`"},
	{pkgs: []string{"hostd/relay"}, may: []string{"hostd/confine", "hostd/state", "hostd/limits", "tunnel", "tunnel/wire", "internal/logging", "internal/settings"},
		tests: []string{"tunnel/tunneltest", "internal/settings/settingstest"},
		note:  "relayed commands, started through `confine`; its git configuration and the polecats' temporary directories in `state`'s directory"},
	{pkgs: []string{"hostd/confine"}, note: "Landlock or sandbox-exec"},
	{pkgs: []string{"hostd/git"}, may: []string{"hostd/upstream", "hostd/limits", "tunnel", "tunnel/wire", "internal/logging", "internal/settings"},
		tests: []string{"internal/settings/settingstest"},
		note:  "smart HTTP; `upstream` for its `Refresher`, the queue called through its own `Upstream` interface"},
	{pkgs: []string{"hostd/data"}, may: []string{"hostd/api", "hostd/registry", "hostd/state", "hostd/limits", "sync/...", "tunnel", "tunnel/wire", "internal/atomicfile", "internal/logging", "internal/settings"},
		tests: []string{"tunnel/tunneltest", "internal/settings/settingstest"},
		note:  "hostd's half of the data channel; bases and journal in `state`"},
	{pkgs: []string{"hostd/nudge"}, may: []string{"hostd/api", "hostd/registry", "hostd/state", "tunnel/wire", "internal/settings"},
		tests: []string{"hostd/registry/registrytest", "tunnel", "tunnel/tunneltest", "internal/settings/settingstest"},
		note:  "the nudge queues, persisted in `state`"},
	{pkgs: []string{"hostd/pane"}, may: []string{"hostd/registry", "tunnel", "tunnel/wire", "internal/termsafe"}, note: "peek and attach, and the attach filter"},
	{pkgs: []string{"hostd/pki"}, may: []string{"hostd/state", "tunnel/wire", "internal/atomicfile"}, note: "the CA on disk, its records through `state`"},
	{pkgs: []string{"hostd/upstream"}, may: []string{"hostd/api", "hostd/state", "hostd/limits", "internal/logging", "internal/settings"},
		tests: []string{"internal/settings/settingstest"},
		note:  "the push queue to origin, persisted in `state`"},
	{pkgs: []string{"hostd/sandbox"}, may: []string{"hostd/api", "hostd/state", "tunnel/wire", "internal/logging"},
		note: "hostd run's containers; its panes and failed starts in `state`"},
	{pkgs: []string{"hostd/limits"}, may: []string{"tunnel/wire"}, note: "the per-polecat budgets, and `sidecar_limit_hits_total`, in which each service that refuses what a polecat asks counts it"},
	{pkgs: []string{"hostd/state"}, may: []string{"tunnel/wire", "internal/atomicfile"}, note: "the runtime directory and its JSON state"},

	{pkgs: []string{"hostd/e2e"}, may: []string{"hostd/api", "tunnel/tunneltest"},
		tests: []string{"agent/creds", "agent/supervisor", "hostd/pki", "hostd/sandbox", "hostd/state", "heartbeat", "sync", "sync/archive", "tunnel", "tunnel/wire"},
		note:  "the end-to-end suite: its harness runs the real binaries and asks hostd through `api`; its tests also play agents in-process, a hostile client on `agent/creds` and a reconnect storm of `agent/supervisor`s"},
	{pkgs: []string{"hostd/e2e/benchtable"}, note: "`make bench`'s table"},
	{pkgs: []string{"images/e2e"},
		tests: []string{"hostd/e2e", "hostd/api", "hostd/sandbox", "hostd/state", "agent/creds", "tunnel", "tunnel/tunneltest", "tunnel/wire", "images/soak/history"},
		note:  "the container suite, on `hostd/e2e`'s harness; the hostile client in a container on `agent/creds`"},
	{pkgs: []string{"images/soak/history"}, note: "the soak's history and checker"},
}

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
