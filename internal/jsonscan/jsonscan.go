// Package jsonscan reads the few JSON forms this module's hand-written
// decoders take, without reflection: white space, punctuation, strings
// without escapes, numbers in JSON's own syntax, true, false and null.
// Those decoders are for hot paths and quick starts (hostd reading every
// polecat's beats and every archive's manifest, the gt shim reading an
// exit status) and take only what their writers
// produce; anything else they refuse, or leave to encoding/json.
package jsonscan

import "unicode/utf8"

// Scanner reads a JSON text from its start, one token at a time.
type Scanner struct {
	b []byte
	i int
}

// New scans b.
func New(b []byte) Scanner { return Scanner{b: b} }

// Space skips JSON's white space.
func (s *Scanner) Space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// Take skips white space and then c, if c is next.
func (s *Scanner) Take(c byte) bool {
	s.Space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// End skips white space and says whether nothing is left.
func (s *Scanner) End() bool {
	s.Space()
	return s.i == len(s.b)
}

// Text reads a string that has no escapes and no control characters and
// is valid UTF-8, and returns its bytes (within the scanned text); ok is
// false for any other string, or none.
func (s *Scanner) Text() (text []byte, ok bool) {
	if !s.Take('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			text = s.b[start : s.i-1]
			return text, utf8.Valid(text)
		case c < 0x20 || c == '\\':
			return nil, false
		}
		s.i++
	}
	return nil, false
}

// Number reads a number in JSON's syntax and returns its text (within the
// scanned text; nil when none is next); integer says whether it has
// neither fraction nor exponent.
func (s *Scanner) Number() (text []byte, integer bool) {
	s.Space()
	start := s.i
	digits := func() bool {
		n := s.i
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
		}
		return s.i > n
	}
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	if s.i < len(s.b) && s.b[s.i] == '0' {
		s.i++
	} else if !digits() {
		return nil, false
	}
	integer = true
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !digits() {
			return nil, false
		}
		integer = false
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !digits() {
			return nil, false
		}
		integer = false
	}
	return s.b[start:s.i], integer
}

// Literal takes word (true, false or null) when it comes next.
func (s *Scanner) Literal(word string) bool {
	s.Space()
	if len(s.b)-s.i < len(word) || string(s.b[s.i:s.i+len(word)]) != word {
		return false
	}
	s.i += len(word)
	return true
}

// Object reads an object, handing each key to field, which reads its
// value and says whether it could. A key given twice is not taken
// (encoding/json would take the last), nor is anything after a field
// that could not be read.
func (s *Scanner) Object(field func(key []byte) bool) bool {
	if !s.Take('{') {
		return false
	}
	if s.Take('}') {
		return true
	}
	var seenBuf [16][]byte // the objects read this way have few keys
	seen := seenBuf[:0]
	for {
		key, ok := s.Text()
		if !ok || !s.Take(':') {
			return false
		}
		for _, k := range seen {
			if string(k) == string(key) {
				return false
			}
		}
		seen = append(seen, key)
		if !field(key) {
			return false
		}
		if s.Take('}') {
			return true
		}
		if !s.Take(',') {
			return false
		}
	}
}
