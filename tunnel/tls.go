package tunnel

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"

	"github.com/quic-go/quic-go"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// serverTLS is the tunnel's server TLS configuration: TLS 1.3 only, the
// tunnel wire.ALPN only, a client certificate from our CA required, its URI SAN
// a valid polecat identity, and sc.Authorize consulted (revocation). No
// session tickets, so no resumption and no 0-RTT: every handshake sees the
// whole certificate.
func (sc *ServerConfig) serverTLS(log *slog.Logger) *tls.Config {
	return &tls.Config{
		MinVersion:             tls.VersionTLS13,
		MaxVersion:             tls.VersionTLS13,
		NextProtos:             []string{wire.ALPN},
		GetCertificate:         sc.GetCertificate,
		ClientAuth:             tls.RequireAndVerifyClientCert,
		ClientCAs:              sc.ClientCAs,
		SessionTicketsDisabled: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if cs.NegotiatedProtocol != wire.ALPN {
				return fmt.Errorf("client offered wire.ALPN %q, want %q", cs.NegotiatedProtocol, wire.ALPN)
			}
			if _, err := sc.authorize(cs); err != nil {
				log.Warn("tunnel: refused client certificate", "server_name", cs.ServerName, "err", err)
				return err
			}
			return nil
		},
	}
}

// joinTLS serves the join wire.ALPN: no client certificate, and nothing but the
// join exchange on that connection.
func (sc *ServerConfig) joinTLS() *tls.Config {
	return &tls.Config{
		MinVersion:             tls.VersionTLS13,
		NextProtos:             []string{wire.JoinALPN},
		GetCertificate:         sc.GetCertificate,
		ClientAuth:             tls.NoClientCert,
		SessionTicketsDisabled: true,
	}
}

// tcpTLS chooses, per ClientHello, between the tunnel and the join service.
func (sc *ServerConfig) tcpTLS(log *slog.Logger) *tls.Config {
	tunnelConf := sc.serverTLS(log)
	if sc.Join == nil {
		return tunnelConf
	}
	joinConf := sc.joinTLS()
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

// authorize reads the identity from a verified client certificate and asks
// sc.Authorize whether that certificate may still connect.
func (sc *ServerConfig) authorize(cs tls.ConnectionState) (wire.Identity, error) {
	if len(cs.PeerCertificates) == 0 {
		return wire.Identity{}, errors.New("no client certificate")
	}
	leaf := cs.PeerCertificates[0]
	id, err := wire.IdentityFromURIs(leaf.URIs, sc.trustDomain())
	if err != nil {
		return wire.Identity{}, err
	}
	if sc.Authorize != nil {
		if err := sc.Authorize(id, leaf); err != nil {
			return wire.Identity{}, fmt.Errorf("%s (serial %s): %w", id, leaf.SerialNumber.Text(16), err)
		}
	}
	return id, nil
}

func (sc *ServerConfig) trustDomain() string {
	if sc.TrustDomain == "" {
		return wire.DefaultTrustDomain
	}
	return sc.TrustDomain
}

// clientTLS is the client side: TLS 1.3, the tunnel wire.ALPN, the server
// verified against our CA for ServerName, no resumption.
func (cc *ClientConfig) clientTLS() *tls.Config {
	return &tls.Config{
		MinVersion:           tls.VersionTLS13,
		MaxVersion:           tls.VersionTLS13,
		NextProtos:           []string{wire.ALPN},
		RootCAs:              cc.RootCAs,
		ServerName:           cc.ServerName,
		GetClientCertificate: cc.GetClientCertificate,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if cs.NegotiatedProtocol != wire.ALPN {
				return fmt.Errorf("server negotiated wire.ALPN %q, want %q", cs.NegotiatedProtocol, wire.ALPN)
			}
			return nil
		},
	}
}

// IsAuthError reports whether err is a refusal by TLS on either side: a
// certificate the peer rejected (expired, revoked, wrong CA, none), a
// server certificate we could not verify, or no common wire.ALPN. Retrying the
// same handshake cannot fix it, and Dial does not fall back to TCP for it.
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
