package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/polecat-sidecar/sidecar/hostd/control"
	"github.com/polecat-sidecar/sidecar/hostd/pane"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

func (a *app) peekCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "peek <rig>/<name>",
		Short: "Show the polecat's tmux pane (its last lines, or follow it)",
		Long: `Show the last lines of the polecat's tmux pane as text (scrollback included,
wrapped lines joined), as 'tmux capture-pane -p -J' would in the container.
With --follow, keep printing what the pane adds until interrupted. Anything
that is not printable text is shown escaped (\x1b), never sent to your
terminal.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := wire.ParseIdentity(args[0])
			if err != nil {
				return err
			}
			lines, _ := cmd.Flags().GetInt("lines")
			follow, _ := cmd.Flags().GetBool("follow")
			asJSON, _ := cmd.Flags().GetBool("json")
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			out := cmd.OutOrStdout()
			w := &lineWriter{line: func(l string) error {
				_, err := fmt.Fprintln(out, clean(l))
				return err
			}}
			var all []string
			if asJSON && !follow {
				w.line = func(l string) error { all = append(all, l); return nil }
			} else if asJSON {
				enc := json.NewEncoder(out)
				w.line = func(l string) error { return enc.Encode(map[string]string{"line": l}) }
			}
			if err := control.NewClient(a.town()).Peek(ctx, id, lines, follow, w); err != nil {
				return err
			}
			if err := w.flush(); err != nil {
				return err
			}
			if asJSON && !follow {
				return writeJSON(out, map[string]any{"polecat": id, "lines": all})
			}
			return nil
		},
	}
	cmd.Flags().Int("lines", 50, "how many lines to show (scrollback included)")
	cmd.Flags().Bool("follow", false, "keep printing what the pane adds")
	cmd.Flags().Bool("json", false, "print {\"polecat\",\"lines\"} (with --follow, one {\"line\"} object per line)")
	return cmd
}

// lineWriter hands each complete line written to it to line.
type lineWriter struct {
	buf  []byte
	line func(string) error
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		if err := w.line(string(w.buf[:i])); err != nil {
			return 0, err
		}
		w.buf = w.buf[i+1:]
	}
}

// flush hands on an unfinished last line.
func (w *lineWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	defer func() { w.buf = nil }()
	return w.line(string(w.buf))
}

func (a *app) attachCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "attach <rig>/<name>",
		Short: "Attach this terminal to the polecat's tmux session (read-only unless --rw)",
		Long: `Attach this terminal to the polecat's tmux session through its agent, as
'tmux attach -t gt-<rig>-<name>' would on the host: a tmux client runs in the
container in a terminal the size of yours, and follows your resizes. It is
read-only unless --rw. Detach with tmux's detach key (C-b d by default).

What the polecat's terminal sends is filtered before it reaches yours:
colours, cursor movement and screen modes pass; clipboard writes (OSC 52),
titles, hyperlinks, device control strings and anything that makes your
terminal answer back do not.

A host tmux pane running 'hostd attach --rw <rig>/<name>' stands in for a
local polecat session: Gas Town's send-keys nudges and capture-pane peeks at
that pane reach the polecat.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := wire.ParseIdentity(args[0])
			if err != nil {
				return err
			}
			rw, _ := cmd.Flags().GetBool("rw")
			return attach(cmd, a.town(), id, rw)
		},
	}
	cmd.Flags().Bool("rw", false, "let this terminal type into the session")
	return cmd
}

// attach runs one attach session on this process's terminal.
func attach(cmd *cobra.Command, town string, id wire.Identity, rw bool) error {
	in, out := int(os.Stdin.Fd()), int(os.Stdout.Fd())
	if !term.IsTerminal(in) || !term.IsTerminal(out) {
		return errors.New("attach needs a terminal on standard input and output (use 'hostd peek' from scripts)")
	}
	cols, rows, err := term.GetSize(out)
	if err != nil {
		return fmt.Errorf("reading the terminal's size: %w", err)
	}
	conn, err := control.NewClient(town).Attach(cmd.Context(), id, rw, uint16(cols), uint16(rows))
	if err != nil {
		return err
	}
	defer conn.Close()
	old, err := term.MakeRaw(in)
	if err != nil {
		return fmt.Errorf("putting the terminal in raw mode: %w", err)
	}
	defer term.Restore(in, old)
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	frames := make(chan []byte, 16)
	go func() {
		for range winch {
			if c, r, err := term.GetSize(out); err == nil {
				frames <- append([]byte{wire.PaneResize}, wire.ResizePayload(uint16(c), uint16(r))...)
			}
		}
	}()
	go func() {
		buf := make([]byte, wire.MaxPaneFrame)
		for {
			n, err := os.Stdin.Read(buf)
			if n > 0 {
				frames <- append([]byte{wire.PaneInput}, buf[:n]...)
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		for f := range frames {
			if wire.WritePaneFrame(conn, f[0], f[1:]) != nil {
				return
			}
		}
	}()
	_, _ = io.Copy(pane.NewFilter(os.Stdout), conn)
	term.Restore(in, old)
	fmt.Fprintf(cmd.ErrOrStderr(), "\r\n[detached from %s]\n", id)
	return nil
}
