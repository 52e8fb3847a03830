package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// build is what 'version --json' prints (internal/cli's Build).
type build struct {
	Version  string `json:"version"`
	Revision string `json:"revision"`
	Date     string `json:"date"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
}

// checkVersions runs the linux/amd64 hostd and gt-agent, taken from their
// archives, where this machine can: each must say the release's version,
// commit and build date, as one line and as JSON.
func checkVersions(dist string, rel release) error {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return fmt.Errorf("this machine is %s/%s: it cannot run the linux/amd64 binaries", runtime.GOOS, runtime.GOARCH)
	}
	tmp, err := os.MkdirTemp("", "releasecheck-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var errs []error
	for _, a := range expected() {
		if a.goos != "linux" || a.goarch != "amd64" {
			continue
		}
		name := a.name(rel.Version)
		data, err := os.ReadFile(filepath.Join(dist, name))
		if err != nil {
			return err
		}
		entries, err := readTarGz(data)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		bin := filepath.Join(tmp, a.program)
		if err := os.WriteFile(bin, entries[strings.TrimSuffix(name, ".tar.gz")+"/"+a.program].data, 0o755); err != nil {
			return err
		}
		if err := checkVersion(bin, a.program, rel); err != nil {
			errs = append(errs, fmt.Errorf("%s version: %w", a.program, err))
		}
	}
	return errors.Join(errs...)
}

func checkVersion(bin, program string, rel release) error {
	// HOME and the town are empty: version must answer without a config
	cmd := exec.Command(bin, "version", "--json")
	cmd.Env = []string{"HOME=" + filepath.Dir(bin), "PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	var b build
	if err := json.Unmarshal(out, &b); err != nil {
		return fmt.Errorf("--json printed %q: %w", out, err)
	}
	built, err := time.Parse(time.RFC3339, b.Date)
	if err != nil {
		return fmt.Errorf("date %q: %w", b.Date, err)
	}
	released, err := time.Parse(time.RFC3339, rel.Date)
	if err != nil {
		return fmt.Errorf("metadata.json's date %q: %w", rel.Date, err)
	}
	if b.Version != rel.Version || b.Revision != rel.Commit || !built.Equal(released.Truncate(time.Second)) || b.OS != "linux" || b.Arch != "amd64" {
		return fmt.Errorf("--json printed %s; want version %s, revision %s, date %s, linux/amd64", out, rel.Version, rel.Commit, rel.Date)
	}
	cmd = exec.Command(bin, "version")
	cmd.Env = []string{"HOME=" + filepath.Dir(bin), "PATH=/usr/bin:/bin"}
	if out, err = cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	if want := program + " " + rel.Version + " (revision " + rel.Commit; !strings.HasPrefix(string(out), want) || !strings.Contains(string(out), "built "+b.Date+",") {
		return fmt.Errorf("printed %q, want %q... built %s", out, want, b.Date)
	}
	return nil
}
