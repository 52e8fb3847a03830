package settings

import (
	"errors"
	"strings"
	"testing"
	"time"
)

type sample struct {
	Depth   int
	TTL     time.Duration
	Path    string
	Names   []string
	Verbose bool
	hidden  int
}

func TestFillZero(t *testing.T) {
	def := sample{Depth: 50, TTL: time.Minute, Path: "/d", Names: []string{"a"}, Verbose: true, hidden: 7}
	tests := []struct {
		name string
		in   sample
		want sample
	}{
		{"all zero take the defaults", sample{}, sample{Depth: 50, TTL: time.Minute, Path: "/d", Names: []string{"a"}, Verbose: true}},
		{"set fields stay", sample{Depth: 3, TTL: time.Second, Path: "/p", Names: []string{"b"}}, sample{Depth: 3, TTL: time.Second, Path: "/p", Names: []string{"b"}, Verbose: true}},
		{"out of range stays for Validate to refuse", sample{Depth: -1}, sample{Depth: -1, TTL: time.Minute, Path: "/d", Names: []string{"a"}, Verbose: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in
			FillZero(&got, def)
			if got.Depth != tt.want.Depth || got.TTL != tt.want.TTL || got.Path != tt.want.Path ||
				strings.Join(got.Names, ",") != strings.Join(tt.want.Names, ",") || got.Verbose != tt.want.Verbose || got.hidden != 0 {
				t.Fatalf("FillZero(%+v) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestRangeChecks(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"at least, in range", AtLeast("Depth", 1, 1), ""},
		{"at least, below", AtLeast("Depth", 0, 1), "Depth is 0: it must be at least 1"},
		{"duration below", AtLeast("TTL", -time.Second, time.Millisecond), "TTL is -1s: it must be at least 1ms"},
		{"positive", Positive("Depth", 1), ""},
		{"positive, zero", Positive("Depth", 0), "Depth is 0: it must be above 0"},
		{"positive duration, negative", Positive("TTL", -time.Second), "TTL is -1s: it must be above 0"},
		{"in range", InRange("Share", 0.5, 0.0, 1.0), ""},
		{"above range", InRange("Share", 1.5, 0.0, 1.0), "Share is 1.5: it must be from 0 to 1"},
		{"below range", InRange("Procs", 0, 1, 64), "Procs is 0: it must be from 1 to 64"},
		{"required, given", Required("Path", "/x"), ""},
		{"required, missing", Required("Path", ""), "Path is required"},
		{"not zero, negative", NotZero("Reconcile", -time.Second, "negative: never"), ""},
		{"not zero, zero", NotZero("Reconcile", time.Duration(0), "negative: never"), "Reconcile is 0s: it must not be 0 (negative: never)"},
		{"below, below", Below("KeepAlive", time.Second, "IdleTimeout", 2*time.Second), ""},
		{"below, equal", Below("KeepAlive", time.Second, "IdleTimeout", time.Second), "KeepAlive is 1s: it must be below IdleTimeout (1s)"},
		{"at most, equal", AtMost("PerSource", 16, "Total", 16), ""},
		{"at most, above", AtMost("PerSource", 17, "Total", 16), "PerSource is 17: it must be at most Total (16)"},
		{"invalid", Invalid("Branches.gastown", []string{"x"}, errors.New("needs {name}")), "Branches.gastown is [x]: needs {name}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if tt.err != nil {
				got = tt.err.Error()
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
	if err := errors.Join(AtLeast("A", 0, 1), Required("B", "")); err == nil || !strings.Contains(err.Error(), "A is 0") || !strings.Contains(err.Error(), "B is required") {
		t.Fatalf("joined checks lost one: %v", err)
	}
}

// TestUnder: a service's errors, placed in the Config that holds it, name
// each field by its whole path (both fields of a rule across two), and say
// the field on any other error; nil stays nil.
func TestUnder(t *testing.T) {
	inner := errors.Join(
		Positive("TTL", -time.Second),
		Below("KeepAlive", 2*time.Second, "IdleTimeout", time.Second),
		errors.New("policy: bad pattern"),
	)
	err := Under("Server", Under("Certs", inner))
	want := "Server.Certs.TTL is -1s: it must be above 0\n" +
		"Server.Certs.KeepAlive is 2s: it must be below Server.Certs.IdleTimeout (1s)\n" +
		"Server: Certs: policy: bad pattern"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "Server.Certs.TTL" {
		t.Fatalf("the placed errors are not FieldErrors: %#v", err)
	}
	if Under("Certs", nil) != nil {
		t.Fatal("Under(nil) is not nil")
	}
}
