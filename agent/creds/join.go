package creds

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/polecat-sidecar/sidecar/internal/atomicfile"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Join redeems a join token at hostd's TCP address for a first
// certificate over a key made here, and writes the key, certificate and
// CA to p. The token's CA fingerprint authenticates hostd.
func Join(ctx context.Context, addr, serverName string, p Paths, token string, id wire.Identity) (*Store, error) {
	jt, err := wire.ParseJoinToken(token)
	if err != nil {
		return nil, err
	}
	key, csr, err := newKeyAndCSR()
	if err != nil {
		return nil, err
	}
	resp, err := exchange(ctx, addr, serverName, jt.CAFingerprint, wire.JoinRequest{Token: token, Identity: id, CSR: csr})
	if err != nil {
		return nil, err
	}
	if len(resp.Cert) > wire.MaxCertPEM || len(resp.CA) > wire.MaxCertPEM {
		return nil, fmt.Errorf("join answer too large")
	}
	ca, err := parseCert(resp.CA)
	if err != nil {
		return nil, fmt.Errorf("join answer's CA: %w", err)
	}
	if !wire.FingerprintMatches(ca.Raw, jt.CAFingerprint) {
		return nil, fmt.Errorf("join answer's CA does not match the token")
	}
	if err := atomicfile.Write(p.CA, resp.CA, 0o644); err != nil {
		return nil, fmt.Errorf("saving CA certificate: %w", err)
	}
	s := &Store{paths: p, pool: x509.NewCertPool()}
	s.pool.AddCert(ca)
	if err := s.install(resp.Cert, key); err != nil {
		_ = os.Remove(p.CA)
		return nil, err
	}
	return s, nil
}

// UnreachableError is a join that found no hostd at Addr (no connection:
// refused, no route, timed out), so its token was not used and a later
// attempt may succeed, once hostd is started.
type UnreachableError struct {
	Addr string
	Err  error
}

func (e *UnreachableError) Error() string { return fmt.Sprintf("joining via %s: %v", e.Addr, e.Err) }
func (e *UnreachableError) Unwrap() error { return e.Err }

// exchange trades req for a certificate at the hostd at addr (its TCP port).
// The server is verified by caFingerprint, the SHA-256 of the CA
// certificate carried in the token, since a joining container has no CA
// certificate yet.
func exchange(ctx context.Context, addr, serverName string, caFingerprint []byte, req wire.JoinRequest) (wire.JoinResponse, error) {
	conf := &tls.Config{
		MinVersion:         tls.VersionTLS13,
		NextProtos:         []string{wire.JoinALPN},
		ServerName:         serverName,
		InsecureSkipVerify: true, // verified below against the pinned CA
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			return verifyPinned(raw, serverName, caFingerprint)
		},
	}
	d := tls.Dialer{Config: conf}
	ctx, cancel := context.WithTimeout(ctx, wire.JoinTimeout)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return wire.JoinResponse{}, &UnreachableError{Addr: addr, Err: err}
		}
		return wire.JoinResponse{}, fmt.Errorf("joining via %s: %w", addr, err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if err := wire.WriteJoinMessage(c, req); err != nil {
		return wire.JoinResponse{}, fmt.Errorf("sending join request: %w", err)
	}
	var resp wire.JoinResponse
	if err := wire.ReadJoinMessage(c, &resp); err != nil {
		return wire.JoinResponse{}, err
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
	if !wire.FingerprintMatches(ca, fp) {
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
