package doctor

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// runtimeConfig is what the checks read of Gas Town's RuntimeConfig: a
// rig's runtime, or an agent's entry.
type runtimeConfig struct {
	Command     string   `json:"command"`
	ExecWrapper []string `json:"exec_wrapper"`
}

// rigSettings is what the checks read of <town>/<rig>/settings/config.json.
type rigSettings struct {
	Runtime *runtimeConfig            `json:"runtime"`
	Agent   string                    `json:"agent"`
	Agents  map[string]*runtimeConfig `json:"agents"`
}

// townSettings is what the checks read of <town>/settings/config.json.
type townSettings struct {
	DefaultAgent string                    `json:"default_agent"`
	Agents       map[string]*runtimeConfig `json:"agents"`
}

// wrapperFix is how a rig's polecats come to start through hostd run.
func wrapperFix(path string) string {
	return fmt.Sprintf(`set "runtime": {"exec_wrapper": ["hostd", "run", "--"]} in %s (docs/migrating.md)`, path)
}

// Rigs checks, for each rig of the town (mayor/rigs.json, else
// rigs.json), that Gas Town starts its polecats through hostd run, as it
// picks a rig's wrapper (internal/config, resolveAgentConfigInternal):
// the rig's runtime when it has one, its agent ignored; else the entry
// of its agent (or the town's default agent) under agents in the rig's
// settings or the town's. The wrapper must end with "--" and its hostd
// be found by lookPath.
func Rigs(town string, lookPath func(string) (string, error)) []Line {
	rigs, where, err := rigNames(town)
	switch {
	case err != nil:
		return []Line{warn("rigs", "mend it, or 'gt rig add' a rig", "%v", err)}
	case len(rigs) == 0:
		return []Line{warn("rigs", "'gt rig add <rig> <repository>' makes one", "no rigs in %s", where)}
	}
	var ts townSettings
	if err := readJSON(filepath.Join(town, "settings", "config.json"), &ts); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return []Line{warn("rigs", "mend it", "the town's settings: %v", err)}
	}
	var lines []Line
	for _, rig := range rigs {
		lines = append(lines, checkRig(town, rig, ts, lookPath))
	}
	return lines
}

func checkRig(town, rig string, ts townSettings, lookPath func(string) (string, error)) Line {
	check := "rig/" + rig
	if rig == "." || rig == ".." || !filepath.IsLocal(rig) || strings.ContainsAny(rig, `/\`) {
		return warn(check, "rename the rig in "+filepath.Join(town, "mayor", "rigs.json"), "%q is not a directory name", rig)
	}
	path := filepath.Join(town, rig, "settings", "config.json")
	var rs rigSettings
	if err := readJSON(path, &rs); errors.Is(err, fs.ErrNotExist) {
		return warn(check, wrapperFix(path), "its polecats run on the host: %s does not exist", path)
	} else if err != nil {
		return warn(check, "mend it", "%v", err)
	}
	var wrapper []string
	source := "runtime.exec_wrapper"
	if rs.Runtime != nil {
		wrapper = rs.Runtime.ExecWrapper
	} else {
		agent := cmp.Or(rs.Agent, ts.DefaultAgent, "claude")
		source = "agents." + agent + ".exec_wrapper"
		if e := cmp.Or(rs.Agents[agent], ts.Agents[agent]); e != nil {
			wrapper = e.ExecWrapper
		}
	}
	switch {
	case len(wrapper) == 0:
		return warn(check, wrapperFix(path), "its polecats run on the host: no %s", source)
	case filepath.Base(wrapper[0]) != "hostd" || !slices.Contains(wrapper[1:], "run"):
		return warn(check, wrapperFix(path), "its polecats start through %q (%s), not hostd run", wrapper, source)
	case wrapper[len(wrapper)-1] != "--":
		return fail(check, fmt.Sprintf("end %s in %s with \"--\"", source, path),
			"%s %q does not end with \"--\": hostd run would take the agent's flags as its own", source, wrapper)
	}
	if _, err := lookPath(wrapper[0]); err != nil {
		return fail(check, "give hostd's absolute path as the wrapper's first word, or install hostd on the PATH Gas Town's sessions have",
			"%s %q: %v (on doctor's PATH)", source, wrapper, err)
	}
	if rs.Runtime != nil && rs.Agent != "" && rs.Agent != "claude" && rs.Runtime.Command == "" {
		return warn(check, fmt.Sprintf("give %s's command in the same runtime (command, args), or move the wrapper to agents.%s.exec_wrapper", rs.Agent, rs.Agent),
			"it names agent %q, but Gas Town takes its runtime over its agent: its polecats run Claude's defaults in their containers", rs.Agent)
	}
	return ok(check, "its polecats start in containers: %s %q", source, wrapper)
}

// rigNames lists the town's rigs, sorted: the keys of rigs in
// <town>/mayor/rigs.json, or in <town>/rigs.json when the first is
// missing (as Gas Town finds them); where is the file read.
func rigNames(town string) (rigs []string, where string, err error) {
	var list struct {
		Rigs map[string]json.RawMessage `json:"rigs"`
	}
	for _, where = range []string{filepath.Join(town, "mayor", "rigs.json"), filepath.Join(town, "rigs.json")} {
		err = readJSON(where, &list)
		if !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, filepath.Join(town, "mayor", "rigs.json"), nil
	}
	for rig := range list.Rigs {
		rigs = append(rigs, rig)
	}
	slices.Sort(rigs)
	return rigs, where, err
}

// maxSettings bounds a Gas Town settings file read.
const maxSettings = 1 << 20

// readJSON decodes the JSON file at path into v; the error names the
// file.
func readJSON(path string, v any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := json.NewDecoder(io.LimitReader(f, maxSettings)).Decode(v); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}
