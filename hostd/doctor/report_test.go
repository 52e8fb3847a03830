package doctor

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestReport: the report's status and exit code are the gravest line's;
// its text is a line per check with the fix under it and a count, and
// its JSON decodes to the same lines; a control character in any field
// (a rig's name, a program's output) is printed escaped in both.
func TestReport(t *testing.T) {
	tests := []struct {
		name   string
		lines  []Line
		status Status
		code   int
	}{
		{"empty", nil, OK, 0},
		{"all ok", []Line{ok("a", "fine"), ok("b", "fine")}, OK, 0},
		{"a warning", []Line{ok("a", "fine"), warn("b", "do this", "hm")}, Warn, 1},
		{"a failure after a warning", []Line{warn("a", "do this", "hm"), fail("b", "do that", "broken"), ok("c", "fine")}, Fail, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Report
			r.Add(tt.lines...)
			if r.Status != tt.status || r.Code() != tt.code || len(r.Lines) != len(tt.lines) {
				t.Fatalf("status %q, code %d, %d lines; want %q, %d, %d", r.Status, r.Code(), len(r.Lines), tt.status, tt.code, len(tt.lines))
			}
		})
	}

	var r Report
	r.Add(ok("town", "/tmp/town"), warn("rig/evil\x1b]0;owned\a", "fix \x1b[2J it", "its polecats run on the host\nhostd: a line of ours?"))
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	want := "ok    town                      /tmp/town\n" +
		`warn  rig/evil\x1b]0;owned\x07  its polecats run on the host\nhostd: a line of ours?` + "\n" +
		`                                fix: fix \x1b[2J it` + "\n" +
		"2 checks: 1 ok, 1 warn, 0 fail\n"
	if text.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", text.String(), want)
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(js.String(), "\x1b\a") {
		t.Errorf("JSON carries a raw control character: %q", js.String())
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Status != Warn || len(back.Lines) != 2 || back.Lines[1] != r.Lines[1] {
		t.Errorf("JSON decodes to %+v, %v; want %+v", back, err, r)
	}
}
