package heartbeat

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
)

func TestBeatRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	code := 1
	want := &Beat{Seq: 7, Interval: 5, Session: Session{Name: "polecat", State: SessionExited, ExitCode: &code, Names: []string{"claude", "node"}, IdleSeconds: -1},
		Agent: Agent{Version: "v1", Transport: "quic"}}
	if err := NewWriter(&buf).Write(want); err != nil {
		t.Fatal(err)
	}
	got, err := NewReader(&buf).Read()
	if err != nil || got.Seq != 7 || *got.Session.ExitCode != 1 || got.Session.Names[1] != "node" {
		t.Fatalf("%+v %v", got, err)
	}
}

func TestBeatHostile(t *testing.T) {
	good := `{"seq":1,"interval":5,"session":{"name":"p","state":"running","processes":1,"cpu_seconds":0,"cpu_percent":0,"rss_bytes":0,"threads":1,"idle_seconds":0},"container":{"load1":0,"mem_available":0,"disk_free":0},"agent":{"version":"v","uptime":1,"transport":"quic","rtt_ms":1}}`
	if _, err := NewReader(strings.NewReader(good + "\n")).Read(); err != nil {
		t.Fatalf("good beat refused: %v", err)
	}
	cases := map[string]string{
		"oversized":      `{"seq":1,"x":"` + strings.Repeat("a", MaxBeatSize) + `"}` + "\n",
		"not json":       "hello\n",
		"unknown field":  strings.Replace(good, `"seq":1`, `"seq":1,"alive":true`, 1) + "\n",
		"two values":     good + good + "\n",
		"bad state":      strings.Replace(good, `"running"`, `"zombie"`, 1) + "\n",
		"seq 0":          strings.Replace(good, `"seq":1`, `"seq":0`, 1) + "\n",
		"interval 0":     strings.Replace(good, `"interval":5`, `"interval":0`, 1) + "\n",
		"interval huge":  strings.Replace(good, `"interval":5`, `"interval":1e9`, 1) + "\n",
		"negative cpu":   strings.Replace(good, `"cpu_percent":0`, `"cpu_percent":-5`, 1) + "\n",
		"truncated":      good[:40],
		"too many names": strings.Replace(good, `"processes":1`, `"processes":1,"names":[`+strings.Repeat(`"x",`, 40)+`"x"]`, 1) + "\n",
	}
	for name, wire := range cases {
		if b, err := NewReader(strings.NewReader(wire)).Read(); err == nil {
			t.Errorf("%s: accepted %+v", name, b)
		}
	}
	if _, err := NewReader(strings.NewReader(cases["oversized"])).Read(); !errors.Is(err, ErrBeatTooLarge) {
		t.Errorf("oversized: %v", err)
	}
	if _, err := NewReader(strings.NewReader("")).Read(); err != io.EOF {
		t.Errorf("empty: %v", err)
	}
	bad := &Beat{Seq: 1, Interval: 5, Session: Session{State: SessionRunning, CPUPercent: math.NaN()}}
	if bad.Validate() == nil {
		t.Error("NaN accepted")
	}
}

// FuzzBeatReader: no input panics the reader, and what it accepts is
// valid.
func FuzzBeatReader(f *testing.F) {
	f.Add([]byte(`{"seq":1,"interval":5,"session":{"state":"running"}}` + "\n"))
	f.Add([]byte("{}\n{}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(bytes.NewReader(b))
		for {
			beat, err := r.Read()
			if err != nil {
				return
			}
			if beat.Validate() != nil {
				t.Fatal("accepted an invalid beat")
			}
		}
	})
}
