package main

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// checkFormula reads the Homebrew formula goreleaser wrote: hostd at the
// release's version, each hostd archive's URL followed by its checksum,
// hostd installed from it, and the service that runs 'hostd serve'.
func checkFormula(path string, rel release, sums map[string]string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	formula := string(data)
	var errs []error
	for _, want := range []string{
		"class Hostd < Formula",
		`version "` + rel.Version + `"`,
		`license "Apache-2.0"`,
		`bin.install "hostd"`,
		`pkgshare.install "docs/service"`,
		`generate_completions_from_executable(bin/"hostd", "completion")`,
		`run [opt_bin/"hostd", "serve", "--town", "#{Dir.home}/gt"]`,
		`keep_alive successful_exit: false`,
		`assert_match "hostd #{version} ", shell_output("#{bin}/hostd version")`,
	} {
		if !strings.Contains(formula, want) {
			errs = append(errs, fmt.Errorf("no %s", want))
		}
	}
	if service := regexp.MustCompile(`(?s)\n  service do\n(.*?)\n  end\n`).FindStringSubmatch(formula); service == nil || !strings.Contains(service[1], `run [opt_bin/"hostd", "serve"`) {
		errs = append(errs, errors.New("no service block running hostd serve"))
	}
	for _, a := range expected() {
		if a.program != "hostd" {
			continue
		}
		name := a.name(rel.Version)
		pkg := regexp.MustCompile(`url "[^"]*/` + regexp.QuoteMeta(name) + `"\s*\n\s*sha256 "([0-9a-f]{64})"`).FindStringSubmatch(formula)
		switch {
		case pkg == nil:
			errs = append(errs, fmt.Errorf("no url for %s followed by its sha256", name))
		case pkg[1] != sums[name]:
			errs = append(errs, fmt.Errorf("%s: sha256 %s, the checksums file says %s", name, pkg[1], sums[name]))
		}
	}
	if strings.Contains(formula, "gt-agent_") {
		errs = append(errs, errors.New("it names a gt-agent archive: the formula is hostd's alone"))
	}
	return errors.Join(errs...)
}
