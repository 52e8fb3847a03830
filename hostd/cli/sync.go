package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/cli/command"
	"github.com/polecat-sidecar/sidecar/hostd/render"
	"github.com/polecat-sidecar/sidecar/internal/termsafe"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

func newSyncCmd(a *command.App) *cobra.Command {
	sc := &cobra.Command{Use: "sync", Short: "Move a polecat's whitelisted data between the host and its container"}
	sc.AddCommand(newSyncPushCmd(a), newSyncPullCmd(a), newSyncStatusCmd(a), newSyncLogCmd(a))
	return sc
}

// syncTransferOptions are hostd sync push's and pull's flags.
type syncTransferOptions struct {
	*command.App
	pull bool
	json bool
	// opts are pull's --dry-run and --allow-deletes.
	opts api.PullOptions
}

func newSyncPushCmd(a *command.App) *cobra.Command {
	return newSyncTransferCmd(&syncTransferOptions{App: a}, "push <rig>/<name>", "Send the polecat's host data into its container now",
		`Send the whitelisted contents of the polecat's host data root (see 'hostd sync
status') into its container, and wait until the agent has installed them. The
container's changes since the last exchange are pulled and merged first (as
'hostd sync pull' does), so a push never overwrites them. The agent checks
everything against the policy itself. What was sent becomes the base later
pulls merge against.`)
}

func newSyncPullCmd(a *command.App) *cobra.Command {
	o := &syncTransferOptions{App: a, pull: true}
	cmd := newSyncTransferCmd(o, "pull <rig>/<name>", "Take the polecat's data back from its container and merge it",
		`Take the whitelisted contents of the container's data root and merge them into
the host's, file by file, against what was last sent: changed in the container
only, applied; changed on the host only, kept; changed on both, merged when
the text merges cleanly, otherwise the host's version stays and the
container's is saved beside it as <file>.conflict-<polecat>-<time>. Deleted in
the container and unchanged here: deleted. Agents also do this by themselves
at teardown and every checkpoint.

A transfer applies whole or not at all. It is refused, and nothing changes,
when it would take what hostd stores for the polecat over
sync.max_stored_bytes, change more than sync.max_conflicts paths on both
sides, or leave a symlink that leads out of the data root (followed through
every link on the way). One that would delete more than sync.max_delete_share
of the polecat's files is held: run this again with --allow-deletes once you
know the container really deleted them.`)
	cmd.Flags().BoolVar(&o.opts.DryRun, "dry-run", false, "say what would be applied, merged and conflicted, and change nothing")
	cmd.Flags().BoolVar(&o.opts.AllowDeletes, "allow-deletes", false, "do a merge that deletes more of the polecat's files than sync.max_delete_share holds (you confirm the container really deleted them)")
	return cmd
}

// newSyncTransferCmd is the command that runs o: push or pull.
func newSyncTransferCmd(o *syncTransferOptions, use, short, long string) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Long: long, Args: cobra.ExactArgs(1), RunE: o.run}
	cmd.Flags().BoolVar(&o.json, "json", false, "print the result as JSON")
	return cmd
}

// run moves the data and prints what moved; a transfer hostd refused is
// the command's error.
func (o *syncTransferOptions) run(cmd *cobra.Command, args []string) error {
	id, err := wire.ParseIdentity(args[0])
	if err != nil {
		return err
	}
	start := time.Now()
	res, err := o.transfer(cmd, id)
	if err != nil {
		return err
	}
	if o.json {
		return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
	}
	if res.Error == "" || len(res.Changes) > 0 { // a refusal moved nothing: no summary of nothing
		render.SyncResult(cmd.OutOrStdout(), api.Identity(id), res, time.Since(start))
	}
	if res.Error != "" {
		return fmt.Errorf("%s", termsafe.Line(res.Error))
	}
	return nil
}

// transfer pushes or pulls, drawing its progress when stderr is a
// terminal and the output is not JSON.
func (o *syncTransferOptions) transfer(cmd *cobra.Command, id wire.Identity) (api.SyncResult, error) {
	var progress func(api.SyncProgress)
	if !o.json && command.IsTTY(cmd.ErrOrStderr()) {
		bar := newProgress(termsafe.Raw(cmd.ErrOrStderr()), id)
		defer bar.finish()
		progress = bar.update
	}
	c := o.Client()
	if o.pull {
		return c.SyncPull(cmd.Context(), api.Identity(id), o.opts, progress)
	}
	return c.SyncPush(cmd.Context(), api.Identity(id), progress)
}

func newSyncStatusCmd(a *command.App) *cobra.Command {
	return command.ShowCmd(&cobra.Command{
		Use: "status", Short: "Show the data policy, where each connected polecat's data lives, what hostd stores for it, and links there that lead out", Args: cobra.NoArgs,
	}, func(ctx context.Context) (api.SyncStatus, error) { return a.Client().SyncStatus(ctx) }, render.SyncStatus, command.EncodeJSON)
}

func newSyncLogCmd(a *command.App) *cobra.Command {
	return command.ShowCmd(&cobra.Command{
		Use: "log", Short: "List the data transfers: when, which polecat, what was applied, merged and conflicted", Args: cobra.NoArgs,
	}, func(ctx context.Context) ([]api.SyncRecord, error) { return a.Client().SyncLog(ctx) }, render.SyncLog, command.EncodeJSON)
}

// transferProgress draws a transfer's progress: bytes, files, rate, and
// the time left when the total is known (a push).
type transferProgress struct {
	w   io.Writer
	id  wire.Identity
	bar *progressbar.ProgressBar
}

func newProgress(w io.Writer, id wire.Identity) *transferProgress {
	return &transferProgress{w: w, id: id}
}

func (p *transferProgress) update(sp api.SyncProgress) {
	if p.bar == nil {
		total := sp.TotalBytes
		if total == 0 {
			total = -1 // unknown: a spinner with bytes and rate
		}
		p.bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(p.w), progressbar.OptionShowBytes(true),
			progressbar.OptionSetDescription(p.id.String()), progressbar.OptionShowCount(), progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
	}
	if sp.TotalFiles > 0 {
		p.bar.Describe(fmt.Sprintf("%s: %d/%d files", p.id, sp.Files, sp.TotalFiles))
	}
	_ = p.bar.Set64(sp.Bytes)
}

func (p *transferProgress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
