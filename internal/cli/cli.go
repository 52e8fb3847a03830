// Package cli holds what hostd's and gt-agent's command trees share: an
// unknown subcommand refused at every level, with cobra's suggestions, and
// the version command.
package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// StrictGroups makes every command in root's tree (root and cobra's
// completion command too) that only groups subcommands refuse an argument
// that names none of them: an error with cobra's "did you mean"
// suggestions, so the program exits non-zero. Cobra alone does so only at
// the root; below it, 'hostd cert revok' printed cert's help and exited 0.
// Given no argument, such a command still prints its help. Call it once
// the tree is built.
func StrictGroups(root *cobra.Command) {
	root.InitDefaultCompletionCmd() // else cobra adds it at Execute, after this walk
	strictGroups(root)
}

func strictGroups(c *cobra.Command) {
	for _, sub := range c.Commands() {
		strictGroups(sub)
	}
	if !c.HasSubCommands() || c.Runnable() {
		return
	}
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2 // cobra's default, which SuggestionsFor alone does not apply
	}
	c.Args = refuseUnknown
	c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	c.DisableFlagsInUseLine = true // run alone, it only prints this help
}

// refuseUnknown is a group's argument check: any argument is a subcommand
// it does not have.
func refuseUnknown(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		last := len(s) - 1
		alternatives := s[last]
		if last > 0 {
			alternatives = strings.Join(s[:last], ", ") + " or " + s[last]
		}
		msg += ": did you mean " + alternatives + "?"
	}
	return errors.New(msg + fmt.Sprintf(" ('%s --help' lists its commands)", cmd.CommandPath()))
}

// version, revision and date are stamped at build time by make build and
// GoReleaser (-ldflags -X github.com/polecat-sidecar/sidecar/internal/cli.version=...),
// here rather than in each main package so the flags do not depend on where
// a binary's main lives. revision is for where Go's own VCS stamp is off
// (GOFLAGS=-buildvcs=false, a copy of the tree without .git).
var (
	version  = "dev"
	revision = "unknown"
	date     = "unknown"
)

// Version is this binary's version as stamped at build time (git describe,
// or the release's tag), "dev" when built without make or GoReleaser.
func Version() string { return version }

// Build is what a binary knows of its own build, as 'version --json'
// prints it.
type Build struct {
	// Version is set at build time (make build: git describe), else "dev".
	Version string `json:"version"`
	// Revision is the commit built, from Go's VCS stamp or else make
	// build's; "unknown" when built outside a git checkout.
	Revision string `json:"revision"`
	// Modified says the checkout had uncommitted changes.
	Modified bool `json:"modified"`
	// Date is when it was built (RFC 3339, UTC), "unknown" when not stamped.
	Date string `json:"date"`
	// GoVersion is the Go toolchain that built it.
	GoVersion string `json:"go_version"`
	// OS and Arch are the platform it was built for.
	OS   string `json:"os"`
	Arch string `json:"arch"`
}

// ReadBuild is this binary's Build.
func ReadBuild() Build {
	b := Build{Version: version, Revision: revision, Date: date, GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is the build on one line: "v1.2 (revision 0123abcd, modified,
// built 2026-05-01T10:00:00Z, go1.26.1, darwin/arm64)".
func (b Build) String() string {
	rev := b.Revision
	if b.Modified {
		rev += ", modified"
	}
	return fmt.Sprintf("%s (revision %s, built %s, %s, %s/%s)", b.Version, rev, b.Date, b.GoVersion, b.OS, b.Arch)
}

// VersionCommand is the 'version' subcommand of the program named name.
// It needs no configuration: it answers even where the
// program's config file or town is broken.
func VersionCommand(name string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print " + name + "'s version, the commit it was built from, when, its Go version and platform",
		Long: `Print ` + name + `'s version, the commit it was built from, when it was built,
the Go version that built it and the platform it was built for, on one
line. With --json, one object: version, revision (the commit, "unknown"
when built outside a git checkout), modified (the checkout had uncommitted
changes), date (RFC 3339, "unknown" when not stamped), go_version, os and
arch.`,
		Args:              cobra.NoArgs,
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
		RunE: func(cmd *cobra.Command, _ []string) error {
			b := ReadBuild()
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(b)
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", name, b)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}
