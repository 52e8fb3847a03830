// Package doctor is 'hostd doctor': every check of what a town needs on
// this machine (its CA and gt-proxy-server's, the host's gt and bd, hostd's
// ports and control socket, the container runtime and the polecat image,
// each rig's exec wrapper, the kernel's confinement, the clock, free disk),
// each a small function of what it inspects, given as arguments (paths, a
// runtime's command, a PATH lookup), so that its tests point it at real temp
// towns, listeners and programs. Each check says ok, warn or fail, with the
// fix; Run runs them all into a Report.
package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/polecat-sidecar/sidecar/internal/termsafe"
)

// Status is a check's verdict.
type Status string

// The verdicts, in order of gravity.
const (
	// OK: nothing to do.
	OK Status = "ok"
	// Warn: the town works, but not wholly as it could (a polecat image
	// older than hostd, a rig whose polecats run on the host).
	Warn Status = "warn"
	// Fail: something the town needs is missing or broken.
	Fail Status = "fail"
)

// rank orders the verdicts by gravity.
func (s Status) rank() int {
	switch s {
	case Fail:
		return 2
	case Warn:
		return 1
	}
	return 0
}

// Line is one check's verdict.
type Line struct {
	// Check names what was checked: "ca", "gt", "tunnel-udp", "rig/gastown".
	Check string `json:"check"`
	// Status is ok, warn or fail.
	Status Status `json:"status"`
	// Message says what was found.
	Message string `json:"message"`
	// Fix says what to do; empty when the status is ok.
	Fix string `json:"fix,omitempty"`
}

func ok(check, format string, args ...any) Line {
	return Line{Check: check, Status: OK, Message: fmt.Sprintf(format, args...)}
}

func warn(check, fix, format string, args ...any) Line {
	return Line{Check: check, Status: Warn, Message: fmt.Sprintf(format, args...), Fix: fix}
}

func fail(check, fix, format string, args ...any) Line {
	return Line{Check: check, Status: Fail, Message: fmt.Sprintf(format, args...), Fix: fix}
}

// Report is every check's verdict, in the order they ran.
type Report struct {
	// Status is the gravest of the lines' (ok when there are none).
	Status Status `json:"status"`
	Lines  []Line `json:"checks"`
}

// Add appends lines, raising Status to the gravest.
func (r *Report) Add(lines ...Line) {
	if r.Status == "" {
		r.Status = OK
	}
	for _, l := range lines {
		if l.Status.rank() > r.Status.rank() {
			r.Status = l.Status
		}
		r.Lines = append(r.Lines, l)
	}
}

// Code is the exit status the report ends hostd doctor with: 0 when every
// check is ok, 1 with warnings, 2 with a failure.
func (r Report) Code() int { return r.Status.rank() }

// WriteText prints a line per check (its status, name and message, and
// the fix indented under it), then a count by status. Every field is
// escaped: rig names, settings and programs' output come from files and
// programs anyone may have written.
func (r Report) WriteText(w io.Writer) error {
	width := 0
	for _, l := range r.Lines {
		width = max(width, len(termsafe.Line(l.Check)))
	}
	counts := map[Status]int{}
	var b strings.Builder
	for _, l := range r.Lines {
		counts[l.Status]++
		fmt.Fprintf(&b, "%-4s  %-*s  %s\n", termsafe.Line(string(l.Status)), width, termsafe.Line(l.Check), termsafe.Line(l.Message))
		if l.Fix != "" {
			fmt.Fprintf(&b, "      %*s  fix: %s\n", width, "", termsafe.Line(l.Fix))
		}
	}
	fmt.Fprintf(&b, "%d checks: %d ok, %d warn, %d fail\n", len(r.Lines), counts[OK], counts[Warn], counts[Fail])
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON prints the report as one indented JSON object: status, and
// checks, each {check, status, message, fix}. encoding/json escapes
// control characters, and termsafe the rest a terminal would obey.
func (r Report) WriteJSON(w io.Writer) error {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the fixes' <rig> and <version> stay readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return err
	}
	_, err := io.WriteString(w, termsafe.String(b.String()))
	return err
}
