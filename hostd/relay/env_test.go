package relay

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/hostd/relay/gastown"
	"github.com/polecat-sidecar/sidecar/hostd/relay/internal/fixture"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

func TestCommandEnv(t *testing.T) {
	home, _ := os.UserHomeDir()
	cases := []struct {
		name  string
		dirs  []string
		extra []string
		shim  []string
		want  map[string]string // entries that must be there, exactly
	}{
		{"default", []string{"/opt/gt/bin", "/usr/bin", "/opt/gt/bin"}, nil, nil,
			map[string]string{"PATH": "/opt/gt/bin:/usr/bin:/usr/local/bin:/bin", "HOME": home, "GT_ROOT": "/town", "GT_PROXY_CWD": "/work"}},
		{"relay.env adds and replaces", []string{"/opt/gt/bin"}, []string{"DOLT_HOST=db", "HOME=/home/gt", "PATH=/only"}, nil,
			map[string]string{"PATH": "/only", "HOME": "/home/gt", "DOLT_HOST": "db"}},
		{"relay.env cannot replace the identity", nil, []string{"GT_ROLE=mayor", "BD_ACTOR=mayor", "GT_ROOT=/"}, nil,
			map[string]string{"GT_ROLE": "gastown/polecats/furiosa", "BD_ACTOR": "gastown/polecats/furiosa", "GT_ROOT": "/town"}},
		{"terminal variables from the shim", nil, nil, []string{"TERM=xterm-256color", "COLUMNS=80"},
			map[string]string{"TERM": "xterm-256color", "COLUMNS": "80"}},
		{"the shim's replace relay.env's", nil, []string{"LANG=C", "TERM=dumb"}, []string{"LANG=C.UTF-8"},
			map[string]string{"LANG": "C.UTF-8", "TERM": "dumb"}},
		{"the shim cannot replace the session's", nil, nil, []string{"NODE_OPTIONS=--inspect", "GIT_AUTHOR_NAME=mayor", "GT_PROXY_CWD=/etc"},
			map[string]string{"NODE_OPTIONS": "", "GIT_AUTHOR_NAME": "furiosa", "GT_PROXY_CWD": "/work"}},
		{"relay.env cannot replace hostd's own", nil, []string{"TMPDIR=/tmp", "GIT_CONFIG_COUNT=0", "BD_NO_HOOKS=0"}, nil,
			map[string]string{"TMPDIR": "/relay/tmp", "GIT_CONFIG_COUNT": "1", "BD_NO_HOOKS": "1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &Service{cfg: Config{Town: "/town"}, base: baseEnv(c.dirs, c.extra)}
			r := fixture.Request(c.shim, "gt", "prime")
			r.Cwd = []byte("/work")
			env := s.commandEnv(wire.Identity{Rig: "gastown", Name: "furiosa"}, r, []string{"TMPDIR=/relay/tmp", "GIT_CONFIG_COUNT=1", "BD_NO_HOOKS=1"})
			keys := map[string]string{}
			for _, kv := range env {
				k, v, _ := strings.Cut(kv, "=")
				if _, dup := keys[k]; dup {
					t.Errorf("%s set twice in %q", k, env)
				}
				keys[k] = v
			}
			for k, v := range c.want {
				if keys[k] != v {
					t.Errorf("%s=%q, want %q", k, keys[k], v)
				}
			}
			for _, kv := range gastown.PolecatEnv(wire.Identity{Rig: "gastown", Name: "furiosa"}, "/town", getenv(s.base)) {
				if !slices.Contains(env, kv) {
					t.Errorf("%s missing", kv)
				}
			}
		})
	}
}
