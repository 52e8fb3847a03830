package connection

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
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
