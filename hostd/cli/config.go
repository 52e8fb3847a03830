package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/hostd/cli/command"
	"github.com/polecat-sidecar/sidecar/hostd/cli/serve"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/internal/settings"
)

func newConfigCmd(a *command.App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show the settings hostd serve runs with",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newConfigShowCmd(a))
	return cmd
}

// configShow is hostd config show: serve's settings, loaded as serve
// loads them.
type configShow struct {
	*command.App
	serve *serve.Settings
	json  bool
}

func newConfigShowCmd(a *command.App) *cobra.Command {
	o := &configShow{App: a, serve: serve.NewSettings()}
	cmd := &cobra.Command{
		Use:   "show [serve's flags]",
		Short: "Print every setting hostd serve would run with, and where each came from",
		Long: `Print every setting of hostd serve (and the town, trust domain and logging
every subcommand reads) with the value serve would run with and where it came
from: a flag, a HOSTD_* environment variable, the config file, or the
default. It takes serve's flags, so 'hostd config show --cert-ttl 1h' shows
what 'hostd serve --cert-ttl 1h' would use.

Settings serve would refuse are printed, then named with what they must be,
and config show exits 1. docs/config.sample.yaml explains each setting.`,
		Args: cobra.NoArgs,
		RunE: o.run,
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON: a list of {key, value, origin, from, flag, env}")
	a.Register(cmd.Flags(), o.serve.Table)
	return cmd
}

// configEntry is one setting as config show prints it.
type configEntry struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
	settings.Source
	// Flag and Env are the setting's flag (none for a setting only a
	// config file gives) and environment variable.
	Flag string `json:"flag,omitempty"`
	Env  string `json:"env"`
}

func (o *configShow) run(cmd *cobra.Command, _ []string) error {
	invalid := o.serve.Load(o.App, cmd.Flags())
	if err := settings.Load(o.Viper, o.Root); err != nil {
		return err
	}
	where := o.Where(cmd.Flags())
	var entries []configEntry
	for _, s := range append(slices.Clone(o.Root), o.serve.Table...) {
		e := configEntry{Key: s.Key, Value: value(s.Value), Source: where(s), Env: settings.EnvName(command.EnvPrefix, s.Key)}
		if s.Flag != "" {
			e.Flag = "--" + s.Flag
		}
		entries = append(entries, e)
	}
	out := cmd.OutOrStdout()
	if o.json {
		if err := command.WriteJSON(out, entries); err != nil {
			return err
		}
	} else {
		o.printConfig(out, entries)
	}
	return invalid
}

// printConfig prints the config file read and a table of the settings,
// each value last (some are long).
func (o *configShow) printConfig(w io.Writer, entries []configEntry) {
	if f := o.Viper.ConfigFileUsed(); f != "" {
		fmt.Fprintf(w, "config file: %s\n", f)
	} else {
		fmt.Fprintf(w, "config file: none (%s does not exist; --config names another)\n", state.For(o.Town()).Config())
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tFROM\tVALUE")
	for _, e := range entries {
		from := e.Source.String()
		if e.Origin == settings.FromFile {
			from = "config file"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Key, from, text(e.Value))
	}
	_ = tw.Flush()
}

// value is the setting's value p points to, a duration as Go writes it
// (JSON would give nanoseconds).
func value(p any) any {
	switch p := p.(type) {
	case *time.Duration:
		return p.String()
	case *string:
		return *p
	case *[]string:
		return *p
	case *int:
		return *p
	case *int64:
		return *p
	case *float64:
		return *p
	case *bool:
		return *p
	case *map[string][]string:
		return *p
	case *map[string]string:
		return *p
	default:
		panic(fmt.Sprintf("config show: a setting of type %T", p))
	}
}

// text is a value as YAML's flow style writes it: [a, b], {k: v}, "" for
// an empty string.
func text(v any) string {
	switch v := v.(type) {
	case string:
		if v == "" {
			return `""`
		}
		return v
	case []string:
		return "[" + strings.Join(v, ", ") + "]"
	case map[string][]string:
		return flowMap(v, func(l []string) string { return text(l) })
	case map[string]string:
		return flowMap(v, func(s string) string { return text(s) })
	default:
		return fmt.Sprint(v)
	}
}

func flowMap[V any](m map[string]V, show func(V) string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+": "+show(m[k]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
