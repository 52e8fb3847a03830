package heartbeat

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// written is a beat as gt-agent's Writer sends it.
func written(t testing.TB, b *Beat) string {
	t.Helper()
	var buf bytes.Buffer
	if err := NewWriter(&buf).Write(b); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// fullBeat sets every field.
func fullBeat() *Beat {
	code := 127
	return &Beat{Seq: 42, Interval: 5,
		Session: Session{Name: "gt-furiosa", Command: "claude --dangerously-skip-permissions", State: SessionExited, NeverStarted: true, ExitCode: &code,
			ExitReason: "sh: 1: claude: not found", Processes: 48, Names: []string{"bash", "claude", "git", "node", "sh"},
			CPUSeconds: 812.4, CPUPercent: 12.5, RSSBytes: 412 << 20, Threads: 96, IdleSeconds: -1},
		Container: Container{Load1: 0.8, MemAvailable: 6 << 30, DiskFree: 40 << 30, DiskFreeError: "statfs /work: permission denied"},
		Agent:     Agent{Version: "v1.2.3", Uptime: 3600.25, Transport: "quic", RTTMillis: 0.4}}
}

// TestDecodeFast: the beats gt-agent writes are decoded without
// encoding/json, to the same Beat; every other form is left to it.
func TestDecodeFast(t *testing.T) {
	good := strings.TrimSuffix(written(t, fullBeat()), "\n")
	tests := []struct {
		name string
		line string
		fast bool // decodeFast takes it
	}{
		{"a full beat, as written", good + "\n", true},
		{"a bare beat, as written", written(t, &Beat{Seq: 1, Interval: 5, Session: Session{State: SessionRunning}}), true},
		{"no process names", `{"seq":1,"session":{"names":[]}}`, true},
		{"white space everywhere", " { \"seq\" : 1 ,\t\"session\" :\r{ \"names\" : [ \"a\" , \"b\" ] } }\n", true},
		{"an empty object", "{}\n", true},
		{"numbers in every JSON form", `{"interval":-0.5e-3,"session":{"cpu_seconds":1E+2,"exit_code":-3,"threads":0}}`, true},
		{"UTF-8 in a string", `{"session":{"name":"büro"}}`, true},
		{"false", `{"session":{"never_started":false}}`, true},

		{"an escape in a string", strings.Replace(good, `gt-furiosa`, `gt-\"furiosa`, 1), false},
		{"an HTML escape, as json.Marshal writes <", `{"session":{"command":"a \u003c b"}}`, false},
		{"a control character in a string", "{\"session\":{\"name\":\"a\tb\"}}", false},
		{"invalid UTF-8", "{\"session\":{\"name\":\"\xff\"}}", false},
		{"a key in another case", `{"SEQ":1}`, false},
		{"an unknown key", `{"seq":1,"alive":true}`, false},
		{"a key twice", `{"seq":1,"seq":2}`, false},
		{"null", `{"session":null}`, false},
		{"a number with a plus", `{"seq":+1}`, false},
		{"a leading zero", `{"seq":01}`, false},
		{"a bare point", `{"interval":1.}`, false},
		{"no digit before the point", `{"interval":.5}`, false},
		{"an exponent without digits", `{"interval":1e}`, false},
		{"NaN", `{"interval":NaN}`, false},
		{"a fraction for an integer", `{"seq":1.0}`, false},
		{"a negative unsigned", `{"seq":-1}`, false},
		{"an unsigned too large", `{"seq":18446744073709551616}`, false},
		{"a float too large", `{"interval":1e400}`, false},
		{"a string for a number", `{"seq":"1"}`, false},
		{"a number for a boolean", `{"session":{"never_started":1}}`, false},
		{"a boolean cut short", `{"session":{"never_started":tru}}`, false},
		{"a boolean run on", `{"session":{"never_started":truer}}`, false},
		{"a number for a string", `{"session":{"name":1}}`, false},
		{"a name that is not a string", `{"session":{"names":["a",1]}}`, false},
		{"an object that is not one", `{"session":[]}`, false},
		{"something after the beat", `{"seq":1} {}`, false},
		{"a trailing comma", `{"seq":1,}`, false},
		{"cut short", good[:len(good)/2], false},
		{"not JSON", "hello\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := decodeFast([]byte(tt.line))
			if ok != tt.fast {
				t.Fatalf("decodeFast took it: %v, want %v", ok, tt.fast)
			}
			if !ok {
				return
			}
			want, err := decodeJSON([]byte(tt.line))
			if err != nil {
				t.Fatalf("decodeFast took what encoding/json refuses: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("decodeFast: %+v\nencoding/json: %+v", got, want)
			}
		})
	}
}

// FuzzDecodeFast: whatever decodeFast takes, encoding/json takes too, to
// the same Beat.
func FuzzDecodeFast(f *testing.F) {
	f.Add([]byte(written(f, fullBeat())))
	f.Add([]byte(`{"seq":1,"interval":5,"session":{"state":"running","names":[]}}`))
	f.Add([]byte(`{"interval":-0.5e-3,"session":{"exit_code":-3}}`))
	f.Add([]byte(`{"seq":1,"seq":2}`))
	f.Add([]byte(`{"session":{"never_started":false,"state":"not_found"}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		got, ok := decodeFast(line)
		if !ok {
			return
		}
		want, err := decodeJSON(line)
		if err != nil {
			t.Fatalf("decodeFast took %q, which encoding/json refuses: %v", line, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: decodeFast %+v, encoding/json %+v", line, got, want)
		}
	})
}
