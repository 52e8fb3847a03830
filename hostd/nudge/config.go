package nudge

import (
	"errors"
	"log/slog"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/settings"
)

// Config configures the queue.
type Config struct {
	// Path is the queue's file (state.Dir.Nudges).
	Path string
	// TTL is how long a normal nudge may wait to be delivered.
	TTL time.Duration
	// UrgentTTL is how long an urgent one may.
	UrgentTTL time.Duration
	// Depth bounds each polecat's queue: past it the oldest normal nudge
	// is dropped (and reported), or the new one refused if all are urgent.
	Depth int
	// Attempt bounds one delivery attempt: how long the agent waits for
	// idle before answering busy and hostd offers the nudge again.
	Attempt time.Duration
	// Retry is the pause after an attempt that could not reach the agent.
	Retry time.Duration
	// Logger receives a line per outcome.
	Logger *slog.Logger
}

// DefaultConfig is Gas Town's: 30 minutes for a normal nudge, 2 hours for
// an urgent one, 50 queued per polecat; an attempt waits up to a minute.
// Path has no default.
func DefaultConfig() Config {
	return Config{
		TTL:       30 * time.Minute, // above 0
		UrgentTTL: 2 * time.Hour,    // above 0
		Depth:     50,               // at least 1
		Attempt:   time.Minute,      // above 0
		Retry:     2 * time.Second,  // above 0
		Logger:    slog.Default(),
	}
}

// Validate names each field out of its range; New calls it once zero
// fields have their defaults.
func (c Config) Validate() error {
	return errors.Join(
		settings.Required("Path", c.Path),
		settings.Positive("TTL", c.TTL),
		settings.Positive("UrgentTTL", c.UrgentTTL),
		settings.Positive("Depth", c.Depth),
		settings.Positive("Attempt", c.Attempt),
		settings.Positive("Retry", c.Retry),
	)
}
