package relay

import (
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

func req(env []string, argv ...string) wire.RelayRequest {
	r := wire.RelayRequest{}
	for _, a := range argv {
		r.Argv = append(r.Argv, []byte(a))
	}
	for _, e := range env {
		r.Env = append(r.Env, []byte(e))
	}
	return r
}

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
	// A subcommand hostd has a grammar for but that is not allowed names
	// the setting; one it has none for says so.
	if _, err := p.Check(req(nil, "gt", "costs", "record")); err == nil || !strings.Contains(err.Error(), "'gt costs' is not allowed over the relay (the operator can allow it in relay.allow (gt))") {
		t.Errorf("refusal of gt costs: %v", err)
	}
	if _, err := p.Check(req(nil, "gt", "rig", "remove")); err == nil || !strings.Contains(err.Error(), "(hostd has no argument grammar for it)") {
		t.Errorf("refusal of gt rig: %v", err)
	}
	// The refusal of an unknown subcommand names it, quoted and cut short.
	if _, err := p.Check(req(nil, "gt", "costs\x1b[2J"+strings.Repeat("x", 100))); err == nil ||
		!strings.Contains(err.Error(), `'gt "costs\x1b[2J`) || strings.Contains(err.Error(), strings.Repeat("x", 50)) {
		t.Errorf("refusal of an unknown subcommand: %v", err)
	}
}
