package sandbox

import (
	"path/filepath"
	"strings"
)

// command is Gas Town's session command as it runs in the container: an
// absolute command path (the host's claude) becomes its base name, found
// on the container's PATH, and Claude's --settings, which Gas Town points
// at the rig's shared settings on the host, points at their copy the data
// channel installs under the data root (<data root>/.claude/settings.json).
func (s *Service) command(command []string) []string {
	settings := filepath.Join(s.cfg.DataRoot, ".claude", "settings.json")
	c := append([]string(nil), command...)
	if strings.HasPrefix(c[0], "/") {
		c[0] = c[0][strings.LastIndex(c[0], "/")+1:]
	}
	for i := 1; i < len(c); i++ {
		switch {
		case c[i] == "--":
			return c
		case c[i] == "--settings" && i+1 < len(c) && strings.HasPrefix(c[i+1], "/"):
			c[i+1] = settings
			i++
		case strings.HasPrefix(c[i], "--settings=/"):
			c[i] = "--settings=" + settings
		}
	}
	return c
}
