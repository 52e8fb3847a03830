package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestWriterRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	fixed := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	w.Add(Event{T: fixed, Kind: KindRun, Phase: PhaseStart, Seed: 42})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				w.Add(Event{Kind: KindNudge, Phase: PhaseInvoke, Agent: "rig/a", Op: fmt.Sprintf("n-%d-%d", g, i), Mode: "immediate"})
			}
		})
	}
	wg.Wait()
	w.Add(Event{Kind: KindFault, Phase: PhaseStart, Op: "f1", Fault: FaultUDPBlock, Bound: Duration(30 * time.Second)})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w.Add(Event{Kind: KindRun, Phase: PhaseEnd}) // dropped after Close
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	evs, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1+8*50+1 {
		t.Fatalf("read %d events, want %d", len(evs), 1+8*50+1)
	}
	if !evs[0].T.Equal(fixed) || evs[0].Seed != 42 {
		t.Errorf("first event %+v, want the run start as added", evs[0])
	}
	for i, e := range evs[1:] {
		if e.T.IsZero() {
			t.Fatalf("event %d has no time", i+1)
		}
		if i > 0 && e.T.Before(evs[i].T) {
			t.Fatalf("event %d (%s) before the one written ahead of it (%s)", i+1, e.T, evs[i].T)
		}
	}
	if last := evs[len(evs)-1]; time.Duration(last.Bound) != 30*time.Second {
		t.Errorf("bound read back as %v", last.Bound)
	}
	raw, _ := os.ReadFile(path)
	if !strings.Contains(string(raw), `"bound":"30s"`) {
		t.Errorf("bound not written as a duration string: %s", raw[len(raw)-200:])
	}
}

func TestWriterFlushesWithoutClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Add(Event{Kind: KindRun, Phase: PhaseStart, Seed: 7})
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs, err := ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 1 && evs[0].Seed == 7 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("event not in the file %s after Add; read %v", time.Since(deadline.Add(-10*time.Second)), evs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCreateFails(t *testing.T) {
	_, err := Create(filepath.Join(t.TempDir(), "missing", "history.jsonl"))
	if err == nil || !strings.Contains(err.Error(), "creating history") {
		t.Fatalf("Create in a missing directory: %v", err)
	}
}

func TestRead(t *testing.T) {
	start := `{"t":"2026-01-02T03:04:05Z","kind":"run","phase":"start","seed":1}`
	end := `{"t":"2026-01-02T03:04:06Z","kind":"run","phase":"end"}`
	tests := []struct {
		name  string
		in    string
		kinds []string // the phases of the events read, when no error
		err   string   // a substring of the error
	}{
		{name: "empty", in: ""},
		{name: "two lines", in: start + "\n" + end + "\n", kinds: []string{"start", "end"}},
		{name: "blank lines and CRLF", in: "\n" + start + "\r\n\n" + end + "\n\n", kinds: []string{"start", "end"}},
		{name: "last line without newline", in: start + "\n" + end, kinds: []string{"start", "end"}},
		{name: "torn last line", in: start + "\n" + end[:20], kinds: []string{"start"}},
		{name: "torn last line without kind", in: start + "\n{}", kinds: []string{"start"}},
		{name: "bad middle line", in: start + "\n" + end[:20] + "\n" + end + "\n", err: "decoding line 2"},
		{name: "bad last line with newline", in: start + "\n" + "garbage\n", err: "decoding line 2"},
		{name: "no kind", in: start + "\n" + `{"phase":"start"}` + "\n", err: "line 2: no kind"},
		{name: "null", in: "null\n", err: "line 1: no kind"},
		{name: "two objects on a line", in: start + start + "\n", err: "decoding line 1"},
		{name: "bad duration", in: `{"kind":"fault","phase":"end","bound":"soon"}` + "\n", err: "decoding line 1"},
		{name: "duration in nanoseconds", in: `{"kind":"fault","phase":"end","bound":1000000000}` + "\n", kinds: []string{"end"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, err := Read(strings.NewReader(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Read: %v, want an error with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range evs {
				got = append(got, e.Phase)
			}
			if !reflect.DeepEqual(got, tt.kinds) {
				t.Fatalf("read phases %q, want %q", got, tt.kinds)
			}
		})
	}
}

// endless is a reader of one endless line.
type endless struct{ n int64 }

func (r *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	r.n += int64(len(p))
	return len(p), nil
}

func TestReadHostile(t *testing.T) {
	ok := `{"kind":"run","phase":"start"}`
	tests := []struct {
		name string
		in   func() io.Reader
		err  string
	}{
		{"line just over the cap", func() io.Reader {
			return strings.NewReader(ok + "\n" + strings.Repeat(" ", MaxLine-len(ok)+1) + ok + "\n")
		}, "reading line 2: line longer than 1048576 bytes"},
		{"last line over the cap without newline", func() io.Reader {
			return strings.NewReader(strings.Repeat("x", MaxLine+1))
		}, "reading line 1: line longer than"},
		{"endless line", func() io.Reader { return &endless{} }, "reading line 1: line longer than"},
		{"huge line", func() io.Reader {
			return strings.NewReader(`{"kind":"run","phase":"start","err":"` + strings.Repeat("a", 3<<20) + `"}` + "\n")
		}, "line longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.in()
			_, err := Read(r)
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("Read: %v, want an error with %q", err, tt.err)
			}
			if e, ok := r.(*endless); ok && e.n > 2*MaxLine {
				t.Errorf("read %d bytes of an endless line before refusing it", e.n)
			}
		})
	}

	// a line exactly at the cap is accepted
	line := `{"kind":"run","phase":"start","err":"` + strings.Repeat("a", MaxLine-len(`{"kind":"run","phase":"start","err":""}`)) + `"}`
	if len(line) != MaxLine {
		t.Fatalf("test line is %d bytes", len(line))
	}
	evs, err := Read(strings.NewReader(line + "\n"))
	if err != nil || len(evs) != 1 {
		t.Fatalf("line of exactly MaxLine bytes: %d events, %v", len(evs), err)
	}
}

func TestDuration(t *testing.T) {
	tests := []struct {
		json string
		want time.Duration
		err  bool
	}{
		{`"30s"`, 30 * time.Second, false},
		{`"1m30.5s"`, 90*time.Second + 500*time.Millisecond, false},
		{`"-2h"`, -2 * time.Hour, false},
		{`1500`, 1500 * time.Nanosecond, false},
		{`null`, 0, false},
		{`"30"`, 0, true},
		{`1.5`, 0, true},
		{`true`, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.json, func(t *testing.T) {
			var d Duration
			err := json.Unmarshal([]byte(tt.json), &d)
			if tt.err {
				if err == nil {
					t.Fatalf("decoded %s as %v, want an error", tt.json, time.Duration(d))
				}
				return
			}
			if err != nil || time.Duration(d) != tt.want {
				t.Fatalf("decoded %s as %v, %v; want %v", tt.json, time.Duration(d), err, tt.want)
			}
			b, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			if want := `"` + tt.want.String() + `"`; string(b) != want {
				t.Errorf("encoded as %s, want %s", b, want)
			}
		})
	}
}

func TestEventString(t *testing.T) {
	at := func(ms int) time.Time { return time.Date(2026, 1, 2, 3, 4, 5, ms*1e6, time.UTC) }
	tests := []struct {
		name string
		e    Event
		want string
	}{
		{name: "a failure's error, quoted",
			e:    Event{T: at(6), Kind: KindNudge, Phase: PhaseFail, Agent: "rig/a", Op: "n-1", Err: "connection reset\nby peer"},
			want: `03:04:05.006 nudge fail agent=rig/a op=n-1 err="connection reset\nby peer"`},
		{name: "a connected agent's status, with when its tunnel connected",
			e:    Event{T: at(900), Kind: KindStatus, Phase: PhaseObserve, Agent: "rig/a", State: "idle", Since: at(250)},
			want: `03:04:05.900 status observe agent=rig/a state=idle since=03:04:05.250`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.e.String(); got != tt.want {
				t.Errorf("String() = %s\nwant        %s", got, tt.want)
			}
		})
	}
}

// encode writes evs as a history.
func encode(t testing.TB, evs []Event) []byte {
	var b bytes.Buffer
	for _, e := range evs {
		line, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("re-encoding %+v: %v", e, err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func FuzzRead(f *testing.F) {
	f.Add([]byte(""))
	f.Add(encode(f, cleanHistory()))
	f.Add([]byte(`{"t":"2026-01-02T03:04:05.123+01:00","kind":"fault","phase":"start","bound":"1m","op":"x"}` + "\n{\"kind\":"))
	f.Add([]byte("null\n"))
	f.Add([]byte(`{"kind":"x","phase":"y","bound":-9223372036854775808,"err":"\xff"}`))
	f.Add([]byte("\n\r\n{\"KIND\":\"run\",\"seed\":1e3}\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		evs, err := Read(bytes.NewReader(in))
		if err != nil {
			return
		}
		out := encode(t, evs)
		again, err := Read(bytes.NewReader(out))
		if err != nil {
			t.Fatalf("re-reading what was read: %v\n%s", err, out)
		}
		if len(again) != len(evs) {
			t.Fatalf("re-read %d events, read %d", len(again), len(evs))
		}
		for i := range evs {
			a, b := evs[i], again[i]
			if !a.T.Equal(b.T) || a.T.Format(time.RFC3339Nano) != b.T.Format(time.RFC3339Nano) {
				t.Fatalf("event %d: time %s re-read as %s", i, a.T, b.T)
			}
			a.T, b.T = time.Time{}, time.Time{}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("event %d: %+v re-read as %+v", i, a, b)
			}
		}
		if out2 := encode(t, again); !bytes.Equal(out, out2) {
			t.Fatalf("re-encoding differs:\n%s\n%s", out, out2)
		}
	})
}
