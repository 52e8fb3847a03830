package history_test

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/images/soak/history"
	"github.com/polecat-sidecar/sidecar/images/soak/history/internal/fixture"
)

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
			evs, err := history.Read(strings.NewReader(tt.in))
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
			return strings.NewReader(ok + "\n" + strings.Repeat(" ", history.MaxLine-len(ok)+1) + ok + "\n")
		}, "reading line 2: line longer than 1048576 bytes"},
		{"last line over the cap without newline", func() io.Reader {
			return strings.NewReader(strings.Repeat("x", history.MaxLine+1))
		}, "reading line 1: line longer than"},
		{"endless line", func() io.Reader { return &endless{} }, "reading line 1: line longer than"},
		{"huge line", func() io.Reader {
			return strings.NewReader(`{"kind":"run","phase":"start","err":"` + strings.Repeat("a", 3<<20) + `"}` + "\n")
		}, "line longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.in()
			_, err := history.Read(r)
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("Read: %v, want an error with %q", err, tt.err)
			}
			if e, ok := r.(*endless); ok && e.n > 2*history.MaxLine {
				t.Errorf("read %d bytes of an endless line before refusing it", e.n)
			}
		})
	}

	// a line exactly at the cap is accepted
	line := `{"kind":"run","phase":"start","err":"` + strings.Repeat("a", history.MaxLine-len(`{"kind":"run","phase":"start","err":""}`)) + `"}`
	if len(line) != history.MaxLine {
		t.Fatalf("test line is %d bytes", len(line))
	}
	evs, err := history.Read(strings.NewReader(line + "\n"))
	if err != nil || len(evs) != 1 {
		t.Fatalf("line of exactly MaxLine bytes: %d events, %v", len(evs), err)
	}
}

// encode writes evs as a history.
func encode(t testing.TB, evs []history.Event) []byte {
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
	f.Add(encode(f, fixture.Clean()))
	f.Add([]byte(`{"t":"2026-01-02T03:04:05.123+01:00","kind":"fault","phase":"start","bound":"1m","op":"x"}` + "\n{\"kind\":"))
	f.Add([]byte("null\n"))
	f.Add([]byte(`{"kind":"x","phase":"y","bound":-9223372036854775808,"err":"\xff"}`))
	f.Add([]byte("\n\r\n{\"KIND\":\"run\",\"seed\":1e3}\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		evs, err := history.Read(bytes.NewReader(in))
		if err != nil {
			return
		}
		out := encode(t, evs)
		again, err := history.Read(bytes.NewReader(out))
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
