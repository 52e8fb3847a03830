package wire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestHeaderRoundTrip(t *testing.T) {
	for _, h := range []Header{
		{Kind: "relay"},
		{Kind: "git", Meta: []byte(`{"rig":"gastown"}`)},
		{Kind: strings.Repeat("a", MaxKindLen), Meta: []byte(`{"x":"` + strings.Repeat("y", MaxMetaLen-8) + `"}`)},
		{Kind: "a-0", Meta: []byte(` {"nested":{"a":[1,2,"\u0000"]}} `)},
	} {
		b, err := h.MarshalBinary()
		if err != nil {
			t.Fatalf("marshal %q: %v", h.Kind, err)
		}
		r := bytes.NewReader(append(b, "trailing channel bytes"...))
		got, err := ReadHeader(r)
		if err != nil {
			t.Fatalf("read %q: %v", h.Kind, err)
		}
		if got.Kind != h.Kind || !bytes.Equal(got.Meta, h.Meta) {
			t.Errorf("round trip of %q changed it", h.Kind)
		}
		if rest, _ := io.ReadAll(r); string(rest) != "trailing channel bytes" {
			t.Errorf("ReadHeader consumed channel bytes: %q left", rest)
		}
	}
}

func TestHeaderHostile(t *testing.T) {
	meta := func(s string) []byte {
		return append([]byte{byte(len(s) >> 8), byte(len(s))}, s...)
	}
	cases := []struct {
		name string
		wire []byte
		want string
	}{
		{"empty", nil, "reading stream header"},
		{"version 0", []byte{0, 5, 'r', 'e', 'l', 'a', 'y', 0, 0}, "unknown version 0"},
		{"version 2", []byte{2, 5, 'r', 'e', 'l', 'a', 'y', 0, 0}, "unknown version 2"},
		{"version 255", []byte{255}, "reading stream header"},
		{"zero kind length", []byte{1, 0, 0, 0}, "kind length 0"},
		{"kind too long", append([]byte{1, MaxKindLen + 1}, bytes.Repeat([]byte{'a'}, 40)...), "kind length 33"},
		{"kind upper case", append([]byte{1, 5}, append([]byte("RELAY"), 0, 0)...), "want [a-z0-9-]"},
		{"kind with slash", append([]byte{1, 4}, append([]byte("../x"), 0, 0)...), "want [a-z0-9-]"},
		{"kind with NUL", append([]byte{1, 3}, append([]byte("a\x00b"), 0, 0)...), "want [a-z0-9-]"},
		{"truncated kind", []byte{1, 5, 'r', 'e'}, "truncated kind"},
		{"meta length over limit", append([]byte{1, 1, 'a'}, 0xff, 0xff), "exceeds limit"},
		{"truncated meta", append([]byte{1, 1, 'a'}, append(meta(`{"a":1}`), 0)[:5]...), "truncated metadata"},
		{"meta not JSON", append([]byte{1, 1, 'a'}, meta(`{"a":`)...), "not a JSON object"},
		{"meta array", append([]byte{1, 1, 'a'}, meta(`[1,2]`)...), "not a JSON object"},
		{"meta string", append([]byte{1, 1, 'a'}, meta(`"x"`)...), "not a JSON object"},
		{"meta two objects", append([]byte{1, 1, 'a'}, meta(`{}{}`)...), "not a JSON object"},
		{"meta invalid UTF-8", append([]byte{1, 1, 'a'}, meta("{\"a\":\"\xff\"}")...), "not a JSON object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadHeader(bytes.NewReader(c.wire))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
			if c.name != "empty" && c.name != "version 255" {
				var he *HeaderError
				if !errors.As(err, &he) {
					t.Errorf("error %v is not a *HeaderError", err)
				}
			}
		})
	}
	for _, h := range []Header{{Kind: ""}, {Kind: "Bad"}, {Kind: "a", Meta: []byte("[]")}, {Kind: "a", Meta: bytes.Repeat([]byte(" "), MaxMetaLen+1)}} {
		if _, err := h.MarshalBinary(); err == nil {
			t.Errorf("MarshalBinary accepted %q / %q", h.Kind, h.Meta)
		}
	}
}

func TestStatusHostile(t *testing.T) {
	cases := []struct {
		name string
		wire []byte
		want string
	}{
		{"unknown status", []byte{7}, "unknown status byte"},
		{"truncated reason length", []byte{VerdictRejected, 0}, "reading refusal"},
		{"reason too long", []byte{VerdictRejected, 0xff, 0xff}, "exceeds"},
		{"truncated reason", []byte{VerdictRejected, 0, 10, 'a'}, "reading refusal"},
	}
	for _, c := range cases {
		if err := ReadVerdict(bytes.NewReader(c.wire), "relay"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	var buf bytes.Buffer
	_ = WriteVerdict(&buf, "bad \xff"+strings.Repeat("x", 2*MaxReasonLen))
	err := ReadVerdict(&buf, "relay")
	var re *RemoteError
	if !errors.As(err, &re) || len(re.Reason) > MaxReasonLen || !strings.HasPrefix(re.Reason, "bad ?") {
		t.Errorf("oversized, invalid UTF-8 reason: got %v", err)
	}
}

func TestWelcomeHostile(t *testing.T) {
	for name, wire := range map[string][]byte{
		"empty":          nil,
		"bad version":    {9, 0, 2, '{', '}'},
		"too long":       {WelcomeVersion, 0xff, 0xff},
		"truncated":      {WelcomeVersion, 0, 10, '{'},
		"not JSON":       {WelcomeVersion, 0, 1, '{'},
		"bad identity":   append([]byte{WelcomeVersion, 0, 21}, `{"identity":"a/b/c/d"}`[:21]...),
		"wrong identity": append([]byte{WelcomeVersion, 0, 22}, `{"identity":"a/b/c/d"}`...),
	} {
		if _, err := ReadWelcome(bytes.NewReader(wire)); err == nil {
			t.Errorf("%s: welcome accepted", name)
		}
	}
}

// FuzzReadHeader: any bytes give a header that re-encodes to the bytes
// read, or an error; never a panic or an over-limit allocation.
func FuzzReadHeader(f *testing.F) {
	for _, h := range []Header{{Kind: "relay"}, {Kind: "git", Meta: []byte(`{"a":1}`)}} {
		b, _ := h.MarshalBinary()
		f.Add(b)
	}
	f.Add([]byte{1, 1, 'a', 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ReadHeader(bytes.NewReader(b))
		if err != nil {
			return
		}
		enc, err := h.MarshalBinary()
		if err != nil {
			t.Fatalf("read a header it cannot write: %v", err)
		}
		if !bytes.HasPrefix(b, enc) {
			t.Fatalf("re-encoding differs from the input")
		}
	})
}

// FuzzReadStatus: the opener's parse of the acceptor's verdict.
func FuzzReadStatus(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{1, 0, 3, 'n', 'o', '!'})
	f.Fuzz(func(t *testing.T, b []byte) {
		err := ReadVerdict(bytes.NewReader(b), "relay")
		var re *RemoteError
		if errors.As(err, &re) && len(re.Reason) > MaxReasonLen {
			t.Fatalf("reason of %d bytes accepted", len(re.Reason))
		}
	})
}

func TestParseJoinToken(t *testing.T) {
	good := JoinToken{ID: "AAAAAAAAAAAAAAAAAAAAAA", Secret: "BBBBBBBBBBBBBBBBBBBBBB", CAFingerprint: bytes.Repeat([]byte{7}, 32)}
	got, err := ParseJoinToken(" " + good.String() + "\n")
	if err != nil || got.ID != good.ID || got.Secret != good.Secret || !bytes.Equal(got.CAFingerprint, good.CAFingerprint) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	s := good.String()
	for _, bad := range []string{"", "gtj1", "gtj1...", "gtj2" + s[4:], s + ".x", s[:len(s)-2], strings.Replace(s, "AAAA", "AA", 1),
		strings.Replace(s, "BBBB", "B=BB", 1), strings.Replace(s, ".", ". ", 1), "gtj1.\x00.\x00.\x00"} {
		if _, err := ParseJoinToken(bad); err == nil {
			t.Errorf("ParseJoinToken(%q) accepted", bad)
		}
	}
}

// FuzzParseJoinToken: what parses re-formats to the same token.
func FuzzParseJoinToken(f *testing.F) {
	f.Add("gtj1.AAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	f.Add("gtj1...")
	f.Fuzz(func(t *testing.T, s string) {
		jt, err := ParseJoinToken(s)
		if err != nil {
			return
		}
		if len(jt.CAFingerprint) != 32 {
			t.Fatalf("accepted fingerprint of %d bytes", len(jt.CAFingerprint))
		}
		if again, err := ParseJoinToken(jt.String()); err != nil || again.String() != jt.String() {
			t.Fatalf("re-formatted token does not parse back: %v", err)
		}
	})
}

func TestJoinMessageHostile(t *testing.T) {
	for name, wire := range map[string]string{
		"empty":         "",
		"no newline":    `{"token":"x"}`,
		"unknown field": `{"token":"x","admin":true}` + "\n",
		"not json":      "hello\n",
		"bad identity":  `{"identity":"../../etc"}` + "\n",
		"too long":      `{"token":"` + strings.Repeat("x", MaxJoinMessage) + `"}` + "\n",
	} {
		var req JoinRequest
		if err := ReadJoinMessage(strings.NewReader(wire), &req); err == nil {
			t.Errorf("%s: join message accepted", name)
		}
	}
	var req JoinRequest
	if err := ReadJoinMessage(strings.NewReader(`{"token":"t","identity":"gastown/furiosa","csr":"AAEC"}`+"\nrest"), &req); err != nil || req.Identity.Name != "furiosa" || len(req.CSR) != 3 {
		t.Errorf("valid join message: %+v, %v", req, err)
	}
}

// FuzzReadJoinMessage: the unauthenticated join service's only parser.
// Whatever it accepts is a single bounded line with a valid identity.
func FuzzReadJoinMessage(f *testing.F) {
	f.Add([]byte(`{"token":"t","identity":"gastown/furiosa","csr":"AAEC"}` + "\n"))
	f.Add([]byte(`{"identity":"../x"}` + "\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var req JoinRequest
		if err := ReadJoinMessage(bytes.NewReader(b), &req); err != nil {
			return
		}
		if len(b) > MaxJoinMessage+1 && bytes.IndexByte(b[:MaxJoinMessage+1], '\n') < 0 {
			t.Fatal("accepted a message longer than the limit")
		}
		if !req.Identity.IsZero() && req.Identity.Validate() != nil {
			t.Fatalf("accepted identity %q", req.Identity)
		}
	})
}
