// Package exit carries a command's exit status out of its cobra RunE as
// an error, so that main alone ends the process: a command returns
// Status(3) or an *Error, and main calls os.Exit(Code(err, ...)).
package exit

import (
	"errors"
	"fmt"
	"io"
)

// Error ends a command with Code. Err, when not nil, is printed as the
// command's error; when nil, the command has already said why (its
// output is the answer, as with 'hostd alive'), and nothing more is
// printed.
type Error struct {
	Code int
	Err  error
}

// Error is Err's text, or the exit status when there is none.
func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

// Unwrap is Err, for errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Err }

// Status is the error that ends a command with code and prints nothing
// more; nil for 0.
func Status(code int) error {
	if code == 0 {
		return nil
	}
	return &Error{Code: code}
}

// Code is the process's exit status for what a command returned: 0 for
// nil, an *Error's Code (printing its Err, if any), or 1 after printing
// "name: err" on stderr.
func Code(err error, name string, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var e *Error
	if !errors.As(err, &e) {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	if e.Err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, e.Err)
	}
	return e.Code
}
