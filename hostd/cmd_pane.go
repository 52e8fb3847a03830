package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/pane"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// peekOptions are hostd peek's flags.
type peekOptions struct {
	*app
	lines        int
	follow, json bool
}

func newPeekCmd(a *app) *cobra.Command {
	o := &peekOptions{app: a}
	cmd := &cobra.Command{
		Use:   "peek <rig>/<name>",
		Short: "Show the polecat's tmux pane (its last lines, or follow it)",
		Long: `Show the last lines of the polecat's tmux pane as text (scrollback included,
wrapped lines joined), as 'tmux capture-pane -p -J' would in the container.
With --follow, keep printing what the pane adds until interrupted. A line
longer than 64 KiB is shown in pieces of at most that. Anything that is not
printable text (control characters, C1, bidirectional controls) is shown
escaped (\x1b, \u202e), never sent to your terminal, in JSON too.`,
		Args: cobra.ExactArgs(1),
		RunE: o.run,
	}
	cmd.Flags().IntVar(&o.lines, "lines", 50, "how many lines to show (scrollback included)")
	cmd.Flags().BoolVar(&o.follow, "follow", false, "keep printing what the pane adds")
	cmd.Flags().BoolVar(&o.json, "json", false, "print {\"polecat\",\"lines\"} (with --follow, one {\"line\"} object per line)")
	return cmd
}

func (o *peekOptions) run(cmd *cobra.Command, args []string) error {
	id, err := wire.ParseIdentity(args[0])
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out := cmd.OutOrStdout() // escaping (newRoot), text and JSON alike
	var all []string
	w := &lineWriter{line: o.lineFunc(out, &all)}
	if err := api.NewSocketClient(state.For(o.town()).Socket()).Peek(ctx, api.Identity(id), o.lines, o.follow, w); err != nil {
		return err
	}
	if err := w.flush(); err != nil {
		return err
	}
	if o.json && !o.follow {
		return writeJSON(out, map[string]any{"polecat": id, "lines": all})
	}
	return nil
}

// lineFunc is what peek does with each line of the pane: print it, as
// text or (--json --follow) as one JSON object, or (--json alone) keep it
// in *all for the one object printed at the end.
func (o *peekOptions) lineFunc(out io.Writer, all *[]string) func([]byte) error {
	switch {
	case o.json && !o.follow:
		return func(l []byte) error { *all = append(*all, string(l)); return nil }
	case o.json:
		enc := json.NewEncoder(out)
		return func(l []byte) error { return enc.Encode(map[string]string{"line": string(l)}) }
	}
	return func(l []byte) error {
		_, err := fmt.Fprintf(out, "%s\n", l)
		return err
	}
}

// maxLine bounds a line peek holds: a longer one is handed on in pieces,
// so that a pane with no newline cannot grow the CLI without bound.
const maxLine = 64 << 10

// lineWriter hands each complete line written to it to line, and each
// maxLine bytes of a longer one as a piece (cut before a UTF-8
// character that would not be whole in it). Its buffer never holds more
// than maxLine bytes and the newline that may end them. line must not
// keep the slice.
type lineWriter struct {
	buf  []byte
	line func([]byte) error
}

func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		take := min(len(p), maxLine+1-len(w.buf))
		w.buf, p = append(w.buf, p[:take]...), p[take:]
		done := 0
		for {
			i := bytes.IndexByte(w.buf[done:], '\n')
			if i < 0 {
				break
			}
			if err := w.line(w.buf[done : done+i]); err != nil {
				return 0, err
			}
			done += i + 1
		}
		if len(w.buf) > maxLine && done == 0 { // full, and no newline
			cut := maxLine
			for c := maxLine - 1; c >= maxLine-utf8.UTFMax; c-- {
				if utf8.RuneStart(w.buf[c]) {
					if !utf8.FullRune(w.buf[c:maxLine]) {
						cut = c
					}
					break
				}
			}
			if err := w.line(w.buf[:cut]); err != nil {
				return 0, err
			}
			done = cut
		}
		w.buf = w.buf[:copy(w.buf, w.buf[done:])]
	}
	return n, nil
}

// flush hands on an unfinished last line.
func (w *lineWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	defer func() { w.buf = w.buf[:0] }()
	return w.line(w.buf)
}

// attachOptions are hostd attach's flags.
type attachOptions struct {
	*app
	rw bool
}

func newAttachCmd(a *app) *cobra.Command {
	o := &attachOptions{app: a}
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
	if !isTTY(os.Stdin) || !isTTY(os.Stdout) {
		return errors.New("attach needs a terminal on standard input and output (use 'hostd peek' from scripts)")
	}
	in, out := int(os.Stdin.Fd()), int(os.Stdout.Fd())
	cols, rows, err := term.GetSize(out)
	if err != nil {
		return fmt.Errorf("reading the terminal's size: %w", err)
	}
	conn, err := api.NewSocketClient(state.For(o.town()).Socket()).Attach(ctx, api.Identity(id), o.rw, uint16(cols), uint16(rows))
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
