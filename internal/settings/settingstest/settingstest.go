// Package settingstest runs the table tests of a service's Config: each
// case changes a valid Config and says what the check (Validate, or New)
// must then answer.
package settingstest

import (
	"strings"
	"testing"
)

// Case is one change to a valid Config.
type Case[C any] struct {
	// Name names the subtest.
	Name string
	// Set changes the Config; nil leaves it valid.
	Set func(*C)
	// Want is part of the error, naming the field and its range; empty
	// when the changed Config must be accepted.
	Want string
}

// Run runs each case on a fresh valid() Config, failing unless check's
// error contains the case's Want (or is nil when Want is empty).
func Run[C any](t *testing.T, valid func() C, check func(C) error, cases []Case[C]) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			cfg := valid()
			if c.Set != nil {
				c.Set(&cfg)
			}
			err := check(cfg)
			switch {
			case c.Want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.Want != "" && err == nil:
				t.Fatalf("accepted, want an error saying %q", c.Want)
			case c.Want != "" && !strings.Contains(err.Error(), c.Want):
				t.Fatalf("error %q, want one saying %q", err, c.Want)
			}
		})
	}
}
