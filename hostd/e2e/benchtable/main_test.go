package main

import (
	"strings"
	"testing"
)

// run is three -count rounds of two benchmarks, as go test prints them,
// with a log line and a PASS between.
const run = `goos: linux
BenchmarkShimStart-2    200   8000000 ns/op  2000 shim-us  1000 hello-us
    bench_shim_test.go:12: BenchmarkShimStart is a log line
BenchmarkShimStart-2    200   8000000 ns/op  3000 shim-us  2000 hello-us
BenchmarkShimStart-2    200   8000000 ns/op  1000 shim-us  9000 hello-us
BenchmarkBulk/transport=tcp/impl=ours-2      4  100 ns/op  950.0 MB/s
BenchmarkBulk/transport=tcp/impl=baseline-2  4  100 ns/op  1000.0 MB/s
PASS
`

func TestMediansRead(t *testing.T) {
	m := medians{}
	if err := m.read(strings.NewReader(run)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, unit string
		want       float64
		ok         bool
	}{
		{"ShimStart", "shim-us", 2000, true},  // median of 2, 3, 1 ms
		{"ShimStart", "hello-us", 2000, true}, // median of 1, 2, 9 ms
		{"Bulk/transport=tcp/impl=ours", "MB/s", 950, true},
		{"Bulk/transport=tcp/impl=ours", "p50-us", 0, false},
		{"ShimStart", "true-us", 0, false},
	} {
		if got, ok := m.get(c.name, c.unit); got != c.want || ok != c.ok {
			t.Errorf("%s %s: %v %v, want %v %v", c.name, c.unit, got, ok, c.want, c.ok)
		}
	}
	if err := (medians{}).read(strings.NewReader("BenchmarkX-2 10 fast ns/op\n")); err == nil {
		t.Error("a value that is not a number was taken")
	}
}

func TestRender(t *testing.T) {
	m := medians{}
	if err := m.read(strings.NewReader(run)); err != nil {
		t.Fatal(err)
	}
	shim := "| `gt` shim start / a static Go program that does nothing (interleaved) | 2.00 ms | 2.00 ms | 1.00 | ≤ 1.30 | met |"
	bulk := "| bulk, one stream, TCP fallback / bare TLS 1.3 | 950 MB/s | 1000 MB/s | 0.95 | ≥ 0.90 | met |"
	var out strings.Builder
	render(&out, rows, m, false)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{shim, bulk}
	if len(lines) != 2+len(want) {
		t.Fatalf("want a header and %d rows (those whose benchmarks ran), got:\n%s", len(want), out.String())
	}
	for i, w := range want {
		if lines[2+i] != w {
			t.Errorf("row %d:\n got %s\nwant %s", i, lines[2+i], w)
		}
	}

	// With all, every row: those two as before, the rest not measured.
	out.Reset()
	render(&out, rows, m, true)
	lines = strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2+len(rows) {
		t.Fatalf("with all, want a header and all %d rows, got %d lines", len(rows), len(lines))
	}
	for i, r := range rows {
		switch got := lines[2+i]; {
		case got == shim || got == bulk:
		case got != "| "+r.what+" | | | | | not measured |":
			t.Errorf("row %d with all: %s", i, got)
		}
	}
}

func TestVerdict(t *testing.T) {
	for _, c := range []struct {
		r          row
		ours, base float64
		ratio, met string
	}{
		{row{limit: 1.3, below: true}, 1.2, 1, "1.20", "met"},
		{row{limit: 1.3, below: true}, 1.4, 1, "1.40", "missed"},
		{row{limit: 0.9}, 0.89, 1, "0.89", "missed"},
		{row{limit: 10, below: true}, 9, 0, "", "met"},
		{row{limit: 1.1, below: true, onOurs: true}, 1.2, 3.3, "0.36", "missed"},
		{row{}, 5, 1, "5.00", ""},
	} {
		if ratio, met := c.r.verdict(c.ours, c.base); ratio != c.ratio || met != c.met {
			t.Errorf("%+v %v/%v: %q %q, want %q %q", c.r, c.ours, c.base, ratio, met, c.ratio, c.met)
		}
	}
}
