package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// The pane program: what the nudge tests run in the polecat's tmux pane.
// It reads the terminal in raw mode, echoes what is typed, and records
// every submitted line exactly (JSON lines in the file PaneLogEnv names),
// with whether it arrived inside a bracketed paste. PaneEnv names its
// mode (PaneProgram).
const (
	PaneEnv     = "E2E_PANE"
	PaneLogEnv  = "E2E_PANE_LOG"
	PaneBusyEnv = "E2E_PANE_BUSY"
)

// PaneRecord is one submitted line.
type PaneRecord struct {
	Line      string `json:"line"`
	Bracketed bool   `json:"bracketed,omitempty"`
}

// PaneProgram runs the pane program in mode on this process's terminal and
// returns the exit status; a test binary runs it from TestMain when
// PaneEnv is set. Modes: plain (prompt "> "; Enter or a newline submits),
// stuck (plain, but Enter is ignored), claude (prompt "❯ "; bracketed paste
// asked for, so newlines in a paste stay in the line; Claude Code's spinner
// with "esc to interrupt" while the file PaneBusyEnv names exists), chatty
// (no prompt; a line every 200 ms while that file exists), tui (below).
func PaneProgram(mode string) int {
	old, err := term.MakeRaw(0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pane program:", err)
		return 2
	}
	defer term.Restore(0, old)
	// tui: claude on the screen's last line, as Claude Code's prompt is,
	// and an Escape outside a paste marker is a key, not text (Gas Town's
	// nudge sends Escape before its Enter, and checks the screen changed).
	tui := mode == "tui"
	if tui {
		os.Stdout.WriteString("\x1b[999;1H") // the last line: what follows scrolls up from there
		mode = "claude"
	}
	p := &pane{mode: mode, keyEscape: tui, log: os.Getenv(PaneLogEnv), busyFile: os.Getenv(PaneBusyEnv)}
	p.prompt = "> "
	if mode == "claude" {
		p.prompt = "❯ "
		os.Stdout.WriteString("\x1b[?2004h")
	}
	if mode == "chatty" {
		p.prompt = ""
	}
	p.write(p.prompt)
	go p.watchBusy()
	buf := make([]byte, 4096)
	for {
		n, err := os.Stdin.Read(buf)
		if err != nil {
			return 0
		}
		p.take(buf[:n])
	}
}

type pane struct {
	mode, log, busyFile, prompt string
	keyEscape                   bool // a lone Escape is dropped, not taken into the line

	mu        sync.Mutex
	line      []byte
	pending   []byte // an escape sequence still arriving
	inPaste   bool
	bracketed bool
	busy      bool
}

func (p *pane) write(s string) { os.Stdout.WriteString(s) }

// take handles input bytes.
func (p *pane) take(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b = append(p.pending, b...)
	p.pending = nil
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c == 0x1b {
			rest := b[i:]
			switch {
			case bytes.HasPrefix(rest, []byte("\x1b[200~")):
				p.inPaste, p.bracketed = true, true
				i += len("\x1b[200~") - 1
				continue
			case bytes.HasPrefix(rest, []byte("\x1b[201~")):
				p.inPaste = false
				i += len("\x1b[201~") - 1
				continue
			case bytes.HasPrefix([]byte("\x1b[200~"), rest) || bytes.HasPrefix([]byte("\x1b[201~"), rest):
				p.pending = append([]byte{}, rest...) // wait for the rest of the marker
				return
			case p.keyEscape:
				continue
			}
		}
		switch {
		case (c == '\r' || c == '\n') && !p.inPaste:
			if p.mode == "stuck" {
				continue
			}
			p.submit()
		case c == '\n' || c == '\r':
			p.line = append(p.line, '\n')
			p.write("\r\n")
		case c == 0x7f || c == 0x08:
			if len(p.line) > 0 {
				p.line = p.line[:len(p.line)-1]
				p.write("\b \b")
			}
		case c == 0x15: // C-u
			p.line = p.line[:0]
			p.write("\r\x1b[K" + p.prompt)
		default:
			p.line = append(p.line, c)
			os.Stdout.Write([]byte{c})
		}
	}
}

// submit records the line and shows a fresh prompt.
func (p *pane) submit() {
	rec, _ := json.Marshal(PaneRecord{Line: string(p.line), Bracketed: p.bracketed})
	if f, err := os.OpenFile(p.log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
		f.Write(append(rec, '\n'))
		f.Close()
	}
	p.line, p.bracketed = p.line[:0], false
	p.write("\r\n" + p.prompt)
}

// watchBusy follows the busy file: Claude Code's spinner, or chatter.
func (p *pane) watchBusy() {
	n := 0
	for range time.Tick(200 * time.Millisecond) {
		_, err := os.Stat(p.busyFile)
		busy := p.busyFile != "" && err == nil
		p.mu.Lock()
		switch {
		case p.mode == "claude" && busy && !p.busy:
			p.write("\r\n✳ Thinking… (1s · esc to interrupt)\r\n" + p.prompt + string(p.line))
		case p.mode == "claude" && !busy && p.busy:
			p.write("\x1b[2J\x1b[H" + p.prompt + string(p.line))
		case p.mode == "chatty" && busy:
			n++
			p.write(fmt.Sprintf("output %d\r\n", n))
		}
		p.busy = busy
		p.mu.Unlock()
	}
}
