package doctor

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/polecat-sidecar/sidecar/hostd/confine"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox/runtimes"
	"github.com/polecat-sidecar/sidecar/internal/cli"
)

// TestRun: a town with everything it needs (a CA, hostd serve answering
// and holding its port, the tested gt and bd, the image of this hostd, a
// rig through hostd run) is ok on every line but the kernel's, which is
// this machine's; every check runs, in order. Settings serve would refuse
// fail the report.
func TestRun(t *testing.T) {
	town, addr := serve(t)
	writeFile(t, filepath.Join(town, "mayor", "town.json"), `{"type":"town"}`)
	writeFile(t, filepath.Join(town, "mayor", "rigs.json"), `{"rigs": {"gastown": {}}}`)
	writeFile(t, filepath.Join(town, "gastown", "settings", "config.json"), `{"runtime": {"exec_wrapper": ["hostd", "run", "--"]}}`)
	bin := t.TempDir()
	script(t, bin, "gt", `echo "gt version 1.0.1 (dev)"`)
	script(t, bin, "bd", `echo "bd version 1.0.0 (dev)"`)
	script(t, bin, "hostd", "exit 0\n")
	hostd := cli.Build{Version: "v1.2.0", Revision: "4f45b9f0a1b2c3d4e5f60718293a4b5c6d7e8f90"}
	docker := engine{image: "polecat:v1.2.0", labelVersion: hostd.Version, labelRevision: hostd.Revision}.standIn(t)
	cfg := Config{
		Town: town, ProxyCADir: filepath.Join(t.TempDir(), "ca"), LookPath: pathIn(bin), Listen: addr,
		Runtime: runtimes.Config{Name: docker}, Image: "polecat:v1.2.0", Agent: "/usr/local/bin/gt-agent", Hostd: hostd, MaxStoredBytes: 1 << 20,
	}
	r := Run(context.Background(), cfg)
	var checks []string
	for _, l := range r.Lines {
		checks = append(checks, l.Check)
		if l.Status != OK && l.Check != "confinement" {
			t.Errorf("%s: %s %q (fix %q), want ok", l.Check, l.Status, l.Message, l.Fix)
		}
	}
	want := []string{"settings", "town", "ca", "gt-proxy-server-ca", "clock", "gt", "bd", "control-socket", "tunnel-udp", "tunnel-tcp",
		"confinement", "runtime", "image", "rig/gastown", "disk"}
	if !slices.Equal(checks, want) {
		t.Errorf("checks %v, want %v", checks, want)
	}
	if confined := confine.Probe().Available(); (r.Status == OK) != confined || (r.Code() == 0) != confined {
		t.Errorf("status %s, code %d, with confinement %v", r.Status, r.Code(), confined)
	}

	cfg.Settings = errors.New("hostd serve's settings:\nsetting cert_ttl is -1h0m0s (config file x): it must be above 0")
	r = Run(context.Background(), cfg)
	expect(t, r.Lines[0], Fail, "hostd serve's settings:; setting cert_ttl is -1h0m0s", "hostd config show")
	if r.Status != Fail || r.Code() != 2 {
		t.Errorf("settings serve refuses: status %s, code %d; want fail, 2", r.Status, r.Code())
	}
}
