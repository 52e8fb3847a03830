//go:build linux

package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/polecat-sidecar/sidecar/internal/settings"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// envPrefix prefixes every setting's environment variable:
// GT_AGENT_<KEY>, upper-cased with '-' as '_'.
const envPrefix = "GT_AGENT"

// proxyEnv are the names Gas Town's proxy client reads, which set up's
// url, cert, key and ca too (GT_AGENT_URL, ... win over them).
var proxyEnv = map[string]string{"url": "GT_PROXY_URL", "cert": "GT_PROXY_CERT", "key": "GT_PROXY_KEY", "ca": "GT_PROXY_CA"}

// rootEnv are the root flags' variables, which every subcommand reads.
var rootEnv = []string{"config", "log-level", "log-format"}

// envKeys turns a key into its variable's name after the prefix.
var envKeys = strings.NewReplacer("-", "_")

// settingEnv is the variable of the setting or flag key.
func settingEnv(key string) string {
	return envPrefix + "_" + strings.ToUpper(envKeys.Replace(key))
}

// envHelp is the Environment section of gt-agent's help and up's: every
// variable gt-agent reads, each setting of up's table by its name.
func envHelp(up []settings.Setting) string {
	var b strings.Builder
	b.WriteString(`

Environment (a flag given wins over its variable, which wins over --config):
`)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, k := range rootEnv {
		fmt.Fprintf(tw, "  %s\t--%s (every command)\n", settingEnv(k), k)
	}
	for _, s := range up {
		name := settingEnv(s.Key)
		if p, ok := proxyEnv[s.Key]; ok {
			name = p + ", " + name
		}
		what := "up --" + s.Flag
		switch s.Key {
		case "socket":
			what += "; also where the gt and bd shims and exec reach the agent"
		case "hook-socket":
			what += "; also where hook reports"
		}
		fmt.Fprintf(tw, "  %s\t%s\n", name, what)
	}
	fmt.Fprintf(tw, "  GT_RIG, GT_POLECAT\tthe identity up joins as when --identity is not given\n")
	fmt.Fprintf(tw, "  LC_ALL, LC_CTYPE, LANG\ttmux runs in a UTF-8 locale: C.UTF-8 unless these name one\n")
	fmt.Fprintf(tw, "  TMPDIR\twhere session start keeps the session's exit status\n")
	_ = tw.Flush()
	fmt.Fprintf(&b, "\nThe gt and bd shims pass only %s of their environment on to the command on the host.", strings.Join(wire.RelayEnv, ", "))
	return b.String()
}
