package doctor

import (
	"cmp"
	"context"
	"os/exec"
	"strings"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/confine"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox/runtimes"
	"github.com/polecat-sidecar/sidecar/internal/cli"
)

// Config is what Run checks: the town, hostd's settings for it, and how
// to look at this machine.
type Config struct {
	// Town is the town's root; TrustDomain the CA's trust domain.
	Town, TrustDomain string
	// Settings is what loading hostd serve's settings said: nil when
	// serve would take them.
	Settings error
	// ProxyCADir is where gt-proxy-server keeps its CA (pki.ProxyCADir).
	ProxyCADir string
	// GT and BD are the host programs relayed (relay.gt, relay.bd): a
	// name looked up with LookPath, or a path.
	GT, BD string
	// LookPath finds a program as hostd would (exec.LookPath when nil).
	LookPath func(string) (string, error)
	// Listen, AdminListen and MetricsListen are hostd serve's listeners
	// (listen, admin_listen, metrics_listen; empty when off).
	Listen, AdminListen, MetricsListen string
	// AllowUnconfined is relay.allow_unconfined.
	AllowUnconfined bool
	// Runtime is sandbox.runtime and sandbox.kubernetes.*; Image and
	// Agent are hostd run's sandbox.image and sandbox.agent.
	Runtime      runtimes.Config
	Image, Agent string
	// Hostd is hostd's own build, which the image's gt-agent should be.
	Hostd cli.Build
	// MaxStoredBytes is the data channel's budget per polecat
	// (sync.max_stored_bytes).
	MaxStoredBytes int64
	// Now is the time the clock and the CA are judged at (time.Now when
	// zero).
	Now time.Time
}

// Run runs every check of cfg, in order: settings, the town and its CA
// (and gt-proxy-server's), the clock, gt and bd, the control socket and
// hostd's ports, the kernel's confinement, the container runtime and the
// image, each rig's wrapper, and free disk.
func Run(ctx context.Context, cfg Config) Report {
	lookPath := cfg.LookPath
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	now := cfg.Now
	if now.IsZero() {
		now = time.Now()
	}
	var r Report
	r.Add(Settings(cfg.Settings), Town(cfg.Town), CA(cfg.Town, cfg.TrustDomain, now), ProxyCA(cfg.ProxyCADir, cfg.Town),
		Clock(cfg.Town, cfg.TrustDomain, now),
		Tool(ctx, "gt", cmp.Or(cfg.GT, "gt"), TestedGT, lookPath), Tool(ctx, "bd", cmp.Or(cfg.BD, "bd"), TestedBD, lookPath))
	control, served := Control(ctx, cfg.Town)
	r.Add(control)
	r.Add(Ports(ServePorts(cfg.Listen, cfg.AdminListen, cfg.MetricsListen), served)...)
	r.Add(Confinement(confine.Probe(), cfg.AllowUnconfined))
	r.Add(Sandboxes(ctx, cfg.Runtime, cfg.Image, cfg.Agent, cfg.Hostd)...)
	r.Add(Rigs(cfg.Town, lookPath)...)
	r.Add(Disk(cfg.Town, cfg.MaxStoredBytes))
	return r
}

// Settings checks hostd serve's settings: err is what loading them said.
func Settings(err error) Line {
	if err != nil {
		return fail("settings", "'hostd config show' lists every setting and where it came from; docs/config.sample.yaml explains them", "%s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return ok("settings", "hostd serve would take them")
}
