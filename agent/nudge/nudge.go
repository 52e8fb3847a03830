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
// always counts as busy: a nudge never mixes with someone's typing. The
// pane is read every Poll while waiting (each read is a tmux process),
// except while the hooks say busy: then the next hook event ends the wait,
// and the pane is read only every 5 s.
package nudge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/polecat-sidecar/sidecar/agent/tmux"
	"github.com/polecat-sidecar/sidecar/internal/settings"
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
	// Poll is how often the pane is looked at while waiting (every 5 s
	// while Claude Code's hooks say busy: their next event ends the wait).
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

// DefaultConfig delivers to the "polecat" session, knows Claude Code's
// busy screen and prompt, waits for 3 s of silence when nothing better is
// known, looks every 200 ms (every 5 s while the hooks say busy) and
// presses Enter at most 3 times. StateDir has no default: outcomes are
// kept in the working directory.
func DefaultConfig() Config {
	return Config{
		Session:      "polecat",
		BusyPatterns: DefaultBusyPatterns,    // regular expressions; empty (not nil): none
		Prompt:       DefaultPrompt,          // a regular expression
		Silence:      3 * time.Second,        // above 0
		Poll:         200 * time.Millisecond, // above 0
		EnterTries:   3,                      // at least 1
		Logger:       slog.Default(),
	}
}

// Validate names each field out of its range and each pattern that is
// no regular expression; New calls it once zero fields have their
// defaults.
func (c Config) Validate() error {
	errs := []error{
		settings.Positive("Silence", c.Silence),
		settings.Positive("Poll", c.Poll),
		settings.Positive("EnterTries", c.EnterTries),
	}
	if _, err := regexp.Compile(c.Prompt); err != nil {
		errs = append(errs, settings.Invalid("Prompt", c.Prompt, err))
	}
	for _, p := range c.BusyPatterns {
		if _, err := regexp.Compile(p); err != nil {
			errs = append(errs, settings.Invalid("BusyPatterns", p, err))
		}
	}
	return errors.Join(errs...)
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
	seq  uint64            // the newest record's Seq
}

// New checks the Config and its patterns; zero Config fields take
// DefaultConfig's. hooks may be nil (no hook socket).
func New(cfg Config, hooks *Hooks) (*Service, error) {
	settings.FillZero(&cfg, DefaultConfig())
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("nudge: %w", err)
	}
	s := &Service{cfg: cfg, hooks: hooks, turn: make(chan struct{}, 1), seen: map[string]record{}, prompt: regexp.MustCompile(cfg.Prompt)}
	for _, p := range cfg.BusyPatterns { // Validate compiled them
		s.busy = append(s.busy, regexp.MustCompile(p))
	}
	s.loadSeen()
	return s, nil
}

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
	ctx, cancel := withHostdDeadline(ctx, req.Deadline, st.Session().PeerNow())
	defer cancel()
	// hostd closing its side means it no longer wants this nudge.
	heard := make(chan struct{})
	go func() {
		defer close(heard)
		_, _ = st.Read(make([]byte, 1))
		cancel()
	}()
	defer func() { <-heard }()
	defer st.SetReadDeadline(time.Now()) // ends that read once answered
	waiting := func(why string) {
		_ = wire.WriteNudgeResult(st, wire.NudgeResult{Outcome: wire.NudgeBusy, At: time.Now(), Detail: why})
	}
	res := s.Deliver(ctx, req, text, waiting)
	_ = wire.WriteNudgeResult(st, res)
	_ = st.CloseWrite()
}

// withHostdDeadline bounds ctx by deadline, a time by hostd's clock:
// reckoned from hostdNow (tunnel.Session.PeerNow) as a wait, since this
// machine's clock may be far off hostd's (ahead by more than the wait,
// it would answer busy to every nudge), or as this machine's time when
// hostd sent none.
func withHostdDeadline(ctx context.Context, deadline, hostdNow time.Time) (context.Context, context.CancelFunc) {
	if hostdNow.IsZero() {
		return context.WithDeadline(ctx, deadline)
	}
	return context.WithTimeout(ctx, deadline.Sub(hostdNow))
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

// clip shortens s to n runes for a message.
func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
