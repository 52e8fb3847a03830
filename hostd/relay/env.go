package relay

import (
	"cmp"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// PolecatEnv is the environment Gas Town gives a host polecat session of
// id in town, computed from the identity in the certificate and the town,
// so that a relayed command behaves as it would in that session; plus
// GT_PROXY_IDENTITY. getenv stands for the environment of the gt process
// that starts a session, which Gas Town reads for the Dolt server: here,
// the relay's base (relay.env).
//
// It mirrors Gas Town's internal/config/env.go (AgentEnv for role
// "polecat" with the town root and the session name, as
// internal/polecat/session_manager.go's SessionManager.Start calls it) and
// the variables Start adds: GT_POLECAT_PATH, GT_TOWN_ROOT, POLECAT_SLOT.
// Left out are the variables that describe the agent process or one
// session start, which the certificate and the town do not tell:
// CLAUDE_CONFIG_DIR, CLAUDE_CODE_EFFORT_LEVEL, GT_AGENT, GT_PROCESS_NAMES,
// GT_SESSION_ID_ENV and the agent's own env (from its runtime config; of
// the relayed commands gt handoff reads GT_AGENT and GT_PROCESS_NAMES, gt
// prime GT_SESSION_ID_ENV), GT_RUN (a telemetry id per session start),
// GT_BRANCH (the branch when the session started, which gt done reads only
// when its working directory is gone), the OTEL_* set (only with
// GT_OTEL_METRICS_URL in Gas Town's environment) and the cloud credentials
// Gas Town copies from its own environment (relay.env passes those).
func PolecatEnv(id wire.Identity, town string, getenv func(string) string) []string {
	role := id.Rig + "/polecats/" + id.Name
	env := []string{
		"GT_ROLE=" + role,
		"GT_RIG=" + id.Rig,
		"GT_POLECAT=" + id.Name,
		"BD_ACTOR=" + role,
		"GIT_AUTHOR_NAME=" + id.Name,
		"BD_DOLT_AUTO_COMMIT=off", // polecats sharing one Dolt server must not contend on its manifest
		"GT_ROOT=" + town,
		"GIT_CEILING_DIRECTORIES=" + town,
		"BEADS_AGENT_NAME=" + id.Rig + "/" + id.Name,
		"GT_SESSION=" + rigPrefix(town, id.Rig) + "-" + id.Name, // every gt command touches this session's heartbeat
		"BD_BACKUP_ENABLED=false",
		"NODE_OPTIONS=",
		"CLAUDECODE=",
	}
	if p := doltPort(town, getenv); p > 0 {
		env = append(env, "GT_DOLT_PORT="+strconv.Itoa(p), "BEADS_DOLT_PORT="+strconv.Itoa(p))
	}
	env = append(env, "BEADS_DOLT_AUTO_START=0") // Gas Town runs the Dolt server
	if h := cmp.Or(getenv("BEADS_DOLT_SERVER_HOST"), getenv("GT_DOLT_HOST")); h != "" {
		env = append(env, "BEADS_DOLT_SERVER_HOST="+h)
	}
	return append(env,
		"GT_POLECAT_PATH="+worktree(town, id),
		"GT_TOWN_ROOT="+town,
		"POLECAT_SLOT="+strconv.Itoa(polecatSlot(town, id)),
		"GT_PROXY_IDENTITY="+id.String(),
	)
}

// baseEnv is PATH (the relayed binaries' directories, then the system
// ones, each once) and HOME, with extra's KEY=VALUE entries added or
// replacing them.
func baseEnv(binDirs, extra []string) []string {
	var path []string
	for _, d := range append(binDirs, "/usr/local/bin", "/usr/bin", "/bin") {
		if !slices.Contains(path, d) {
			path = append(path, d)
		}
	}
	home, _ := os.UserHomeDir()
	return mergeEnv([]string{"PATH=" + strings.Join(path, ":"), "HOME=" + home}, extra)
}

// commandEnv is one relayed command's environment: the base, the
// terminal variables the policy let through from the shim, then the
// polecat's session environment, the shim's working directory and host's
// own (hostEnv), which nothing replaces.
func (s *Service) commandEnv(id wire.Identity, req wire.RelayRequest, host []string) []string {
	shim := make([]string, len(req.Env))
	for i, e := range req.Env {
		shim[i] = string(e)
	}
	env := mergeEnv(s.base, shim)
	env = mergeEnv(env, PolecatEnv(id, s.cfg.Town, getenv(s.base)))
	return mergeEnv(env, append([]string{"GT_PROXY_CWD=" + string(req.Cwd)}, host...))
}

// getenv looks a variable up in env, as os.Getenv does in the process
// environment.
func getenv(env []string) func(string) string {
	return func(key string) string {
		for _, kv := range env {
			if k, v, _ := strings.Cut(kv, "="); k == key {
				return v
			}
		}
		return ""
	}
}

// mergeEnv is env with each KEY=VALUE of over replacing the entry of the
// same key, or added after the rest: one entry per key.
func mergeEnv(env, over []string) []string {
	out := slices.Clone(env)
	for _, kv := range over {
		key, _, _ := strings.Cut(kv, "=")
		i := slices.IndexFunc(out, func(e string) bool { return strings.HasPrefix(e, key+"=") })
		if i >= 0 {
			out[i] = kv
		} else {
			out = append(out, kv)
		}
	}
	return out
}
