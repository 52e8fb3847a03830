package relay

import (
	"os"
	"slices"
	"strings"

	"github.com/polecat-sidecar/sidecar/hostd/relay/gastown"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

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
	env = mergeEnv(env, gastown.PolecatEnv(id, s.cfg.Town, getenv(s.base)))
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
