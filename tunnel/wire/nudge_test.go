package wire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// TestNudgeResultsHostile: what an agent answers a nudge with is checked
// and bounded: unknown outcomes and fields, garbage, oversized details and
// endless answers are refused; the last of several answers is read.
func TestNudgeResultsHostile(t *testing.T) {
	busy := `{"outcome":"busy","at":"2026-11-22T10:00:00Z","detail":"busy: hook"}` + "\n"
	cases := []struct {
		name, in, want string // want: the error, or the last outcome
	}{
		{"one final", `{"outcome":"submitted","at":"2026-11-22T10:00:00Z","detail":"hook fired"}`, "submitted"},
		{"busy then final", busy + busy + `{"outcome":"failed","at":"2026-11-22T10:00:00Z"}`, "failed"},
		{"busy at the deadline", busy, "busy"},
		{"unknown outcome", `{"outcome":"delivered-honest"}`, "unknown outcome"},
		{"unknown field", `{"outcome":"submitted","rig":"other"}`, "unknown field"},
		{"garbage", "\x1b]52;c;aGk=\x07", "invalid"},
		{"detail too long", `{"outcome":"busy","detail":"` + strings.Repeat("x", MaxNudgeResult+1) + `"}`, "too long"},
		{"endless answers", strings.Repeat(`{"outcome":"busy"}`+"\n", MaxNudgeResults+1), "more than"},
		{"endless bytes", `{"outcome":"busy","detail":"` + strings.Repeat("x", MaxNudgeResults*MaxNudgeResult), "unexpected EOF"},
	}
	for _, c := range cases {
		r := NewNudgeResults(strings.NewReader(c.in))
		var last NudgeResult
		var err error
		for {
			var res NudgeResult
			res, err = r.Next()
			if err != nil {
				break
			}
			last = res
		}
		got := last.Outcome
		if !errors.Is(err, io.EOF) {
			got = err.Error()
		}
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestNudgeRequestValidate: the agent refuses requests it cannot act on.
func TestNudgeRequestValidate(t *testing.T) {
	ok := NudgeRequest{ID: "n1", Mode: NudgeWaitIdle, Deadline: time.Now(), Size: 10}
	for _, tc := range []struct {
		name string
		edit func(*NudgeRequest)
		bad  bool
	}{
		{"good", func(*NudgeRequest) {}, false},
		{"no id", func(r *NudgeRequest) { r.ID = "" }, true},
		{"long id", func(r *NudgeRequest) { r.ID = strings.Repeat("n", 65) }, true},
		{"queue mode", func(r *NudgeRequest) { r.Mode = NudgeQueue }, true},
		{"no deadline", func(r *NudgeRequest) { r.Deadline = time.Time{} }, true},
		{"empty", func(r *NudgeRequest) { r.Size = 0 }, true},
		{"too big", func(r *NudgeRequest) { r.Size = MaxNudgeText + 1 }, true},
	} {
		r := ok
		tc.edit(&r)
		if err := r.Validate(); (err != nil) != tc.bad {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func FuzzNudgeResults(f *testing.F) {
	f.Add([]byte(`{"outcome":"busy","detail":"x"}` + "\n" + `{"outcome":"submitted","at":"2026-11-22T10:00:00Z"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewNudgeResults(bytes.NewReader(b))
		for range MaxNudgeResults + 2 {
			res, err := r.Next()
			if err != nil {
				return
			}
			// Whatever is accepted is one of the three outcomes, and
			// survives a round trip.
			var buf bytes.Buffer
			_ = WriteNudgeResult(&buf, res)
			again, err := NewNudgeResults(&buf).Next()
			if err != nil || again.Outcome != res.Outcome || again.Detail != res.Detail {
				t.Fatalf("round trip of %+v: %+v %v", res, again, err)
			}
		}
		t.Fatal("more answers than MaxNudgeResults were read")
	})
}
