package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/cli/command"
	"github.com/polecat-sidecar/sidecar/hostd/pane"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// attachOptions are hostd attach's flags.
type attachOptions struct {
	*command.App
	rw bool
}

// NewAttachCmd is hostd attach.
func NewAttachCmd(a *command.App) *cobra.Command {
	o := &attachOptions{App: a}
	cmd := &cobra.Command{
		Use:   "attach <rig>/<name>",
		Short: "Attach this terminal to the polecat's tmux session (read-only unless --rw)",
		Long: `Attach this terminal to the polecat's tmux session through its agent, as
'tmux attach' would on the host: a tmux client runs in the
container in a terminal the size of yours, and follows your resizes. It is
read-only unless --rw. Detach with tmux's detach key (C-b d by default);
read-only, C-b d or Ctrl-C detach here, as hostd forwards no key of a
read-only attach to the container, whatever its agent does.

What the polecat's terminal sends is filtered before it reaches yours:
text, colours, cursor movement and the screen modes a terminal UI needs pass
(an allow list); clipboard writes (OSC 52), titles, hyperlinks, device
control strings, anything that makes your terminal answer back, and
everything else do not.

A host tmux pane running 'hostd attach --rw <rig>/<name>' stands in for a
local polecat session: Gas Town's send-keys nudges and capture-pane peeks at
that pane reach the polecat.`,
		Args: cobra.ExactArgs(1),
		RunE: o.run,
	}
	cmd.Flags().BoolVar(&o.rw, "rw", false, "let this terminal type into the session")
	return cmd
}

// run attaches this process's terminal to the polecat's session until
// it detaches or the session ends.
func (o *attachOptions) run(cmd *cobra.Command, args []string) error {
	id, err := wire.ParseIdentity(args[0])
	if err != nil {
		return err
	}
	if err := o.attach(cmd.Context(), id, nil); err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "\n[detached from %s]\n", id)
	return nil
}

// attach shows id's session on this process's terminal, through the
// escape filter, until it detaches, the session ends or done closes.
func (o *attachOptions) attach(ctx context.Context, id wire.Identity, done <-chan struct{}) error {
	if !command.IsTTY(os.Stdin) || !command.IsTTY(os.Stdout) {
		return errors.New("attach needs a terminal on standard input and output (use 'hostd peek' from scripts)")
	}
	in, out := int(os.Stdin.Fd()), int(os.Stdout.Fd())
	cols, rows, err := term.GetSize(out)
	if err != nil {
		return fmt.Errorf("reading the terminal's size: %w", err)
	}
	conn, err := o.Client().Attach(ctx, api.Identity(id), o.rw, uint16(cols), uint16(rows))
	if err != nil {
		return err
	}
	defer conn.Close()
	if done != nil {
		go func() { <-done; conn.Close() }()
	}
	old, err := term.MakeRaw(in)
	if err != nil {
		return fmt.Errorf("putting the terminal in raw mode: %w", err)
	}
	defer term.Restore(in, old)
	stop := make(chan struct{})
	defer close(stop)
	stopResizes := o.forward(conn, out, stop)
	defer stopResizes()
	_, _ = io.Copy(pane.NewFilter(os.Stdout), conn)
	return nil
}

func (o *attachOptions) forward(conn io.ReadWriteCloser, out int, stop <-chan struct{}) (stopResizes func()) {
	frames := make(chan []byte, 16)
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	go func() {
		for range winch {
			if c, r, err := term.GetSize(out); err == nil {
				frames <- append([]byte{wire.PaneResize}, wire.ResizePayload(uint16(c), uint16(r))...)
			}
		}
	}()
	go o.readKeys(conn, frames, stop)
	go func() {
		for f := range frames {
			if wire.WritePaneFrame(conn, f[0], f[1:]) != nil {
				return
			}
		}
	}()
	return func() { signal.Stop(winch) }
}

// readKeys reads this terminal's keys until stop closes: with --rw each
// read becomes an input frame; read-only, only a detach key does anything
// (closes conn).
func (o *attachOptions) readKeys(conn io.Closer, frames chan<- []byte, stop <-chan struct{}) {
	var keys detachKeys
	for {
		var b []byte
		var ok bool
		select {
		case b, ok = <-terminalKeys():
		case <-stop:
			return
		}
		switch {
		case !ok:
			return
		case o.rw:
			select {
			case frames <- append([]byte{wire.PaneInput}, b...):
			case <-stop:
				return
			}
		case keys.pressed(b):
			conn.Close()
			return
		}
	}
}

// terminalKeys is what this process's standard input reads, one read
// each, from a single reader for the process's life: hostd run attaches
// again after an attach ends, and a reader left behind by the first would
// take the keys meant for the next.
var terminalKeys = sync.OnceValue(func() <-chan []byte {
	ch := make(chan []byte, 16)
	go func() {
		defer close(ch)
		buf := make([]byte, wire.MaxPaneFrame)
		for {
			n, err := os.Stdin.Read(buf)
			if n > 0 {
				ch <- append([]byte(nil), buf[:n]...)
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
})

// detachKeys watches a read-only attach's keys for the operator leaving:
// Ctrl-C, or tmux's default detach key C-b d (which cannot reach the
// container's tmux client, as hostd forwards no key).
type detachKeys struct{ prefix bool }

// pressed says whether p, read after what came before, asks to detach.
func (d *detachKeys) pressed(p []byte) bool {
	for _, b := range p {
		if b == 0x03 || (d.prefix && b == 'd') {
			return true
		}
		d.prefix = b == 0x02
	}
	return false
}
