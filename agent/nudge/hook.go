package nudge

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/accept"
)

// Claude Code's hook events that say whether the polecat is busy: the
// image's Claude Code settings run "gt-agent hook <event>" on each.
const (
	HookUserPromptSubmit = "UserPromptSubmit" // a prompt was submitted: busy
	HookPreToolUse       = "PreToolUse"       // a tool is about to run: busy
	HookStop             = "Stop"             // the turn ended: idle
	HookNotification     = "Notification"     // waiting for the user: idle
)

// HookEvents are the events the agent understands.
var HookEvents = []string{HookUserPromptSubmit, HookPreToolUse, HookStop, HookNotification}

// HookSocketEnv names the hook socket, for gt-agent up and gt-agent hook
// alike; otherwise it is hooks.sock beside the agent's relay socket.
const HookSocketEnv = "GT_AGENT_HOOK_SOCKET"

// HookSocketPath is the hook socket: $GT_AGENT_HOOK_SOCKET, or hooks.sock
// in the directory of the relay socket (/run/gt-agent/hooks.sock in an
// image), so that each agent on a machine has its own.
func HookSocketPath(relaySocket string) string {
	if p := os.Getenv(HookSocketEnv); p != "" {
		return p
	}
	return filepath.Join(filepath.Dir(relaySocket), "hooks.sock")
}

// Hooks is what Claude Code's hooks have said: the last event and how
// many prompts were submitted. A nil *Hooks has heard nothing. Safe for
// concurrent use.
type Hooks struct {
	mu      sync.Mutex
	last    string
	submits int
	changed chan struct{} // closed, and replaced, at each event
}

// Last is the last event heard; ok is false before any.
func (h *Hooks) Last() (event string, ok bool) {
	if h == nil {
		return "", false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last, h.last != ""
}

// Changed is closed at the next event: a nudge waiting while the hooks
// say busy waits for it instead of reading the pane again and again. A
// nil *Hooks never changes.
func (h *Hooks) Changed() <-chan struct{} {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.changed == nil {
		h.changed = make(chan struct{})
	}
	return h.changed
}

// busy says whether the last event heard says the polecat is busy.
func (h *Hooks) busy() bool {
	ev, _ := h.Last()
	return busyEvent(ev)
}

// busyEvent says whether event means the polecat is busy.
func busyEvent(event string) bool { return event == HookUserPromptSubmit || event == HookPreToolUse }

// Known says whether any hook has been heard: hooks are then trusted over
// the screen.
func (h *Hooks) Known() bool {
	_, ok := h.Last()
	return ok
}

// Submits counts UserPromptSubmit events.
func (h *Hooks) Submits() int {
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.submits
}

// Record takes one event.
func (h *Hooks) Record(event string) error {
	if !slices.Contains(HookEvents, event) {
		return fmt.Errorf("unknown hook event %q (known: %s)", event, strings.Join(HookEvents, ", "))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = event
	if event == HookUserPromptSubmit {
		h.submits++
	}
	if h.changed != nil {
		close(h.changed)
		h.changed = nil
	}
	return nil
}

// Serve takes events from ln, one line each ("<event>\n") per connection,
// until ctx ends; it returns once every connection it took has ended
// (each within a second).
func (h *Hooks) Serve(ctx context.Context, ln net.Listener) error {
	context.AfterFunc(ctx, func() { ln.Close() })
	var conns sync.WaitGroup
	defer conns.Wait()
	if err := (accept.Loop{Name: "hook socket"}).Serve(ctx, ln, func(c net.Conn) { conns.Go(func() { h.serveConn(c) }) }); err != nil {
		return fmt.Errorf("hook socket: %w", err)
	}
	return nil
}

// serveConn takes one event from c and answers "ok" or why not.
func (h *Hooks) serveConn(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	line, err := bufio.NewReader(&limitedConn{c, 64}).ReadString('\n')
	if err != nil {
		return
	}
	if err := h.Record(strings.TrimSpace(line)); err != nil {
		fmt.Fprintln(c, err)
		return
	}
	fmt.Fprintln(c, "ok")
}

// limitedConn reads at most n bytes of a connection.
type limitedConn struct {
	net.Conn
	n int
}

func (l *limitedConn) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, fmt.Errorf("hook line too long")
	}
	if len(p) > l.n {
		p = p[:l.n]
	}
	n, err := l.Conn.Read(p)
	l.n -= n
	return n, err
}

// SendHook tells the agent listening on socket that event happened, and
// waits (at most a second) for it to take it.
func SendHook(socket, event string) error {
	c, err := net.DialTimeout("unix", socket, time.Second)
	if err != nil {
		return fmt.Errorf("reaching gt-agent at %s: %w", socket, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := fmt.Fprintln(c, event); err != nil {
		return fmt.Errorf("telling gt-agent: %w", err)
	}
	answer, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return fmt.Errorf("telling gt-agent: %w", err)
	}
	if answer = strings.TrimSpace(answer); answer != "ok" {
		return fmt.Errorf("gt-agent: %s", answer)
	}
	return nil
}
