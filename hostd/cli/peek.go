package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/cli/command"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// peekOptions are hostd peek's flags.
type peekOptions struct {
	*command.App
	lines        int
	follow, json bool
}

func newPeekCmd(a *command.App) *cobra.Command {
	o := &peekOptions{App: a}
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
	out := cmd.OutOrStdout() // escaping (command.NewRoot), text and JSON alike
	var all []string
	w := &lineWriter{line: o.lineFunc(out, &all)}
	if err := o.Client().Peek(ctx, api.Identity(id), o.lines, o.follow, w); err != nil {
		return err
	}
	if err := w.flush(); err != nil {
		return err
	}
	if o.json && !o.follow {
		return command.WriteJSON(out, map[string]any{"polecat": id, "lines": all})
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
