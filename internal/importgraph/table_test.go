package importgraph

// row is one line of the table: what some packages import of ours.
type row struct {
	// pkgs are the packages the row is for: "x" the package x, "x/..." x
	// and every package below it. A package's row is the one whose
	// pattern names it most closely (x before x/..., a longer x/... before
	// a shorter one).
	pkgs []string
	// may is what the row's packages import of ours, in the same patterns;
	// tests is what their test files import besides.
	may, tests []string
	// note says what for, in docs/architecture.md's words.
	note string
}

// boundary is a rule of the design no row may break: no package that from
// names imports one that to names ("..." in to: any of ours), but those
// exceptTo names; exceptFrom names importers the rule does not hold for,
// and exceptTestsOf those whose test files alone it does not hold for.
type boundary struct {
	from, to, exceptTo, exceptFrom, exceptTestsOf []string
	why                                           string
}

// boundaries are the design's rules, checked against every import.
var boundaries = []boundary{
	{from: []string{"agent/..."}, to: []string{"hostd/..."}, why: "gt-agent links nothing of hostd's"},
	{from: []string{"hostd/..."}, to: []string{"agent/..."}, exceptTestsOf: []string{"hostd/e2e"},
		why: "hostd links nothing of gt-agent's; the end-to-end suite's tests play agents in its own process"},
	{from: []string{"tunnel/...", "heartbeat", "sync/...", "internal/..."}, to: []string{"agent/...", "hostd/...", "images/..."},
		why: "what both binaries link knows neither binary"},
	{from: []string{"sync/..."}, to: []string{"tunnel/...", "heartbeat"}, why: "the data channel's formats, packing and merge are pure, with no tunnel and no CLI"},
	{from: []string{"internal/..."}, to: []string{"..."}, exceptTo: []string{"internal/..."}, why: "domain-free helpers"},
	{from: []string{"hostd/api"}, to: []string{"..."}, exceptTo: []string{"internal/..."},
		why: "the control API's types and client are a leaf: `control` converts the services' values to them"},
	{from: []string{"..."}, to: []string{"hostd/control"}, exceptFrom: []string{"hostd/server"},
		why: "`control` declares what it calls of each service, and `server` hands them to it"},
	{from: []string{"..."}, to: []string{"agent/supervisor"}, exceptFrom: []string{"agent"}, exceptTestsOf: []string{"hostd/e2e"},
		why: "the channels take the tunnel as a `tunnel.Sessions`"},
}

// table is what every package of the module imports of ours. Keep it in
// the order it reads best in docs/architecture.md: the packages both
// binaries link, then gt-agent's, then hostd's, then the suites.
var table = []row{
	{pkgs: []string{"internal/..."}, note: "the domain-free helpers"},
	{pkgs: []string{"internal/unixsock/..."}, tests: []string{"internal/unixsock/..."},
		note: "`unixsocktest` (short directories for sockets in tests) is tested with `unixsock`, and `unixsock` with it"},
	{pkgs: []string{"internal/linkem"}, note: "the link emulator for tests and benchmarks: the standard library and `x/sys` alone"},
	{pkgs: []string{"tunnel/wire"}, may: []string{"internal/jsonscan"}, note: "what crosses between the binaries; `jsonscan` reads the relay's exit status"},
	{pkgs: []string{"tunnel"}, may: []string{"tunnel/wire", "tunnel/internal/connection", "tunnel/internal/guard", "internal/accept", "internal/settings"},
		tests: []string{"tunnel/internal/yamux", "tunnel/tunneltest", "internal/settings/settingstest", "internal/linkem"},
		note:  "the transport; `settings` validates its `Config`; its WAN benchmark crosses `linkem`"},
	{pkgs: []string{"tunnel/internal/connection"}, may: []string{"tunnel/wire", "tunnel/internal/yamux"}, tests: []string{"tunnel/tunneltest"},
		note: "QUIC and TLS+yamux, hidden from everything above `tunnel`"},
	{pkgs: []string{"tunnel/internal/guard"}, may: []string{"tunnel/wire", "tunnel/internal/connection", "internal/logging"},
		note: "the listener's defences: per-identity stream budgets, the handshake gate, the silence watch"},
	{pkgs: []string{"tunnel/internal/yamux"}, note: "hashicorp/yamux, kept in the tree"},
	{pkgs: []string{"tunnel/tunneltest"}, may: []string{"tunnel", "tunnel/wire"}, note: "a test CA and a relay for tests"},
	{pkgs: []string{"heartbeat"}, may: []string{"tunnel/wire", "internal/jsonscan"}, note: "beats, their codec and the judge"},
	{pkgs: []string{"sync"}, may: []string{"internal/jsonscan"}, note: "the data channel's policy, manifest and limits; `jsonscan` for the manifest's one-pass decoder"},
	{pkgs: []string{"sync/tree"}, may: []string{"sync", "internal/atomicfile"}, tests: []string{"sync/internal/fixture"}, note: "a data root, through `os.Root`"},
	{pkgs: []string{"sync/archive"}, may: []string{"sync", "sync/tree"}, tests: []string{"sync/internal/fixture"}, note: "pack and unpack"},
	{pkgs: []string{"sync/merge"}, may: []string{"sync", "sync/tree", "sync/archive"}, tests: []string{"sync/internal/fixture"}, note: "the host side of a transfer"},
	{pkgs: []string{"sync/claude"}, note: "Claude Code's settings rewritten"},
	{pkgs: []string{"sync/internal/fixture"}, may: []string{"sync"}, note: "the trees and archives the three packages' tests use"},

	{pkgs: []string{"agent"}, may: []string{"agent/...", "tunnel", "tunnel/wire", "internal/..."}, tests: []string{"tunnel/tunneltest"},
		note: "gt-agent's `main`: `up` starts the supervisor and every channel, as `parts` of one owner; its test plays hostd on `tunneltest`'s CA"},
	{pkgs: []string{"agent/..."}, may: []string{"agent/forward", "agent/tmux", "tunnel", "tunnel/wire", "heartbeat", "sync", "sync/archive", "internal/..."},
		tests: []string{"tunnel/tunneltest"},
		note:  "the channels' halves and their helpers: `relay` and `git` forward through `forward`; `liveness`, `nudge` and `pane` use `tmux`; `liveness` measures with `heartbeat`; `data` packs with `sync/archive`"},
	{pkgs: []string{"agent/sandbox"}, may: []string{"agent/liveness", "agent/git", "agent/tmux", "tunnel", "tunnel/wire", "internal/settings"},
		tests: []string{"tunnel/tunneltest", "internal/settings/settingstest"},
		note:  "hostd run's operations in a sandbox: sessions through `liveness`, the clone's origin from `git`"},
	{pkgs: []string{"agent/supervisor"}, may: []string{"agent/creds", "tunnel", "tunnel/wire", "internal/settings"}, tests: []string{"tunnel/tunneltest", "internal/settings/settingstest"},
		note: "the tunnel's single owner; renews through `creds`"},
	{pkgs: []string{"agent/shim"}, may: []string{"tunnel/wire"}, note: "the relay's client: the standard library and `wire` alone, so a relayed command starts fast"},
	{pkgs: []string{"agent/gt"}, may: []string{"agent/shim"}, note: "`main` of `bin/gt`"},

	{pkgs: []string{"hostd"}, may: []string{"hostd/cli", "hostd/git/hook", "internal/exit"},
		note: "hostd's `main`: `git`'s hooks (hostd is multi-call), else `cli`'s command tree, its error the exit status through `exit`"},
	{pkgs: []string{"hostd/cli"}, may: []string{"hostd/cli/command", "hostd/cli/ca", "hostd/cli/serve", "hostd/cli/run", "hostd/api", "hostd/doctor", "hostd/render", "hostd/state",
		"heartbeat", "tunnel/wire", "internal/..."},
		tests: []string{"hostd/cli/clitest", "tunnel"},
		note:  "the command tree: `NewRoot` lists every subcommand, from `command` and each subpackage; its own ask through `api` and print with `render`; `alive` judges `heartbeat`'s states; `config show` loads `serve`'s settings, and `doctor` runs `doctor`'s checks on them"},
	{pkgs: []string{"hostd/cli/command"}, may: []string{"hostd/api", "hostd/pki", "hostd/state", "tunnel/wire", "internal/..."},
		note: "what every subcommand shares: the `App` (settings through `internal/settings`, the town's paths through `state`, its CA through `pki`), the root command (`internal/cli`'s version and strict groups), output, and the daemon's answers more than one prints, asked through `api`"},
	{pkgs: []string{"hostd/cli/ca"}, may: []string{"hostd/cli/command", "hostd/api", "hostd/pki", "hostd/state", "tunnel/wire", "internal/atomicfile"},
		tests: []string{"hostd/cli/clitest", "internal/unixsock/unixsocktest"},
		note:  "`ca`, `cert` and `token`: the CA through `pki`; `cert revoke` asks hostd serve through `api` whether it has seen a name; the client files written through `atomicfile`"},
	{pkgs: []string{"hostd/cli/serve"}, may: []string{"hostd/cli/command", "hostd/server", "hostd/data", "hostd/sandbox/runtimes", "internal/..."}, tests: []string{"hostd/cli/clitest"},
		note: "`serve` builds `server` from its settings table (which names `data`'s default roots), and the sandboxes' runtime for its reaper with `runtimes`"},
	{pkgs: []string{"hostd/cli/run"}, may: []string{"hostd/cli/command", "hostd/api", "hostd/pane", "hostd/pki", "hostd/relay/gastown", "hostd/sandbox", "hostd/sandbox/kube", "hostd/sandbox/runtimes",
		"hostd/server", "hostd/state", "tunnel/wire", "internal/..."},
		tests: []string{"hostd/cli", "hostd/cli/clitest"},
		note:  "`run`, `attach` and `nuke`: `run` and `nuke` drive `sandbox`, the runtime built by `runtimes` (`run` reads `kube`'s settings and has it check the spec), and open the CA through `pki`; `run` finds the worktree with `gastown` and reports its starts through `api`; `attach` through `api` and `pane`'s filter; `nuke` forgets through `server` when no hostd runs; its tests see `run`'s failures in `cli`'s status"},
	{pkgs: []string{"hostd/cli/clitest"}, may: []string{"hostd/cli/command", "hostd/api", "hostd/pki", "hostd/server", "hostd/state", "tunnel", "tunnel/tunneltest", "tunnel/wire",
		"internal/exit", "internal/unixsock/unixsocktest"},
		note: "the commands' tests' harness: a tree run as `main` runs it, a town with a CA through `pki`, a `server` for it, polecats' tunnels"},
	{pkgs: []string{"hostd/server"}, may: []string{"hostd/api", "hostd/certs", "hostd/control", "hostd/data", "hostd/git", "hostd/limits", "hostd/liveness", "hostd/nudge",
		"hostd/pane", "hostd/pki", "hostd/registry", "hostd/relay", "hostd/sandbox", "hostd/state", "hostd/upstream", "tunnel", "tunnel/wire", "internal/parts", "internal/settings"},
		tests: []string{"tunnel/tunneltest", "internal/parts/partstest", "internal/settings/settingstest", "internal/unixsock/unixsocktest"},
		note:  "the thin core: builds every service and `control`, runs them as `parts` of one owner, and forgets a polecat across them"},
	{pkgs: []string{"hostd/control"}, may: []string{"hostd/api", "hostd/state", "heartbeat", "tunnel", "tunnel/wire", "internal/unixsock"},
		tests: []string{"internal/unixsock/unixsocktest"},
		note:  "the control socket's handlers, each calling a service through an interface declared beside it, and the API's boundary: `heartbeat`'s, `tunnel`'s and `wire`'s values converted to `api`'s types; `heartbeat` also for the state a polecat that never connected shows"},
	{pkgs: []string{"hostd/api"}, may: []string{"internal/unixsock"},
		tests: []string{"internal/unixsock/unixsocktest"},
		note:  "the control socket's JSON types (the services import it for the shapes in which they answer: status, the journal, the queues; what they store on disk is their own types, converted as they answer) and client; a leaf: it has its own beats and events, listener health, identities and sync results, with the JSON of `heartbeat`'s, `tunnel`'s and `wire`'s, which `control` converts to, and its caller gives the socket's path, which `unixsock` checks"},
	{pkgs: []string{"hostd/doctor"}, may: []string{"hostd/api", "hostd/confine", "hostd/pki", "hostd/relay", "hostd/sandbox", "hostd/sandbox/kube", "hostd/sandbox/runtimes",
		"hostd/state", "internal/cli", "internal/termsafe"},
		tests: []string{"hostd/server", "tunnel/wire", "tunnel/tunneltest", "internal/unixsock/unixsocktest"},
		note:  "hostd doctor's checks: the CA through `pki`, hostd serve through `api` on `state`'s socket, the shim as `relay` tells it, the runtime and image through `sandbox` (built by `runtimes`; `kube`'s API server, namespace and nodes' images), the kernel through `confine`, gt-agent's build against `cli`'s; printed through `termsafe`; its tests run a real `server`"},
	{pkgs: []string{"hostd/render"}, may: []string{"hostd/api", "heartbeat", "internal/termsafe"},
		note: "the CLI's text for the daemon's answers, escaped through `termsafe`"},
	{pkgs: []string{"hostd/registry"}, may: []string{"hostd/pki", "hostd/limits", "tunnel", "tunnel/wire", "internal/settings"},
		tests: []string{"tunnel/tunneltest", "internal/settings/settingstest"},
		note:  "live sessions; `pki` for serials"},
	{pkgs: []string{"hostd/registry/registrytest"}, may: []string{"hostd/registry"}, note: "the empty registry the services' tests are built on"},
	{pkgs: []string{"hostd/certs"}, may: []string{"hostd/api", "hostd/pki", "hostd/registry", "hostd/limits", "tunnel", "tunnel/wire", "internal/logging", "internal/settings"},
		tests: []string{"hostd/registry/registrytest", "tunnel/tunneltest", "internal/settings/settingstest"},
		note:  "join, renewal, revocation through the registry"},
	{pkgs: []string{"hostd/liveness"}, may: []string{"hostd/api", "hostd/registry", "hostd/state", "hostd/limits", "heartbeat", "tunnel", "tunnel/wire", "internal/logging", "internal/settings"},
		tests: []string{"hostd/registry/registrytest", "tunnel/tunneltest", "internal/settings/settingstest"},
		note:  "beats to `heartbeat`'s judge; `liveness.json` through `state`"},
	{pkgs: []string{"hostd/relay"}, may: []string{"hostd/relay/grammar", "hostd/relay/gastown", "hostd/confine", "hostd/state", "hostd/limits", "tunnel", "tunnel/wire",
		"internal/logging", "internal/settings"},
		tests: []string{"hostd/relay/internal/fixture", "tunnel/tunneltest", "internal/settings/settingstest"},
		note:  "relayed commands: the line checked by `grammar`, run in the polecat's place as `gastown` finds it, started through `confine`; its git configuration and the polecats' temporary directories in `state`'s directory"},
	{pkgs: []string{"hostd/relay/grammar"}, may: []string{"tunnel/wire", "internal/settings"}, tests: []string{"hostd/relay/internal/fixture"},
		note: "the command lines a polecat may relay; `settings` names a `relay.allow` entry it has no grammar for"},
	{pkgs: []string{"hostd/relay/gastown"}, may: []string{"tunnel/wire"}, tests: []string{"hostd/relay/internal/fixture"},
		note: "a Gas Town town as a host polecat's gt and bd see it"},
	{pkgs: []string{"hostd/relay/internal/fixture"}, may: []string{"tunnel/wire"}, note: "the towns and requests the relay's tests use"},
	{pkgs: []string{"hostd/confine"}, note: "Landlock or sandbox-exec"},
	{pkgs: []string{"hostd/git"}, may: []string{"hostd/git/hook", "hostd/git/branch", "hostd/git/internal/limited", "hostd/upstream", "hostd/limits", "tunnel", "tunnel/wire",
		"internal/logging", "internal/settings"},
		tests: []string{"hostd/git/worktree", "hostd/git/internal/fixture", "internal/settings/settingstest"},
		note:  "smart HTTP; `hook` installed as receive-pack's hooks and given their environment, `branch` for the rig's patterns; `upstream` for its `Refresher`, the queue called through its own `Upstream` interface; in tests `worktree` reads a worktree push-to-checkout left behind"},
	{pkgs: []string{"hostd/git/hook"}, may: []string{"hostd/git/branch", "hostd/git/worktree", "tunnel/wire"}, tests: []string{"hostd/git/internal/fixture"},
		note: "receive-pack's hooks: `branch` judges each ref, `worktree` each checkout in a host worktree"},
	{pkgs: []string{"hostd/git/branch"}, may: []string{"tunnel/wire"}, note: "which polecat owns a branch"},
	{pkgs: []string{"hostd/git/worktree"}, may: []string{"hostd/git/internal/limited"}, tests: []string{"hostd/git/internal/fixture"},
		note: "what a push would do to a host worktree"},
	{pkgs: []string{"hostd/git/internal/..."}, note: "the bounded text the service and `worktree` keep of git's (`limited`), the repositories the tests push into (`fixture`)"},
	{pkgs: []string{"hostd/data"}, may: []string{"hostd/api", "hostd/data/journal", "hostd/registry", "hostd/state", "hostd/limits", "sync/...", "tunnel", "tunnel/wire", "internal/atomicfile", "internal/logging", "internal/settings"},
		tests: []string{"tunnel/tunneltest", "internal/settings/settingstest"},
		note:  "hostd's half of the data channel; bases in `state`, the journal through `journal`"},
	{pkgs: []string{"hostd/data/journal"}, may: []string{"hostd/api", "internal/atomicfile"},
		note: "the data channel's journal on disk; `api` for the records as the control API shows them"},
	{pkgs: []string{"hostd/nudge"}, may: []string{"hostd/api", "hostd/registry", "hostd/state", "tunnel/wire", "internal/settings"},
		tests: []string{"hostd/registry/registrytest", "tunnel", "tunnel/tunneltest", "internal/settings/settingstest"},
		note:  "the nudge queues, persisted in `state`"},
	{pkgs: []string{"hostd/pane"}, may: []string{"hostd/registry", "tunnel", "tunnel/wire", "internal/termsafe"}, note: "peek and attach, and the attach filter"},
	{pkgs: []string{"hostd/pki"}, may: []string{"hostd/state", "tunnel/wire", "internal/atomicfile"}, note: "the CA on disk, its records through `state`"},
	{pkgs: []string{"hostd/upstream"}, may: []string{"hostd/api", "hostd/state", "hostd/limits", "internal/logging", "internal/settings"},
		tests: []string{"internal/settings/settingstest"},
		note:  "the push queue to origin, persisted in `state`"},
	{pkgs: []string{"hostd/sandbox"}, may: []string{"hostd/api", "hostd/registry", "hostd/state", "tunnel/wire", "internal/logging"},
		tests: []string{"hostd/registry/registrytest", "tunnel", "tunnel/tunneltest"},
		note:  "hostd run's containers; its panes and failed starts in `state`; the sandbox channel's host half on `registry`'s current tunnels"},
	{pkgs: []string{"hostd/sandbox/kube"}, may: []string{"hostd/sandbox", "sync", "tunnel/wire", "internal/settings"},
		tests: []string{"hostd/e2e", "hostd/api", "hostd/state", "tunnel/tunneltest", "internal/settings/settingstest"},
		note:  "the kubernetes runtime, a `sandbox.Runtime` through client-go; `sync` for the reserved name its agent's state directory takes; its cluster tests (tag `k8s`) join a real hostd from `e2e`'s harness, asked through `api`, its config.yaml where `state` says"},
	{pkgs: []string{"hostd/sandbox/runtimes"}, may: []string{"hostd/sandbox", "hostd/sandbox/kube", "internal/settings"}, tests: []string{"internal/settings/settingstest"},
		note: "the runtime `sandbox.runtime` names: `sandbox.CLI` or `kube`"},
	{pkgs: []string{"hostd/limits"}, may: []string{"tunnel/wire"}, note: "the per-polecat budgets, and `sidecar_limit_hits_total`, in which each service that refuses what a polecat asks counts it"},
	{pkgs: []string{"hostd/state"}, may: []string{"tunnel/wire", "internal/atomicfile"}, note: "the runtime directory and its JSON state"},

	{pkgs: []string{"hostd/e2e"}, may: []string{"hostd/api", "hostd/state", "tunnel/tunneltest"},
		tests: []string{"agent/creds", "agent/supervisor", "hostd/pki", "hostd/sandbox", "heartbeat", "sync", "sync/archive", "tunnel", "tunnel/wire", "internal/linkem"},
		note:  "the end-to-end suite: its harness runs the real binaries and asks hostd through `api`, at the socket `state` names; its tests also play agents in-process, a hostile client on `agent/creds` and a reconnect storm of `agent/supervisor`s; its WAN benchmarks put hostd and the agents at the two ends of a `linkem` link"},
	{pkgs: []string{"hostd/e2e/benchtable"}, note: "`make bench`'s table"},
	{pkgs: []string{"images/e2e"},
		tests: []string{"hostd/e2e", "hostd/api", "hostd/sandbox", "hostd/sandbox/kube", "hostd/state", "agent/creds", "tunnel", "tunnel/tunneltest", "tunnel/wire",
			"images/soak/history", "images/soak/history/invariant"},
		note: "the container suite, on `hostd/e2e`'s harness; the hostile client in a container on `agent/creds`; the Gas Town suite's sandboxes on the test cluster named as `kube` names them"},
	{pkgs: []string{"images/soak/history"}, tests: []string{"images/soak/history/internal/fixture"}, note: "the soak's history: its events, written and read, and the resource plot"},
	{pkgs: []string{"images/soak/history/invariant"}, may: []string{"images/soak/history"}, tests: []string{"images/soak/history/internal/fixture"},
		note: "the soak's checker: a file per invariant or family of them"},
	{pkgs: []string{"images/soak/history/internal/fixture"}, may: []string{"images/soak/history"}, note: "the clean history both packages' tests change"},
}
