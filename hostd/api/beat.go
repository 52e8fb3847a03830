package api

import "time"

// Beat is a polecat's last beat as the API shows it: heartbeat.Beat's
// fields and JSON, which hostd/control converts it from (a test there
// holds the two alike, field by field).
type Beat struct {
	// Seq counts beats from 1 within one agent process; Interval is how
	// often the agent beats, in seconds.
	Seq      uint64  `json:"seq"`
	Interval float64 `json:"interval"`
	// Session is the polecat's session, Container its container's load,
	// Agent gt-agent itself.
	Session   Session   `json:"session"`
	Container Container `json:"container"`
	Agent     Agent     `json:"agent"`
}

// Session is the watched session and its process tree (heartbeat.Session
// says what each field holds).
type Session struct {
	// Name is the tmux session or process watched; Command the polecat's
	// command line; State running, exited or not-found; NeverStarted that
	// no session has run in the container yet.
	Name         string `json:"name"`
	Command      string `json:"command,omitempty"`
	State        string `json:"state"`
	NeverStarted bool   `json:"never_started,omitempty"`
	// ExitCode and ExitReason say how an exited session ended.
	ExitCode   *int   `json:"exit_code,omitempty"`
	ExitReason string `json:"exit_reason,omitempty"`
	// The process tree: its size, names and use; IdleSeconds is the time
	// since the pane last changed (-1: unknown).
	Processes   int      `json:"processes"`
	Names       []string `json:"names,omitempty"`
	CPUSeconds  float64  `json:"cpu_seconds"`
	CPUPercent  float64  `json:"cpu_percent"`
	RSSBytes    uint64   `json:"rss_bytes"`
	Threads     int      `json:"threads"`
	IdleSeconds float64  `json:"idle_seconds"`
}

// Container is the container's load.
type Container struct {
	Load1         float64 `json:"load1"`
	MemAvailable  uint64  `json:"mem_available"`
	DiskFree      uint64  `json:"disk_free"`
	DiskFreeError string  `json:"disk_free_error,omitempty"`
}

// Agent is gt-agent as its beat describes it.
type Agent struct {
	Version   string  `json:"version"`
	Uptime    float64 `json:"uptime"`
	Transport string  `json:"transport"`
	RTTMillis float64 `json:"rtt_ms"`
}

// Event is one change of a polecat's judged state (heartbeat.Event):
// from one state (none for the first) to another, and why.
type Event struct {
	Time   time.Time `json:"time"`
	From   string    `json:"from,omitempty"`
	To     string    `json:"to"`
	Reason string    `json:"reason"`
}
