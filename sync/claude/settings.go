// Package claude changes Claude Code's settings files on their way from
// the host into a container. Gas Town writes the host's gt binary into a
// rig's polecat settings by its path on the host (/home/u/go/bin/gt prime
// --hook); in a container that path does not exist, and gt and bd are the
// shim on PATH. RewriteSettings makes every hook command (and the status
// line's) run them by name instead. It knows only that much of the
// settings' shape: "hooks" maps each event to matcher groups, each with
// "hooks", a list of {"type": "command", "command": "..."}; "statusLine"
// is one {"type": "command", "command": "..."}. Everything else is kept.
package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// IsSettings says whether rel (slash-separated) is a Claude Code settings
// file: settings.json or settings.local.json in a .claude directory.
func IsSettings(rel string) bool {
	base := path.Base(rel)
	return (base == "settings.json" || base == "settings.local.json") && path.Base(path.Dir(rel)) == ".claude"
}

// RewriteSettings returns settings with each hook command and the status
// line's command rewritten by RewriteCommand. When none changes it returns
// settings itself, byte for byte; otherwise the settings re-encoded (keys
// sorted, two-space indent), every value kept. settings itself is never
// modified. It refuses what is not one JSON object.
func RewriteSettings(settings []byte) ([]byte, error) {
	v, err := decode(settings)
	if err != nil {
		return nil, fmt.Errorf("reading Claude Code settings: %w", err)
	}
	if !rewriteCommands(v) {
		return settings, nil
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("writing Claude Code settings: %w", err)
	}
	return out.Bytes(), nil
}

// decode reads b as one JSON object, its numbers kept as written rather
// than rounded through float64.
func decode(b []byte) (map[string]any, error) {
	var v map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if v == nil {
		return nil, errors.New("null, not a JSON object")
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more follows the JSON object")
	}
	return v, nil
}

// rewriteCommands rewrites the commands of every hook and of the status
// line in settings, leaving whatever is not of the expected shape alone,
// and says whether any changed.
func rewriteCommands(settings map[string]any) bool {
	changed := rewriteCommandField(settings["statusLine"])
	hooks, _ := settings["hooks"].(map[string]any)
	for _, groups := range hooks {
		list, _ := groups.([]any)
		for _, g := range list {
			group, _ := g.(map[string]any)
			handlers, _ := group["hooks"].([]any)
			for _, h := range handlers {
				changed = rewriteCommandField(h) || changed
			}
		}
	}
	return changed
}

// rewriteCommandField rewrites the "command" string of obj, if obj is an
// object that has one, and says whether it changed.
func rewriteCommandField(obj any) bool {
	m, _ := obj.(map[string]any)
	cmd, ok := m["command"].(string)
	if !ok {
		return false
	}
	if out := RewriteCommand(cmd); out != cmd {
		m["command"] = out
		return true
	}
	return false
}

// binaries are the programs a container runs by name (its shim) that a
// hook command may name by their path on the host.
var binaries = []string{"gt", "bd"}

// separators end an unquoted shell word and start the next.
const separators = " \t\n;&|()<>`"

// RewriteCommand returns the shell command cmd with each word that names
// gt or bd by a path on the host (absolute, or from the home: ~/, $HOME/,
// ${HOME}/; unquoted, or quoted whole) replaced by the bare name, which
// the container's PATH resolves to its shim (ExampleRewriteCommand).
// Everything else is kept as it is, including words it cannot read as one
// plain path (partly quoted, escaped, or expanding anything but the home).
func RewriteCommand(cmd string) string {
	var b strings.Builder
	for i := 0; i < len(cmd); {
		if strings.IndexByte(separators, cmd[i]) >= 0 {
			b.WriteByte(cmd[i])
			i++
			continue
		}
		end := wordEnd(cmd, i)
		if name, ok := hostBinary(cmd[i:end]); ok {
			b.WriteString(name)
		} else {
			b.WriteString(cmd[i:end])
		}
		i = end
	}
	return b.String()
}

// wordEnd is where the shell word starting at cmd[i] ends: at the first
// separator outside quotes, or the end of cmd (an unterminated quote runs
// to it).
func wordEnd(cmd string, i int) int {
	for i < len(cmd) {
		switch c := cmd[i]; {
		case c == '\'':
			j := strings.IndexByte(cmd[i+1:], '\'')
			if j < 0 {
				return len(cmd)
			}
			i += j + 2
		case c == '"':
			i++
			for i < len(cmd) && cmd[i] != '"' {
				if cmd[i] == '\\' {
					i++
				}
				i++
			}
			i = min(i+1, len(cmd))
		case c == '\\':
			i = min(i+2, len(cmd))
		case strings.IndexByte(separators, c) >= 0:
			return i
		default:
			i++
		}
	}
	return len(cmd)
}

// hostBinary reads word as one plain path and, if it names one of
// binaries on the host, returns that name.
func hostBinary(word string) (string, bool) {
	p, ok := plainPath(word)
	if !ok || !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") {
		return "", false
	}
	for _, name := range binaries {
		if path.Base(p) == name {
			return name, true
		}
	}
	return "", false
}

// plainPath is the path word stands for when the shell would read it as
// one literal path, with a leading home made /: unquoted without quotes,
// escapes, globs or expansions but the home (~/, $HOME/, ${HOME}/);
// single-quoted whole; or double-quoted whole, expanding nothing but a
// leading $HOME/ or ${HOME}/.
func plainPath(word string) (string, bool) {
	const special = `'"\$*?[` + "`"
	switch {
	case len(word) >= 2 && word[0] == '\'' && word[len(word)-1] == '\'':
		inner := word[1 : len(word)-1]
		return inner, !strings.Contains(inner, "'")
	case len(word) >= 2 && word[0] == '"' && word[len(word)-1] == '"':
		inner := trimHome(word[1:len(word)-1], "$HOME/", "${HOME}/")
		return inner, !strings.ContainsAny(inner, special)
	default:
		p := trimHome(word, "~/", "$HOME/", "${HOME}/")
		return p, !strings.ContainsAny(p, special)
	}
}

// trimHome replaces the first of homes that starts p with /.
func trimHome(p string, homes ...string) string {
	for _, h := range homes {
		if rest, ok := strings.CutPrefix(p, h); ok {
			return "/" + rest
		}
	}
	return p
}
