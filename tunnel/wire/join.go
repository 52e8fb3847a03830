package wire

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The join exchange's messages; const.go describes the exchange.

// joinTokenPrefix marks a join token and its format version.
const joinTokenPrefix = "gtj1"

// JoinToken is a one-time join token: gtj1.<id>.<secret>.<ca-sha256>, each
// part unpadded base64url. The CA fingerprint lets a fresh container verify
// hostd before it has the CA certificate.
type JoinToken struct {
	ID, Secret    string
	CAFingerprint []byte
}

// String formats the token as 'hostd token create' prints it.
func (t JoinToken) String() string {
	return strings.Join([]string{joinTokenPrefix, t.ID, t.Secret, base64.RawURLEncoding.EncodeToString(t.CAFingerprint)}, ".")
}

// ParseJoinToken parses a token string; it checks the shape, not whether
// hostd will honour it.
func ParseJoinToken(s string) (JoinToken, error) {
	parts := strings.Split(strings.TrimSpace(s), ".")
	if len(parts) != 4 || parts[0] != joinTokenPrefix {
		return JoinToken{}, errors.New("join token is malformed: want gtj1.<id>.<secret>.<ca-sha256> as printed by 'hostd token create'")
	}
	fp, err := base64.RawURLEncoding.DecodeString(parts[3])
	if err != nil || len(fp) != sha256.Size {
		return JoinToken{}, errors.New("join token is malformed: bad CA fingerprint")
	}
	for _, p := range parts[1:3] {
		if b, err := base64.RawURLEncoding.DecodeString(p); err != nil || len(b) != 16 {
			return JoinToken{}, errors.New("join token is malformed: bad id or secret")
		}
	}
	return JoinToken{ID: parts[1], Secret: parts[2], CAFingerprint: fp}, nil
}

// FingerprintMatches reports whether der's SHA-256 is fp, in constant time.
func FingerprintMatches(der, fp []byte) bool {
	sum := sha256.Sum256(der)
	return subtle.ConstantTimeCompare(sum[:], fp) == 1
}

// JoinRequest asks for a first certificate with a one-time token.
type JoinRequest struct {
	// Token is the join token from 'hostd token create'.
	Token string `json:"token"`
	// Identity is who the container says it is; it must match the token.
	Identity Identity `json:"identity"`
	// CSR is a PKCS#10 request (DER) over a key made in the container.
	CSR []byte `json:"csr"`
}

// JoinResponse carries the certificate, or why there is none.
type JoinResponse struct {
	// Cert is the issued certificate, PEM.
	Cert []byte `json:"cert,omitempty"`
	// CA is the CA certificate, PEM, for GT_PROXY_CA.
	CA []byte `json:"ca,omitempty"`
	// Error says why the request was refused.
	Error string `json:"error,omitempty"`
}

// ReadJoinMessage reads one bounded JSON line into v, refusing unknown
// fields.
func ReadJoinMessage(r io.Reader, v any) error {
	line, err := bufio.NewReaderSize(io.LimitReader(r, MaxJoinMessage+1), 4096).ReadSlice('\n')
	if err != nil && !(errors.Is(err, bufio.ErrBufferFull) || errors.Is(err, io.EOF)) {
		return fmt.Errorf("reading join message: %w", err)
	}
	if len(line) == 0 {
		return errors.New("join message is empty")
	}
	if !bytes.HasSuffix(line, []byte("\n")) {
		return fmt.Errorf("join message is not one line of at most %d bytes", MaxJoinMessage)
	}
	d := json.NewDecoder(bytes.NewReader(line))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("decoding join message: %w", err)
	}
	return nil
}

// WriteJoinMessage writes v as one JSON line.
func WriteJoinMessage(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > MaxJoinMessage {
		return fmt.Errorf("join message of %d bytes exceeds %d", len(b), MaxJoinMessage)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
