package history

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// The plot's geometry, in SVG user units.
const (
	plotWidth  = 800
	plotHeight = 400
	plotLeft   = 70  // room for the RSS axis
	plotRight  = 730 // room for the counts axis after it
	plotTop    = 50  // room for the title and legend
	plotBottom = 350 // room for the time axis below it
	plotTicks  = 5
)

// The series' colours.
const (
	colourRSS        = "#1f77b4"
	colourGoroutines = "#2ca02c"
	colourFDs        = "#ff7f0e"
	colourFault      = "#d62728"
)

// WritePlot writes a standalone SVG of hostd's RSS (MiB, left axis),
// goroutines and FDs (right axis) over the run, from the sample events,
// with each fault shaded from its start to its end (to the plot's end
// when it has none).
func WritePlot(w io.Writer, events []Event) error {
	var samples, faults []Event
	for _, e := range events {
		switch e.Kind {
		case KindSample:
			samples = append(samples, e)
		case KindFault:
			faults = append(faults, e)
		}
	}
	byT := func(a, b Event) int { return a.T.Compare(b.T) }
	slices.SortStableFunc(samples, byT)
	slices.SortStableFunc(faults, byT)

	span := samples
	if len(span) == 0 {
		span = faults
	}
	var t0, t1 time.Time
	if len(span) > 0 {
		t0, t1 = span[0].T, span[len(span)-1].T
	}
	if !t1.After(t0) {
		t1 = t0.Add(time.Second)
	}
	var maxRSS, maxCount float64
	for _, s := range samples {
		maxRSS = max(maxRSS, float64(s.RSS)/(1<<20))
		maxCount = max(maxCount, float64(s.Goroutines), float64(s.FDs))
	}
	maxRSS, maxCount = niceCeil(maxRSS), niceCeil(maxCount)
	secs := t1.Sub(t0).Seconds()
	x := func(t time.Time) float64 {
		f := t.Sub(t0).Seconds() / secs
		return plotLeft + math.Min(math.Max(f, 0), 1)*(plotRight-plotLeft)
	}
	y := func(v, top float64) float64 {
		return plotBottom - math.Min(math.Max(v/top, 0), 1)*(plotBottom-plotTop)
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n",
		plotWidth, plotHeight, plotWidth, plotHeight)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", plotWidth, plotHeight)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14">hostd resources over the soak run</text>`+"\n", plotLeft)

	// fault bands, paired by op
	type band struct {
		start, end time.Time
		label      string
	}
	var bands []band
	open := map[string]int{}
	for _, f := range faults {
		label := strings.TrimSpace(f.Fault + " " + f.Agent)
		switch f.Phase {
		case PhaseStart:
			open[f.Op] = len(bands)
			bands = append(bands, band{start: f.T, end: t1, label: label})
		case PhaseEnd:
			if i, ok := open[f.Op]; ok {
				bands[i].end = f.T
				delete(open, f.Op)
			} else {
				bands = append(bands, band{start: t0, end: f.T, label: label})
			}
		}
	}
	for _, bd := range bands {
		x0, x1 := x(bd.start), x(bd.end)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s" fill-opacity="0.12"><title>%s</title></rect>`+"\n",
			x0, plotTop, math.Max(x1-x0, 1), plotBottom-plotTop, colourFault, esc(bd.label))
	}

	// axes, ticks and labels
	fmt.Fprintf(&b, `<g stroke="black" fill="none"><polyline points="%d,%d %d,%d %d,%d %d,%d"/></g>`+"\n",
		plotLeft, plotTop, plotLeft, plotBottom, plotRight, plotBottom, plotRight, plotTop)
	for i := 0; i <= plotTicks; i++ {
		f := float64(i) / plotTicks
		yy := plotBottom - f*(plotBottom-plotTop)
		xx := plotLeft + f*(plotRight-plotLeft)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", plotLeft-5, yy+4, num(f*maxRSS))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f">%s</text>`+"\n", plotRight+5, yy+4, num(f*maxCount))
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", xx, plotBottom+15, num(f*secs))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">time since the first sample (s)</text>`+"\n", (plotLeft+plotRight)/2, plotBottom+35)
	fmt.Fprintf(&b, `<text x="18" y="%d" text-anchor="middle" transform="rotate(-90 18 %d)">RSS (MiB)</text>`+"\n", (plotTop+plotBottom)/2, (plotTop+plotBottom)/2)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" transform="rotate(90 %d %d)">goroutines, FDs</text>`+"\n",
		plotWidth-18, (plotTop+plotBottom)/2, plotWidth-18, (plotTop+plotBottom)/2)

	// the series
	series := []struct {
		name, colour string
		top          float64
		v            func(Event) float64
	}{
		{"RSS (MiB)", colourRSS, maxRSS, func(e Event) float64 { return float64(e.RSS) / (1 << 20) }},
		{"goroutines", colourGoroutines, maxCount, func(e Event) float64 { return float64(e.Goroutines) }},
		{"FDs", colourFDs, maxCount, func(e Event) float64 { return float64(e.FDs) }},
	}
	for i, s := range series {
		var pts []string
		for _, e := range samples {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(e.T), y(s.v(e), s.top)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"><title>%s</title></polyline>`+"\n",
			s.colour, strings.Join(pts, " "), esc(s.name))
		lx := plotLeft + 10 + i*130
		fmt.Fprintf(&b, `<line x1="%d" y1="35" x2="%d" y2="35" stroke="%s" stroke-width="2"/><text x="%d" y="39">%s</text>`+"\n",
			lx, lx+20, s.colour, lx+25, esc(s.name))
	}
	lx := plotLeft + 10 + len(series)*130
	fmt.Fprintf(&b, `<rect x="%d" y="29" width="20" height="12" fill="%s" fill-opacity="0.12"/><text x="%d" y="39">fault</text>`+"\n",
		lx, colourFault, lx+25)
	if len(samples) == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">no samples</text>`+"\n", (plotLeft+plotRight)/2, (plotTop+plotBottom)/2)
	}
	b.WriteString("</svg>\n")
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("writing plot: %w", err)
	}
	return nil
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (1 for v ≤ 0).
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// num formats an axis label: without decimals unless it needs them.
func num(v float64) string {
	if v == math.Trunc(v) || math.Abs(v) >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// esc escapes s for XML text.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
