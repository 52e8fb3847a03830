package grammar

import (
	"os"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/hostd/relay/internal/fixture"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// req is a relay request of argv with env.
var req = fixture.Request

func TestPolicyCheck(t *testing.T) {
	p := Policy{Allow: DefaultAllow, EnvAllow: DefaultEnvAllow}
	allowed := []wire.RelayRequest{
		req(nil, "gt", "prime"),
		req(nil, "gt", "mail", "inbox", "--json"),
		req(nil, "bd", "show", "gt-123", "x--identity"),
		req(nil, "bd", "update", "gt-1", "-actor=mayor"), // pflag reads -a (assignee) "ctor=mayor"
		req([]string{"TERM=xterm", "COLUMNS=80", "NO_COLOR="}, "bd", "ready"),
		req([]string{"LANG=en_US.UTF-8", "LC_ALL=C", "TZ=Europe/Paris", "TZ=UTC"}, "bd", "ready"),
		req(nil, "gt", "mail", "send", "-m", "use - not --"),
	}
	for _, r := range allowed {
		if _, err := p.Check(r); err != nil {
			t.Errorf("%q refused: %v", r.Argv, err)
		}
	}
	refused := []struct {
		r    wire.RelayRequest
		want string
	}{
		{req(nil, "sh", "-c", "id"), "only bd and gt"},
		{req(nil, "gt"), "needs a subcommand"},
		{req(nil, "gt", "rig", "remove"), "not allowed"},
		{req(nil, "gt", "Status"), "not allowed"},
		{req(nil, "gt", "status "), "not allowed"},
		{req(nil, "bd", "delete", "x"), "not allowed"},
		{req(nil, "gt", "--actor", "status"), "not allowed"},
		{req(nil, "bd", "update", "--actor", "mayor"), "'bd update --actor' is refused over the relay: hostd sets the polecat's identity"},
		{req(nil, "bd", "update", "--actor=mayor"), "'bd update --actor' is refused"},
		{req(nil, "gt", "mail", "inbox", "--identity=gastown/nux"), "'gt mail inbox --identity' is refused"},
		{req(nil, "gt", "nudge", "x", "--address", "a"), "'gt nudge' has no flag --address"},
		{req(nil, "bd", "create", "x", "--body-file", "/town/.runtime/ca/ca.key"), "must be '-'"},
		{req([]string{"GT_ROLE=mayor"}, "gt", "prime"), `"GT_ROLE" is refused`},
		{req([]string{"GT_RIG=x"}, "gt", "prime"), `"GT_RIG" is refused`},
		{req([]string{"BD_ACTOR=x"}, "bd", "ready"), `"BD_ACTOR" is refused`},
		{req([]string{"GIT_AUTHOR_NAME=mayor"}, "bd", "ready"), `"GIT_AUTHOR_NAME" is refused`},
		{req([]string{"BEADS_DIR=/etc"}, "bd", "ready"), `"BEADS_DIR" is refused`},
		{req([]string{"GT_PROXY_IDENTITY=x"}, "gt", "prime"), "refused"},
		{req([]string{"LD_PRELOAD=/tmp/x"}, "gt", "prime"), "not relayed"},
		{req([]string{"PATH=/tmp"}, "gt", "prime"), "not relayed"},
		{req([]string{"HOME=/evil"}, "gt", "prime"), "not relayed"},
		{req([]string{"LANG=../../polecats/x/locale"}, "gt", "prime"), "may not name a path"},
		{req([]string{"LC_ALL=/tmp/locale"}, "gt", "prime"), "may not name a path"},
		{req([]string{"TERM=../x"}, "gt", "prime"), "may not name a path"},
		{req([]string{"TZ=/town/gastown/polecats/x/zone"}, "gt", "prime"), "may not name a path"},
		{req([]string{"TZ=:/etc/x"}, "gt", "prime"), "may not name a path"},
		{req([]string{"TZ=Europe/../../x"}, "gt", "prime"), "may not name a path"},
		{req([]string{"TERM=xterm\x1b]52"}, "gt", "prime"), "may not name a path"},
	}
	for _, c := range refused {
		if _, err := p.Check(c.r); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q env %q: got %v, want %q", c.r.Argv, c.r.Env, err, c.want)
		}
	}
}

// TestPolicyRefusalNamesTheSetting: a command or subcommand the allowlist
// leaves out is named in the refusal, escaped, with the setting that
// would allow it (relay.allow.<command>), or the reason none would; and
// Check's parsed path names it too, for hostd's log.
func TestPolicyRefusalNamesTheSetting(t *testing.T) {
	narrow := Policy{Allow: map[string][]string{"gt": {"prime", "done"}}, EnvAllow: DefaultEnvAllow}
	long := "costs\x1b[2J" + strings.Repeat("x", 100)
	for _, c := range []struct {
		argv     []string
		want     []string
		path     string
		notWants string
	}{
		{[]string{"gt", "costs", "record"}, []string{"'gt costs' is not allowed over the relay: the operator allows it by adding costs to relay.allow.gt in hostd's configuration; allowed: prime, done"}, "gt costs", ""},
		{[]string{"gt", "tap", "guard", "pr-workflow"}, []string{"'gt tap' is not allowed", "adding tap to relay.allow.gt"}, "gt tap", ""},
		{[]string{"gt", "rig", "remove"}, []string{"'gt rig' is not allowed over the relay: hostd has no argument grammar for it, so no setting allows it"}, "gt rig", ""},
		{[]string{"gt", "costs\x1b]0;pwned\x07"}, []string{`'gt "costs\x1b]0;pwned\a"' is not allowed`, "no setting allows it"}, `gt "costs\x1b]0;pwned\a"`, "\x1b]"},
		{[]string{"gt", long}, []string{`'gt "costs\x1b[2J`, "..."}, "", strings.Repeat("x", 50)},
		{[]string{"bd", "ready"}, []string{"'bd' is not allowed over the relay: the operator allows it by listing its subcommands in relay.allow.bd"}, "bd", ""},
		{[]string{"sh", "-c", "id"}, []string{"'sh' cannot be relayed: hostd relays only bd and gt"}, "", ""},
		{[]string{"\x1b[2Jsh"}, []string{`'"\x1b[2Jsh"' cannot be relayed`}, "", "\x1b["},
	} {
		line, err := narrow.Check(req(nil, c.argv...))
		if err == nil {
			t.Errorf("%q allowed", c.argv)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: %q, want %q", c.argv, err, w)
			}
		}
		if c.notWants != "" && strings.Contains(err.Error(), c.notWants) {
			t.Errorf("%q: %q holds %q", c.argv, err, c.notWants)
		}
		if c.path != "" && line.Path != c.path {
			t.Errorf("%q: parsed as %q, want %q for the log", c.argv, line.Path, c.path)
		}
	}
}

// gasTownPolecatCommands is every gt and bd command line Gas Town v1.0.1
// runs in a polecat's session, or tells its agent to run: its Claude
// hooks for polecats, its role context (gt prime's output, the polecat
// CLAUDE.md, the /done and /handoff commands, the spawn and nudge
// messages) and its polecat formulas; with the refusal of each the relay
// refuses ("" when allowed). docs/security.md's table lists each with
// where Gas Town runs it and why it is refused.
var gasTownPolecatCommands = []struct{ line, refused string }{
	// Hooks.
	{"gt prime --hook", ""},
	{"gt mail check --inject", ""},
	{"gt costs record", ""},
	{"gt tap polecat-stop-check", ""},
	{"gt tap guard pr-workflow", ""},
	{"gt tap guard dangerous-command", ""},
	// Role context and formulas.
	{"gt prime", ""},
	{"gt hook", ""},
	{"gt hook attach hq-abc", ""},
	{"gt mail inbox", ""},
	{"gt mail read hq-abc", ""},
	{"gt mol attach-from-mail hq-abc", ""},
	{`gt mail send gastown/witness -s "HELP: Stuck on implementation" -m "Issue: gt-abc"`, ""},
	{`gt mail send mayor/ -s "Scope question: gt-abc" -m "Proceed?"`, ""},
	{`gt nudge gastown/witness "message"`, ""},
	{`gt handoff -y -s "HANDOFF: Session cycling" -m "message"`, ""},
	{`gt handoff -s "Polecat work handoff" -m "Issue: gt-abc"`, ""},
	{"gt done", ""},
	{"gt done --pre-verified --target main", ""},
	{"gt done --status DEFERRED", ""},
	{"gt done --status ESCALATED", ""},
	{"gt done --cleanup-status clean", ""},
	{"gt done --no-merge", "'gt done' has no flag --no-merge"},
	{`gt escalate "Brief description" -s HIGH`, ""},
	{`gt escalate -s HIGH "Dolt: server down"`, ""},
	{`gt escalate "Brief description" -s HIGH -m "Details"`, "'gt escalate' has no flag -m"},
	{"gt dolt status", ""},
	{"gt sling gt-fix gastown", ""},
	{"bd prime", ""},
	{"bd show gt-abc", ""},
	{"bd show hq-abc", ""},
	{"bd ready", ""},
	{"bd list --status=open", ""},
	{"bd list --status=in_progress", ""},
	{"bd blocked", ""},
	{"bd dep add gt-b gt-a", ""},
	{"bd update gt-abc --status=in_progress", ""},
	{`bd update gt-abc --notes "Findings so far"`, ""},
	{`bd update gt-abc --design "structured findings"`, ""},
	{"bd update gt-abc --add-label desire-path", ""},
	{"bd close gt-abc", ""},
	{`bd close gt-abc --reason="no-changes: already fixed"`, ""},
	{`bd create "title"`, ""},
	{`bd create --title "Found: a bug" --type bug --priority 2`, ""},
	{`bd create --title="Blocked: a reason" --type=task`, ""},
	{`bd create --type=bug --priority=1 --title="a bug" --description="where and why"`, ""},
	{`bd new -t task "Add gt mail hook alias" -l desire-path`, ""},
	{`bd create --rig beads "title"`, "'bd create' has no flag --rig"},
	{`bd create --prefix hq- "title"`, "'bd create' has no flag --prefix"},
	{"bd formula list", ""},
	{"bd formula show mol-polecat-work", ""},
	{"bd formula show mol-polecat-work --resolve", "'bd formula show' has no flag --resolve"},
	{"bd mol current", ""},
	{"bd mol current gt-mol", ""},
	{"bd merge-slot check --json", ""},
	{"bd merge-slot acquire --holder=root --wait --json", "'bd merge-slot acquire --holder' is refused over the relay: hostd sets the polecat's identity"},
	{"bd merge-slot release --holder=root --json", "'bd merge-slot release --holder' is refused"},
	{"bd sync", "'bd sync' is not allowed over the relay: hostd has no argument grammar for it"},
}

// TestGasTownPolecatCommands: every command line Gas Town runs in a
// polecat's session passes the default policy, but those its own gt and
// bd refuse (a flag or subcommand they lack), which the relay refuses
// naming it.
func TestGasTownPolecatCommands(t *testing.T) {
	p := Policy{Allow: DefaultAllow, EnvAllow: DefaultEnvAllow}
	for _, c := range gasTownPolecatCommands {
		_, err := p.Check(req(nil, shellWords(c.line)...))
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("%s: refused: %v", c.line, err)
		case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused)):
			t.Errorf("%s: %v, want the refusal %q", c.line, err, c.refused)
		}
	}
}

// TestGasTownPolecatCommandsDocumented: docs/security.md's table of Gas
// Town's polecat commands lists exactly gasTownPolecatCommands, each
// allowed or refused as the policy does.
func TestGasTownPolecatCommandsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "<!-- gastown-polecat-commands -->")
	table, _, closed := strings.Cut(rest, "<!-- /gastown-polecat-commands -->")
	if !ok || !closed {
		t.Fatal("docs/security.md has no gastown-polecat-commands table")
	}
	documented := map[string]string{}
	for _, row := range strings.Split(table, "\n") {
		cells := strings.Split(row, " | ")
		if len(cells) < 3 || !strings.HasPrefix(cells[0], "| `") {
			continue
		}
		line := strings.TrimSuffix(strings.TrimPrefix(cells[0], "| `"), "`")
		documented[line] = strings.TrimRight(strings.Fields(cells[2])[0], ":,;.")
	}
	for _, c := range gasTownPolecatCommands {
		want := "allowed"
		if c.refused != "" {
			want = "refused"
		}
		if got, ok := documented[c.line]; !ok || got != want {
			t.Errorf("docs/security.md: %q is %q in the table, want %q", c.line, got, want)
		}
		delete(documented, c.line)
	}
	for line := range documented {
		t.Errorf("docs/security.md lists %q, which TestGasTownPolecatCommands does not check", line)
	}
}

// shellWords splits a command line as the shell does words with double
// quotes (the only quoting gasTownPolecatCommands uses).
func shellWords(line string) []string {
	var words []string
	var w strings.Builder
	in, quoted := false, false
	for _, r := range line {
		switch {
		case r == '"':
			in, quoted = !in, true
		case r == ' ' && !in:
			if w.Len() > 0 || quoted {
				words = append(words, w.String())
			}
			w.Reset()
			quoted = false
		default:
			w.WriteRune(r)
		}
	}
	if w.Len() > 0 || quoted {
		words = append(words, w.String())
	}
	return words
}
