package relay

import (
	"debug/buildinfo"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime/debug"
)

// resolve finds the binary a relayed cmd runs: name (the configured
// binary, or cmd itself) looked up in hostd's PATH, as an absolute path.
// It refuses a binary built from this project (the container's gt/bd shim,
// or gt-agent linked as gt), which would relay the command back to a
// gt-agent instead of running it on the host: that is what the project's
// bin/ ahead of Gas Town's gt on PATH gives.
func resolve(cmd, name string) (string, error) {
	path, err := exec.LookPath(name)
	if err == nil {
		path, err = filepath.Abs(path)
	}
	if err != nil {
		return "", err
	}
	if pkg, ours := BuiltHere(path); ours {
		how := fmt.Sprintf("put the host's %s ahead of %s on PATH", cmd, filepath.Dir(path))
		if cmd == "gt" || cmd == "bd" {
			how = fmt.Sprintf("set --relay-%s (relay.%s) to the host's %s, or %s", cmd, cmd, cmd, how)
		}
		return "", fmt.Errorf("%s resolves to %s, this project's container shim (built from %s), not the host's %s, "+
			"so relayed commands would come back to a gt-agent: %s", cmd, path, pkg, cmd, how)
	}
	return path, nil
}

// BuiltHere says whether the Go binary at path was built from this
// module, and from which package. A file that is not a Go binary (Gas
// Town's gt is one, but a script is not) is not. hostd doctor asks it too.
func BuiltHere(path string) (pkg string, ours bool) {
	self, ok := debug.ReadBuildInfo()
	if !ok || self.Main.Path == "" {
		return "", false
	}
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return "", false
	}
	return bi.Path, bi.Main.Path == self.Main.Path
}
