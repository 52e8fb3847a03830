package tunnel

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// The join exchange, on a TLS connection with JoinALPN and no client
// certificate: the client sends one JoinRequest as a JSON line, the server
// answers with one JoinResponse as a JSON line and closes. Nothing else is
// ever served on such a connection.

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

// maxJoinMessage bounds a join request or response.
const maxJoinMessage = 32 << 10

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
	line, err := bufio.NewReaderSize(io.LimitReader(r, maxJoinMessage+1), 4096).ReadSlice('\n')
	if err != nil && !(errors.Is(err, bufio.ErrBufferFull) || errors.Is(err, io.EOF)) {
		return fmt.Errorf("reading join message: %w", err)
	}
	if len(line) == 0 {
		return errors.New("join message is empty")
	}
	if !bytes.HasSuffix(line, []byte("\n")) {
		return fmt.Errorf("join message is not one line of at most %d bytes", maxJoinMessage)
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
	if len(b) > maxJoinMessage {
		return fmt.Errorf("join message of %d bytes exceeds %d", len(b), maxJoinMessage)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Join exchanges req for a certificate at the hostd at addr (its TCP port).
// The server is verified by caFingerprint, the SHA-256 of the CA
// certificate carried in the token, since a joining container has no CA
// certificate yet.
func Join(ctx context.Context, addr, serverName string, caFingerprint []byte, req JoinRequest) (JoinResponse, error) {
	conf := &tls.Config{
		MinVersion:         tls.VersionTLS13,
		NextProtos:         []string{JoinALPN},
		ServerName:         serverName,
		InsecureSkipVerify: true, // verified below against the pinned CA
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			return verifyPinned(raw, serverName, caFingerprint)
		},
	}
	d := tls.Dialer{Config: conf}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return JoinResponse{}, fmt.Errorf("joining via %s: %w", addr, err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if err := WriteJoinMessage(c, req); err != nil {
		return JoinResponse{}, fmt.Errorf("sending join request: %w", err)
	}
	var resp JoinResponse
	if err := ReadJoinMessage(c, &resp); err != nil {
		return JoinResponse{}, err
	}
	if resp.Error != "" {
		return resp, fmt.Errorf("hostd refused to join: %s", resp.Error)
	}
	return resp, nil
}

// verifyPinned checks that the server's chain ends in the CA whose SHA-256
// is fp and that the leaf is valid for serverName under it.
func verifyPinned(raw [][]byte, serverName string, fp []byte) error {
	if len(raw) < 2 {
		return errors.New("server sent no CA certificate to check against the token")
	}
	ca := raw[len(raw)-1]
	if !FingerprintMatches(ca, fp) {
		return errors.New("server's CA does not match the join token's fingerprint")
	}
	root, err := x509.ParseCertificate(ca)
	if err != nil {
		return err
	}
	leaf, err := x509.ParseCertificate(raw[0])
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AddCert(root)
	host := serverName
	if h, _, err := net.SplitHostPort(serverName); err == nil {
		host = h
	}
	_, err = leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: host})
	return err
}
