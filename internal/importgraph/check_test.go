package importgraph

import (
	"strings"
	"testing"
)

// TestImportsCheck: check finds each kind of drift between a graph and a
// table, and nothing in a graph that keeps to its table.
func TestImportsCheck(t *testing.T) {
	rows := []row{
		{pkgs: []string{"internal/..."}},
		{pkgs: []string{"tunnel"}, may: []string{"internal/..."}, tests: []string{"tunnel/tunneltest"}},
		{pkgs: []string{"tunnel/..."}, may: []string{"tunnel"}},
		{pkgs: []string{"hostd/..."}, may: []string{"tunnel"}},
	}
	bounds := []boundary{{from: []string{"tunnel/..."}, to: []string{"hostd/..."}, why: "shared"}}
	// clean keeps to rows and bounds; each case below changes a copy.
	clean := func() graph {
		return graph{
			"internal/log":      {},
			"tunnel":            {{file: "tunnel/a.go", to: "internal/log"}, {file: "tunnel/a_test.go", to: "tunnel/tunneltest"}},
			"tunnel/tunneltest": {{file: "tunnel/tunneltest/t.go", to: "tunnel"}},
			"hostd/relay":       {{file: "hostd/relay/r.go", to: "tunnel"}},
		}
	}
	cases := []struct {
		name   string
		change func(graph, *[]row, *[]boundary)
		want   []string // each a part of one problem; none for no problem
	}{
		{"keeps to the table", func(graph, *[]row, *[]boundary) {}, nil},
		{"an upward import", func(g graph, _ *[]row, _ *[]boundary) {
			g["tunnel"] = append(g["tunnel"], edge{file: "tunnel/b.go", to: "hostd/relay"})
		}, []string{"tunnel/b.go imports hostd/relay, which the table does not allow", "tunnel/b.go imports hostd/relay, against the rule"}},
		{"a test's import outside tests", func(g graph, _ *[]row, _ *[]boundary) {
			g["tunnel"][1].file = "tunnel/a.go"
		}, []string{"tunnel/a.go imports tunnel/tunneltest, which the table does not allow", "allows its tests tunnel/tunneltest, which none of them imports"}},
		{"an allowance nothing uses", func(_ graph, rows *[]row, _ *[]boundary) {
			(*rows)[3].may = append((*rows)[3].may, "internal/...")
		}, []string{"the row `hostd/...` allows internal/..., which none of its packages imports"}},
		{"an allowance only tests use", func(g graph, rows *[]row, _ *[]boundary) {
			(*rows)[1].may = append((*rows)[1].may, "tunnel/tunneltest")
			(*rows)[1].tests = nil
		}, []string{"the row `tunnel` allows tunnel/tunneltest, which none of its packages imports outside tests"}},
		{"a package with no row", func(g graph, _ *[]row, _ *[]boundary) {
			g["agent"] = []edge{}
		}, []string{"agent has no row in the table"}},
		{"a row with no package", func(g graph, _ *[]row, _ *[]boundary) {
			delete(g, "hostd/relay")
		}, []string{"the row `hostd/...` is no package's", "allows tunnel, which none of its packages imports"}},
		{"two rows for one package", func(_ graph, rows *[]row, _ *[]boundary) {
			*rows = append(*rows, row{pkgs: []string{"tunnel"}})
		}, []string{"two rows for tunnel", "the row `tunnel` is no package's"}},
		{"a crossing the table allows", func(g graph, rows *[]row, _ *[]boundary) {
			(*rows)[2].may = append((*rows)[2].may, "hostd/relay")
			g["tunnel/tunneltest"] = append(g["tunnel/tunneltest"], edge{file: "tunnel/tunneltest/t.go", to: "hostd/relay"})
		}, []string{"tunnel/tunneltest/t.go imports hostd/relay, against the rule \"`tunnel/...` imports nothing of `hostd/...`: shared.\""}},
		{"a crossing in tests", func(g graph, rows *[]row, _ *[]boundary) {
			(*rows)[1].tests = append((*rows)[1].tests, "hostd/relay")
			g["tunnel"] = append(g["tunnel"], edge{file: "tunnel/b_test.go", to: "hostd/relay"})
		}, []string{"tunnel/b_test.go imports hostd/relay, against the rule"}},
		{"a crossing in the tests it excepts", func(g graph, rows *[]row, b *[]boundary) {
			(*rows)[1].tests = append((*rows)[1].tests, "hostd/relay")
			g["tunnel"] = append(g["tunnel"], edge{file: "tunnel/b_test.go", to: "hostd/relay"})
			(*b)[0].exceptTestsOf = []string{"tunnel"}
		}, nil},
		{"a crossing outside the tests it excepts", func(g graph, rows *[]row, b *[]boundary) {
			(*rows)[1].may = append((*rows)[1].may, "hostd/relay")
			g["tunnel"] = append(g["tunnel"], edge{file: "tunnel/b.go", to: "hostd/relay"})
			(*b)[0].exceptTestsOf = []string{"tunnel"}
		}, []string{"tunnel/b.go imports hostd/relay, against the rule", "excepts the tests of tunnel, which import nothing it would forbid"}},
		{"an exception nothing needs", func(_ graph, _ *[]row, b *[]boundary) {
			(*b)[0].exceptFrom = []string{"tunnel/tunneltest"}
		}, []string{"excepts tunnel/tunneltest, which imports nothing it would forbid"}},
	}
	for _, c := range cases {
		g, rs := clean(), append([]row(nil), rows...)
		for i := range rs {
			rs[i].may, rs[i].tests = append([]string(nil), rs[i].may...), append([]string(nil), rs[i].tests...)
		}
		bs := append([]boundary(nil), bounds...)
		c.change(g, &rs, &bs)
		got := check(g, rs, bs)
		if len(got) != len(c.want) {
			t.Errorf("%s: %d problems, want %d:\n%s", c.name, len(got), len(c.want), strings.Join(got, "\n"))
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: problem %d is %q, want it to say %q", c.name, i, got[i], w)
			}
		}
	}
}
