package doctor

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// TestRigs: each rig's polecats start through hostd run, as Gas Town
// picks a rig's wrapper: the rig's runtime (whose command must then be
// the rig's agent's), else its agent's entry, in the rig's settings or
// the town's; the wrapper ends with "--" and its hostd is found.
func TestRigs(t *testing.T) {
	town, bin := t.TempDir(), t.TempDir()
	script(t, bin, "hostd", "exit 0\n")
	wrapper := []string{"hostd", "run", "--"}
	rigs := map[string]any{ // a rig's settings/config.json, nil for none
		"good":       map[string]any{"type": "rig-settings", "runtime": map[string]any{"exec_wrapper": wrapper}},
		"bare":       map[string]any{"runtime": map[string]any{"command": "claude"}},
		"none":       nil,
		"exitbox":    map[string]any{"runtime": map[string]any{"exec_wrapper": []string{"exitbox", "run", "--"}}},
		"nodashes":   map[string]any{"runtime": map[string]any{"exec_wrapper": []string{"hostd", "run"}}},
		"elsewhere":  map[string]any{"runtime": map[string]any{"exec_wrapper": []string{"/opt/none/hostd", "run", "--"}}},
		"agent":      map[string]any{"agent": "pi", "runtime": map[string]any{"exec_wrapper": wrapper}},
		"agentcmd":   map[string]any{"agent": "pi", "runtime": map[string]any{"command": "pi", "exec_wrapper": wrapper}},
		"agententry": map[string]any{"agent": "pi", "agents": map[string]any{"pi": map[string]any{"command": "pi", "exec_wrapper": wrapper}}},
		"towndef":    map[string]any{},
		"broken":     "{",
		"../escape":  nil,
	}
	listed := map[string]any{}
	for rig, settings := range rigs {
		listed[rig] = map[string]any{"beads": map[string]string{"prefix": "gt"}}
		switch s := settings.(type) {
		case string:
			writeFile(t, filepath.Join(town, rig, "settings", "config.json"), s)
		case map[string]any:
			b, _ := json.Marshal(s)
			writeFile(t, filepath.Join(town, rig, "settings", "config.json"), string(b))
		}
	}
	b, _ := json.Marshal(map[string]any{"rigs": listed})
	writeFile(t, filepath.Join(town, "mayor", "rigs.json"), string(b))
	writeFile(t, filepath.Join(town, "settings", "config.json"), `{"default_agent": "codex", "agents": {"codex": {"exec_wrapper": ["hostd", "run", "--"]}}}`)

	want := map[string]struct {
		status    Status
		want, fix string
	}{
		"good":       {OK, `runtime.exec_wrapper ["hostd" "run" "--"]`, ""},
		"bare":       {Warn, "run on the host: no runtime.exec_wrapper", `"exec_wrapper": ["hostd", "run", "--"]`},
		"none":       {Warn, "does not exist", filepath.Join(town, "none", "settings", "config.json")},
		"exitbox":    {Warn, `start through ["exitbox" "run" "--"]`, "exec_wrapper"},
		"nodashes":   {Fail, `does not end with "--"`, `with "--"`},
		"elsewhere":  {Fail, "/opt/none/hostd", "absolute path"},
		"agent":      {Warn, `names agent "pi", but Gas Town takes its runtime over its agent`, "agents.pi.exec_wrapper"},
		"agentcmd":   {OK, "runtime.exec_wrapper", ""},
		"agententry": {OK, "agents.pi.exec_wrapper", ""},
		"towndef":    {OK, "agents.codex.exec_wrapper", ""},
		"broken":     {Warn, "reading " + filepath.Join(town, "broken", "settings", "config.json"), "mend"},
		"../escape":  {Warn, "is not a directory name", "rename"},
	}
	lines := Rigs(town, pathIn(bin))
	if len(lines) != len(want) {
		t.Fatalf("%d lines for %d rigs: %+v", len(lines), len(want), lines)
	}
	for i, l := range lines {
		if i > 0 && lines[i-1].Check >= l.Check {
			t.Errorf("rigs out of order: %s before %s", lines[i-1].Check, l.Check)
		}
		w, ok := want[l.Check[len("rig/"):]]
		if !ok {
			t.Errorf("a line for %s", l.Check)
			continue
		}
		expect(t, l, w.status, w.want, w.fix)
	}
}

// TestRigsListed: rigs are listed in mayor/rigs.json, else in the town's
// rigs.json; none listed, or a list that cannot be read, is a warning.
func TestRigsListed(t *testing.T) {
	tests := []struct {
		name      string
		files     map[string]string
		status    Status
		want, fix string
	}{
		{"none", nil, Warn, "no rigs in", "gt rig add"},
		{"empty", map[string]string{"mayor/rigs.json": `{"rigs": {}}`}, Warn, "no rigs in", "gt rig add"},
		{"unreadable", map[string]string{"mayor/rigs.json": `{"rigs": [`, "rigs.json": `{"rigs": {"gastown": {}}}`}, Warn, "reading", "mend it"},
		{"the town's", map[string]string{"rigs.json": `{"rigs": {"gastown": {}}}`}, Warn, "does not exist", "exec_wrapper"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			town := t.TempDir()
			for name, content := range tt.files {
				writeFile(t, filepath.Join(town, name), content)
			}
			lines := Rigs(town, pathIn(t.TempDir()))
			if len(lines) != 1 {
				t.Fatalf("%d lines: %+v", len(lines), lines)
			}
			expect(t, lines[0], tt.status, tt.want, tt.fix)
		})
	}
}
