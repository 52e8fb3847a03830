package nudge

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/polecat-sidecar/sidecar/agent/tmux"
)

// waitReady waits until the pane may be typed into: idle (or, immediate,
// anything) with an empty input line. It returns why not when ctx ends
// first, and an error when the pane cannot be read at all.
func (s *Service) waitReady(ctx context.Context, immediate bool, waiting func(string)) (why string, err error) {
	idleOnce, told := false, ""
	for {
		hooked := s.hooks.Changed() // before the look: an event after it ends the wait below
		scr, err := s.cfg.Tmux.Capture(ctx, s.cfg.Session)
		if err != nil {
			if ctx.Err() != nil {
				return "the deadline passed while reading the pane", nil
			}
			return "", fmt.Errorf("reading the pane of tmux session %q: %w", s.cfg.Session, err)
		}
		ready, reason := s.judge(scr, immediate)
		if ready && (immediate || idleOnce || s.hooks.Known()) {
			return "", nil
		}
		idleOnce = ready
		why = reason
		if why != "" && why != told && waiting != nil {
			waiting(why)
			told = why
		}
		// While the hooks say busy, only their next event can make the
		// polecat ready: wait for it, not for the pane every Poll. The
		// look every hookBusyLook cannot make it ready; it updates why
		// (text typed meanwhile) and notices a pane that is gone.
		next := s.cfg.Poll
		if !immediate && s.hooks.busy() {
			next = max(next, hookBusyLook)
		}
		select {
		case <-ctx.Done():
			// Never "" here: that would mean ready, and the nudge is no
			// longer wanted (or its time is up) even if idle was seen once.
			return cmp.Or(why, "idle was seen once but not confirmed before the deadline (or hostd withdrew the nudge)"), nil
		case <-hooked:
		case <-time.After(next):
		}
	}
}

// hookBusyLook is how often the pane is read while the hooks say busy
// (each look is a tmux process).
const hookBusyLook = 5 * time.Second

// judge says whether the screen allows typing now, and if not why.
func (s *Service) judge(scr tmux.Screen, immediate bool) (bool, string) {
	if typed := s.inputText(scr); typed != "" {
		return false, fmt.Sprintf("text is being typed in the input line (%q)", clip(typed, 40))
	}
	if immediate {
		return true, ""
	}
	if ev, ok := s.hooks.Last(); ok {
		if busyEvent(ev) {
			return false, "busy: Claude Code's " + ev + " hook fired and no Stop or Notification since"
		}
		return true, ""
	}
	screen := strings.Join(scr.Lines, "\n")
	for _, re := range s.busy {
		if re.MatchString(screen) {
			return false, fmt.Sprintf("busy: the screen matches %q", re.String())
		}
	}
	if _, ok := s.inputLine(scr); ok {
		return true, ""
	}
	if quiet := time.Since(scr.Activity); quiet < s.cfg.Silence {
		return false, fmt.Sprintf("busy: the pane had output %v ago (no prompt seen; idle after %v of silence)", quiet.Round(time.Second), s.cfg.Silence)
	}
	return true, ""
}

// inputLine finds the input line: the last line matching the prompt, and
// the text after it.
func (s *Service) inputLine(scr tmux.Screen) (string, bool) {
	for i := len(scr.Lines) - 1; i >= 0; i-- {
		if loc := s.prompt.FindStringIndex(scr.Lines[i]); loc != nil {
			return strings.TrimSpace(strings.TrimRight(scr.Lines[i][loc[1]:], " │|")), true
		}
	}
	return "", false
}

// inputText is the text typed in the input line: after the prompt, or
// without one, whatever is on the cursor's line.
func (s *Service) inputText(scr tmux.Screen) string {
	if text, ok := s.inputLine(scr); ok {
		return text
	}
	return strings.TrimSpace(scr.CursorLine())
}

// waitFor polls the pane until ok or d passes; it reports whether ok was
// seen. With joined, ok is given the screen's text with wrapped lines
// joined (and an empty Screen), else the Screen.
func (s *Service) waitFor(ctx context.Context, d time.Duration, joined bool, ok func(scr tmux.Screen, joined string) bool) bool {
	deadline := time.Now().Add(d)
	for {
		var scr tmux.Screen
		var text string
		var err error
		if joined {
			text, err = s.cfg.Tmux.History(ctx, s.cfg.Session, 0)
		} else {
			scr, err = s.cfg.Tmux.Capture(ctx, s.cfg.Session)
		}
		if err == nil && ok(scr, text) {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(verifyPoll)
	}
}

// verifyPoll is how often the pane is looked at while a nudge is typed
// and submitted: a tmux call costs a few milliseconds.
const verifyPoll = 10 * time.Millisecond

// lastLineTail is the end of the text's last line, as the screen would
// show it.
func lastLineTail(text string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if r := []rune(l); len(r) > 16 {
		return string(r[len(r)-16:])
	}
	return l
}
