package cli

import (
	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/hostd/cli/ca"
	"github.com/polecat-sidecar/sidecar/hostd/cli/command"
	"github.com/polecat-sidecar/sidecar/hostd/cli/serve"
	"github.com/polecat-sidecar/sidecar/hostd/doctor"
	sharedcli "github.com/polecat-sidecar/sidecar/internal/cli"
	"github.com/polecat-sidecar/sidecar/internal/exit"
)

// doctorOptions are hostd doctor's flags, and serve's settings, which it
// checks.
type doctorOptions struct {
	*command.App
	serve *serve.Settings
	json  bool
}

func newDoctorCmd(a *command.App) *cobra.Command {
	o := &doctorOptions{App: a, serve: serve.NewSettings()}
	cmd := &cobra.Command{
		Use:   "doctor [serve's flags]",
		Short: "Check everything the town needs on this machine: a line each, ok, warn or fail, with the fix",
		Long: `Check everything the town needs on this machine and print a line for each:
ok, warn or fail, what was found, and under it the fix. In order: hostd
serve's settings (as 'hostd config show' loads them: config.yaml and HOSTD_*
variables), the town, its CA (<town>/.runtime/ca) and gt-proxy-server's, the
clock (against the CA's start and the newest certificate it issued; doctor
asks no time server), Gas Town's gt and bd (relay.gt, relay.bd, else on
PATH: not this project's container shim, and the versions hostd is tested
with), the control socket (hostd serve answering), hostd's ports (listen on
UDP and TCP, admin_listen, metrics_listen: free, or held by the hostd serve
that answers), the kernel's confinement of relayed commands (Landlock,
sandbox-exec), the container runtime (sandbox.runtime: docker's or
podman's engine answering; kubernetes: its API server answering with the
kubeconfig, the namespace there) and the polecat image (sandbox.image:
there, its gt-agent built as this hostd; kubernetes: on a node when
image_pull_policy is Never), each rig's
runtime.exec_wrapper (hostd run, as Gas Town picks a rig's wrapper), and
free disk on the town's filesystem for the data channel
(sync.max_stored_bytes per polecat).

It takes serve's flags, as 'hostd config show' does: 'hostd doctor --listen
:9000' checks what 'hostd serve --listen :9000' needs. hostd run's settings
(sandbox.*, sandbox.kubernetes.*) come from config.yaml and HOSTD_*
variables, as hostd run reads them.

It exits 0 when every check is ok, 1 with warnings, 2 with a failure. With
--json it prints one object: status, and checks, each {check, status,
message, fix}.`,
		Args: cobra.NoArgs,
		RunE: o.run,
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print one JSON object: status, and checks, each {check, status, message, fix}")
	a.Register(cmd.Flags(), o.serve.Table)
	return cmd
}

func (o *doctorOptions) run(cmd *cobra.Command, _ []string) error {
	invalid := o.serve.Load(o.App, cmd.Flags())
	cfg := o.serve.Config()
	report := doctor.Run(cmd.Context(), doctor.Config{
		Town: o.Town(), TrustDomain: o.Viper.GetString("trust_domain"), Settings: invalid, ProxyCADir: ca.ProxyCADir(),
		GT: cfg.Relay.Binaries["gt"], BD: cfg.Relay.Binaries["bd"],
		Listen: cfg.Listen, AdminListen: cfg.AdminListen, MetricsListen: cfg.MetricsListen,
		AllowUnconfined: cfg.Relay.AllowUnconfined, Runtime: o.serve.Runtime(), MaxStoredBytes: cfg.Data.MaxStoredBytes,
		// hostd run's own, as it reads them (its flags' defaults included)
		Image: o.Viper.GetString("sandbox.image"), Agent: o.Viper.GetString("sandbox.agent"),
		Hostd: sharedcli.ReadBuild(),
	})
	write := report.WriteText
	if o.json {
		write = report.WriteJSON
	}
	if err := write(cmd.OutOrStdout()); err != nil {
		return err
	}
	return exit.Status(report.Code())
}
