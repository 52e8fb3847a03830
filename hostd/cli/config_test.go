package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/hostd/cli/command"
	"github.com/polecat-sidecar/sidecar/hostd/cli/serve"
	"github.com/polecat-sidecar/sidecar/internal/settings"
)

// showConfig runs hostd config show --json with args and the variables
// env, and returns its entries by key, its output and exit status.
func showConfig(t *testing.T, env map[string]string, args ...string) (map[string]configEntry, string, int) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	out, code := hostd.Run(t, t.TempDir(), "", append(args, "config", "show", "--json")...)
	var list []configEntry
	_ = json.NewDecoder(strings.NewReader(out)).Decode(&list)
	byKey := map[string]configEntry{}
	for _, e := range list {
		byKey[e.Key] = e
	}
	return byKey, out, code
}

// TestConfigShow: config show prints every setting of serve with the
// value serve would take and where it came from, the way serve reads
// them: its flags, HOSTD_* variables, the config file, the defaults; and,
// after them, the settings serve would refuse, exiting 1.
func TestConfigShow(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("cert_ttl: 2h\nliveness:\n  grace: 1m\nrelay:\n  allow:\n    gt: [prime]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, out, code := showConfig(t, map[string]string{"HOSTD_LIVENESS_GRACE": "3m", "HOSTD_NUDGE_DEPTH": "7"},
		"--config", cfg, "--grace", "4m", "--trust-domain", "example.org")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	want := map[string]configEntry{
		"cert_ttl":       {Value: "2h0m0s", Source: settings.Source{Origin: settings.FromFile, Name: cfg}},
		"liveness.grace": {Value: "4m0s", Source: settings.Source{Origin: settings.FromFlag, Name: "--grace"}},
		"nudge.depth":    {Value: 7.0, Source: settings.Source{Origin: settings.FromEnv, Name: "HOSTD_NUDGE_DEPTH"}},
		"relay.allow":    {Value: map[string]any{"gt": []any{"prime"}}, Source: settings.Source{Origin: settings.FromFile, Name: cfg}},
		"idle_timeout":   {Value: "10s", Source: settings.Source{Origin: settings.FromDefault}},
		"trust_domain":   {Value: "example.org", Source: settings.Source{Origin: settings.FromFlag, Name: "--trust-domain"}},
	}
	for k, w := range want {
		e, ok := got[k]
		if !ok || e.Source != w.Source || !jsonEqual(e.Value, w.Value) {
			t.Errorf("%s: %+v, want value %v from %v", k, e, w.Value, w.Source)
		}
	}
	if e := got["liveness.grace"]; e.Flag != "--grace" || e.Env != "HOSTD_LIVENESS_GRACE" {
		t.Errorf("liveness.grace's names: %+v", e)
	}
	for _, s := range serve.NewSettings().Table {
		if _, ok := got[s.Key]; !ok {
			t.Errorf("serve's %s not shown", s.Key)
		}
	}

	text, code := hostd.Run(t, t.TempDir(), "", "config", "show", "--nudge-depth", "0")
	for _, w := range []string{`config file: none \(.*config.yaml does not exist`, `\nKEY +FROM +VALUE\n`, `\nnudge.depth +flag --nudge-depth +0\n`,
		`\ncert_ttl +default +24h0m0s\n`, `\nrelay.allow +default +\{bd: \[create, `,
		`\nhostd: hostd serve's settings:\nsetting nudge.depth is 0 \(flag --nudge-depth\): it must be above 0\n$`} {
		if !regexp.MustCompile(w).MatchString(text) {
			t.Errorf("config show with a setting out of range: exit %d, output lacks %q:\n%s", code, w, text)
		}
	}
	if code != 1 {
		t.Errorf("config show with a setting out of range: exit %d, want 1", code)
	}
}

// jsonEqual reports whether a and b are the same in JSON.
func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// TestConfigSample: docs/config.sample.yaml loads as serve loads its
// config (no unknown key, every value valid), gives every setting of
// serve and the shared ones (but the town, which finds the file), and
// gives each its default, so that it documents them truly (an empty map
// for one that has none).
func TestConfigSample(t *testing.T) {
	sample, err := filepath.Abs("../../docs/config.sample.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, out, code := showConfig(t, nil, "--config", sample)
	if code != 0 {
		t.Fatalf("the sample config does not load: exit %d\n%s", code, out)
	}
	defaults, out, code := showConfig(t, nil)
	if code != 0 {
		t.Fatalf("the defaults do not load: exit %d\n%s", code, out)
	}
	for _, s := range append(command.NewApp().Root, serve.NewSettings().Table...) {
		e := got[s.Key]
		def := defaults[s.Key].Value
		if isEmpty(def) && isEmpty(e.Value) {
			def = e.Value
		}
		switch {
		case s.Key == "town" || s.Key == "log_level": // hostd.Run gives them as flags
		case e.Origin != settings.FromFile:
			t.Errorf("%s is not in the sample (it came from %v)", s.Key, e.Source)
		case !jsonEqual(e.Value, def):
			t.Errorf("the sample gives %s %v, but its default is %v", s.Key, e.Value, def)
		}
	}
}

// isEmpty reports whether v is nothing, an empty list or an empty map in
// JSON.
func isEmpty(v any) bool {
	j, _ := json.Marshal(v)
	return string(j) == "null" || string(j) == "[]" || string(j) == "{}"
}
