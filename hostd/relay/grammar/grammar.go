package grammar

import (
	"fmt"
	"slices"
	"strings"
)

// The argument grammar: every relayed subcommand's flags and positional
// arguments, from the pinned gt's and bd's --help (grammar_gt.go,
// grammar_bd.go; TestGrammarMatchesHelp holds them to the binaries), a
// line parsed as cobra and pflag parse it. Anything not in it is refused,
// and a flag that reads a file takes only '-', the relay's stdin
// (docs/security.md, "The host, through the relay").

// argRule is what positional arguments a command takes.
type argRule uint8

const (
	none  argRule = iota // no positional arguments
	text                 // any number of free-text arguments (ids, titles, addresses, messages)
	names                // names or ids without a '/': bd finds a formula by its name as a path below its search paths
)

// valueKind is what a flag's value may be.
type valueKind uint8

const (
	noValue   valueKind = iota // a boolean flag ('--json', '--json=false')
	anyValue                   // free text
	stdinOnly                  // a file to read: only '-', the relay's stdin
	notAtFile                  // free text that does not start with '@' (bd reads '@path' as a file)
	optValue                   // a value only after '=' ('--notify' alone takes the default)
)

// reasons a flag is refused, by the key its spec names after '!'.
var reasons = map[string]string{
	"path":     "it names a file, directory or repository on the host",
	"identity": "hostd sets the polecat's identity from its certificate: run the command without it",
	"write":    "it writes a file on the host",
	"setting":  "hostd sets it for every relayed command",
	"repair":   "it repairs the town's setup, which the operator runs",
	"server":   "it runs or changes the town's Dolt server, which the operator does ('gt dolt status' is relayed)",
	"costlog":  "it rewrites the town's cost log, which the deacon's patrol digests",
	"delete":   "it deletes beads, as 'bd delete' does, which is not relayed",
	"answer":   "it answers escalations, which their recipients do (the mayor, the deacon, the overseer); a polecat raises one with 'gt escalate' and reads them with 'gt escalate list' and 'show'",
	"formula":  "it cooks a formula bd finds on the host by the name given; gt sling pours a polecat's molecule on the host",
}

// flagSpec is one flag of a command.
type flagSpec struct {
	long   string
	short  string // one character, or ""
	kind   valueKind
	refuse string // why it is refused; "" when allowed
}

// takesValue says whether the flag consumes a value ('--name value').
func (f flagSpec) takesValue() bool { return f.kind != noValue && f.kind != optValue }

// command is a node of a program's grammar.
type command struct {
	name    string
	aliases []string // other names cobra takes for it
	args    argRule
	flags   []flagSpec // its own, then those it inherits
	subs    []*command
	refuse  string // why it is refused, with all below it; "" when allowed
}

// names is the command's name and aliases.
func (c *command) names() []string { return append([]string{c.name}, c.aliases...) }

// subNames is the names of g's top-level subcommands.
func (g grammar) subNames() []string {
	var names []string
	for _, s := range g.root.subs {
		names = append(names, s.name)
	}
	return names
}

// sub is c's subcommand named name, by its name or an alias, or nil.
func (c *command) sub(name string) *command {
	for _, s := range c.subs {
		if slices.Contains(s.names(), name) {
			return s
		}
	}
	return nil
}

// subPrefixed says whether name starts any of c's subcommands' names or
// aliases (gt lets cobra take a prefix for a subcommand).
func (c *command) subPrefixed(name string) bool {
	return name != "" && slices.ContainsFunc(c.subs, func(s *command) bool {
		return slices.ContainsFunc(s.names(), func(n string) bool { return strings.HasPrefix(n, name) })
	})
}

// flag is c's flag by long name (long) or shorthand.
func (c *command) flag(name string, long bool) (flagSpec, bool) {
	for _, f := range c.flags {
		if (long && f.long == name) || (!long && f.short == name) {
			return f, true
		}
	}
	return flagSpec{}, false
}

// cmdSpec is one command as written in grammar_*.go: its path below the
// program, with '!reason' after it when it is refused (its flags and
// subcommands then go unwritten: nothing past it is parsed), its
// positional arguments and its flags, space-separated, each '[-s,]--long'
// followed by nothing (boolean), '=' (a value), '=-' (a file read from
// stdin only), '=@' (a value not starting with '@'), '[=]' (a value only
// after '='), and '!reason' when it is refused.
type cmdSpec struct {
	path  string
	args  argRule
	flags string
}

// grammar is a program's tree of commands.
type grammar struct {
	root *command
}

// newGrammar builds a program's tree from its persistent flags, its
// commands, each command's parent listed before it, and their aliases
// (one at the top is relayed only when relay.allow lists it by that name,
// as bd's 'new' for create). It panics on a malformed spec: the grammar
// is the program's own source.
func newGrammar(program, persistent string, specs []cmdSpec, aliases map[string][]string) grammar {
	pflags := parseFlags(persistent)
	root := &command{name: program, flags: pflags}
	for _, s := range specs {
		path, refuse, _ := strings.Cut(s.path, "!")
		words := strings.Fields(path)
		parent := root
		for _, w := range words[:len(words)-1] {
			if parent = parent.sub(w); parent == nil || parent.refuse != "" {
				panic(fmt.Sprintf("relay grammar: %s %s is listed before its parent, or below a refused one", program, s.path))
			}
		}
		c := &command{name: words[len(words)-1], aliases: aliases[path], args: s.args, flags: append(parseFlags(s.flags), pflags...)}
		if refuse != "" {
			if c.refuse = reasons[refuse]; c.refuse == "" || s.flags != "" {
				panic("relay grammar: unknown refusal, or flags written, in " + s.path)
			}
		}
		parent.subs = append(parent.subs, c)
	}
	return grammar{root: root}
}

// parseFlags reads a spec's flags, adding -h/--help.
func parseFlags(spec string) []flagSpec {
	out := []flagSpec{{long: "help", short: "h"}}
	for _, tok := range strings.Fields(spec) {
		var f flagSpec
		tok, f.refuse, _ = strings.Cut(tok, "!")
		if f.refuse != "" {
			if f.refuse = reasons[f.refuse]; f.refuse == "" {
				panic("relay grammar: unknown refusal in " + tok)
			}
		}
		name, value, hasValue := strings.Cut(tok, "=")
		if strings.HasSuffix(name, "[") && value == "]" {
			name, f.kind = strings.TrimSuffix(name, "["), optValue
		} else if hasValue {
			f.kind = map[string]valueKind{"": anyValue, "-": stdinOnly, "@": notAtFile}[value]
			if f.kind == noValue {
				panic("relay grammar: bad value in " + tok)
			}
		}
		if short, long, ok := strings.Cut(name, ","); ok {
			f.short, name = strings.TrimPrefix(short, "-"), long
		}
		if !strings.HasPrefix(name, "--") || len(f.short) > 1 {
			panic("relay grammar: bad flag " + tok)
		}
		f.long = strings.TrimPrefix(name, "--")
		out = append(out, f)
	}
	return out
}

// Parsed is a command line the grammar allowed.
type Parsed struct {
	// Path is the command, as "gt handoff".
	Path string
	// flags maps each flag given, by its long name, to its last value
	// ("true" for a boolean given bare).
	flags map[string]string
}

// check parses argv (argv[0] the program) against the grammar and refuses
// what it does not allow, naming the subcommand and the argument.
func (g grammar) check(argv []string) (Parsed, error) {
	p := Parsed{flags: map[string]string{}}
	c, path, i := g.root, g.root.name, 1
	for i < len(argv) && len(c.subs) > 0 {
		s := c.sub(argv[i])
		if s == nil {
			break
		}
		c, path, i = s, path+" "+s.name, i+1
	}
	if len(c.subs) > 0 && c == g.root {
		return p, fmt.Errorf("'%s' needs a subcommand", path)
	}
	if c.refuse != "" {
		return p, fmt.Errorf("'%s' is refused over the relay: %s", path, c.refuse)
	}
	// cobra looks for a subcommand among all the arguments, skipping
	// flags' values by a reading of its own (not pflag's for '-abc value',
	// and a '--' taken as a flag's value does not end its search): none
	// may name one, or it could run another command than the one checked
	// here.
	for _, a := range argv[i:] {
		if !strings.HasPrefix(a, "-") && (c.sub(a) != nil || c.subPrefixed(a)) {
			return p, fmt.Errorf("'%s': put the subcommand %s right after '%s', before any flag or argument", path, printable(a), path)
		}
	}
	var positional []string
	for ; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--":
			positional = append(positional, argv[i+1:]...)
			i = len(argv)
		case strings.HasPrefix(a, "--"):
			n, err := c.longFlag(path, argv, i, p.flags)
			if err != nil {
				return p, err
			}
			i += n
		case strings.HasPrefix(a, "-") && a != "-":
			n, err := c.shortFlags(path, argv, i, p.flags)
			if err != nil {
				return p, err
			}
			i += n
		default:
			positional = append(positional, a)
		}
	}
	if len(positional) > 0 && c.args == none {
		return p, fmt.Errorf("'%s' takes no arguments over the relay (got %s)", path, printable(positional[0]))
	}
	if i := slices.IndexFunc(positional, func(a string) bool { return strings.Contains(a, "/") }); i >= 0 && c.args == names {
		return p, fmt.Errorf("'%s' takes names over the relay, not paths (got %s)", path, printable(positional[i]))
	}
	p.Path = path
	return p, nil
}

// longFlag checks the '--name[=value]' at argv[i], records it in seen and
// returns how many more arguments it took as its value.
func (c *command) longFlag(path string, argv []string, i int, seen map[string]string) (int, error) {
	name, value, hasValue := strings.Cut(strings.TrimPrefix(argv[i], "--"), "=")
	if name == "" || strings.HasPrefix(name, "-") {
		return 0, fmt.Errorf("'%s': bad flag %s", path, printable(argv[i]))
	}
	f, ok := c.flag(name, true)
	if !ok {
		return 0, fmt.Errorf("'%s' has no flag --%s that can be relayed", path, plain(name))
	}
	took := 0
	if f.takesValue() && !hasValue {
		if i+1 >= len(argv) {
			return 0, fmt.Errorf("'%s': --%s needs a value", path, f.long)
		}
		value, took = argv[i+1], 1
	}
	return took, f.allow(path, "--"+f.long, value, hasValue || took > 0, seen)
}

// shortFlags checks the '-abc', '-nvalue', '-n=value' or '-n value' at
// argv[i], as pflag reads it, records them in seen and returns how many
// more arguments it took.
func (c *command) shortFlags(path string, argv []string, i int, seen map[string]string) (int, error) {
	cluster := strings.TrimPrefix(argv[i], "-")
	for j := 0; j < len(cluster); j++ {
		name := cluster[j : j+1]
		f, ok := c.flag(name, false)
		if !ok {
			return 0, fmt.Errorf("'%s' has no flag -%s that can be relayed", path, plain(name))
		}
		rest := cluster[j+1:]
		switch {
		case strings.HasPrefix(rest, "="):
			return 0, f.allow(path, "-"+name, rest[1:], true, seen)
		case f.takesValue() && rest != "":
			return 0, f.allow(path, "-"+name, rest, true, seen)
		case f.takesValue():
			if i+1 >= len(argv) {
				return 0, fmt.Errorf("'%s': -%s needs a value", path, name)
			}
			return 1, f.allow(path, "-"+name, argv[i+1], true, seen)
		}
		if err := f.allow(path, "-"+name, "", false, seen); err != nil {
			return 0, err
		}
	}
	return 0, nil
}

// allow refuses a refused flag, and a value its kind does not take, and
// records an allowed one in seen.
func (f flagSpec) allow(path, as, value string, hasValue bool, seen map[string]string) error {
	if !hasValue {
		value = "true"
	}
	switch {
	case f.refuse != "":
		return fmt.Errorf("'%s %s' is refused over the relay: %s", path, as, f.refuse)
	case f.kind == stdinOnly && value != "-":
		return fmt.Errorf("'%s %s' reads a file, which over the relay must be '-' (stdin): pipe the file into the command", path, as)
	case f.kind == notAtFile && strings.HasPrefix(value, "@"):
		return fmt.Errorf("'%s %s @file' reads a file on the host: give the value itself", path, as)
	case f.kind == noValue && value != "true" && value != "false":
		return fmt.Errorf("'%s': %s takes true or false, not %s", path, as, printable(value))
	}
	seen[f.long] = value
	return nil
}

// plain is a flag name as typed when it is letters, digits and dashes,
// else quoted (printable).
func plain(name string) string {
	if name != "" && !strings.ContainsFunc(name, func(r rune) bool {
		return !(r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) && len(name) <= 40 {
		return name
	}
	return printable(name)
}
