package gastown

import (
	"fmt"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/hostd/relay/internal/fixture"
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
	fixture.WriteFile(t, full, "mayor/rigs.json", `{"rigs":{"gastown":{"beads":{"prefix":"ga"}}}}`)
	fixture.WriteFile(t, full, ".dolt-data/config.yaml", "listener:\n  port: 3400\n")
	fixture.Mkdirs(t, full, "gastown/polecats/ace", "gastown/polecats/bullet-farmer")

	cases := []struct {
		name string
		town string
		base map[string]string // the environment getenv reads
		want string
	}{
		{"bare town", town, nil,
			identity + roots(town) + fmt.Sprintf(session, "gt") + "BEADS_DOLT_AUTO_START=0 " + fmt.Sprintf(polecat, town, 0)},
		{"Dolt port and host from the base", town, map[string]string{"GT_DOLT_PORT": "3307", "GT_DOLT_HOST": "db.local"},
			identity + roots(town) + fmt.Sprintf(session, "gt") + "GT_DOLT_PORT=3307 BEADS_DOLT_PORT=3307 BEADS_DOLT_AUTO_START=0 BEADS_DOLT_SERVER_HOST=db.local " + fmt.Sprintf(polecat, town, 0)},
		{"BEADS_DOLT_SERVER_HOST before GT_DOLT_HOST", town, map[string]string{"GT_DOLT_HOST": "db.local", "BEADS_DOLT_SERVER_HOST": "beads.local"},
			identity + roots(town) + fmt.Sprintf(session, "gt") + "BEADS_DOLT_AUTO_START=0 BEADS_DOLT_SERVER_HOST=beads.local " + fmt.Sprintf(polecat, town, 0)},
		{"the town's prefix, port and slot", full, map[string]string{"GT_DOLT_PORT": "3307"},
			identity + roots(full) + fmt.Sprintf(session, "ga") + "GT_DOLT_PORT=3400 BEADS_DOLT_PORT=3400 BEADS_DOLT_AUTO_START=0 " + fmt.Sprintf(polecat, full, 1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := strings.Join(PolecatEnv(id, c.town, func(k string) string { return c.base[k] }), " "); got != c.want {
				t.Errorf("PolecatEnv:\n got %s\nwant %s", got, c.want)
			}
		})
	}
}
