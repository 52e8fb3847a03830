package heartbeat

import (
	"strconv"

	"github.com/polecat-sidecar/sidecar/internal/jsonscan"
)

// decodeFast decodes one beat line as encoding/json (unknown fields
// refused) would, when it has the form gt-agent writes: keys spelt as
// their tags and given once, strings without escapes or control
// characters, numbers in JSON's syntax, no nulls. ok is false for
// anything else, which Read leaves to encoding/json, whose verdict and
// error stand. Why, on hostd's hot path: docs/benchmarks.md ("Issue 25,
// first steps", 2,000 agents).
func decodeFast(line []byte) (b *Beat, ok bool) {
	b = new(Beat)
	s := scanner{jsonscan.New(line)}
	ok = s.Object(func(key []byte) bool {
		switch string(key) {
		case "seq":
			return s.uint(&b.Seq)
		case "interval":
			return s.float(&b.Interval)
		case "session":
			return s.session(&b.Session)
		case "container":
			return s.container(&b.Container)
		case "agent":
			return s.agent(&b.Agent)
		}
		return false
	})
	return b, ok && s.End()
}

func (s *scanner) session(v *Session) bool {
	return s.Object(func(key []byte) bool {
		switch string(key) {
		case "name":
			return s.str(&v.Name)
		case "command":
			return s.str(&v.Command)
		case "state":
			return s.word(&v.State, SessionRunning, SessionExited, SessionNotFound)
		case "never_started":
			return s.bool(&v.NeverStarted)
		case "exit_code":
			v.ExitCode = new(int)
			return s.int(v.ExitCode)
		case "exit_reason":
			return s.str(&v.ExitReason)
		case "processes":
			return s.int(&v.Processes)
		case "names":
			return s.strs(&v.Names)
		case "cpu_seconds":
			return s.float(&v.CPUSeconds)
		case "cpu_percent":
			return s.float(&v.CPUPercent)
		case "rss_bytes":
			return s.uint(&v.RSSBytes)
		case "threads":
			return s.int(&v.Threads)
		case "idle_seconds":
			return s.float(&v.IdleSeconds)
		}
		return false
	})
}

func (s *scanner) container(v *Container) bool {
	return s.Object(func(key []byte) bool {
		switch string(key) {
		case "load1":
			return s.float(&v.Load1)
		case "mem_available":
			return s.uint(&v.MemAvailable)
		case "disk_free":
			return s.uint(&v.DiskFree)
		case "disk_free_error":
			return s.str(&v.DiskFreeError)
		}
		return false
	})
}

func (s *scanner) agent(v *Agent) bool {
	return s.Object(func(key []byte) bool {
		switch string(key) {
		case "version":
			return s.str(&v.Version)
		case "uptime":
			return s.float(&v.Uptime)
		case "transport":
			return s.word(&v.Transport, "quic", "tcp")
		case "rtt_ms":
			return s.float(&v.RTTMillis)
		}
		return false
	})
}

// scanner reads the JSON decodeFast takes.
type scanner struct{ jsonscan.Scanner }

// str reads a string without escapes or control characters, valid UTF-8.
func (s *scanner) str(v *string) bool {
	b, ok := s.Text()
	*v = string(b)
	return ok
}

// word is str for a string that is usually one of usual, which it takes
// without allocating.
func (s *scanner) word(v *string, usual ...string) bool {
	b, ok := s.Text()
	for _, u := range usual {
		if string(b) == u {
			*v = u
			return ok
		}
	}
	*v = string(b)
	return ok
}

// strs reads an array of strings; [] is an empty slice, as encoding/json
// makes it.
func (s *scanner) strs(v *[]string) bool {
	if !s.Take('[') {
		return false
	}
	*v = []string{}
	if s.Take(']') {
		return true
	}
	for {
		var x string
		if !s.str(&x) {
			return false
		}
		*v = append(*v, x)
		if s.Take(']') {
			return true
		}
		if !s.Take(',') {
			return false
		}
	}
}

// bool reads true or false.
func (s *scanner) bool(v *bool) bool {
	*v = s.Literal("true")
	return *v || s.Literal("false")
}

// float reads a number as encoding/json does into a float64.
func (s *scanner) float(v *float64) bool {
	text, _ := s.Number()
	f, err := strconv.ParseFloat(string(text), 64)
	*v = f
	return text != nil && err == nil
}

// int reads an integer that fits an int.
func (s *scanner) int(v *int) bool {
	text, integer := s.Number()
	n, err := strconv.ParseInt(string(text), 10, strconv.IntSize)
	*v = int(n)
	return integer && err == nil
}

// uint reads a non-negative integer that fits a uint64.
func (s *scanner) uint(v *uint64) bool {
	text, integer := s.Number()
	n, err := strconv.ParseUint(string(text), 10, 64)
	*v = n
	return integer && err == nil
}
