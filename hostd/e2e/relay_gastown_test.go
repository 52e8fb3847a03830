package e2e

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
)

// gasTownRelay is a town the real gt made with two rigs, gastown and
// other, a polecat of each from Gas Town's pool, hostd relaying the real
// gt and bd, and gastown's polecat's agent: the polecat the tests play.
type gasTownRelay struct {
	*relayRig
	g        *GasTown
	worktree string // the polecat's host worktree
	branch   string // the branch checked out there
	gitURL   string // the rig through the polecat's agent
}

// newGasTownRelay makes the town; the test is skipped without
// GASTOWN_TOOLS ('make e2e-gastown' runs it with them).
func newGasTownRelay(t *testing.T) *gasTownRelay {
	tools := os.Getenv("GASTOWN_TOOLS")
	if tools == "" {
		t.Skip("GASTOWN_TOOLS is not set: 'make e2e-gastown' runs this with the real gt, bd and dolt")
	}
	g := NewGasTown(t, tools, "relaytown")
	g.AddRig(t, "gastown", "gt")
	g.AddRig(t, "other", "ot")
	g.GtMust(t, "polecat", "pool-init", "gastown", "--size", "1")
	g.GtMust(t, "polecat", "pool-init", "other", "--size", "1")
	name := poolPolecat(t, g, "gastown")
	tw := TownAt(t, g.Dir)
	hostd, addr := tw.Serve("--relay-gt", filepath.Join(tools, "gt"), "--relay-bd", filepath.Join(tools, "bd"))
	r := &relayRig{tw: tw, name: name, hostd: hostd, socket: filepath.Join(t.TempDir(), "agent.sock"), addr: addr}
	gitAddr := tunneltest.FreeAddr(t)
	r.agent = Start(t, AgentEnv(addr, tw.Issue("gastown/"+name, time.Hour)), "gt-agent", "up", "--socket", r.socket, "--git-listen", gitAddr)
	tw.WaitStatus(20*time.Second, Connected(name, ""))
	gr := &gasTownRelay{relayRig: r, g: g, worktree: filepath.Join(g.Dir, "gastown", "polecats", name, "gastown"), gitURL: "http://" + gitAddr + "/v1/git/gastown"}
	gr.branch = strings.TrimSpace(gr.git(t, gr.worktree, "branch", "--show-current"))
	return gr
}

// poolPolecat is the name of the polecat gt polecat pool-init made in rig.
func poolPolecat(t *testing.T, g *GasTown, rig string) string {
	entries, err := os.ReadDir(filepath.Join(g.Dir, rig, "polecats"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			return e.Name()
		}
	}
	t.Fatalf("gt polecat pool-init made no polecat in %s", rig)
	return ""
}

// git runs git in dir (the operator's, on the host) and returns its
// output, failing the test on error.
func (gr *gasTownRelay) git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// pushFiles commits files (a content "-> x" is a symlink to x; a name
// ending in "*" is executable) on the polecat's branch in a clone
// through its agent and pushes it, as the polecat does from its
// container; it returns git push's output and error.
func (gr *gasTownRelay) pushFiles(t *testing.T, files map[string]string) (string, error) {
	t.Helper()
	clone := filepath.Join(t.TempDir(), "clone")
	gr.git(t, "/", "clone", "-q", "--branch", gr.branch, gr.gitURL, clone)
	for name, content := range files {
		mode := os.FileMode(0o644)
		if n, ok := strings.CutSuffix(name, "*"); ok {
			name, mode = n, 0o755
		}
		p := filepath.Join(clone, name)
		if err := os.RemoveAll(p); err != nil { // what an earlier push left
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "-> "); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	gr.git(t, clone, "add", "-A", "-f")
	gr.git(t, clone, "-c", "user.name=polecat", "-c", "user.email=polecat@example.com", "commit", "-q", "-m", "the polecat's")
	out, err := exec.Command("git", "-C", clone, "push", "origin", gr.branch).CombinedOutput()
	return string(out), err
}

// hostFile is the content of a file below the town, "" when it is missing.
func (gr *gasTownRelay) hostFile(rel string) string {
	b, _ := os.ReadFile(filepath.Join(gr.g.Dir, rel))
	return string(b)
}

// refused checks a relayed command was refused by hostd with want.
func refused(t *testing.T, res result, want string) {
	t.Helper()
	if res.code != 255 || !strings.Contains(string(res.stderr), want) {
		t.Errorf("exit %d, stderr %q; want hostd's refusal %q", res.code, res.stderr, want)
	}
}

// TestRelayGasTownContainment: the relay's containment with the real gt
// v1.0.1 and bd v1.0.0 in a town gt made, each attack issue 36 found on
// main tried as the polecat (its agent, git and the shim): a relayed
// argument naming the town's CA key or writing a host file, a push of
// .beads/redirect and .beads/hooks into the host worktree and the next
// relayed bd create, a pushed .beads symlink to another rig and the next
// relayed gt prime and bd create. Each is refused or harmless: the key
// is never read, no host file outside the polecat's and its rig's places
// is written, no hook runs, the other rig's beads are intact; and Gas
// Town's own flows still work relayed.
func TestRelayGasTownContainment(t *testing.T) {
	gr := newGasTownRelay(t)
	caKey := filepath.Join(gr.g.Dir, ".runtime", "ca", "ca.key")
	outside := t.TempDir()

	t.Run("a relayed argument cannot read the CA key", func(t *testing.T) {
		for _, argv := range [][]string{
			{"create", "leak", "--body-file", caKey},
			{"create", "leak", "--body-file=" + caKey},
			{"create", "leak", "--design-file", caKey},
			{"create", "leak", "--metadata", "@" + caKey},
			{"update", "gt-1", "--body-file", caKey},
			{"create", "-f", caKey},
			{"create", "leak", "--db", filepath.Dir(caKey)},
		} {
			res := gr.run(t, nil, "bd", argv...)
			refused(t, res, "bd: hostd (on the host): ")
		}
		res := gr.run(t, nil, "bd", "export")
		if res.code != 0 || bytes.Contains(res.stdout, []byte("PRIVATE KEY")) {
			t.Errorf("bd export: exit %d (%s); the export holds the CA key: %v", res.code, res.stderr, bytes.Contains(res.stdout, []byte("PRIVATE KEY")))
		}
	})

	t.Run("a relayed argument cannot write a host file", func(t *testing.T) {
		target := filepath.Join(outside, "written")
		for _, argv := range [][]string{
			{"export", "-o", target},
			{"export", "--output=" + target},
			{"doctor", "--output", target},
			{"doctor", outside},
			{"list", "--profile"},
			{"doctor", "--fix"},
		} {
			refused(t, gr.run(t, nil, "bd", argv...), "bd: hostd (on the host): ")
		}
		if _, err := os.Stat(target); err == nil {
			t.Error("a relayed bd wrote a file outside the town")
		}
	})

	hookRan := filepath.Join(outside, "hook-ran")
	hook := "#!/bin/sh\ntouch " + hookRan + "\n"
	t.Run("a pushed bd redirect and hook", func(t *testing.T) {
		redirect := gr.hostFile("gastown/polecats/" + gr.name + "/gastown/.beads/redirect")
		out, err := gr.pushFiles(t, map[string]string{".beads/redirect": "../../../../other/.beads\n", ".beads/hooks/on_create*": hook})
		if err == nil || !strings.Contains(out, ".beads") {
			t.Errorf("the push was not refused: %v\n%s", err, out)
		}
		if got := gr.hostFile("gastown/polecats/" + gr.name + "/gastown/.beads/redirect"); got != redirect {
			t.Errorf("Gas Town's redirect became %q", got)
		}
		// Had they reached the host worktree by another way, the relay
		// refuses to run there, and nothing runs a hook.
		WriteFile(t, filepath.Join(gr.worktree, ".beads", "hooks", "on_create"), hook)
		_ = os.Chmod(filepath.Join(gr.worktree, ".beads", "hooks", "on_create"), 0o755)
		refused(t, gr.run(t, nil, "bd", "create", "after the hook"), ".beads/hooks, which Gas Town never puts there")
		if err := os.RemoveAll(filepath.Join(gr.worktree, ".beads", "hooks")); err != nil {
			t.Fatal(err)
		}
		WriteFile(t, filepath.Join(gr.worktree, ".beads", "redirect"), "../../../../other/.beads\n")
		refused(t, gr.run(t, nil, "bd", "create", "after the redirect"), ".beads/redirect leading elsewhere than the rig's beads")
		refused(t, gr.run(t, nil, "gt", "prime"), ".beads/redirect leading elsewhere than the rig's beads")
		WriteFile(t, filepath.Join(gr.worktree, ".beads", "redirect"), redirect)
		if _, err := os.Stat(hookRan); err == nil {
			t.Error("the polecat's bd hook ran on the host")
		}
	})

	t.Run("a pushed .beads symlink to another rig", func(t *testing.T) {
		other := gr.hostFile("other/.beads/metadata.json")
		if other == "" {
			t.Fatal("the other rig has no beads metadata")
		}
		beforeOther := gr.otherBeads(t)
		out, err := gr.pushFiles(t, map[string]string{".beads": "-> ../../../../other/.beads"})
		if err == nil {
			t.Errorf("the push of a .beads symlink out of the worktree was not refused:\n%s", out)
		}
		// Had it reached the host worktree, the relay refuses to follow it.
		beads := filepath.Join(gr.worktree, ".beads")
		if err := os.Rename(beads, beads+".kept"); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../../../../other/.beads", beads); err != nil {
			t.Fatal(err)
		}
		refused(t, gr.run(t, nil, "gt", "prime"), "not a directory: relayed commands would follow it")
		refused(t, gr.run(t, nil, "bd", "create", "into the other rig"), "not a directory: relayed commands would follow it")
		if err := os.Remove(beads); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(beads+".kept", beads); err != nil {
			t.Fatal(err)
		}
		if got := gr.hostFile("other/.beads/metadata.json"); got != other {
			t.Errorf("the other rig's metadata.json became %q", got)
		}
		if got := gr.hostFile("other/.beads/redirect"); got != "" {
			t.Errorf("a redirect was written into the other rig's beads: %q", got)
		}
		if after := gr.otherBeads(t); after != beforeOther {
			t.Errorf("the other rig's beads changed:\nbefore %s\nafter  %s", beforeOther, after)
		}
	})

	t.Run("Gas Town's flows still work relayed", func(t *testing.T) {
		for _, argv := range [][]string{
			{"gt", "prime"}, {"gt", "hook"}, {"gt", "mail", "inbox"},
			{"gt", "mail", "send", "gastown/" + gr.name, "-s", "note", "-m", "to self"},
			{"bd", "create", "made by the polecat"}, {"bd", "list"}, {"bd", "ready"}, {"bd", "stats"},
		} {
			if res := gr.run(t, nil, argv[0], argv[1:]...); res.code != 0 {
				t.Errorf("%q: exit %d\n%s%s", argv, res.code, res.stdout, res.stderr)
			}
		}
		if res := gr.run(t, strings.NewReader("from stdin\n"), "bd", "create", "described on stdin", "--body-file", "-"); res.code != 0 {
			t.Errorf("bd create --body-file -: exit %d %s", res.code, res.stderr)
		}
		if _, err := os.Stat(hookRan); err == nil {
			t.Error("a bd hook ran on the host")
		}
	})
}

// otherBeads is the other rig's beads as its own bd lists them, on the
// host.
func (gr *gasTownRelay) otherBeads(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(gr.g.Tools, "bd"), "list", "--all", "--json")
	cmd.Dir = filepath.Join(gr.g.Dir, "other")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bd list in the other rig: %v", err)
	}
	return string(out)
}

// TestRelayGasTownPolecatCommands: what Gas Town's own polecat hooks run,
// and what its role context and formulas have the agent run that the
// relay once refused, run relayed with the real gt and bd in a town gt
// made, doing on the host what they do for a host polecat: gt costs
// record appends the polecat's session to the operator's cost log, the
// guards block (exit 2, which Claude Code obeys) and let pass, the stop
// check finds nothing to submit, an escalation is made, gt dolt status
// reports the server, the merge slot is held and released as the polecat;
// while gt dolt stop is refused and the server stays, and so are
// merge-slot's --holder, bd mol squash and gt escalate close.
func TestRelayGasTownPolecatCommands(t *testing.T) {
	gr := newGasTownRelay(t)
	home, err := os.UserHomeDir() // NewGasTown's, which hostd inherits
	if err != nil {
		t.Fatal(err)
	}
	costs := filepath.Join(home, ".gt", "costs.jsonl")
	before, _ := os.ReadFile(costs)
	for _, c := range []struct {
		argv  []string
		stdin string
		code  int
		out   string // in stdout or stderr
	}{
		{argv: []string{"gt", "prime", "--hook"}, stdin: `{"session_id":"relayed-session","source":"startup"}`},
		{argv: []string{"gt", "mail", "check", "--inject"}},
		{argv: []string{"gt", "costs", "record"}},
		{argv: []string{"gt", "tap", "guard", "pr-workflow"}, code: 2, out: "PR WORKFLOW BLOCKED"},
		{argv: []string{"gt", "tap", "guard", "dangerous-command"}, stdin: `{"tool_input":{"command":"sudo apt install x"}}`, code: 2, out: "DANGEROUS COMMAND BLOCKED"},
		{argv: []string{"gt", "tap", "guard", "dangerous-command"}, stdin: `{"tool_input":{"command":"go test ./..."}}`},
		{argv: []string{"gt", "tap", "polecat-stop-check"}},
		{argv: []string{"gt", "escalate", "relayed escalation", "-s", "HIGH"}},
		{argv: []string{"gt", "dolt", "status"}, out: "Dolt server is"},
		{argv: []string{"bd", "new", "-t", "task", "Add gt mail hook alias", "-l", "desire-path"}},
		{argv: []string{"bd", "formula", "list"}},
		{argv: []string{"bd", "mol", "current"}},
		// mol-polecat-conflict-resolve's merge slot, without the --holder
		// the relay refuses: bd holds it as the polecat (BD_ACTOR).
		{argv: []string{"bd", "merge-slot", "create"}},
		{argv: []string{"bd", "merge-slot", "acquire", "--wait", "--json"}, out: `"holder": "gastown/polecats/` + gr.name + `"`},
		{argv: []string{"bd", "merge-slot", "check", "--json"}, out: `"holder": "gastown/polecats/` + gr.name + `"`},
		{argv: []string{"bd", "merge-slot", "release", "--json"}, out: `"released": true`},
	} {
		var stdin io.Reader
		if c.stdin != "" {
			stdin = strings.NewReader(c.stdin)
		}
		res := gr.run(t, stdin, c.argv[0], c.argv[1:]...)
		if res.code != c.code || !bytes.Contains(append(res.stdout, res.stderr...), []byte(c.out)) {
			t.Errorf("%q: exit %d, want %d with %q\n%s%s", c.argv, res.code, c.code, c.out, res.stdout, res.stderr)
		}
	}
	after, _ := os.ReadFile(costs)
	if added := strings.TrimPrefix(string(after), string(before)); !strings.Contains(added, `"session_id":"gt-`+gr.name+`"`) {
		t.Errorf("gt costs record added %q to %s, want the polecat's session", added, costs)
	}
	refused(t, gr.run(t, nil, "bd", "merge-slot", "acquire", "--holder=root", "--wait", "--json"), "'bd merge-slot acquire --holder' is refused over the relay")
	refused(t, gr.run(t, nil, "bd", "mol", "squash", "gt-wisp"), "'bd mol squash' is refused over the relay: it deletes beads")
	refused(t, gr.run(t, nil, "gt", "escalate", "close", "hq-abc", "--reason", "fixed"), "'gt escalate close' is refused over the relay")
	refused(t, gr.run(t, nil, "gt", "dolt", "stop"), "'gt dolt stop' is refused over the relay")
	if res := gr.run(t, nil, "bd", "list"); res.code != 0 {
		t.Errorf("bd list after a refused gt dolt stop: exit %d %s", res.code, res.stderr)
	}
}
