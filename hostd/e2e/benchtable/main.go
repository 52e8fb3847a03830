// Command benchtable prints `make bench`'s one table: each row our figure
// beside its baseline from the same run, the ratio, the target and whether
// it is met. It reads the output of `go test -bench` (any number of files,
// several -count runs each) and takes the median of each benchmark's runs;
// rows whose benchmarks were not run are left out, or with -all (make
// bench, which runs them all) printed as not measured, so a benchmark that
// failed shows.
//
//	go run ./hostd/e2e/benchtable [-all] bin/bench-*.txt
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	all := flag.Bool("all", false, "print every row, those whose benchmarks did not run as not measured")
	flag.Parse()
	if flag.NArg() < 1 {
		fmt.Fprintln(os.Stderr, "usage: benchtable [-all] FILE... (the output of go test -bench)")
		os.Exit(2)
	}
	m := medians{}
	for _, path := range flag.Args() {
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchtable: %v\n", err)
			os.Exit(1)
		}
		err = m.read(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchtable: reading %s: %v\n", path, err)
			os.Exit(1)
		}
	}
	render(os.Stdout, slices.Concat(rows, wanRows), m, *all)
}

// medians maps a benchmark and a unit to every value measured; get returns
// their median.
type medians map[result][]float64

// result is a benchmark's name (without "Benchmark" and its -GOMAXPROCS
// suffix) and a unit it reported.
type result struct{ name, unit string }

// procs is the -GOMAXPROCS suffix go test adds to a benchmark's name.
var procs = regexp.MustCompile(`-\d+$`)

// read adds every result line of r ("BenchmarkName-2  20  123 ns/op  4 x").
func (m medians) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue // a log line that happens to start with the name
		}
		name := procs.ReplaceAllString(strings.TrimPrefix(f[0], "Benchmark"), "")
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return fmt.Errorf("%s: value %q is not a number", f[0], f[i])
			}
			k := result{name, f[i+1]}
			m[k] = append(m[k], v)
		}
	}
	return sc.Err()
}

// get is the median of name's values in unit, and whether there are any.
func (m medians) get(name, unit string) (float64, bool) {
	vs := slices.Clone(m[result{name, unit}])
	if len(vs) == 0 {
		return 0, false
	}
	slices.Sort(vs)
	if len(vs)%2 == 0 {
		return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2, true
	}
	return vs[len(vs)/2], true
}

// A row is one line of the table.
type row struct {
	what string
	// figures returns ours and the baseline (0 when the row has none),
	// and false when the benchmarks behind the row were not run.
	figures func(medians) (ours, base float64, ok bool)
	// show formats a figure.
	show func(float64) string
	// limit is the target: the ratio ours/base must be at most (below)
	// or at least (!below) it, or ours itself when the row has no
	// baseline or onOurs is set. A zero limit is no target.
	limit         float64
	below, onOurs bool
}

// verdict is the ratio (or ours, without a baseline) and whether the
// target is met, "" when there is none.
func (r row) verdict(ours, base float64) (ratio string, met string) {
	v := ours
	if base != 0 {
		ratio = fmt.Sprintf("%.2f", ours/base)
		if !r.onOurs {
			v = ours / base
		}
	}
	switch {
	case r.limit == 0:
		return ratio, ""
	case r.below && v <= r.limit, !r.below && v >= r.limit:
		return ratio, "met"
	default:
		return ratio, "missed"
	}
}

// render writes the table of the rows whose benchmarks ran, and with all
// the others too, as not measured.
func render(w io.Writer, rows []row, m medians, all bool) {
	fmt.Fprintln(w, "| what | ours | baseline | ratio | target | |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, r := range rows {
		ours, base, ok := r.figures(m)
		if !ok {
			if all {
				fmt.Fprintf(w, "| %s | | | | | not measured |\n", r.what)
			}
			continue
		}
		ratio, met := r.verdict(ours, base)
		baseline := ""
		if base != 0 {
			baseline = r.show(base)
		}
		target := ""
		if r.limit != 0 {
			op := "≥"
			if r.below {
				op = "≤"
			}
			if base != 0 && !r.onOurs {
				target = fmt.Sprintf("%s %.2f", op, r.limit)
			} else {
				target = op + " " + r.show(r.limit)
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", r.what, r.show(ours), baseline, ratio, target, met)
	}
}
