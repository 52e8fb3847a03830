package history_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/images/soak/history"
)

func TestDuration(t *testing.T) {
	tests := []struct {
		json string
		want time.Duration
		err  bool
	}{
		{`"30s"`, 30 * time.Second, false},
		{`"1m30.5s"`, 90*time.Second + 500*time.Millisecond, false},
		{`"-2h"`, -2 * time.Hour, false},
		{`1500`, 1500 * time.Nanosecond, false},
		{`null`, 0, false},
		{`"30"`, 0, true},
		{`1.5`, 0, true},
		{`true`, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.json, func(t *testing.T) {
			var d history.Duration
			err := json.Unmarshal([]byte(tt.json), &d)
			if tt.err {
				if err == nil {
					t.Fatalf("decoded %s as %v, want an error", tt.json, time.Duration(d))
				}
				return
			}
			if err != nil || time.Duration(d) != tt.want {
				t.Fatalf("decoded %s as %v, %v; want %v", tt.json, time.Duration(d), err, tt.want)
			}
			b, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			if want := `"` + tt.want.String() + `"`; string(b) != want {
				t.Errorf("encoded as %s, want %s", b, want)
			}
		})
	}
}

func TestEventString(t *testing.T) {
	at := func(ms int) time.Time { return time.Date(2026, 1, 2, 3, 4, 5, ms*1e6, time.UTC) }
	tests := []struct {
		name string
		e    history.Event
		want string
	}{
		{name: "a failure's error, quoted",
			e:    history.Event{T: at(6), Kind: history.KindNudge, Phase: history.PhaseFail, Agent: "rig/a", Op: "n-1", Err: "connection reset\nby peer"},
			want: `03:04:05.006 nudge fail agent=rig/a op=n-1 err="connection reset\nby peer"`},
		{name: "a connected agent's status, with when its tunnel connected",
			e:    history.Event{T: at(900), Kind: history.KindStatus, Phase: history.PhaseObserve, Agent: "rig/a", State: "idle", Since: at(250)},
			want: `03:04:05.900 status observe agent=rig/a state=idle since=03:04:05.250`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.e.String(); got != tt.want {
				t.Errorf("String() = %s\nwant        %s", got, tt.want)
			}
		})
	}
}
