// Package grammar decides which gt and bd command lines a polecat may
// relay: the allowlist of subcommands (Policy, DefaultAllow), each one's
// argument grammar, written from the pinned gt's and bd's --help, and the
// environment a shim may send. It returns the line as it parsed it, which
// hostd/relay runs.
package grammar

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/polecat-sidecar/sidecar/internal/settings"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// DefaultAllow is the default allowlist: per command, the subcommands a
// polecat may run (argv[1]): every one Gas Town v1.0.1 runs in a
// polecat's session, from its hooks (costs, tap), its role context and
// its polecat formulas (dolt status, escalate, bd formula, merge-slot,
// mol, new); docs/security.md lists each command line and what the relay
// does with it (TestGasTownPolecatCommands).
var DefaultAllow = map[string][]string{
	"gt": {"convoy", "costs", "done", "dolt", "escalate", "handoff", "hook", "mail", "mol", "mountain", "nudge", "prime", "sling", "status", "tap", "version"},
	"bd": {"create", "new", "update", "close", "show", "list", "ready", "dep", "export", "prime", "stats", "blocked", "doctor", "formula", "merge-slot", "mol"},
}

// DefaultEnvAllow is the environment a shim may send: the shim's own list,
// terminal and locale settings, nothing identity-like.
var DefaultEnvAllow = wire.RelayEnv

// identityEnv are set by hostd from the certificate and refused from the
// container.
var identityEnv = []string{"GT_ROLE", "GT_RIG", "GT_POLECAT", "BD_ACTOR", "GIT_AUTHOR_NAME", "BEADS_AGENT_NAME", "GT_PROXY_IDENTITY", "GT_PROXY_CWD"}

// grammars are the argument grammars of the programs hostd relays.
var grammars = map[string]grammar{"gt": gtGrammar, "bd": bdGrammar}

// Policy decides which relayed commands may run.
type Policy struct {
	// Allow maps a command (argv[0]) to its allowed subcommands (argv[1]);
	// each must be in the command's argument grammar, which decides the
	// rest of the command line.
	Allow map[string][]string
	// EnvAllow lists the environment variable names a shim may send.
	EnvAllow []string
}

// Validate refuses an Allow entry the argument grammar does not know.
func (p Policy) Validate() error {
	var errs []error
	for _, cmd := range sortedKeys(p.Allow) {
		g, ok := grammars[cmd]
		if !ok {
			errs = append(errs, &settings.FieldError{Field: "Policy.Allow", Value: cmd,
				Rule: "hostd relays only " + strings.Join(sortedKeys(grammars), " and ")})
			continue
		}
		for _, sub := range p.Allow[cmd] {
			if g.root.sub(sub) == nil {
				errs = append(errs, &settings.FieldError{Field: "Policy.Allow", Value: cmd + " " + sub,
					Rule: fmt.Sprintf("hostd has no argument grammar for it; %s subcommands it can relay: %s", cmd, strings.Join(g.subNames(), ", "))})
			}
		}
	}
	return errors.Join(errs...)
}

// Check refuses a request that is not allowed, with a reason the polecat
// is shown: a command or subcommand not allowed (naming it, escaped, and
// the setting that would allow it), a command line its grammar refuses,
// an environment variable not relayed. It returns the command line as
// the grammar parsed it, or as far as it was read: the command, and the
// subcommand as the refusal names it, for hostd's log.
func (p Policy) Check(req wire.RelayRequest) (Parsed, error) {
	cmd := string(req.Argv[0])
	subs, ok := p.Allow[cmd]
	if !ok {
		if _, known := grammars[cmd]; known {
			return Parsed{Path: cmd}, fmt.Errorf("'%s' is not allowed over the relay: the operator allows it by listing its subcommands in relay.allow.%s in hostd's configuration", cmd, cmd)
		}
		return Parsed{}, fmt.Errorf("'%s' cannot be relayed: hostd relays only %s", plain(cmd), strings.Join(sortedKeys(grammars), " and "))
	}
	if len(req.Argv) < 2 {
		return Parsed{Path: cmd}, fmt.Errorf("'%s' needs a subcommand; allowed: %s", cmd, strings.Join(subs, ", "))
	}
	if sub := string(req.Argv[1]); !slices.Contains(subs, sub) {
		how := "hostd has no argument grammar for it, so no setting allows it"
		if grammars[cmd].root.sub(sub) != nil {
			how = fmt.Sprintf("the operator allows it by adding %s to relay.allow.%s in hostd's configuration", plain(sub), cmd)
		}
		return Parsed{Path: cmd + " " + plain(sub)}, fmt.Errorf("'%s %s' is not allowed over the relay: %s; allowed: %s", cmd, plain(sub), how, strings.Join(subs, ", "))
	}
	argv := make([]string, len(req.Argv))
	for i, a := range req.Argv {
		argv[i] = string(a)
	}
	line, err := grammars[cmd].check(argv)
	if err != nil {
		return Parsed{Path: cmd + " " + argv[1]}, err
	}
	for _, e := range req.Env {
		k, _, _ := bytes.Cut(e, []byte("="))
		key := string(k)
		if slices.Contains(identityEnv, key) || strings.HasPrefix(key, "GT_") || strings.HasPrefix(key, "BD_") || strings.HasPrefix(key, "BEADS_") {
			return line, fmt.Errorf("environment variable %s is refused: hostd sets the polecat's identity from its certificate", printable(key))
		}
		if !slices.Contains(p.EnvAllow, key) {
			return line, fmt.Errorf("environment variable %s is not relayed (allowed: %s)", printable(key), strings.Join(p.EnvAllow, ", "))
		}
		if _, value, _ := bytes.Cut(e, []byte("=")); !envValueOK(key, string(value)) {
			return line, fmt.Errorf("environment variable %s's value %s is refused: it may not name a path or hold control characters", key, printable(string(value)))
		}
	}
	return line, nil
}

// envValueOK says whether value, for the terminal or locale variable key,
// names no file: the C library reads a locale, and ncurses a terminal
// description, from a path in the value, which a polecat could have
// written. A zone (TZ) may have slashes ("Europe/Paris") but neither
// start one nor climb.
func envValueOK(key, value string) bool {
	if len(value) > 256 || strings.ContainsFunc(value, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return false
	}
	if key == "TZ" {
		value = strings.TrimPrefix(value, ":")
		return !strings.HasPrefix(value, "/") && !strings.HasPrefix(value, ".") && !strings.Contains(value, "..")
	}
	return !strings.Contains(value, "/")
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// printable quotes s for an error message, keeping it short.
func printable(s string) string {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return fmt.Sprintf("%q", s)
}
