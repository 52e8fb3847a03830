package exit

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func TestCode(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		code   int
		stderr string
	}{
		{"success", nil, 0, ""},
		{"plain error", errors.New("no CA"), 1, "hostd: no CA\n"},
		{"status alone prints nothing", Status(3), 3, ""},
		{"status 0 is success", Status(0), 0, ""},
		{"status with its error", &Error{Code: 4, Err: errors.New("expired")}, 4, "hostd: expired\n"},
		{"wrapped status keeps its code and cause", fmt.Errorf("nudge: %w", &Error{Code: 4, Err: errors.New("expired")}), 4, "hostd: expired\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if got := Code(tt.err, "hostd", &stderr); got != tt.code || stderr.String() != tt.stderr {
				t.Fatalf("Code(%v) = %d, stderr %q; want %d, %q", tt.err, got, stderr.String(), tt.code, tt.stderr)
			}
		})
	}
}

func TestErrorUnwraps(t *testing.T) {
	cause := errors.New("cause")
	err := error(&Error{Code: 2, Err: cause})
	if !errors.Is(err, cause) || err.Error() != "cause" {
		t.Fatalf("Error %v does not carry its cause", err)
	}
	if got := Status(5).Error(); got != "exit status 5" {
		t.Fatalf("Status(5).Error() = %q", got)
	}
}
