package jsonscan

import (
	"encoding/json"
	"testing"
)

func TestText(t *testing.T) {
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{`"abc"`, "abc", true},
		{` "" `, "", true},
		{`"büro"`, "büro", true},
		{`"a\"b"`, "", false},   // an escape
		{"\"a\tb\"", "", false}, // a control character
		{"\"\xff\"", "", false}, // invalid UTF-8
		{`"abc`, "", false},     // cut short
		{`abc`, "", false},      // not a string
		{``, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			s := New([]byte(tt.in))
			got, ok := s.Text()
			if ok != tt.ok || (ok && string(got) != tt.want) {
				t.Errorf("Text() = %q, %v; want %q, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestNumber(t *testing.T) {
	tests := []struct {
		in      string
		want    string // "" for none
		integer bool
	}{
		{"0", "0", true},
		{"-12", "-12", true},
		{" 1.5e-3,", "1.5e-3", false},
		{"2E+10}", "2E+10", false},
		{"01", "0", true}, // JSON's number ends at the leading zero
		{"+1", "", false},
		{"1.", "", false},
		{".5", "", false},
		{"1e", "", false},
		{"-", "", false},
		{"NaN", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			s := New([]byte(tt.in))
			got, integer := s.Number()
			if string(got) != tt.want || integer != tt.integer {
				t.Errorf("Number() = %q, %v; want %q, %v", got, integer, tt.want, tt.integer)
			}
		})
	}
}

// FuzzNumber: a whole input Number reads is a JSON number.
func FuzzNumber(f *testing.F) {
	for _, s := range []string{"0", "-1.5e+3", "01", "1e", "+1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s := New(b)
		text, _ := s.Number()
		if text != nil && s.End() && !json.Valid(b) {
			t.Fatalf("Number read all of %q, which is not JSON", b)
		}
	})
}

func TestLiteral(t *testing.T) {
	tests := []struct {
		in, word string
		ok       bool
		rest     bool // something follows the word
	}{
		{"true", "true", true, false},
		{" false,", "false", true, true},
		{"null", "null", true, false},
		{"tru", "true", false, false},
		{"\"true\"", "true", false, false},
		{"", "null", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			s := New([]byte(tt.in))
			if got := s.Literal(tt.word); got != tt.ok {
				t.Fatalf("Literal(%q) = %v, want %v", tt.word, got, tt.ok)
			}
			if tt.ok && s.End() == tt.rest {
				t.Errorf("after %q: at the end %v", tt.word, !tt.rest)
			}
		})
	}
}
