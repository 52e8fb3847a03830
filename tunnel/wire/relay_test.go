package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	big := bytes.Repeat([]byte("x"), MaxRelayFramePayload)
	frames := []struct {
		typ     byte
		payload []byte
	}{{RelayFrameStdout, []byte("hello")}, {RelayFrameStdinClose, nil}, {RelayFrameStderr, big}, {RelayFrameSignal, []byte{2}}}
	for _, f := range frames {
		if err := WriteRelayFrame(&buf, f.typ, f.payload); err != nil {
			t.Fatal(err)
		}
	}
	fr := NewRelayFrameReader(&buf)
	for _, want := range frames {
		typ, p, err := fr.Next()
		if err != nil || typ != want.typ || !bytes.Equal(p, want.payload) {
			t.Fatalf("frame %c: got %c, %d bytes, %v", want.typ, typ, len(p), err)
		}
	}
	if _, _, err := fr.Next(); err != io.EOF {
		t.Errorf("after the last frame: %v, want io.EOF", err)
	}
	if err := WriteRelayFrame(io.Discard, RelayFrameStdout, make([]byte, MaxRelayFramePayload+1)); err == nil {
		t.Error("oversized frame written")
	}
}

func TestFramesHostile(t *testing.T) {
	hdr := func(typ byte, n uint32) []byte {
		b := []byte{typ, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(b[1:], n)
		return b
	}
	cases := map[string]struct {
		wire []byte
		want error
	}{
		"length over limit": {hdr(RelayFrameStdout, MaxRelayFramePayload+1), ErrRelayFrameTooLarge},
		"length 4 GiB":      {hdr(RelayFrameStdout, 0xffffffff), ErrRelayFrameTooLarge},
		"truncated header":  {[]byte{RelayFrameStdout, 0, 0}, io.ErrUnexpectedEOF},
		"truncated payload": {append(hdr(RelayFrameStdout, 10), "abc"...), io.ErrUnexpectedEOF},
		"no payload at all": {hdr(RelayFrameStdout, 1), io.ErrUnexpectedEOF},
	}
	for name, c := range cases {
		if _, _, err := NewRelayFrameReader(bytes.NewReader(c.wire)).Next(); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", name, err, c.want)
		}
	}
}

func TestRelayRequest(t *testing.T) {
	req := RelayRequest{
		Argv: [][]byte{[]byte("bd"), []byte("show"), []byte("a b"), []byte(`"quoted' \`), []byte("line\nbreak"), {0xff, 0xfe, 'x'}, {}},
		Cwd:  []byte("/work/\xffdir"),
		Env:  [][]byte{[]byte("TERM=xterm-256color"), []byte("COLUMNS=80"), []byte("NO_COLOR=")},
	}
	b, err := EncodeRelayRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRelayRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(normalise(got), normalise(req)) {
		t.Errorf("round trip changed the request:\n got %q\nwant %q", got.Argv, req.Argv)
	}
	many := make([][]byte, maxRelayArgs+1)
	for i := range many {
		many[i] = []byte("a")
	}
	hostile := map[string]string{
		"not json":       "argv",
		"unknown field":  `{"argv":["Z3Q="],"identity":"x"}`,
		"trailing data":  `{"argv":["Z3Q="]}{}`,
		"argv not bytes": `{"argv":["gt status"]}`,
		"no argv":        `{}`,
		"empty argv":     `{"argv":[]}`,
		"NUL in arg":     `{"argv":["Z3Q=","c3QAYXR1cw=="]}`,
		"env without =":  `{"argv":["Z3Q="],"env":["VEVSTQ=="]}`,
		"env empty key":  `{"argv":["Z3Q="],"env":["PXg="]}`,
		"NUL in cwd":     `{"argv":["Z3Q="],"cwd":"LwAv"}`,
	}
	for name, wire := range hostile {
		if _, err := DecodeRelayRequest([]byte(wire)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := EncodeRelayRequest(RelayRequest{Argv: many}); err == nil || !strings.Contains(err.Error(), "arguments") {
		t.Errorf("too many arguments: %v", err)
	}
	if _, err := EncodeRelayRequest(RelayRequest{Argv: [][]byte{[]byte("gt"), bytes.Repeat([]byte("a"), MaxRelayFramePayload)}}); err == nil {
		t.Error("oversized request encoded")
	}
}

// normalise maps nil and empty byte slices alike, as JSON does.
func normalise(r RelayRequest) RelayRequest {
	for i, a := range r.Argv {
		if len(a) == 0 {
			r.Argv[i] = []byte{}
		}
	}
	return r
}

// FuzzFrameReader: arbitrary bytes never make the reader allocate past the
// limit or return a payload other than what the header announced.
func FuzzFrameReader(f *testing.F) {
	var seed bytes.Buffer
	_ = WriteRelayFrame(&seed, RelayFrameStdout, []byte("out"))
	_ = WriteRelayFrame(&seed, RelayFrameExit, []byte(`{"code":0}`))
	f.Add(seed.Bytes())
	f.Add([]byte{RelayFrameStdin, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr := NewRelayFrameReader(bytes.NewReader(b))
		for {
			_, p, err := fr.Next()
			if err != nil {
				return
			}
			if len(p) > MaxRelayFramePayload {
				t.Fatalf("payload of %d bytes", len(p))
			}
		}
	})
}

// FuzzDecodeRelayRequest: whatever decodes is valid and re-encodes.
func FuzzDecodeRelayRequest(f *testing.F) {
	f.Add([]byte(`{"argv":["Z3Q=","c3RhdHVz"],"env":["VEVSTT14"]}`))
	f.Add([]byte(`{"argv":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := DecodeRelayRequest(b)
		if err != nil {
			return
		}
		if _, err := EncodeRelayRequest(req); err != nil {
			t.Fatalf("decoded a request that does not re-encode: %v", err)
		}
	})
}

// TestRelayRequestJSON: the request the shim writes without reflection is
// byte for byte what encoding/json writes, which hostd decodes.
func TestRelayRequestJSON(t *testing.T) {
	for _, req := range []RelayRequest{
		{Argv: [][]byte{[]byte("gt")}},
		{Argv: [][]byte{[]byte("gt"), []byte("status"), {}, []byte("two words")}, Cwd: []byte("/work"), Env: [][]byte{[]byte("TERM=xterm")}},
		{Argv: [][]byte{[]byte("bd"), {0xff, 0xfe, '"', '\\', '\n'}}, Cwd: []byte{0x80}},
		{Argv: [][]byte{[]byte("gt"), nil}, Env: [][]byte{}},
		{Argv: nil, Cwd: []byte{}},
	} {
		want, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		if got := req.appendJSON(nil); !bytes.Equal(got, want) {
			t.Errorf("appendJSON\n got %s\nwant %s", got, want)
		}
	}
}

// TestParseRelayExit: what hostd writes is read; anything else is refused.
func TestParseRelayExit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want RelayExit
		ok   bool
	}{
		{`{"code":0}`, RelayExit{}, true},
		{`{"code":130,"signal":2}`, RelayExit{Code: 130, Signal: 2}, true},
		{` { "signal" : 9 , "code" : 137 } `, RelayExit{Code: 137, Signal: 9}, true},
		{`{"code":-1}`, RelayExit{Code: -1}, true},
		{`{}`, RelayExit{}, false},
		{`{"signal":2}`, RelayExit{}, false},
		{`{"code":1,}`, RelayExit{}, false},
		{`{"code":1}x`, RelayExit{}, false},
		{`{"code":1,"code":2}`, RelayExit{}, false},
		{`{"code":01}`, RelayExit{}, false},
		{`{"code":1.5}`, RelayExit{}, false},
		{`{"code":"1"}`, RelayExit{}, false},
		{`{"code":1234567890}`, RelayExit{}, false},
		{`{"code":1 "signal":2}`, RelayExit{}, false},
		{`{"extra":1,"code":0}`, RelayExit{}, false},
		{`{"code":`, RelayExit{}, false},
		{``, RelayExit{}, false},
	} {
		got, err := ParseRelayExit([]byte(tc.in))
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("ParseRelayExit(%q) = %+v, %v; want %+v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// FuzzRelayRequestJSON: for any arguments, appendJSON equals json.Marshal.
func FuzzRelayRequestJSON(f *testing.F) {
	f.Add([]byte("gt\x00status\x00\xff"), []byte("/work"), []byte("TERM=x"))
	f.Fuzz(func(t *testing.T, argv, cwd, env []byte) {
		req := RelayRequest{Argv: bytes.Split(argv, []byte{0}), Cwd: cwd}
		if len(env) > 0 {
			req.Env = bytes.Split(env, []byte{0})
		}
		want, _ := json.Marshal(req)
		if got := req.appendJSON(nil); !bytes.Equal(got, want) {
			t.Fatalf("appendJSON\n got %s\nwant %s", got, want)
		}
	})
}

// FuzzParseRelayExit: whatever ParseRelayExit accepts, encoding/json reads
// the same way; and it reads whatever hostd writes.
func FuzzParseRelayExit(f *testing.F) {
	f.Add([]byte(`{"code":130,"signal":2}`), 3, 0)
	f.Fuzz(func(t *testing.T, b []byte, code, signal int) {
		if got, err := ParseRelayExit(b); err == nil {
			var want RelayExit
			if err := json.Unmarshal(b, &want); err != nil || got != want {
				t.Fatalf("ParseRelayExit(%q) = %+v; encoding/json: %+v, %v", b, got, want, err)
			}
		}
		e := RelayExit{Code: code % 1000, Signal: signal % 100}
		out, _ := json.Marshal(e)
		if got, err := ParseRelayExit(out); err != nil || got != e {
			t.Fatalf("ParseRelayExit(%s) = %+v, %v", out, got, err)
		}
	})
}
