package relay

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/polecat-sidecar/sidecar/hostd/confine"
	"github.com/polecat-sidecar/sidecar/hostd/relay/gastown"
	"github.com/polecat-sidecar/sidecar/hostd/relay/grammar"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// launch is how one relayed command runs, decided by hostd alone: its
// working directory, its environment and its confinement (nil when the
// operator let hostd relay unconfined).
type launch struct {
	dir    string
	env    []string
	policy *confine.Policy
}

// prepare decides how a relayed command of id runs: in its place (its
// worktree, as a host polecat's), with the polecat session's environment,
// bd pointed at the rig's beads and hostd's git configuration, confined
// to what the polecat may touch.
func (s *Service) prepare(id wire.Identity, req wire.RelayRequest, line grammar.Parsed) (launch, error) {
	p, err := gastown.Locate(s.cfg.Town, id)
	if err != nil {
		return launch{}, fmt.Errorf("hostd will not relay for this polecat: %w", err)
	}
	tmp := ""
	if s.cfg.Town != "" {
		tmp = state.For(s.cfg.Town).RelayTemp(id)
		if err := os.MkdirAll(tmp, 0o700); err != nil {
			return launch{}, fmt.Errorf("making the polecat's temporary directory: %w", err)
		}
	}
	l := launch{dir: p.Dir, env: s.commandEnv(id, req, s.hostEnv(p, tmp, strings.HasPrefix(line.Path, "bd ")))}
	if s.support.Available() {
		made, _ := gasTownState(s.cfg.Town)
		made = append(made, filepath.Join(s.home, ".gt"), beadsCircuit)
		if p.Worktree != "" {
			made = append(made, filepath.Join(p.Worktree, ".runtime")) // gt's agent lock and session files
		}
		for _, d := range made {
			_ = os.MkdirAll(d, 0o755) // best effort: a rule is given only for what exists
		}
		for _, f := range []string{filepath.Join(s.home, ".gt", "cmd-usage.jsonl"), filepath.Join(s.home, ".gt", "costs.jsonl")} {
			if fh, err := os.OpenFile(f, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err == nil { // gt appends to them
				fh.Close()
			}
		}
		policy := s.policy(p, tmp)
		l.policy = &policy
	}
	return l, nil
}

// hostEnv is what hostd adds to a relayed command's environment from
// the host's own view: its temporary directory, bd's hooks off, git's
// configuration (hostd's global file, the system's ignored, and above any
// repository's: no hooks, no fsmonitor, no submodules, no transport but
// local files, the rig's origin read as its bare repository, which hostd
// alone pushes upstream), and for bd the rig's beads.
func (s *Service) hostEnv(p gastown.Place, tmp string, bd bool) []string {
	env := []string{"BD_NO_HOOKS=1"}
	if tmp != "" {
		env = append(env, "TMPDIR="+tmp)
	}
	if s.dir != "" {
		env = append(env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+filepath.Join(s.dir, "gitconfig"))
	}
	kv := [][2]string{
		{"core.hooksPath", filepath.Join(s.dir, "no-hooks")},
		{"core.fsmonitor", "false"},
		{"submodule.recurse", "false"},
		{"protocol.allow", "never"},
		{"protocol.file.allow", "always"},
	}
	if p.Rig != "" {
		for _, u := range p.Origins() {
			kv = append(kv, [2]string{"url." + p.Repo + ".insteadOf", u})
		}
	}
	env = append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(len(kv)))
	for i, c := range kv {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, c[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, c[1]))
	}
	if bd && p.Beads != "" {
		env = append(env, "BEADS_DIR="+p.Beads)
	}
	return env
}

// writeGitConfig makes the relay's directory: the empty hooks directory
// and the global git configuration relayed commands run with, which
// keeps of the operator's own (read with base's HOME) only their name and
// e-mail, for commits, and names no per-user ignore or attributes file.
func writeGitConfig(dir string, base []string) error {
	if err := os.MkdirAll(filepath.Join(dir, "no-hooks"), 0o700); err != nil {
		return fmt.Errorf("making the relay's directory: %w", err)
	}
	var b strings.Builder
	b.WriteString("# Written by hostd at start: relayed gt and bd run git with this global configuration.\n[user]\n")
	for _, key := range []string{"name", "email"} {
		cmd := exec.Command("git", "config", "--global", "--get", "user."+key)
		cmd.Env = append(os.Environ(), "HOME="+getenv(base)("HOME"))
		if out, err := cmd.Output(); err == nil && strings.TrimSpace(string(out)) != "" {
			fmt.Fprintf(&b, "\t%s = %s\n", key, gitQuote(strings.TrimSpace(string(out))))
		}
	}
	b.WriteString("[core]\n\texcludesFile = /dev/null\n\tattributesFile = /dev/null\n")
	if err := os.WriteFile(filepath.Join(dir, "gitconfig"), []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("writing the relay's git configuration: %w", err)
	}
	return nil
}

// gitQuote is s as a quoted git configuration value: backslash and double
// quote escaped, control characters left out.
func gitQuote(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
	return `"` + strings.NewReplacer(`\\`, `\\\\`, `"`, `\\"`).Replace(s) + `"`
}
