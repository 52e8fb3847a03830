package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// tree is a small program: a root whose pre-run fails (a broken config),
// a group "cert" of "issue" and "revoke", and a leaf "status".
func tree(out *bytes.Buffer, ran *[]string) *cobra.Command {
	leaf := func(use string) *cobra.Command {
		return &cobra.Command{Use: use, Args: cobra.ArbitraryArgs, RunE: func(cmd *cobra.Command, args []string) error {
			*ran = append(*ran, cmd.CommandPath()+" "+strings.Join(args, " "))
			return nil
		}}
	}
	root := &cobra.Command{Use: "prog", SilenceErrors: true, SilenceUsage: true}
	cert := &cobra.Command{Use: "cert", Short: "certificates"}
	cert.AddCommand(leaf("issue"), leaf("revoke"))
	root.AddCommand(cert, leaf("status"), VersionCommand("prog"))
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if cmd.Name() == "status" {
			return errors.New("config unreadable")
		}
		return nil
	}
	root.SetOut(out)
	root.SetErr(out)
	StrictGroups(root)
	return root
}

// TestStrictGroups: a mistyped subcommand at any level is an error naming
// it, with suggestions when there are any; a group alone prints its help;
// real subcommands run with their arguments. A group's usage offers no
// flags to run it with.
func TestStrictGroups(t *testing.T) {
	tests := []struct {
		name string
		args []string
		err  string // "" for success
		out  string // in the output
		ran  string
	}{
		{"nested typo", []string{"cert", "revok", "gastown/nux"}, `unknown command "revok" for "prog cert": did you mean revoke? ('prog cert --help' lists its commands)`, "", ""},
		{"nested, nothing close", []string{"cert", "zzzzzz"}, `unknown command "zzzzzz" for "prog cert" ('prog cert --help' lists its commands)`, "", ""},
		{"root typo", []string{"stauts"}, `unknown command "stauts" for "prog": did you mean status?`, "", ""},
		{"cobra's completion command", []string{"completion", "bsh"}, `unknown command "bsh" for "prog completion": did you mean bash, fish or zsh?`, "", ""},
		{"group alone prints its help", []string{"cert"}, "", "certificates\n\nUsage:\n  prog cert\n  prog cert [command]\n", ""},
		{"subcommand runs", []string{"cert", "revoke", "gastown/nux"}, "", "", "prog cert revoke gastown/nux"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			var ran []string
			root := tree(&out, &ran)
			root.SetArgs(tc.args)
			err := root.Execute()
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)):
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			if strings.Contains(out.String(), "cert [flags]") {
				t.Errorf("usage offers to run the group with flags: %q", out.String())
			}
			if !strings.Contains(out.String(), tc.out) {
				t.Errorf("output %q lacks %q", out.String(), tc.out)
			}
			if got := strings.Join(ran, ";"); got != tc.ran {
				t.Errorf("ran %q, want %q", got, tc.ran)
			}
		})
	}
}

// TestVersionCommand: version prints one line, or one JSON object with
// every field, the stamped version and date among them, and answers even
// when the program's own pre-run would fail.
func TestVersionCommand(t *testing.T) {
	stamp(t, "v1.2", "2026-05-01T10:00:00Z")
	var out bytes.Buffer
	root := tree(&out, new([]string))
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return errors.New("config unreadable") }
	root.SetArgs([]string{"version"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if want := "prog v1.2 (revision "; !strings.HasPrefix(out.String(), want) || !strings.HasSuffix(out.String(), ", built 2026-05-01T10:00:00Z, "+runtime.Version()+", "+runtime.GOOS+"/"+runtime.GOARCH+")\n") {
		t.Errorf("version printed %q", out.String())
	}
	out.Reset()
	root.SetArgs([]string{"version", "--json"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("version --json printed %q: %v", out.String(), err)
	}
	for k, want := range map[string]any{"version": "v1.2", "date": "2026-05-01T10:00:00Z", "go_version": runtime.Version(), "os": runtime.GOOS, "arch": runtime.GOARCH} {
		if got[k] != want {
			t.Errorf("%s: %v, want %v", k, got[k], want)
		}
	}
	if _, ok := got["revision"].(string); !ok {
		t.Errorf("revision: %v", got["revision"])
	}
	if _, ok := got["modified"].(bool); !ok {
		t.Errorf("modified: %v", got["modified"])
	}
}

// TestVersionUnstamped: a binary built without make or GoReleaser says
// "dev" and an "unknown" date rather than nothing.
func TestVersionUnstamped(t *testing.T) {
	if b := ReadBuild(); b.Version != "dev" || b.Date != "unknown" || Version() != "dev" {
		t.Errorf("unstamped build reads %+v, Version() %q", b, Version())
	}
}

// stamp sets what -ldflags -X would for one test.
func stamp(t *testing.T, v, d string) {
	oldVersion, oldDate := version, date
	version, date = v, d
	t.Cleanup(func() { version, date = oldVersion, oldDate })
}
