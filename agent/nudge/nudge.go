// Package nudge is gt-agent's half of the nudge channel (hostd's is
// hostd/nudge): it types each nudge hostd sends into the polecat's tmux
// pane, one at a time, once the polecat is idle, submits it, checks that
// it was submitted, and answers with what it saw. It de-duplicates by the
// nudge's id across reconnects and restarts, so a nudge hostd sends again
// is never typed twice.
//
// Idle comes from the best signal there is: Claude Code's hooks (gt-agent
// hook, see hook.go), else the screen (busy patterns, the prompt seen
// empty twice in a row), else the pane's silence. Text in the input line
// always counts as busy: a nudge never mixes with someone's typing.
package nudge

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/polecat-sidecar/sidecar/agent/tmux"
	"github.com/polecat-sidecar/sidecar/internal/atomicfile"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Config configures nudge delivery.
type Config struct {
	// Session is the tmux session whose (first) pane nudges go to.
	Session string
	// Tmux is the tmux server.
	Tmux tmux.Server
	// StateDir keeps the outcomes of recent nudges (nudges.json).
	StateDir string
	// BusyPatterns are regular expressions on the screen that mean the
	// polecat is working (used while no hook has been heard).
	BusyPatterns []string
	// Prompt is a regular expression matching the start of the input line
	// (the prompt); the last matching line on the screen is the input
	// line, and what follows the match is text typed there.
	Prompt string
	// Silence is how long the pane must be quiet to count as idle when
	// neither hooks nor the prompt say anything.
	Silence time.Duration
	// Poll is how often the pane is looked at while waiting.
	Poll time.Duration
	// EnterTries bounds the Enters pressed to submit one nudge.
	EnterTries int
	// Logger receives one line per nudge.
	Logger *slog.Logger
}

// DefaultBusyPatterns are Claude Code's: the "esc to interrupt" hint and
// its spinner line ("✳ Verb… (2m 18s · ↓ 4.8k tokens)").
var DefaultBusyPatterns = []string{`esc to interrupt`, `(?m)^\s*[·✢✳✶✻✽*]\s+\S+…`}

// DefaultPrompt is Claude Code's input line: "❯ " or "> ", boxed or not.
const DefaultPrompt = `^\s*[│|]?\s*[❯>](\s|$)`

// DefaultConfig waits for 3 s of silence when nothing better is known,
// looks every 200 ms and presses Enter at most 3 times.
func DefaultConfig() Config {
	return Config{Session: "polecat", BusyPatterns: DefaultBusyPatterns, Prompt: DefaultPrompt, Silence: 3 * time.Second,
		Poll: 200 * time.Millisecond, EnterTries: 3, Logger: slog.Default()}
}

// Service is safe for concurrent use.
type Service struct {
	cfg    Config
	busy   []*regexp.Regexp
	prompt *regexp.Regexp
	hooks  *Hooks

	turn chan struct{} // one delivery at a time

	mu   sync.Mutex
	seen map[string]record // outcomes by nudge id, persisted
}

// record is what the agent keeps of one nudge: its outcome, or that it was
// being typed when the agent stopped.
type record struct {
	Result wire.NudgeResult `json:"result"`
	Typing bool             `json:"typing,omitempty"`
}

// maxRecords bounds the outcomes kept: far more than hostd's queue holds.
const maxRecords = 1000

// New checks the patterns; zero Config fields take DefaultConfig's. hooks
// may be nil (no hook socket).
func New(cfg Config, hooks *Hooks) (*Service, error) {
	d := DefaultConfig()
	if cfg.Session == "" {
		cfg.Session = d.Session
	}
	if cfg.BusyPatterns == nil {
		cfg.BusyPatterns = d.BusyPatterns
	}
	if cfg.Prompt == "" {
		cfg.Prompt = d.Prompt
	}
	if cfg.Silence <= 0 {
		cfg.Silence = d.Silence
	}
	if cfg.Poll <= 0 {
		cfg.Poll = d.Poll
	}
	if cfg.EnterTries <= 0 {
		cfg.EnterTries = d.EnterTries
	}
	if cfg.Logger == nil {
		cfg.Logger = d.Logger
	}
	s := &Service{cfg: cfg, hooks: hooks, turn: make(chan struct{}, 1), seen: map[string]record{}}
	for _, p := range cfg.BusyPatterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("nudge busy pattern %q: %w", p, err)
		}
		s.busy = append(s.busy, re)
	}
	var err error
	if s.prompt, err = regexp.Compile(cfg.Prompt); err != nil {
		return nil, fmt.Errorf("nudge prompt pattern %q: %w", cfg.Prompt, err)
	}
	if b, err := os.ReadFile(s.statePath()); err == nil {
		_ = json.Unmarshal(b, &s.seen)
	}
	return s, nil
}

func (s *Service) statePath() string { return filepath.Join(s.cfg.StateDir, "nudges.json") }

// ServeStream delivers the nudge on st and answers with its outcome.
func (s *Service) ServeStream(ctx context.Context, st *tunnel.Stream) {
	req, ok := tunnel.DecodeRequest(st, wire.NudgeRequest.Validate)
	if !ok {
		return
	}
	text, err := wire.ReadNudgeText(st, req)
	if err != nil {
		_ = st.Reject(err.Error())
		return
	}
	ctx, cancel := context.WithDeadline(ctx, req.Deadline)
	defer cancel()
	// hostd closing its side means it no longer wants this nudge.
	go func() {
		_, _ = st.Read(make([]byte, 1))
		cancel()
	}()
	waiting := func(why string) {
		_ = wire.WriteNudgeResult(st, wire.NudgeResult{Outcome: wire.NudgeBusy, At: time.Now(), Detail: why})
	}
	res := s.Deliver(ctx, req, text, waiting)
	_ = wire.WriteNudgeResult(st, res)
	_ = st.CloseWrite()
}

// Deliver types one nudge, unless it was delivered before (then that
// outcome comes back, marked Repeat). ctx's deadline bounds the wait for
// idle: past it the answer is busy, and nothing was typed. waiting hears
// why it waits, each time that changes.
func (s *Service) Deliver(ctx context.Context, req wire.NudgeRequest, text string, waiting func(why string)) wire.NudgeResult {
	select {
	case s.turn <- struct{}{}:
		defer func() { <-s.turn }()
	case <-ctx.Done():
		return wire.NudgeResult{Outcome: wire.NudgeBusy, At: time.Now(), Detail: "another nudge was being delivered until the deadline"}
	}
	if r, ok := s.lookup(req.ID); ok {
		if r.Typing {
			r.Result = wire.NudgeResult{Outcome: wire.NudgeFailed, At: time.Now(),
				Detail: "the agent stopped while typing this nudge; not typed again, so it may or may not be in the pane"}
			s.remember(req.ID, r.Result, false)
		}
		r.Result.Repeat = true
		return r.Result
	}
	text = strings.TrimRight(Sanitize(text), "\n")
	if strings.TrimSpace(text) == "" {
		return s.final(req.ID, wire.NudgeFailed, "nothing left to type once control characters were removed")
	}
	why, err := s.waitReady(ctx, req.Mode == wire.NudgeImmediate, waiting)
	if err != nil {
		return s.final(req.ID, wire.NudgeFailed, err.Error())
	}
	if why != "" {
		return wire.NudgeResult{Outcome: wire.NudgeBusy, At: time.Now(), Detail: why}
	}
	// From here the nudge may reach the pane: remembered first, so that an
	// agent killed mid-way never types it again.
	s.remember(req.ID, wire.NudgeResult{}, true)
	return s.typeAndSubmit(req.ID, text)
}

// final records and returns a final outcome.
func (s *Service) final(id, outcome, detail string) wire.NudgeResult {
	r := wire.NudgeResult{Outcome: outcome, At: time.Now(), Detail: detail}
	s.remember(id, r, false)
	s.cfg.Logger.Info("nudge "+outcome, "id", id, "detail", detail)
	return r
}

// waitReady waits until the pane may be typed into: idle (or, immediate,
// anything) with an empty input line. It returns why not when ctx ends
// first, and an error when the pane cannot be read at all.
func (s *Service) waitReady(ctx context.Context, immediate bool, waiting func(string)) (why string, err error) {
	idleOnce, told := false, ""
	for {
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
		select {
		case <-ctx.Done():
			// Never "" here: that would mean ready, and the nudge is no
			// longer wanted (or its time is up) even if idle was seen once.
			return cmp.Or(why, "idle was seen once but not confirmed before the deadline (or hostd withdrew the nudge)"), nil
		case <-time.After(s.cfg.Poll):
		}
	}
}

// judge says whether the screen allows typing now, and if not why.
func (s *Service) judge(scr tmux.Screen, immediate bool) (bool, string) {
	if typed := s.inputText(scr); typed != "" {
		return false, fmt.Sprintf("text is being typed in the input line (%q)", clip(typed, 40))
	}
	if immediate {
		return true, ""
	}
	if ev, ok := s.hooks.Last(); ok {
		if ev == HookUserPromptSubmit || ev == HookPreToolUse {
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

// typeAndSubmit pastes the text, presses Enter until it is seen
// submitted (at most EnterTries times), and records the outcome.
func (s *Service) typeAndSubmit(id, text string) wire.NudgeResult {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	submits := s.hooks.Submits()
	if err := s.cfg.Tmux.Paste(ctx, s.cfg.Session, "gt-nudge-"+id, text); err != nil {
		return s.final(id, wire.NudgeFailed, err.Error())
	}
	tail := lastLineTail(text)
	seen := s.waitFor(ctx, time.Second, true, func(_ tmux.Screen, joined string) bool { return strings.Contains(joined, tail) })
	var last string
	for try := 1; try <= s.cfg.EnterTries; try++ {
		if err := s.cfg.Tmux.Enter(ctx, s.cfg.Session); err != nil {
			return s.final(id, wire.NudgeFailed, err.Error())
		}
		evidence, cleared := "", false
		s.waitFor(ctx, time.Second, false, func(scr tmux.Screen, _ string) bool {
			if s.hooks.Submits() > submits {
				evidence = "Claude Code's UserPromptSubmit hook fired"
				return true
			}
			last = s.inputText(scr)
			cleared = last == ""
			// With hooks, wait the whole second for the strongest evidence.
			return cleared && !s.hooks.Known()
		})
		switch {
		case evidence != "" || !cleared:
		case !seen:
			evidence = "the input line is empty (the text itself was never seen on the screen; the application may show pastes as a placeholder)"
		case s.hooks.Known():
			evidence = "the typed text left the input line, though no UserPromptSubmit hook fired"
		default:
			evidence = "the typed text left the input line"
		}
		if evidence != "" {
			if try > 1 {
				evidence += fmt.Sprintf(", after %d Enters", try)
			}
			return s.final(id, wire.NudgeSubmitted, evidence)
		}
	}
	return s.final(id, wire.NudgeFailed, fmt.Sprintf("typed, but not seen submitted after %d Enters; the input line shows %q", s.cfg.EnterTries, clip(last, 80)))
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

// clip shortens s to n runes for a message.
func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func (s *Service) lookup(id string) (record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.seen[id]
	return r, ok
}

// remember persists a nudge's record, keeping the newest maxRecords.
func (s *Service) remember(id string, res wire.NudgeResult, typing bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if res.At.IsZero() {
		res.At = time.Now()
	}
	s.seen[id] = record{Result: res, Typing: typing}
	if len(s.seen) > maxRecords {
		ids := make([]string, 0, len(s.seen))
		for k := range s.seen {
			ids = append(ids, k)
		}
		slices.SortFunc(ids, func(a, b string) int { return s.seen[a].Result.At.Compare(s.seen[b].Result.At) })
		for _, k := range ids[:len(ids)-maxRecords] {
			delete(s.seen, k)
		}
	}
	b, _ := json.Marshal(s.seen)
	if err := atomicfile.Write(s.statePath(), b, 0o600); err != nil {
		s.cfg.Logger.Warn("nudge: could not record a nudge's outcome; a restarted agent could type it again", "id", id, "err", err)
	}
}
