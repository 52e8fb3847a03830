package gastown

import (
	"cmp"
	"strconv"

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
