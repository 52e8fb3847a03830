package history_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/images/soak/history"
	"github.com/polecat-sidecar/sidecar/images/soak/history/internal/fixture"
)

// svgCounts decodes an SVG and counts its elements by name.
func svgCounts(t *testing.T, svg []byte) map[string]int {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	counts := map[string]int{}
	depth := 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("plot is not well-formed XML: %v\n%s", err, svg)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if depth == 0 && (tok.Name.Local != "svg" || tok.Name.Space != "http://www.w3.org/2000/svg") {
				t.Fatalf("root element %v, want svg", tok.Name)
			}
			depth++
			counts[tok.Name.Local]++
		case xml.EndElement:
			depth--
		}
	}
	if depth != 0 || counts["svg"] != 1 {
		t.Fatalf("plot's elements unbalanced: depth %d, %d svg elements", depth, counts["svg"])
	}
	return counts
}

func TestWritePlot(t *testing.T) {
	withFault := fixture.With(
		history.Event{T: fixture.At(100), Kind: history.KindFault, Phase: history.PhaseStart, Agent: `rig/<b>&"c"`, Op: "f9", Fault: history.FaultTCPCut},
	)(fixture.Clean())
	tests := []struct {
		name      string
		events    []history.Event
		points    int // per polyline
		bands     int
		noSamples bool
	}{
		{name: "run", events: fixture.Clean(), points: 5, bands: 2},
		{name: "fault never ended, escaped label", events: withFault, points: 5, bands: 3},
		{name: "one sample", events: []history.Event{{T: fixture.At(0), Kind: history.KindSample, Phase: history.PhaseBaseline, Goroutines: 1, FDs: 1, RSS: 1}}, points: 1},
		{name: "empty", events: nil, noSamples: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := history.WritePlot(&b, tt.events); err != nil {
				t.Fatal(err)
			}
			counts := svgCounts(t, b.Bytes())
			// the axes are one more polyline
			if counts["polyline"] != 3+1 {
				t.Errorf("%d polylines, want 3 series and the axes", counts["polyline"])
			}
			if got := strings.Count(b.String(), `fill-opacity="0.12"><title>`); got != tt.bands {
				t.Errorf("%d fault bands, want %d", got, tt.bands)
			}
			for _, series := range []string{"RSS (MiB)", "goroutines", "FDs"} {
				if !strings.Contains(b.String(), ">"+series+"</text>") {
					t.Errorf("legend lacks %s", series)
				}
			}
			if strings.Contains(b.String(), "no samples") != tt.noSamples {
				t.Errorf("says no samples: %v, want %v", !tt.noSamples, tt.noSamples)
			}
			for line := range strings.Lines(b.String()) {
				_, pts, ok := strings.Cut(line, `points="`)
				if !ok || !strings.HasPrefix(line, `<polyline fill="none" stroke="#`) {
					continue
				}
				pts, _, _ = strings.Cut(pts, `"`)
				if n := len(strings.Fields(pts)); n != tt.points {
					t.Errorf("series with %d points, want %d: %s", n, tt.points, line)
				}
			}
		})
	}
}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWritePlotError(t *testing.T) {
	err := history.WritePlot(failWriter{}, fixture.Clean())
	if err == nil || !strings.Contains(err.Error(), "writing plot: disk full") {
		t.Fatalf("WritePlot to a failing writer: %v", err)
	}
}
