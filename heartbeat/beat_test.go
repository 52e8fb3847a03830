package heartbeat

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"testing/iotest"
)

func TestBeatRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	code := 1
	want := &Beat{Seq: 7, Interval: 5, Session: Session{Name: "polecat", State: SessionExited, ExitCode: &code, ExitReason: "sh: 1: claude: not found", Names: []string{"claude", "node"}, IdleSeconds: -1},
		Agent: Agent{Version: "v1", Transport: "quic"}}
	if err := NewWriter(&buf).Write(want); err != nil {
		t.Fatal(err)
	}
	got, err := NewReader(&buf).Read()
	if err != nil || got.Seq != 7 || *got.Session.ExitCode != 1 || got.Session.Names[1] != "node" || got.Session.ExitReason != want.Session.ExitReason {
		t.Fatalf("%+v %v", got, err)
	}
}

func TestBeatHostile(t *testing.T) {
	good := `{"seq":1,"interval":5,"session":{"name":"p","state":"running","processes":1,"cpu_seconds":0,"cpu_percent":0,"rss_bytes":0,"threads":1,"idle_seconds":0},"container":{"load1":0,"mem_available":0,"disk_free":0},"agent":{"version":"v","uptime":1,"transport":"quic","rtt_ms":1}}`
	if _, err := NewReader(strings.NewReader(good + "\n")).Read(); err != nil {
		t.Fatalf("good beat refused: %v", err)
	}
	cases := map[string]string{
		"oversized":        `{"seq":1,"x":"` + strings.Repeat("a", MaxBeatSize) + `"}` + "\n",
		"not json":         "hello\n",
		"unknown field":    strings.Replace(good, `"seq":1`, `"seq":1,"alive":true`, 1) + "\n",
		"two values":       good + good + "\n",
		"bad state":        strings.Replace(good, `"running"`, `"zombie"`, 1) + "\n",
		"seq 0":            strings.Replace(good, `"seq":1`, `"seq":0`, 1) + "\n",
		"interval 0":       strings.Replace(good, `"interval":5`, `"interval":0`, 1) + "\n",
		"interval huge":    strings.Replace(good, `"interval":5`, `"interval":1e9`, 1) + "\n",
		"negative cpu":     strings.Replace(good, `"cpu_percent":0`, `"cpu_percent":-5`, 1) + "\n",
		"truncated":        good[:40],
		"too many names":   strings.Replace(good, `"processes":1`, `"processes":1,"names":[`+strings.Repeat(`"x",`, 40)+`"x"]`, 1) + "\n",
		"long exit reason": strings.Replace(good, `"state":"running"`, `"state":"exited","exit_reason":"`+strings.Repeat("x", MaxExitReason+1)+`"`, 1) + "\n",
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

// TestBeatReaderFraming: lines arrive whole, split byte by byte or many in
// one read; a line of exactly MaxBeatSize bytes is read and one byte more
// is refused; ordinary beats never grow the buffer past its first size.
func TestBeatReaderFraming(t *testing.T) {
	var one bytes.Buffer
	if err := NewWriter(&one).Write(&Beat{Seq: 1, Interval: 5, Session: Session{State: SessionRunning}}); err != nil {
		t.Fatal(err)
	}
	beat := strings.TrimSuffix(one.String(), "\n")
	padded := func(size int) string { return beat + strings.Repeat(" ", size-len(beat)-1) + "\n" }
	cases := []struct {
		name  string
		r     io.Reader
		beats int
		end   error
	}{
		{"whole lines", strings.NewReader(strings.Repeat(beat+"\n", 100)), 100, io.EOF},
		{"byte by byte", iotest.OneByteReader(strings.NewReader(strings.Repeat(beat+"\n", 3))), 3, io.EOF},
		{"exactly MaxBeatSize", strings.NewReader(padded(MaxBeatSize) + beat + "\n"), 2, io.EOF},
		{"one byte over", strings.NewReader(beat + "\n" + padded(MaxBeatSize+1)), 1, ErrBeatTooLarge},
		{"over, byte by byte", iotest.OneByteReader(strings.NewReader(padded(MaxBeatSize + 1))), 0, ErrBeatTooLarge},
		{"cut mid-line", strings.NewReader(beat + "\n" + beat[:10]), 1, io.ErrUnexpectedEOF},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := NewReader(c.r)
			for i := range c.beats {
				if b, err := r.Read(); err != nil || b.Seq != 1 {
					t.Fatalf("beat %d: %+v, %v", i, b, err)
				}
			}
			if _, err := r.Read(); !errors.Is(err, c.end) {
				t.Fatalf("after %d beats: %v, want %v", c.beats, err, c.end)
			}
		})
	}
	r := NewReader(strings.NewReader(strings.Repeat(beat+"\n", 100)))
	for range 100 {
		if _, err := r.Read(); err != nil {
			t.Fatal(err)
		}
	}
	if len(r.buf) != readerStart {
		t.Errorf("buffer grew to %d bytes for %d-byte beats", len(r.buf), len(beat)+1)
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
