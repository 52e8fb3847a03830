package logging

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
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
