package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/hostd/confine"
	"github.com/polecat-sidecar/sidecar/hostd/relay/grammar"
	"github.com/polecat-sidecar/sidecar/hostd/relay/internal/fixture"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// relayed runs argv through s over a real tunnel, as id, and returns its
// output (stdout and stderr) and exit code; an error frame is returned as
// the output, with code -1.
func relayed(t *testing.T, s *Service, id wire.Identity, argv ...string) (string, int) {
	t.Helper()
	client, server := tunneltest.Pair(t, id)
	tunneltest.Serve(t, server, s)
	st, err := client.OpenStream(context.Background(), wire.KindRelay, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	req := wire.RelayRequest{Cwd: []byte("/work")}
	for _, a := range argv {
		req.Argv = append(req.Argv, []byte(a))
	}
	b, err := wire.EncodeRelayRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	w := wire.NewRelayFrameWriter(st)
	if err := w.Frame(wire.RelayFrameRequest, b); err != nil {
		t.Fatal(err)
	}
	_ = w.Frame(wire.RelayFrameStdinClose, nil)
	var out bytes.Buffer
	fr := wire.NewRelayFrameReader(st)
	for {
		typ, payload, err := fr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("%q: the stream ended without an exit; output %q", argv, out.String())
		}
		if err != nil {
			t.Fatal(err)
		}
		switch typ {
		case wire.RelayFrameStdout, wire.RelayFrameStderr:
			out.Write(payload)
		case wire.RelayFrameError:
			return string(payload), -1
		case wire.RelayFrameExit:
			var exit wire.RelayExit
			if err := json.Unmarshal(payload, &exit); err != nil {
				t.Fatal(err)
			}
			return out.String(), exit.Code
		}
	}
}

// TestConfinementAlone turns the argument grammar off on purpose (a
// check that lets any line through, 'bd -c' with /bin/sh as bd: any command a
// grammar mistake could make a relayed program run) and shows that the
// kernel's confinement alone keeps the polecat to its place: the town's
// CA key, hostd's state, another polecat's directory, another rig's beads
// and anything outside the town are neither read nor written, nothing is
// run from the town, and the polecat's own files and its rig's still are.
func TestConfinementAlone(t *testing.T) {
	if s := confine.Probe(); !s.Available() {
		t.Skipf("no confinement here (%s): hostd refuses to relay", s)
	}
	town, outside := fixture.RealTempDir(t), fixture.RealTempDir(t)
	own := filepath.Join("gastown", "polecats", "furiosa")
	for name, data := range map[string]string{
		".runtime/ca/ca.key":                 "CA PRIVATE KEY\n",
		".runtime/hostd/certs.json":          "hostd's state\n",
		"gastown/README":                     "the rig's own file\n",
		"gastown/.beads/metadata.json":       `{"dolt_database":"gastown"}` + "\n",
		"gastown/.beads/last-touched":        "gt-1\n",
		"gastown/.beads/config.yaml":         "issue-prefix: gt\n",
		"other/.beads/metadata.json":         `{"dolt_database":"other"}` + "\n",
		"other/polecats/nux/other/secret":    "another polecat's file\n",
		own + "/gastown/notes.txt":           "the polecat's own file\n",
		own + "/run.sh":                      "#!/bin/sh\necho ran from the town\n",
		"gastown/polecats/nux/gastown/x.txt": "another polecat of the rig\n",
	} {
		fixture.WriteFile(t, town, name, data)
	}
	if err := os.Chmod(filepath.Join(town, own, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Links the polecat could have made in its own directory (its data
	// may hold links that stay in it, a push links in its worktree),
	// one to another rig's beads, one to the town's CA.
	fixture.Symlink(t, filepath.Join(town, "other", ".beads"), town, own+"/escape")
	fixture.Symlink(t, filepath.Join(town, ".runtime", "ca"), town, own+"/gastown/ca")

	cfg := DefaultConfig()
	cfg.Town, cfg.Logger = town, slog.New(slog.DiscardHandler)
	cfg.Binaries = map[string]string{"bd": "/bin/sh"}
	cfg.Policy.Allow = map[string][]string{"bd": {"show"}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.check = func(wire.RelayRequest) (grammar.Parsed, error) { return grammar.Parsed{Path: "bd -c"}, nil }

	cases := []struct {
		name, script string
		ok           bool
		unchanged    string // a file that must keep its content
	}{
		{"read the CA key", "cat " + filepath.Join(town, ".runtime/ca/ca.key"), false, ""},
		{"list the town's runtime directory", "ls " + filepath.Join(town, ".runtime"), false, ""},
		{"read hostd's state", "cat " + filepath.Join(town, ".runtime/hostd/certs.json"), false, ""},
		{"read another polecat's file", "cat " + filepath.Join(town, "other/polecats/nux/other/secret"), false, ""},
		{"read another polecat of the rig's file", "cat " + filepath.Join(town, "gastown/polecats/nux/gastown/x.txt"), false, ""},
		{"write outside the town", "echo x > " + filepath.Join(outside, "written"), false, ""},
		{"write another rig's beads", "echo '{}' > " + filepath.Join(town, "other/.beads/metadata.json"), false, "other/.beads/metadata.json"},
		{"write the CA key", "echo x > " + filepath.Join(town, ".runtime/ca/ca.key"), false, ".runtime/ca/ca.key"},
		{"write a rig file", "echo x > " + filepath.Join(town, "gastown/README"), false, "gastown/README"},
		{"run a program from the polecat's directory", filepath.Join(town, own, "run.sh"), false, ""},
		{"write another rig's beads through its own link", "echo '{}' > " + filepath.Join(town, own, "escape", "metadata.json"), false, "other/.beads/metadata.json"},
		{"read the CA key through its own link", "cat " + filepath.Join(town, own, "gastown", "ca", "ca.key"), false, ""},
		{"read a rig file", "cat " + filepath.Join(town, "gastown/README"), true, ""},
		{"read and write its own file", "cat " + filepath.Join(town, own, "gastown/notes.txt") + " && echo more >> " +
			filepath.Join(town, own, "gastown/notes.txt"), true, ""},
		{"write what bd keeps in its rig's beads", "echo x > " + filepath.Join(town, "gastown/.beads/last-touched"), true, ""},
		// Nothing it may write steers a process that runs later unconfined.
		{"write its rig's beads' configuration", "echo 'db: /elsewhere' > " + filepath.Join(town, "gastown/.beads/config.yaml"), false, "gastown/.beads/config.yaml"},
		{"make a redirect in its rig's beads", "echo ../other/.beads > " + filepath.Join(town, "gastown/.beads/redirect"), false, ""},
		{"make bd hooks in its rig's beads", "mkdir " + filepath.Join(town, "gastown/.beads/hooks"), false, ""},
		{"replace a file of its rig's beads", "mv " + filepath.Join(town, "gastown/.beads/last-touched") + " " + filepath.Join(town, "gastown/.beads/x"), false, ""},
		{"leave a symlink in the town's log directory", "ln -s " + filepath.Join(outside, "victim") + " " + filepath.Join(town, "logs/town.log"), false, ""},
		{"leave a symlink in its own directory", "ln -s /etc " + filepath.Join(town, own, "gastown/etc"), false, ""},
		{"write its temporary directory", `echo x > "$TMPDIR/t" && cat "$TMPDIR/t"`, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var before []byte
			if c.unchanged != "" {
				before, _ = os.ReadFile(filepath.Join(town, c.unchanged))
			}
			out, code := relayed(t, s, fixture.Furiosa, "bd", "-c", c.script)
			if got := code == 0; got != c.ok {
				t.Errorf("%s: exit %d, want success %v; output %q", c.script, code, c.ok, out)
			}
			for _, secret := range []string{"CA PRIVATE KEY", "hostd's state", "another polecat", "ran from the town"} {
				if strings.Contains(out, secret) {
					t.Errorf("%s: the output holds %q:\n%s", c.script, secret, out)
				}
			}
			if after, _ := os.ReadFile(filepath.Join(town, c.unchanged)); c.unchanged != "" && !bytes.Equal(before, after) {
				t.Errorf("%s changed %s to %q", c.script, c.unchanged, after)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(outside, "written")); err == nil {
		t.Error("a file was written outside the town")
	}
}

// TestOwnDir: a directory of hostd's user counts, a symlink to one (which
// anyone could make in /tmp) does not.
func TestOwnDir(t *testing.T) {
	dir := fixture.RealTempDir(t)
	fixture.Mkdirs(t, dir, "real")
	fixture.Symlink(t, filepath.Join(dir, "real"), dir, "link")
	fixture.WriteFile(t, dir, "file", "")
	for name, want := range map[string]bool{"real": true, "link": false, "file": false, "missing": false} {
		if got := ownDir(filepath.Join(dir, name)); got != want {
			t.Errorf("ownDir(%s) = %v, want %v", name, got, want)
		}
	}
}
