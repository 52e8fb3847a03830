package logging

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestNew(t *testing.T) {
	cases := []struct {
		level, format string
		wantErr       string
		check         func(out string) bool
	}{
		{"info", "text", "", func(o string) bool { return strings.Contains(o, "msg=shown") && !strings.Contains(o, "hidden") }},
		{"debug", "json", "", func(o string) bool {
			var m map[string]any
			first, _, _ := strings.Cut(o, "\n")
			return json.Unmarshal([]byte(first), &m) == nil && m["msg"] == "hidden"
		}},
		{"loud", "text", "--log-level", nil},
		{"info", "xml", "--log-format", nil},
	}
	for _, c := range cases {
		var buf bytes.Buffer
		l, err := New(&buf, c.level, c.format)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s/%s: error %v, want one about the %s", c.level, c.format, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		l.Debug("hidden")
		l.Info("shown")
		if !c.check(buf.String()) {
			t.Errorf("%s/%s: output %q", c.level, c.format, buf.String())
		}
	}
}

func TestLimiter(t *testing.T) {
	l := NewLimiter(3, 50*time.Millisecond)
	var let int
	for range 10 {
		if ok, _ := l.Allow("a"); ok {
			let++
		}
	}
	if let != 3 {
		t.Fatalf("let %d of 10 through in one window, want 3", let)
	}
	if ok, _ := l.Allow("b"); !ok {
		t.Fatal("another key was held back")
	}
	time.Sleep(60 * time.Millisecond)
	ok, held := l.Allow("a")
	if !ok || held != 7 {
		t.Fatalf("next window: ok=%v held=%d, want true and 7", ok, held)
	}
}

// TestTextEscapes: a value a polecat chose (a command name, a close
// reason) cannot put a terminal escape into hostd's text log.
func TestTextEscapes(t *testing.T) {
	var buf bytes.Buffer
	l, err := New(&buf, "info", "text")
	if err != nil {
		t.Fatal(err)
	}
	evil := "vim\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J\u009b31m\r\nlevel=ERROR msg=forged"
	l.Info("polecat state \x1b[1m", "command", evil)
	out := buf.String()
	if strings.ContainsAny(out, "\x1b\x07\r\u009b") || strings.Count(out, "\n") != 1 {
		t.Fatalf("raw control characters or a forged line reached the log: %q", out)
	}
}
