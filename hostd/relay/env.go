package relay

import (
	"os"
	"slices"
	"strings"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// PolecatEnv is the environment Gas Town gives a host polecat session
// (internal/config/env.go, AgentEnv), computed from the identity in the
// certificate and the town root, plus GT_PROXY_IDENTITY, so that a relayed
// command behaves as it would in that session.
func PolecatEnv(id wire.Identity, town string) []string {
	role := id.Rig + "/polecats/" + id.Name
	return []string{
		"GT_ROLE=" + role,
		"GT_RIG=" + id.Rig,
		"GT_POLECAT=" + id.Name,
		"BD_ACTOR=" + role,
		"BEADS_AGENT_NAME=" + id.Rig + "/" + id.Name,
		"GIT_AUTHOR_NAME=" + id.Name,
		"BD_DOLT_AUTO_COMMIT=off", // polecats sharing one Dolt server must not contend on its manifest
		"BD_BACKUP_ENABLED=false",
		"GT_ROOT=" + town,
		"GIT_CEILING_DIRECTORIES=" + town,
		"GT_PROXY_IDENTITY=" + id.String(),
	}
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
// polecat's identity (which nothing replaces), the shim's working
// directory, and the terminal variables the policy let through.
func (s *Service) commandEnv(id wire.Identity, req wire.RelayRequest) []string {
	env := mergeEnv(s.base, PolecatEnv(id, s.cfg.Town))
	env = mergeEnv(env, []string{"GT_PROXY_CWD=" + string(req.Cwd)})
	shim := make([]string, len(req.Env))
	for i, e := range req.Env {
		shim[i] = string(e)
	}
	return mergeEnv(env, shim)
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
