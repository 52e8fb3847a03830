package connection

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"reflect"
	"slices"

	"github.com/quic-go/quic-go"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// ServerTLS is the tunnel's server TLS configuration: TLS 1.3 only, the
// tunnel ALPN only, a client certificate from clientCAs required, and
// verify consulted on it (identity, revocation). No session tickets, so no
// resumption and no 0-RTT: every handshake sees the whole certificate.
func ServerTLS(getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error), clientCAs *x509.CertPool, verify func(tls.ConnectionState) error) *tls.Config {
	return &tls.Config{
		MinVersion:             tls.VersionTLS13,
		MaxVersion:             tls.VersionTLS13,
		NextProtos:             []string{wire.ALPN},
		GetCertificate:         getCert,
		ClientAuth:             tls.RequireAndVerifyClientCert,
		ClientCAs:              clientCAs,
		SessionTicketsDisabled: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if cs.NegotiatedProtocol != wire.ALPN {
				return fmt.Errorf("client offered ALPN %q, want %q", cs.NegotiatedProtocol, wire.ALPN)
			}
			return verify(cs)
		},
	}
}

// TCPTLS chooses, per ClientHello, between the tunnel (tunnelConf) and
// the join service, which asks for wire.JoinALPN and presents no client
// certificate.
func TCPTLS(tunnelConf *tls.Config, getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error)) *tls.Config {
	joinConf := &tls.Config{
		MinVersion:             tls.VersionTLS13,
		NextProtos:             []string{wire.JoinALPN},
		GetCertificate:         getCert,
		ClientAuth:             tls.NoClientCert,
		SessionTicketsDisabled: true,
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			if slices.Equal(hello.SupportedProtos, []string{wire.JoinALPN}) {
				return joinConf, nil
			}
			return tunnelConf, nil
		},
	}
}

// ClientTLS is the client side: TLS 1.3, the tunnel ALPN, the server
// verified against rootCAs for serverName, no resumption.
func ClientTLS(getCert func(*tls.CertificateRequestInfo) (*tls.Certificate, error), rootCAs *x509.CertPool, serverName string) *tls.Config {
	return &tls.Config{
		MinVersion:           tls.VersionTLS13,
		MaxVersion:           tls.VersionTLS13,
		NextProtos:           []string{wire.ALPN},
		RootCAs:              rootCAs,
		ServerName:           serverName,
		GetClientCertificate: getCert,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if cs.NegotiatedProtocol != wire.ALPN {
				return fmt.Errorf("server negotiated ALPN %q, want %q", cs.NegotiatedProtocol, wire.ALPN)
			}
			return nil
		},
	}
}

// IsAuthError reports whether err is a refusal by TLS on either side, on
// either transport (package tunnel's IsAuthError says which).
func IsAuthError(err error) bool {
	var (
		verr  *tls.CertificateVerificationError
		uaerr x509.UnknownAuthorityError
		cierr x509.CertificateInvalidError
		hnerr x509.HostnameError
		alert tls.AlertError
		operr *net.OpError
		qerr  *quic.TransportError
	)
	switch {
	case errors.As(err, &verr), errors.As(err, &uaerr), errors.As(err, &cierr), errors.As(err, &hnerr), errors.As(err, &alert):
		return true
	case errors.As(err, &operr) && operr.Op == "remote error":
		return true
	case errors.As(err, &qerr) && qerr.ErrorCode.IsCryptoError():
		return true
	}
	return false
}

// PeerAlert is the TLS alert with which the peer refused a handshake, on
// either transport: a remote CRYPTO_ERROR on QUIC, a "remote error" on
// TCP (crypto/tls keeps its alert type unexported: it is a uint8).
func PeerAlert(err error) (uint8, bool) {
	var qerr *quic.TransportError
	if errors.As(err, &qerr) && qerr.Remote && qerr.ErrorCode.IsCryptoError() {
		return uint8(qerr.ErrorCode - 0x100), true
	}
	var operr *net.OpError
	if errors.As(err, &operr) && operr.Op == "remote error" {
		if v := reflect.ValueOf(operr.Err); v.Kind() == reflect.Uint8 {
			return uint8(v.Uint()), true
		}
	}
	return 0, false
}

// PeerClosedError is why a session ended when the peer closed it saying
// why: on TCP the goodbye's reason.
type PeerClosedError struct{ Reason string }

func (e *PeerClosedError) Error() string { return "tunnel: peer closed the session: " + e.Reason }

// PeerReason is the reason the peer gave when it closed the session that
// ended with err: the close frame's on QUIC, the goodbye's on TCP.
func PeerReason(err error) (string, bool) {
	var pc *PeerClosedError
	if errors.As(err, &pc) {
		return pc.Reason, true
	}
	var ae *quic.ApplicationError
	if errors.As(err, &ae) && ae.Remote {
		return ae.ErrorMessage, true
	}
	return "", false
}
