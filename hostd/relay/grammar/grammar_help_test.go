package grammar

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestGrammarMatchesHelp holds the argument grammar to the pinned gt and
// bd ('make gastown-tools' builds them into GASTOWN_TOOLS; 'make
// e2e-gastown' runs this test with them): every command's flags (name,
// shorthand, whether it takes a value) and subcommands, as its --help
// lists them, are the grammar's, so a flag a new gt or bd adds is
// noticed here before it is relayed (it is refused until then). A
// refused subcommand counts by its name alone: nothing past it is parsed.
func TestGrammarMatchesHelp(t *testing.T) {
	tools := os.Getenv("GASTOWN_TOOLS")
	if tools == "" {
		t.Skip("GASTOWN_TOOLS is not set: 'make e2e-gastown' runs this with the pinned gt and bd")
	}
	for prog, g := range grammars {
		bin := filepath.Join(tools, prog)
		var walk func(c *command, path []string)
		walk = func(c *command, path []string) {
			if c.refuse != "" {
				return
			}
			out, err := exec.Command(bin, append(path, "--help")...).CombinedOutput()
			if err != nil {
				t.Errorf("%s %s --help: %v\n%s", prog, strings.Join(path, " "), err, out)
				return
			}
			h := parseHelp(string(out))
			name := prog + " " + strings.Join(path, " ")
			var ours []string
			for _, f := range c.flags {
				ours = append(ours, f.help())
			}
			slices.Sort(ours)
			ours = slices.Compact(ours)
			if !slices.Equal(ours, h.flags) {
				t.Errorf("%s: the grammar's flags differ from --help's:\n grammar: %s\n --help:  %s", name, strings.Join(ours, " "), strings.Join(h.flags, " "))
			}
			if len(path) > 1 && !slices.Equal(c.aliases, h.aliases) { // the top's are relayed by name alone
				t.Errorf("%s: the grammar's aliases %q, --help's %q", name, c.aliases, h.aliases)
			}
			var subs []string
			for _, s := range c.subs {
				subs = append(subs, s.name)
				walk(s, append(slices.Clone(path), s.name))
			}
			slices.Sort(subs)
			if !slices.Equal(subs, h.subs) {
				t.Errorf("%s: the grammar's subcommands %q, --help's %q", name, subs, h.subs)
			}
		}
		for _, s := range g.root.subs {
			walk(s, []string{s.name})
		}
	}
}

// help is what a cobra command's --help lists: its flags and inherited
// flags in the grammar's form ('-s,--long', '=' when it takes a value,
// '[=]' when only after '='), sorted, its subcommands and its aliases.
type help struct {
	flags, subs, aliases []string
}

var helpFlag = regexp.MustCompile(`^\s+(?:-(\w), )?--([\w-]+)(?: (\w+)(\[=[^\]]*\])?)?`)

// pflagTypes are the type names pflag prints for a flag that takes a value.
var pflagTypes = []string{"string", "int", "int32", "int64", "uint", "float32", "float64", "strings", "stringArray", "duration", "stringSlice", "intSlice", "ints"}

func parseHelp(out string) help {
	var h help
	section := ""
	for _, line := range strings.Split(out, "\n") {
		if line != "" && line[0] != ' ' {
			section = strings.TrimSuffix(line, ":")
			continue
		}
		switch section {
		case "Aliases":
			if names := strings.Split(strings.TrimSpace(line), ", "); len(names) > 1 {
				h.aliases = names[1:]
			}
		case "Available Commands":
			if f := strings.Fields(line); len(f) > 0 && f[0] != "help" && f[0] != "completion" {
				h.subs = append(h.subs, f[0])
			}
		case "Flags", "Global Flags":
			m := helpFlag.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			f := "--" + m[2]
			if m[1] != "" {
				f = "-" + m[1] + "," + f
			}
			switch {
			case slices.Contains(pflagTypes, m[3]) && m[4] != "":
				f += "[=]"
			case slices.Contains(pflagTypes, m[3]):
				f += "="
			}
			h.flags = append(h.flags, f)
		}
	}
	slices.Sort(h.flags)
	h.flags = slices.Compact(h.flags)
	slices.Sort(h.subs)
	return h
}

// help is f in the form parseHelp gives.
func (f flagSpec) help() string {
	s := "--" + f.long
	if f.short != "" {
		s = "-" + f.short + "," + s
	}
	switch f.kind {
	case optValue:
		s += "[=]"
	case noValue:
	default:
		s += "="
	}
	return s
}
