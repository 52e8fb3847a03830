package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/hostd/cli/clitest"
	"github.com/polecat-sidecar/sidecar/hostd/doctor"
	"github.com/polecat-sidecar/sidecar/hostd/state"
)

// TestDoctor: hostd doctor checks the town with the settings serve and
// run read (config.yaml's sandbox.image and runtime, run's default
// sandbox.agent), prints a line per check or, with --json, one object,
// and exits 0, 1 or 2 as the gravest line is ok, warn or fail; settings
// serve would refuse are a failure, not an error that stops it.
func TestDoctor(t *testing.T) {
	town := clitest.NewTown(t)
	bin := t.TempDir()
	engine := filepath.Join(bin, "docker") // a stand-in: the image there, gt-agent saying it is the path it ran as
	if err := os.WriteFile(engine, []byte(`#!/bin/sh
case "$1" in
info) exit 0 ;;
image) case "$4" in *Labels*) echo ;; *) echo sha256:0123 ;; esac ;;
run) printf '{"version":"%s","revision":"unknown"}\n' "$6" ;;
esac
`), 0o755); err != nil {
		t.Fatal(err)
	}
	config := state.For(town).Config()
	write := func(yaml string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(config), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("sandbox:\n  image: polecat:test\n  runtime: " + engine + "\n")
	out, code := hostd.Run(t, town, "", "doctor", "--json")
	var r doctor.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, out)
	}
	if code != r.Code() || code == 0 { // the town is not Gas Town's: at least a warning
		t.Errorf("exit %d for a report that is %s", code, r.Status)
	}
	lines := map[string]doctor.Line{}
	for _, l := range r.Lines {
		lines[l.Check] = l
	}
	if l := lines["image"]; l.Status != doctor.Warn || !strings.Contains(l.Message, "image polecat:test has gt-agent /usr/local/bin/gt-agent by its own word; hostd is dev") {
		t.Errorf("image: %+v; want the configured image and run's default sandbox.agent", l)
	}
	if l := lines["ca"]; l.Status != doctor.OK {
		t.Errorf("ca: %+v", l)
	}
	text, code := hostd.Run(t, town, "", "doctor")
	if code != r.Code() || !strings.Contains(text, "\nok    ca ") || !strings.Contains(text, " checks: ") {
		t.Errorf("doctor: exit %d\n%s", code, text)
	}

	write("cert_ttl: -1h\n")
	out, code = hostd.Run(t, town, "", "doctor", "--json")
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 2 || r.Lines[0].Check != "settings" || r.Lines[0].Status != doctor.Fail ||
		!strings.Contains(r.Lines[0].Message, "setting cert_ttl is -1h0m0s") {
		t.Errorf("doctor with a setting serve refuses: exit %d, %v\n%s", code, err, out)
	}
}
