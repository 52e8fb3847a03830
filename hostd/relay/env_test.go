package relay

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

func TestPolecatEnv(t *testing.T) {
	got := strings.Join(PolecatEnv(wire.Identity{Rig: "gastown", Name: "bullet-farmer"}, "/home/op/gt"), " ")
	want := "GT_ROLE=gastown/polecats/bullet-farmer GT_RIG=gastown GT_POLECAT=bullet-farmer BD_ACTOR=gastown/polecats/bullet-farmer " +
		"BEADS_AGENT_NAME=gastown/bullet-farmer GIT_AUTHOR_NAME=bullet-farmer BD_DOLT_AUTO_COMMIT=off BD_BACKUP_ENABLED=false " +
		"GT_ROOT=/home/op/gt GIT_CEILING_DIRECTORIES=/home/op/gt GT_PROXY_IDENTITY=gastown/bullet-farmer"
	if got != want {
		t.Errorf("PolecatEnv:\n got %s\nwant %s", got, want)
	}
}

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
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &Service{cfg: Config{Town: "/town"}, base: baseEnv(c.dirs, c.extra)}
			r := req(c.shim, "gt", "prime")
			r.Cwd = []byte("/work")
			env := s.commandEnv(wire.Identity{Rig: "gastown", Name: "furiosa"}, r)
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
			for _, kv := range PolecatEnv(wire.Identity{Rig: "gastown", Name: "furiosa"}, "/town") {
				if !slices.Contains(env, kv) {
					t.Errorf("%s missing", kv)
				}
			}
		})
	}
}
