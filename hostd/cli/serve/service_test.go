package serve

import (
	"bufio"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// serviceDir holds the service files the README installs.
const serviceDir = "../../../docs/service"

// checkServeArgs fails unless args (a service's command line after the
// hostd binary) is 'serve' with flags hostd accepts and no arguments.
func checkServeArgs(t *testing.T, args []string) {
	t.Helper()
	cmd, rest, err := hostd().Find(args)
	if err != nil || cmd.Name() != "serve" {
		t.Fatalf("%q does not run hostd serve: %v", args, err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatalf("hostd %q: %v", args, err)
	}
	if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
		t.Fatalf("hostd %q: %v", args, err)
	}
}

// TestSystemdUnit: docs/service/hostd.service is a user unit systemd
// accepts (systemd-analyze verify, when it is installed and can run) with
// the sections and keys it needs, and its ExecStart is a hostd serve
// command line hostd accepts.
func TestSystemdUnit(t *testing.T) {
	path := filepath.Join(serviceDir, "hostd.service")
	unit := readUnit(t, path)
	for _, k := range []string{"Unit.Description", "Service.ExecStart", "Service.Restart", "Install.WantedBy"} {
		if len(unit[k]) != 1 {
			t.Errorf("%s: %s given %d times, want once", path, k, len(unit[k]))
		}
	}
	if got := unit["Install.WantedBy"]; len(got) != 1 || got[0] != "default.target" {
		t.Errorf("WantedBy=%v: a user unit is wanted by default.target", got)
	}
	if len(unit["Service.ExecStart"]) != 1 {
		t.FailNow()
	}
	exec := unit["Service.ExecStart"][0]
	if strings.ContainsAny(exec, `"'\$`) {
		t.Fatalf("ExecStart=%s: quoting and variables are more than this test reads", exec)
	}
	words := strings.Fields(strings.ReplaceAll(exec, "%h", "/home/u"))
	if words[0] != "/home/u/.local/bin/hostd" {
		t.Errorf("ExecStart runs %s, want %%h/.local/bin/hostd, where the README installs it", words[0])
	}
	checkServeArgs(t, words[1:])
	verifyUnit(t, path)
}

// readUnit reads a unit file as "Section.Key" -> values, failing on a
// line that is neither a section, a key=value, a comment nor blank.
func readUnit(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	unit, section := map[string][]string{}, ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[' && line[len(line)-1] == ']':
			section = line[1 : len(line)-1]
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" || strings.HasSuffix(line, `\`) {
				t.Fatalf("%s:%d: %q is not a key=value in a section", path, n, line)
			}
			unit[section+"."+strings.TrimSpace(k)] = append(unit[section+"."+strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return unit
}

// verifyUnit runs systemd-analyze verify --user on the unit, with a home
// directory holding an executable ~/.local/bin/hostd, and fails on any
// complaint; it skips when systemd-analyze is missing or cannot start a
// user manager here.
func verifyUnit(t *testing.T, path string) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("no systemd-analyze: the unit was checked structurally only")
		return
	}
	home, runtime := t.TempDir(), t.TempDir()
	bin := filepath.Join(home, ".local", "bin", "hostd")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	unit, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(analyze, "verify", "--user", unit)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_RUNTIME_DIR="+runtime, "SYSTEMD_LOG_COLOR=0")
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), "Failed to initialize manager") {
		t.Logf("systemd-analyze cannot run a user manager here, so the unit was checked structurally only: %s", out)
		return
	}
	if err != nil || len(out) != 0 {
		t.Errorf("systemd-analyze verify --user %s: %v\n%s", path, err, out)
	}
}

// TestLaunchdPlist: docs/service/com.polecat-sidecar.hostd.plist is a
// well-formed property list with the keys launchd needs for a
// LaunchAgent that keeps hostd running, and, with @HOME@ replaced as the
// README says, its ProgramArguments are a hostd serve command line hostd
// accepts.
func TestLaunchdPlist(t *testing.T) {
	const label = "com.polecat-sidecar.hostd"
	path := filepath.Join(serviceDir, label+".plist")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	top, err := readPlist(strings.NewReader(strings.ReplaceAll(string(raw), "@HOME@", "/Users/u")))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	walkStrings(top, func(s string) {
		if strings.ContainsAny(s, "@$~") {
			t.Errorf("%s: %q holds a placeholder other than @HOME@, or a ~ or $ launchd would not expand", path, s)
		}
	})
	d, ok := top.(map[string]any)
	if !ok {
		t.Fatalf("%s: the top value is %T, want a dict", path, top)
	}
	if d["Label"] != label {
		t.Errorf("Label %v, want %s (the file's name)", d["Label"], label)
	}
	if d["RunAtLoad"] != true {
		t.Errorf("RunAtLoad %v, want true", d["RunAtLoad"])
	}
	if ka, ok := d["KeepAlive"].(map[string]any); !ok || ka["SuccessfulExit"] != false {
		t.Errorf("KeepAlive %v, want a restart unless hostd exited cleanly", d["KeepAlive"])
	}
	for _, k := range []string{"StandardOutPath", "StandardErrorPath"} {
		if p, ok := d[k].(string); !ok || !strings.HasPrefix(p, "/Users/u/Library/Logs/") {
			t.Errorf("%s %v, want a file under ~/Library/Logs", k, d[k])
		}
	}
	if env, ok := d["EnvironmentVariables"].(map[string]any); !ok || env["PATH"] == nil {
		t.Errorf("EnvironmentVariables %v, want a PATH that finds gt and bd", d["EnvironmentVariables"])
	}
	argv, ok := d["ProgramArguments"].([]any)
	if !ok || len(argv) < 2 {
		t.Fatalf("ProgramArguments %v", d["ProgramArguments"])
	}
	var args []string
	for _, a := range argv {
		s, ok := a.(string)
		if !ok {
			t.Fatalf("ProgramArguments holds %T %v, want strings", a, a)
		}
		args = append(args, s)
	}
	if args[0] != "/Users/u/.local/bin/hostd" {
		t.Errorf("ProgramArguments runs %s, want @HOME@/.local/bin/hostd, where the README installs it", args[0])
	}
	checkServeArgs(t, args[1:])
}

// walkStrings calls f with every string in the plist value v, keys too.
func walkStrings(v any, f func(string)) {
	switch v := v.(type) {
	case string:
		f(v)
	case []any:
		for _, e := range v {
			walkStrings(e, f)
		}
	case map[string]any:
		for k, e := range v {
			f(k)
			walkStrings(e, f)
		}
	}
}

// readPlist decodes an XML property list: <plist version="1.0"> around
// one value (dict, array, string, integer, true, false), dicts alternating
// key and value. It fails on anything else.
func readPlist(r io.Reader) (any, error) {
	dec := xml.NewDecoder(r)
	dec.Strict = true
	start, err := nextStart(dec)
	if err != nil {
		return nil, err
	}
	if start.Name.Local != "plist" || len(start.Attr) != 1 || start.Attr[0].Name.Local != "version" || start.Attr[0].Value != "1.0" {
		return nil, fmt.Errorf("root element <%s %v>, want <plist version=\"1.0\">", start.Name.Local, start.Attr)
	}
	first, err := nextStart(dec)
	if err != nil {
		return nil, err
	}
	v, err := plistValue(dec, first)
	if err != nil {
		return nil, err
	}
	if s, err := nextStart(dec); err == nil {
		return nil, fmt.Errorf("<%s> after the plist's one value", s.Name.Local)
	}
	return v, nil
}

// errEnd is an end element where a value's start was wanted.
var errEnd = errors.New("end of element")

// nextStart is the next start element, skipping text, comments and the
// prolog; errEnd at an end element.
func nextStart(dec *xml.Decoder) (xml.StartElement, error) {
	for {
		tok, err := dec.Token()
		if err != nil {
			return xml.StartElement{}, err
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			return tok, nil
		case xml.EndElement:
			return xml.StartElement{}, errEnd
		case xml.CharData:
			if strings.TrimSpace(string(tok)) != "" {
				return xml.StartElement{}, fmt.Errorf("text %q outside a value", tok)
			}
		}
	}
}

// plistValue reads the value that start opens.
func plistValue(dec *xml.Decoder, start xml.StartElement) (any, error) {
	switch start.Name.Local {
	case "string", "key", "integer":
		var s string
		if err := dec.DecodeElement(&s, &start); err != nil {
			return nil, err
		}
		if start.Name.Local == "integer" {
			return strconv.Atoi(strings.TrimSpace(s))
		}
		return s, nil
	case "true", "false":
		if err := dec.Skip(); err != nil {
			return nil, err
		}
		return start.Name.Local == "true", nil
	case "array":
		var a []any
		for {
			el, err := nextStart(dec)
			if errors.Is(err, errEnd) {
				return a, nil
			}
			if err != nil {
				return nil, err
			}
			v, err := plistValue(dec, el)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
	case "dict":
		d := map[string]any{}
		for {
			el, err := nextStart(dec)
			if errors.Is(err, errEnd) {
				return d, nil
			}
			if err != nil {
				return nil, err
			}
			if el.Name.Local != "key" {
				return nil, fmt.Errorf("<%s> where a dict wants a <key>", el.Name.Local)
			}
			k, err := plistValue(dec, el)
			if err != nil {
				return nil, err
			}
			vel, err := nextStart(dec)
			if err != nil {
				return nil, fmt.Errorf("key %v has no value: %w", k, err)
			}
			if vel.Name.Local == "key" {
				return nil, fmt.Errorf("key %v has no value", k)
			}
			if d[k.(string)], err = plistValue(dec, vel); err != nil {
				return nil, err
			}
		}
	}
	return nil, fmt.Errorf("<%s> is not a property list value this test knows", start.Name.Local)
}
