package grammar

import (
	"slices"
	"strings"
	"testing"
)

func TestGrammarCheck(t *testing.T) {
	allowed := [][]string{
		{"bd", "create", "a title"},
		{"bd", "create", "--title", "x", "-d", "description", "--json"},
		{"bd", "create", "--title=x", "-p1", "-t", "bug", "-l", "a,b"},
		{"bd", "create", "x", "--body-file", "-"},
		{"bd", "create", "x", "--body-file=-", "--design-file", "-"},
		{"bd", "create", "x", "--metadata", `{"a":1}`},
		{"bd", "create", "--", "--db", "-o", "@file"}, // after --, every argument is a title
		{"bd", "update", "gt-1", "--status", "in_progress"},
		{"bd", "update", "gt-1", "-s", "closed", "--json=false"},
		{"bd", "update", "gt-1", "--title", "--db"}, // a value, whatever it looks like
		{"bd", "show", "gt-1", "gt-2", "--json"},
		{"bd", "show", "/etc/passwd"}, // an id bd looks up, not a path it opens
		{"bd", "list", "-n", "5", "--status=open"},
		{"bd", "list", "-rn5"},
		{"bd", "ready", "-un", "3"},
		{"bd", "dep", "add", "gt-1", "gt-2"},
		{"bd", "dep", "gt-1", "-b", "gt-2"},
		{"bd", "dep", "tree", "gt-1", "-d", "3"},
		{"bd", "export"},
		{"bd", "doctor", "--json"},
		{"bd", "doctor", "-v"}, // doctor's own -v
		{"bd", "prime"},
		{"bd", "close", "gt-1", "-r", "done"},
		{"gt", "prime", "--hook"},
		{"gt", "mail", "send", "nux", "-s", "subject", "-m", "-starts with a dash"},
		{"gt", "mail", "inbox", "--json"},
		{"gt", "convoy", "create", "c", "--notify"},
		{"gt", "convoy", "create", "c", "--notify=mayor/", "gt-1"},
		{"gt", "hook", "gt-1"},
		{"gt", "hook", "show", "--json"},
		{"gt", "done", "--status", "COMPLETED"},
		{"gt", "nudge", "gastown/nux", "hello", "--mode=queue"},
		{"gt", "status", "-h"},
		{"gt", "handoff", "--cycle"},
		{"gt", "tap", "guard", "pr-workflow"},
		{"gt", "tap", "list", "--guards"},
		{"gt", "costs", "record", "--work-item", "gt-1"},
		{"gt", "dolt", "status"},
		{"gt", "escalate", "it broke", "-s", "HIGH", "-r", "why", "--related=gt-1"},
		{"gt", "escalate", "list", "--json"},
		{"gt", "escalate", "show", "hq-1"},
		{"bd", "new", "a title", "-t", "task"}, // bd create's alias
		{"bd", "mol", "current", "--for", "gastown/nux"},
		{"bd", "formula", "show", "mol-polecat-work", "--json"},
		{"bd", "merge-slot", "acquire", "--wait", "--json"},
		{"bd", "merge-slot", "release", "--json"},
	}
	for _, argv := range allowed {
		if _, err := grammars[argv[0]].check(argv); err != nil {
			t.Errorf("%q refused: %v", argv, err)
		}
	}
	refused := []struct {
		argv []string
		want string
	}{
		{[]string{"bd", "create", "x", "--body-file", "/town/.runtime/ca/ca.key"}, "must be '-'"},
		{[]string{"bd", "create", "x", "--body-file=/etc/passwd"}, "must be '-'"},
		{[]string{"bd", "update", "gt-1", "--design-file", "x"}, "must be '-'"},
		{[]string{"bd", "create", "x", "--metadata", "@/town/.runtime/ca/ca.key"}, "@file"},
		{[]string{"bd", "create", "x", "--metadata=@-"}, "@file"},
		{[]string{"bd", "create", "x", "--db", "/tmp/db"}, "'bd create --db' is refused"},
		{[]string{"bd", "create", "x", "--db=/tmp/db"}, "names a file"},
		{[]string{"bd", "create", "-f", "/x.md"}, "'bd create -f' is refused"},
		{[]string{"bd", "create", "-qf", "/x.md"}, "'bd create -f' is refused"}, // -q -f
		{[]string{"bd", "create", "--graph", "plan.json"}, "refused"},
		{[]string{"bd", "create", "x", "--repo", "/elsewhere"}, "refused"},
		{[]string{"bd", "export", "-o", "/etc/x"}, "'bd export -o' is refused"},
		{[]string{"bd", "export", "-o/etc/x"}, "'bd export -o' is refused"},
		{[]string{"bd", "export", "--output=/etc/x"}, "refused"},
		{[]string{"bd", "doctor", "/town/other"}, "takes no arguments"},
		{[]string{"bd", "doctor", "--fix"}, "repairs"},
		{[]string{"bd", "doctor", "--perf"}, "writes a file"},
		{[]string{"bd", "list", "--profile"}, "writes a file"},
		{[]string{"bd", "list", "--dolt-auto-commit", "on"}, "hostd sets it"},
		{[]string{"bd", "update", "gt-1", "--actor", "mayor"}, "identity"},
		{[]string{"bd", "update", "gt-1", "--actor=mayor"}, "identity"},
		{[]string{"bd", "list", "--no-such-flag"}, "has no flag --no-such-flag"},
		{[]string{"bd", "list", "-Z"}, "has no flag -Z"},
		{[]string{"bd", "list", "-rZ"}, "has no flag -Z"},
		{[]string{"bd", "list", "--\x1b[31m"}, `has no flag --"\x1b[31m"`},
		{[]string{"bd", "list", "positional"}, "takes no arguments"},
		{[]string{"bd", "list", "---x"}, "bad flag"},
		{[]string{"bd", "list", "--limit"}, "needs a value"},
		{[]string{"bd", "list", "-n"}, "needs a value"},
		{[]string{"bd", "list", "--json=yes"}, "true or false"},
		{[]string{"bd", "dep", "--json", "add", "gt-1", "gt-2"}, "put the subcommand"},
		{[]string{"bd", "dep", "-b", "x", "tree"}, "put the subcommand"},
		{[]string{"bd", "dep", "tr"}, "put the subcommand"},
		{[]string{"gt", "mail", "inbox", "--identity", "mayor/"}, "identity"},
		{[]string{"gt", "mail", "check", "--address=mayor/"}, "identity"},
		{[]string{"gt", "mail", "send", "mayor/", "--from", "deacon/", "-m", "x"}, "identity"},
		{[]string{"gt", "nudge", "x", "--address", "a"}, "no flag --address"},
		{[]string{"gt", "mail"}, ""},
		{[]string{"gt", "mail", "sen", "x"}, "put the subcommand"}, // cobra's prefix match would run 'mail send'
		{[]string{"gt", "hook", "-f", "attach", "gt-1"}, "put the subcommand"},
		{[]string{"gt", "hook", "-m", "--", "attach", "x"}, "put the subcommand"}, // cobra takes -- as -m's value and finds attach
		{[]string{"bd", "dep", "-b", "--", "add", "x", "y"}, "put the subcommand"},
		{[]string{"gt", "mail", "ack", "x"}, ""},            // an alias: gt mail mark-read
		{[]string{"gt", "mail", "a"}, "put the subcommand"}, // a prefix of ack, announces, archive
		{[]string{"bd", "dep", "x", "rm"}, "put the subcommand"},
		{[]string{"gt", "prime", "/town/elsewhere"}, "takes no arguments"},
		{[]string{"gt"}, "needs a subcommand"},
		{[]string{"gt", "dolt", "stop"}, "'gt dolt stop' is refused over the relay: it runs or changes the town's Dolt server"},
		{[]string{"gt", "dolt", "sql", "-q", "DROP DATABASE gastown"}, "'gt dolt sql' is refused"},
		{[]string{"gt", "dolt", "sto"}, "put the subcommand"}, // cobra's prefix match would run 'dolt stop'
		{[]string{"gt", "dolt", "--", "stop"}, "put the subcommand"},
		{[]string{"gt", "costs", "digest", "--yesterday"}, "'gt costs digest' is refused over the relay: it rewrites the town's cost log"},
		{[]string{"gt", "costs", "record", "--session", "hq-mayor"}, "'gt costs record --session' is refused over the relay: hostd sets the polecat's identity"},
		{[]string{"bd", "mol", "wisp", "create", "mol-x"}, "'bd mol wisp' is refused"}, // nothing below a refused one is parsed
		{[]string{"bd", "mol", "pour", "../../../../etc/x"}, "'bd mol pour' is refused over the relay: it cooks a formula"},
		{[]string{"bd", "mol", "burn", "gt-1"}, "'bd mol burn' is refused over the relay: it deletes beads"},
		{[]string{"bd", "mol", "squash", "gt-wisp"}, "'bd mol squash' is refused over the relay: it deletes beads"}, // the molecule's ephemeral children
		{[]string{"bd", "mol", "squash", "gt-wisp", "--keep-children"}, "'bd mol squash' is refused"},
		{[]string{"bd", "merge-slot", "acquire", "--holder=gastown/polecats/nux", "--wait"}, "'bd merge-slot acquire --holder' is refused over the relay: hostd sets the polecat's identity"},
		{[]string{"bd", "merge-slot", "release", "--holder", "gastown/polecats/nux"}, "'bd merge-slot release --holder' is refused"},
		{[]string{"gt", "escalate", "ack", "hq-1"}, "'gt escalate ack' is refused over the relay: it answers escalations"},
		{[]string{"gt", "escalate", "close", "hq-1", "--reason", "fixed"}, "'gt escalate close' is refused over the relay: it answers escalations"},
		{[]string{"gt", "escalate", "stale"}, "'gt escalate stale' is refused over the relay: it answers escalations"},
		{[]string{"bd", "mol", "distill", "gt-1", "--output", "/etc"}, "'bd mol distill' is refused over the relay: it writes a file"},
		{[]string{"bd", "formula", "convert", "--all"}, "'bd formula convert' is refused"},
		{[]string{"bd", "formula", "show", "../../../../town/x"}, "'bd formula show' takes names over the relay, not paths"},
		{[]string{"bd", "formula", "show", "--", "/etc/x"}, "not paths"},
	}
	for _, c := range refused {
		_, err := grammars[c.argv[0]].check(c.argv)
		if c.want == "" {
			if err != nil {
				t.Errorf("%q refused: %v", c.argv, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want an error with %q", c.argv, err, c.want)
		}
	}
}

// TestGrammarAliases: an alias below the top is parsed as the command it
// names, as cobra runs it.
func TestGrammarAliases(t *testing.T) {
	for argv, want := range map[string]string{
		"bd dep rm gt-1 gt-2": "bd dep remove",
		"gt mail ack hq-1":    "gt mail mark-read",
		"gt mail dir":         "gt mail directory",
		"gt mail show hq-1":   "gt mail read",
		"bd new a-title":      "bd create",
	} {
		line, err := grammars[strings.Fields(argv)[0]].check(strings.Fields(argv))
		if err != nil || line.Path != want {
			t.Errorf("%s: parsed as %q (%v), want %q", argv, line.Path, err, want)
		}
	}
}

// TestGrammarRefusesPathFlags lists every refused flag and checks that
// each is refused in both its long forms, wherever it is defined (a
// refused command is refused whole: TestGrammarRefusesCommands).
func TestGrammarRefusesPathFlags(t *testing.T) {
	n := 0
	for prog, g := range grammars {
		var walk func(c *command, path []string)
		walk = func(c *command, path []string) {
			if c.refuse != "" {
				return
			}
			for _, f := range c.flags {
				if f.refuse == "" {
					continue
				}
				n++
				for _, form := range [][]string{{"--" + f.long, "v"}, {"--" + f.long + "=v"}} {
					argv := append(append([]string{prog}, path...), form...)
					if _, err := g.check(argv); err == nil || !strings.Contains(err.Error(), f.refuse) {
						t.Errorf("%q: %v", argv, err)
					}
				}
			}
			for _, s := range c.subs {
				walk(s, append(path, s.name))
			}
		}
		for _, s := range g.root.subs {
			walk(s, []string{s.name})
		}
	}
	if n < 20 {
		t.Errorf("only %d refused flags in the grammars", n)
	}
}

// TestGrammarRefusesCommands: every refused command is refused with its
// reason, whatever follows it: a flag, an argument, a subcommand of its.
func TestGrammarRefusesCommands(t *testing.T) {
	n := 0
	for prog, g := range grammars {
		var walk func(c *command, path []string)
		walk = func(c *command, path []string) {
			if c.refuse != "" {
				n++
				for _, tail := range [][]string{nil, {"--help"}, {"x"}, {"list", "--json"}, {"--", "x"}} {
					argv := append(append([]string{prog}, path...), tail...)
					if _, err := g.check(argv); err == nil || !strings.Contains(err.Error(), "' is refused over the relay: "+c.refuse) {
						t.Errorf("%q: %v", argv, err)
					}
				}
				return
			}
			for _, s := range c.subs {
				walk(s, append(slices.Clone(path), s.name))
			}
		}
		walk(g.root, nil)
	}
	if n < 20 {
		t.Errorf("only %d refused commands in the grammars", n)
	}
}

func TestPolicyValidate(t *testing.T) {
	if err := (Policy{Allow: DefaultAllow}).Validate(); err != nil {
		t.Errorf("DefaultAllow: %v", err)
	}
	for allow, want := range map[string]map[string][]string{
		"relays only bd and gt": {"sh": {"x"}},
		"no argument grammar":   {"gt": {"prime", "rig"}},
	} {
		if err := (Policy{Allow: want}).Validate(); err == nil || !strings.Contains(err.Error(), allow) {
			t.Errorf("%v: %v, want %q", want, err, allow)
		}
	}
}

// FuzzGrammar: no command line makes the parser panic, and none that it
// accepts passes a refused flag in a long form, or a file flag a value
// but '-', before '--'.
func FuzzGrammar(f *testing.F) {
	for _, s := range []string{
		"bd\x00create\x00x\x00--body-file\x00-",
		"bd\x00export\x00-o\x00/etc/x",
		"bd\x00dep\x00add\x00--\x00--db",
		"gt\x00mail\x00send\x00x\x00-sm\x00a",
		"bd\x00list\x00-rn5",
		"gt\x00convoy\x00create\x00--notify=x",
		"gt\x00dolt\x00status",
		"bd\x00formula\x00show\x00--\x00x",
		"0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		argv := strings.Split(line, "\x00")
		g, ok := grammars[argv[0]]
		if !ok {
			return // Policy.Check refuses the program before any grammar
		}
		if _, err := g.check(argv); err != nil {
			return
		}
		c, path := g.root, 1
		for ; path < len(argv) && c.sub(argv[path]) != nil; path++ {
			c = c.sub(argv[path])
		}
		if c.refuse != "" {
			t.Fatalf("%q accepted, a refused command", argv)
		}
		for _, a := range argv[path:] {
			if c.args == names && !strings.HasPrefix(a, "-") && strings.Contains(a, "/") {
				t.Fatalf("%q accepted with the path %q where names are taken", argv, a)
			}
		}
		for i, a := range argv {
			if a == "--" {
				return
			}
			if i > 0 && argv[i-1] != "--" && strings.HasPrefix(argv[i-1], "-") && !strings.Contains(argv[i-1], "=") {
				continue // may be the previous flag's value
			}
			name, value, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			if !strings.HasPrefix(a, "--") {
				continue
			}
			fl, ok := c.flag(name, true)
			if !ok {
				t.Fatalf("%q accepted with the unknown flag %q", argv, a)
			}
			if fl.refuse != "" {
				t.Fatalf("%q accepted with the refused flag %q", argv, a)
			}
			if fl.kind == stdinOnly && hasValue && value != "-" {
				t.Fatalf("%q accepted with %q", argv, a)
			}
		}
	})
}
