package claude

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestIsSettings(t *testing.T) {
	for rel, want := range map[string]bool{
		".claude/settings.json":          true,
		".claude/settings.local.json":    true,
		"sub/.claude/settings.json":      true,
		"settings.json":                  false,
		".claude/commands/settings.json": false,
		".claude/settings.json.bak":      false,
		"claude/settings.json":           false,
	} {
		if got := IsSettings(rel); got != want {
			t.Errorf("IsSettings(%q) = %v, want %v", rel, got, want)
		}
	}
}

func TestRewriteCommand(t *testing.T) {
	tests := []struct{ in, want string }{
		// What Gas Town writes, its gt resolved on the host.
		{"/home/u/go/bin/gt prime --hook", "gt prime --hook"},
		{"/home/u/go/bin/gt prime --hook && /home/u/go/bin/gt mail check --inject", "gt prime --hook && gt mail check --inject"},
		{"/home/u/go/bin/gt costs record &", "gt costs record &"},
		{"/opt/homebrew/bin/bd prime", "bd prime"},
		{"/gt", "gt"},
		// Other spellings of a path on the host.
		{"'/Users/John Doe/go/bin/gt' prime", "gt prime"},
		{`"/Users/John Doe/go/bin/gt" prime`, "gt prime"},
		{"$HOME/go/bin/gt prime", "gt prime"},
		{`"${HOME}/go/bin/bd" show x`, "bd show x"},
		{"~/go/bin/gt prime", "gt prime"},
		{"GT_HOOK_SOURCE=session /a/gt prime", "GT_HOOK_SOURCE=session gt prime"},
		{"(/a/gt x)|/a/bd y;/a/gt z", "(gt x)|bd y;gt z"},
		{"echo $(/a/bd show x) `/a/gt y`", "echo $(bd show x) `gt y`"},
		{"/a/gt x>/tmp/out 2>&1\n/a/bd y", "gt x>/tmp/out 2>&1\nbd y"},
		// Left alone: already bare, other programs, not one plain path.
		{"gt prime --hook", "gt prime --hook"},
		{`export PATH="$HOME/go/bin:$PATH" && gt tap guard dangerous-command`, `export PATH="$HOME/go/bin:$PATH" && gt tap guard dangerous-command`},
		{"/usr/local/bin/gt-agent hook Stop", "/usr/local/bin/gt-agent hook Stop"},
		{"/a/gtx prime", "/a/gtx prime"},
		{"/a/gt/ x", "/a/gt/ x"},
		{"./gt prime", "./gt prime"},
		{"bin/gt prime", "bin/gt prime"},
		{"'$HOME/go/bin/gt' prime", "'$HOME/go/bin/gt' prime"},
		{`"~/go/bin/gt" prime`, `"~/go/bin/gt" prime`},
		{`"/a/$X/gt" prime`, `"/a/$X/gt" prime`},
		{`/a/g"t" prime`, `/a/g"t" prime`},
		{`/a/g\t prime`, `/a/g\t prime`},
		{"/a/*/gt prime", "/a/*/gt prime"},
		{"'/a/gt prime", "'/a/gt prime"},
		{`"/a/gt prime`, `"/a/gt prime`},
		{`"/a/gt\" prime" x`, `"/a/gt\" prime" x`},
		{"", ""},
	}
	for _, tt := range tests {
		if got := RewriteCommand(tt.in); got != tt.want {
			t.Errorf("RewriteCommand(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// gasTownSettings is a rig's polecats/.claude/settings.json as Gas Town
// writes it, with the host's gt resolved.
const gasTownSettings = `{
  "skipDangerousModePermissionPrompt": true,
  "enabledPlugins": {"beads@beads-marketplace": false},
  "cleanupPeriodDays": 12345678901234567890,
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash(gh pr create*)", "hooks": [{"type": "command", "command": "/home/x/go/bin/gt tap guard pr-workflow"}]},
      {"matcher": "Bash(sudo *)", "hooks": [{"type": "command", "command": "export PATH=\"$HOME/go/bin:$PATH\" && gt tap guard dangerous-command"}]}
    ],
    "SessionStart": [{"matcher": "", "hooks": [{"type": "command", "command": "/home/x/go/bin/gt prime --hook && /home/x/go/bin/gt mail check --inject"}]}],
    "Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "/home/x/go/bin/gt costs record &", "timeout": 30}]}]
  },
  "statusLine": {"type": "command", "command": "/home/x/go/bin/gt status-line <rig>"}
}`

// TestRewriteSettings: Gas Town's settings come out with every hook
// command running the container's gt, and nothing else changed.
func TestRewriteSettings(t *testing.T) {
	in := []byte(gasTownSettings)
	out, err := RewriteSettings(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(in) != gasTownSettings {
		t.Fatal("RewriteSettings changed its input")
	}
	want := strings.NewReplacer("/home/x/go/bin/gt", "gt").Replace(gasTownSettings)
	if !sameJSON(t, out, []byte(want)) {
		t.Errorf("rewritten:\n%s\nwant the same as:\n%s", out, want)
	}
	for _, kept := range []string{"12345678901234567890", "<rig>", `"timeout": 30`} {
		if !strings.Contains(string(out), kept) {
			t.Errorf("the rewritten settings lost %s:\n%s", kept, out)
		}
	}
}

// TestRewriteSettingsHostile: settings of every wrong shape, depth and
// content are either refused or passed on byte for byte when there is
// nothing to rewrite; none makes it panic or loop.
func TestRewriteSettingsHostile(t *testing.T) {
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	tests := []struct {
		name, in string
		refused  bool
	}{
		{"empty", "", true},
		{"not JSON", "hooks: yes", true},
		{"an array", `[{"hooks": {}}]`, true},
		{"null", "null", true},
		{"a string", `"/a/gt"`, true},
		{"more after the object", `{} {"hooks": {}}`, true},
		{"garbage after the object", `{}]`, true},
		{"truncated", `{"hooks": {"Stop": [`, true},
		{"nested past the decoder's depth", `{"x": ` + deep + `}`, true},
		{"no hooks", `{"model": "opus"}`, false},
		{"hooks not an object", `{"hooks": "/a/gt prime"}`, false},
		{"event not a list", `{"hooks": {"Stop": "/a/gt prime"}}`, false},
		{"groups of every kind", `{"hooks": {"Stop": [1, null, "x", [], {"hooks": "x"}, {"hooks": [null, 2, {"command": 5}, {"command": null}]}]}}`, false},
		{"command elsewhere", `{"command": "/a/gt prime", "env": {"command": "/a/gt"}}`, false},
		{"commands already bare", `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "gt costs record"}]}]}}`, false},
		{"odd formatting kept", "{\"hooks\":{},\n\t\"x\" :  1e400 }\n\n", false},
		{"invalid UTF-8 with nothing to rewrite", "{\"x\": \"\xff\xfe\"}", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := RewriteSettings([]byte(tt.in))
			switch {
			case tt.refused && err == nil:
				t.Fatalf("accepted, gave %.80q", out)
			case !tt.refused && err != nil:
				t.Fatalf("refused: %v", err)
			case !tt.refused && !bytes.Equal(out, []byte(tt.in)):
				t.Fatalf("changed settings with nothing to rewrite: %.80q", out)
			}
		})
	}
	// What does get rewritten comes out as JSON, whatever else it holds.
	odd := "{\"hooks\": {\"Stop\": [{\"hooks\": [{\"command\": \"/a/gt x </script> \xff\", \"dup\": 1, \"dup\": 2}]}]}, \"n\": -0.5e-7}"
	out, err := RewriteSettings([]byte(odd))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decode(out); err != nil || !strings.Contains(string(out), "\"gt x </script> \uFFFD\"") {
		t.Errorf("rewritten: %v\n%s", err, out)
	}
}

// TestRewriteSettingsLeavesHostFile: rewriting a settings file read from
// disk leaves the file as it was.
func TestRewriteSettingsLeavesHostFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(p, []byte(gasTownSettings), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if _, err := RewriteSettings(b); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(p); string(after) != gasTownSettings {
		t.Errorf("the host's file changed:\n%s", after)
	}
}

// FuzzRewriteSettings: whatever the input, RewriteSettings returns an
// error or a JSON object none of whose commands names gt or bd by a path
// on the host; rewriting that again changes nothing; and input with no
// such command comes back byte for byte.
func FuzzRewriteSettings(f *testing.F) {
	for _, seed := range []string{gasTownSettings, `{}`, `{"hooks": {"Stop": [{"hooks": [{"command": "'/a b/bd' x"}]}]}}`,
		`{"statusLine": {"command": "$HOME/go/bin/gt status"}}`, `{"hooks": {"Stop": [{"hooks": [{"command": "\"/a/gt\\\" x"}]}]}}`, "[", "null"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		orig := bytes.Clone(in)
		out, err := RewriteSettings(in)
		if !bytes.Equal(in, orig) {
			t.Fatal("RewriteSettings changed its input")
		}
		if err != nil {
			return
		}
		v, err := decode(out)
		if err != nil {
			t.Fatalf("output is not a JSON object (%v):\n%s", err, out)
		}
		again, err := RewriteSettings(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("rewriting the output again: %v\n%s\n%s", err, out, again)
		}
		if rewriteCommands(v) {
			t.Fatalf("the output still has a command to rewrite:\n%s", out)
		}
	})
}

// FuzzRewriteCommand: a rewritten command needs no further rewriting, and
// one without gt or bd in it is left as it was.
func FuzzRewriteCommand(f *testing.F) {
	for _, seed := range []string{"/home/u/go/bin/gt prime --hook && /home/u/go/bin/gt mail check --inject", `"/a/gt`, `'/a b/gt' x`, `\`, `"\`, "~/gt;$HOME/bd|${HOME}/gt"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		out := RewriteCommand(cmd)
		if again := RewriteCommand(out); again != out {
			t.Fatalf("RewriteCommand(%q) = %q, and again %q", cmd, out, again)
		}
		if !strings.Contains(cmd, "gt") && !strings.Contains(cmd, "bd") && out != cmd {
			t.Fatalf("RewriteCommand(%q) = %q, with no gt or bd in it", cmd, out)
		}
		if len(out) > len(cmd) {
			t.Fatalf("RewriteCommand(%q) = %q grew", cmd, out)
		}
	})
}

// sameJSON says whether a and b decode to the same value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%v:\n%s", err, a)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%v:\n%s", err, b)
	}
	return reflect.DeepEqual(x, y)
}
