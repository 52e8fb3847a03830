package gastown

import (
	"cmp"
	"strconv"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// PolecatEnv is the environment Gas Town gives a host polecat session of
// id in town (its AgentEnv for a polecat, and what SessionManager.Start
// adds), from the certificate's identity and the town, plus
// GT_PROXY_IDENTITY, so that a relayed command behaves as in that session.
// getenv stands for the environment of the gt that starts a session (the
// Dolt server's host and port), here the relay's base (relay.env).
// docs/security.md lists what it leaves out, and why.
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
	if p := DoltPort(town, getenv); p > 0 {
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
