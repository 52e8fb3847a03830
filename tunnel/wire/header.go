package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// Header is what the opener of a stream says about it before the channel's
// own bytes: which service it is for and that service's metadata.
type Header struct {
	// Kind names the service, e.g. KindRelay.
	Kind string
	// Meta is the service's metadata: a JSON object, or empty.
	Meta json.RawMessage
}

// HeaderError is returned for a stream header that is malformed, too large
// or of an unknown version. The stream carrying it is refused.
type HeaderError struct {
	Reason string
}

func (e *HeaderError) Error() string { return "wire: bad stream header: " + e.Reason }

func badHeader(format string, args ...any) error {
	return &HeaderError{Reason: fmt.Sprintf(format, args...)}
}

// ValidKind reports whether k is a syntactically valid stream kind.
func ValidKind(k string) bool {
	if len(k) == 0 || len(k) > MaxKindLen {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// validMeta reports whether m is empty or exactly one JSON object in valid
// UTF-8 (json.Valid alone lets invalid UTF-8 through).
func validMeta(m []byte) bool {
	if len(m) == 0 {
		return true
	}
	t := bytes.TrimSpace(m)
	return len(t) > 0 && t[0] == '{' && utf8.Valid(t) && json.Valid(t)
}

// NewHeader makes a validated header of kind whose metadata is meta
// encoded as JSON (nil for none).
func NewHeader(kind string, meta any) (Header, error) {
	h := Header{Kind: kind}
	if meta != nil {
		b, err := json.Marshal(meta)
		if err != nil {
			return Header{}, fmt.Errorf("wire: encoding %s stream metadata: %w", kind, err)
		}
		h.Meta = b
	}
	if _, err := h.MarshalBinary(); err != nil {
		return Header{}, err
	}
	return h, nil
}

// MarshalBinary encodes the header in the wire format of const.go.
func (h Header) MarshalBinary() ([]byte, error) {
	if !ValidKind(h.Kind) {
		return nil, badHeader("kind %q: want 1-%d of [a-z0-9-]", h.Kind, MaxKindLen)
	}
	if len(h.Meta) > MaxMetaLen {
		return nil, badHeader("metadata is %d bytes, limit %d", len(h.Meta), MaxMetaLen)
	}
	if !validMeta(h.Meta) {
		return nil, badHeader("metadata is not a JSON object")
	}
	b := make([]byte, 0, 4+len(h.Kind)+len(h.Meta))
	b = append(b, HeaderVersion, byte(len(h.Kind)))
	b = append(b, h.Kind...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(h.Meta)))
	return append(b, h.Meta...), nil
}

// ReadHeader reads one stream header from r. It reads exactly the header's
// bytes and no more, and returns a *HeaderError for anything malformed.
func ReadHeader(r io.Reader) (Header, error) {
	var fixed [2]byte
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		return Header{}, fmt.Errorf("wire: reading stream header: %w", err)
	}
	if fixed[0] != HeaderVersion {
		return Header{}, badHeader("unknown version %d (this side speaks %d)", fixed[0], HeaderVersion)
	}
	klen := int(fixed[1])
	if klen == 0 || klen > MaxKindLen {
		return Header{}, badHeader("kind length %d out of range 1-%d", klen, MaxKindLen)
	}
	kind := make([]byte, klen+2)
	if _, err := io.ReadFull(r, kind); err != nil {
		return Header{}, badHeader("truncated kind: %v", err)
	}
	mlen := int(binary.BigEndian.Uint16(kind[klen:]))
	kind = kind[:klen]
	if !ValidKind(string(kind)) {
		return Header{}, badHeader("kind %q: want [a-z0-9-]", kind)
	}
	if mlen > MaxMetaLen {
		return Header{}, badHeader("metadata length %d exceeds limit %d", mlen, MaxMetaLen)
	}
	h := Header{Kind: string(kind)}
	if mlen > 0 {
		h.Meta = make([]byte, mlen)
		if _, err := io.ReadFull(r, h.Meta); err != nil {
			return Header{}, badHeader("truncated metadata: %v", err)
		}
		if !validMeta(h.Meta) {
			return Header{}, badHeader("metadata is not a JSON object")
		}
	}
	return h, nil
}

// RemoteError is the reason the other side gave for refusing a stream.
type RemoteError struct {
	Kind   string
	Reason string
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("wire: %s stream refused by peer: %s", e.Kind, e.Reason)
}

// WriteVerdict writes the acceptor's verdict: accepted when reason is empty.
func WriteVerdict(w io.Writer, reason string) error {
	if reason == "" {
		_, err := w.Write([]byte{VerdictAccepted})
		return err
	}
	reason = TruncateReason(reason)
	b := []byte{VerdictRejected}
	b = binary.BigEndian.AppendUint16(b, uint16(len(reason)))
	_, err := w.Write(append(b, reason...))
	return err
}

// TruncateReason bounds a reason (a refusal's, a session's close), which
// may come from the peer, to MaxReasonLen bytes of valid UTF-8.
func TruncateReason(r string) string {
	if len(r) > MaxReasonLen {
		r = r[:MaxReasonLen]
	}
	return strings.ToValidUTF8(r, "?")
}

// ReadVerdict reads the acceptor's verdict: nil when accepted, a
// *RemoteError when refused.
func ReadVerdict(r io.Reader, kind string) error {
	var s [1]byte
	if _, err := io.ReadFull(r, s[:]); err != nil {
		return err
	}
	switch s[0] {
	case VerdictAccepted:
		return nil
	case VerdictRejected:
		var l [2]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return fmt.Errorf("wire: reading refusal of %s stream: %w", kind, err)
		}
		n := int(binary.BigEndian.Uint16(l[:]))
		if n > MaxReasonLen {
			return fmt.Errorf("wire: refusal of %s stream: reason of %d bytes exceeds %d", kind, n, MaxReasonLen)
		}
		reason := make([]byte, n)
		if _, err := io.ReadFull(r, reason); err != nil {
			return fmt.Errorf("wire: reading refusal of %s stream: %w", kind, err)
		}
		if !utf8.Valid(reason) {
			reason = bytes.ToValidUTF8(reason, []byte("?"))
		}
		return &RemoteError{Kind: kind, Reason: string(reason)}
	default:
		return fmt.Errorf("wire: %s stream: unknown status byte %#x from peer", kind, s[0])
	}
}

// ErrShortWelcome is returned when a connection ends before its welcome.
var ErrShortWelcome = errors.New("wire: connection ended before the server's welcome")

// Welcome is what the server tells a client once the handshake has
// succeeded: who it took the client to be, and its own version.
type Welcome struct {
	// Identity is the client's identity as the server read it from the
	// client's certificate.
	Identity Identity `json:"identity"`
	// ServerVersion is hostd's version string.
	ServerVersion string `json:"server_version,omitempty"`
	// Time is hostd's clock as it sent the welcome: the agent reckons
	// hostd's time from it (tunnel.Session.PeerNow), since its own clock
	// may be off (a laptop's Docker VM after a sleep).
	Time time.Time `json:"time,omitzero"`
}

// WriteWelcome sends the server's welcome.
func WriteWelcome(w io.Writer, wel Welcome) error {
	body, err := json.Marshal(wel)
	if err != nil {
		return fmt.Errorf("wire: encoding welcome: %w", err)
	}
	b := []byte{WelcomeVersion}
	b = binary.BigEndian.AppendUint16(b, uint16(len(body)))
	_, err = w.Write(append(b, body...))
	return err
}

// ReadWelcome reads the server's welcome.
func ReadWelcome(r io.Reader) (Welcome, error) {
	var fixed [3]byte
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return Welcome{}, ErrShortWelcome
		}
		return Welcome{}, err
	}
	if fixed[0] != WelcomeVersion {
		return Welcome{}, fmt.Errorf("wire: server welcome has unknown version %d", fixed[0])
	}
	n := int(binary.BigEndian.Uint16(fixed[1:]))
	if n > MaxWelcomeLen {
		return Welcome{}, fmt.Errorf("wire: server welcome of %d bytes exceeds %d", n, MaxWelcomeLen)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return Welcome{}, fmt.Errorf("wire: reading server welcome: %w", err)
	}
	var wel Welcome
	if err := json.Unmarshal(body, &wel); err != nil {
		return Welcome{}, fmt.Errorf("wire: decoding server welcome: %w", err)
	}
	return wel, nil
}

// Answers reads a peer's answers on a stream, JSON values one after
// another (NudgeResults, SandboxAnswers): at most max of them, within
// max*size bytes, each checked, unknown fields refused.
type Answers[T any] struct {
	d      *json.Decoder
	n, max int
	what   string
	check  func(T) error
}

func newAnswers[T any](r io.Reader, max, size int, what string, check func(T) error) *Answers[T] {
	d := json.NewDecoder(io.LimitReader(r, int64(max*size)))
	d.DisallowUnknownFields()
	return &Answers[T]{d: d, max: max, what: what, check: check}
}

// Next is the next answer, checked; io.EOF after the last.
func (a *Answers[T]) Next() (T, error) {
	var v T
	if a.n++; a.n > a.max {
		return v, fmt.Errorf("reading the %s: more than %d answers", a.what, a.max)
	}
	err := a.d.Decode(&v)
	if errors.Is(err, io.EOF) {
		return v, io.EOF
	}
	if err == nil {
		err = a.check(v)
	}
	if err != nil {
		return v, fmt.Errorf("reading the %s: %w", a.what, err)
	}
	return v, nil
}
