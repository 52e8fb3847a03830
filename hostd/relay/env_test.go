package relay

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestPolecatEnv: every variable Gas Town's host polecat session has,
// with its value, computed from the identity, the town's files and the
// base environment, in order.
func TestPolecatEnv(t *testing.T) {
	id := wire.Identity{Rig: "gastown", Name: "bullet-farmer"}
	town := t.TempDir() // no files there: every default
	identity := "GT_ROLE=gastown/polecats/bullet-farmer GT_RIG=gastown GT_POLECAT=bullet-farmer BD_ACTOR=gastown/polecats/bullet-farmer " +
		"GIT_AUTHOR_NAME=bullet-farmer BD_DOLT_AUTO_COMMIT=off "
	session := "BEADS_AGENT_NAME=gastown/bullet-farmer GT_SESSION=%s-bullet-farmer BD_BACKUP_ENABLED=false NODE_OPTIONS= CLAUDECODE= "
	polecat := "GT_POLECAT_PATH=%[1]s/gastown/polecats/bullet-farmer/gastown GT_TOWN_ROOT=%[1]s POLECAT_SLOT=%[2]d GT_PROXY_IDENTITY=gastown/bullet-farmer"
	roots := func(town string) string { return "GT_ROOT=" + town + " GIT_CEILING_DIRECTORIES=" + town + " " }

	full := t.TempDir()
	writeFile(t, full, "mayor/rigs.json", `{"rigs":{"gastown":{"beads":{"prefix":"ga"}}}}`)
	writeFile(t, full, ".dolt-data/config.yaml", "listener:\n  port: 3400\n")
	mkdirs(t, full, "gastown/polecats/ace", "gastown/polecats/bullet-farmer")

	cases := []struct {
		name string
		town string
		base []string
		want string
	}{
		{"bare town", town, nil,
			identity + roots(town) + fmt.Sprintf(session, "gt") + "BEADS_DOLT_AUTO_START=0 " + fmt.Sprintf(polecat, town, 0)},
		{"Dolt port and host from the base", town, []string{"GT_DOLT_PORT=3307", "GT_DOLT_HOST=db.local"},
			identity + roots(town) + fmt.Sprintf(session, "gt") + "GT_DOLT_PORT=3307 BEADS_DOLT_PORT=3307 BEADS_DOLT_AUTO_START=0 BEADS_DOLT_SERVER_HOST=db.local " + fmt.Sprintf(polecat, town, 0)},
		{"BEADS_DOLT_SERVER_HOST before GT_DOLT_HOST", town, []string{"GT_DOLT_HOST=db.local", "BEADS_DOLT_SERVER_HOST=beads.local"},
			identity + roots(town) + fmt.Sprintf(session, "gt") + "BEADS_DOLT_AUTO_START=0 BEADS_DOLT_SERVER_HOST=beads.local " + fmt.Sprintf(polecat, town, 0)},
		{"the town's prefix, port and slot", full, []string{"GT_DOLT_PORT=3307"},
			identity + roots(full) + fmt.Sprintf(session, "ga") + "GT_DOLT_PORT=3400 BEADS_DOLT_PORT=3400 BEADS_DOLT_AUTO_START=0 " + fmt.Sprintf(polecat, full, 1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := strings.Join(PolecatEnv(id, c.town, getenv(c.base)), " "); got != c.want {
				t.Errorf("PolecatEnv:\n got %s\nwant %s", got, c.want)
			}
		})
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
			r := req(c.shim, "gt", "prime")
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
			for _, kv := range PolecatEnv(wire.Identity{Rig: "gastown", Name: "furiosa"}, "/town", getenv(s.base)) {
				if !slices.Contains(env, kv) {
					t.Errorf("%s missing", kv)
				}
			}
		})
	}
}
