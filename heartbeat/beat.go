// Package heartbeat is polecat liveness: what a beat says, how gt-agent
// measures it inside the container (procfs over the session's process tree,
// tmux for activity; on Linux only, tree_linux.go), and how hostd judges a
// stream of beats into states (working, idle, stale, disconnected, dead,
// revoked).
//
// On the wire a heartbeat stream carries one beat per line: a JSON object
// of at most MaxBeatSize bytes, sent every interval by the agent.
package heartbeat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"
)

// MaxBeatSize bounds one encoded beat.
const MaxBeatSize = 16 << 10

// maxProcNames bounds the process names a beat lists.
const maxProcNames = 32

// MaxExitReason bounds a session's ExitReason.
const MaxExitReason = 256

// MaxCommand bounds the Command an agent reports: a command line can be
// any length (Gas Town passes Claude its first prompt as an argument),
// a beat cannot. hostd takes longer ones, within MaxBeatSize, from agents
// that did not cut them.
const MaxCommand = 1024

// The exit codes shells give a command they could not run: found but not
// executable, and not found.
const (
	ExitCannotRun = 126
	ExitNotFound  = 127
)

// Session states a beat reports.
const (
	SessionRunning  = "running"
	SessionExited   = "exited"
	SessionNotFound = "not_found"
)

// Beat is one measurement of a polecat, taken by its agent.
type Beat struct {
	// Seq counts beats from 1 within one agent process.
	Seq uint64 `json:"seq"`
	// Interval is how often the agent beats, in seconds.
	Interval float64 `json:"interval"`
	// Session is the polecat's session.
	Session Session `json:"session"`
	// Container is the container's load.
	Container Container `json:"container"`
	// Agent is the agent itself.
	Agent Agent `json:"agent"`
}

// Session describes the watched session and its process tree.
type Session struct {
	// Name is the tmux session or process name watched.
	Name string `json:"name"`
	// Command is the polecat's command line, for display: the command
	// the session was started with, not gt-agent's wrapper around it; at
	// most MaxCommand bytes.
	Command string `json:"command,omitempty"`
	// State is SessionRunning, SessionExited or SessionNotFound.
	State string `json:"state"`
	// NeverStarted, with State SessionNotFound, says that no session has
	// run in this container yet (a sandbox before its first session), as
	// opposed to one that ran and is gone. Left out otherwise: a hostd
	// older than this field refuses beats that carry it.
	NeverStarted bool `json:"never_started,omitempty"`
	// ExitCode is set when State is SessionExited and the code is known.
	ExitCode *int `json:"exit_code,omitempty"`
	// ExitReason is, for an exit with a shell's code for a command that
	// could not be run (ExitCannotRun, ExitNotFound), the pane's last line,
	// which says why ("gt-agent: command not found: claude"); at most
	// MaxExitReason bytes. Left out otherwise: a hostd older than this
	// field refuses beats that carry it.
	ExitReason string `json:"exit_reason,omitempty"`
	// Processes is how many processes the tree has.
	Processes int `json:"processes"`
	// Names are the distinct process names in the tree (at most 32).
	Names []string `json:"names,omitempty"`
	// CPUSeconds is the tree's CPU time; CPUPercent its use since the last
	// beat (100 = one core).
	CPUSeconds float64 `json:"cpu_seconds"`
	CPUPercent float64 `json:"cpu_percent"`
	// RSSBytes is the tree's resident memory.
	RSSBytes uint64 `json:"rss_bytes"`
	// Threads is the tree's thread count.
	Threads int `json:"threads"`
	// IdleSeconds is the time since the session's pane last changed; -1
	// when unknown (a process watched without tmux).
	IdleSeconds float64 `json:"idle_seconds"`
}

// Container is the container's load.
type Container struct {
	Load1         float64 `json:"load1"`
	MemAvailable  uint64  `json:"mem_available"`
	DiskFree      uint64  `json:"disk_free"`
	DiskFreeError string  `json:"disk_free_error,omitempty"`
}

// Agent describes gt-agent.
type Agent struct {
	Version   string  `json:"version"`
	Uptime    float64 `json:"uptime"`
	Transport string  `json:"transport"`
	RTTMillis float64 `json:"rtt_ms"`
}

// Validate checks a beat from the wire: known states, numbers in range.
func (b *Beat) Validate() error {
	switch b.Session.State {
	case SessionRunning, SessionExited, SessionNotFound:
	default:
		return fmt.Errorf("unknown session state %q", b.Session.State)
	}
	if b.Seq == 0 {
		return errors.New("sequence number 0")
	}
	if b.Interval <= 0 || b.Interval > 3600 {
		return fmt.Errorf("interval %v s out of range", b.Interval)
	}
	if len(b.Session.Names) > maxProcNames {
		return fmt.Errorf("%d process names, limit %d", len(b.Session.Names), maxProcNames)
	}
	if len(b.Session.ExitReason) > MaxExitReason {
		return fmt.Errorf("exit reason of %d bytes, limit %d", len(b.Session.ExitReason), MaxExitReason)
	}
	for _, f := range []float64{b.Session.CPUSeconds, b.Session.CPUPercent, b.Session.IdleSeconds, b.Container.Load1, b.Agent.Uptime, b.Agent.RTTMillis} {
		if math.IsNaN(f) || math.IsInf(f, 0) || f < -1 {
			return fmt.Errorf("number %v out of range", f)
		}
	}
	return nil
}

// Writer writes beats, one per line.
type Writer struct{ w io.Writer }

// NewWriter writes beats to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write sends one beat.
func (bw *Writer) Write(b *Beat) error {
	if len(b.Session.Names) > maxProcNames {
		b.Session.Names = b.Session.Names[:maxProcNames]
	}
	data, err := json.Marshal(b)
	if err != nil {
		return err
	}
	if len(data) >= MaxBeatSize {
		return fmt.Errorf("beat of %d bytes exceeds %d", len(data), MaxBeatSize)
	}
	_, err = bw.w.Write(append(data, '\n'))
	return err
}

// Reader reads beats, refusing any that is oversized, malformed or
// invalid. hostd holds one per connected polecat, blocked in Read between
// beats, so its buffer starts at readerStart (a beat is a few hundred
// bytes) and grows towards MaxBeatSize only for a line that needs it: a
// fixed 16 KiB buffer was a tenth of hostd's memory per polecat.
type Reader struct {
	r          io.Reader
	buf        []byte
	start, end int // buf[start:end] is read and not yet returned
}

// readerStart is a Reader's first buffer size.
const readerStart = 1 << 10

// NewReader reads beats from r.
func NewReader(r io.Reader) *Reader { return &Reader{r: r} }

// ErrBeatTooLarge is returned for a line longer than MaxBeatSize; the
// stream cannot be trusted after it.
var ErrBeatTooLarge = errors.New("beat exceeds 16 KiB")

// line returns the next line, its newline included, valid until the next
// call. A line may be at most MaxBeatSize bytes long.
func (br *Reader) line() ([]byte, error) {
	for {
		pending := br.buf[br.start:br.end]
		if i := bytes.IndexByte(pending, '\n'); i >= 0 {
			br.start += i + 1
			return pending[:i+1], nil
		}
		if len(pending) >= MaxBeatSize {
			return nil, ErrBeatTooLarge
		}
		if br.end == len(br.buf) { // full: move what is pending to the front, grow if that frees nothing
			if br.start == 0 {
				grown := make([]byte, min(max(2*len(br.buf), readerStart), MaxBeatSize))
				copy(grown, pending)
				br.buf = grown
			} else {
				copy(br.buf, pending)
			}
			br.start, br.end = 0, len(pending)
		}
		n, err := br.r.Read(br.buf[br.end:])
		br.end += n
		if err != nil && n == 0 {
			if errors.Is(err, io.EOF) && br.end > br.start {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}

// Read returns the next beat. At a clean end it returns io.EOF.
func (br *Reader) Read() (*Beat, error) {
	line, err := br.line()
	if err != nil {
		return nil, err
	}
	b, ok := decodeFast(line)
	if !ok {
		if b, err = decodeJSON(line); err != nil {
			return nil, err
		}
	}
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("invalid beat: %w", err)
	}
	return b, nil
}

// decodeJSON decodes a beat line with encoding/json, refusing unknown
// fields and anything after the beat: what decodeFast does not take.
func decodeJSON(line []byte) (*Beat, error) {
	d := json.NewDecoder(bytes.NewReader(line))
	d.DisallowUnknownFields()
	var b Beat
	if err := d.Decode(&b); err != nil {
		return nil, fmt.Errorf("malformed beat: %w", err)
	}
	if d.More() {
		return nil, errors.New("malformed beat: more than one JSON value on the line")
	}
	return &b, nil
}

// idleAt is the session's idle time as of now, the beat having been
// received at got.
func (b *Beat) idleAt(got, now time.Time) time.Duration {
	if b.Session.IdleSeconds < 0 {
		return -1
	}
	return time.Duration(b.Session.IdleSeconds*float64(time.Second)) + now.Sub(got)
}

// noSessionYet says whether the beat is from a sandbox in which no
// session has run yet.
func (b *Beat) noSessionYet() bool {
	return b.Session.State == SessionNotFound && b.Session.NeverStarted
}
