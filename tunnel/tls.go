package tunnel

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"

	"github.com/polecat-sidecar/sidecar/tunnel/internal/connection"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// serverTLS is the tunnel's server TLS configuration (see
// connection.ServerTLS), each client certificate authorized by sc.
func (sc *ServerConfig) serverTLS(log *slog.Logger) *tls.Config {
	return connection.ServerTLS(sc.GetCertificate, sc.ClientCAs, func(cs tls.ConnectionState) error {
		if _, err := sc.authorize(cs); err != nil {
			log.Warn("tunnel: refused client certificate", "server_name", cs.ServerName, "err", err)
			return err
		}
		return nil
	})
}

// tcpTLS chooses, per ClientHello, between the tunnel and the join service.
func (sc *ServerConfig) tcpTLS(log *slog.Logger) *tls.Config {
	tunnelConf := sc.serverTLS(log)
	if sc.Join == nil {
		return tunnelConf
	}
	return connection.TCPTLS(tunnelConf, sc.GetCertificate)
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

// TLS alerts a handshake is refused with (RFC 8446, section 6): the
// Listener sends AlertBadCertificate when Authorize refuses a certificate
// (or its identity cannot be read), crypto/tls AlertCertificateExpired and
// AlertUnknownCA when the chain does not verify for those reasons.
const (
	AlertBadCertificate     uint8 = 42
	AlertCertificateExpired uint8 = 45
	AlertUnknownCA          uint8 = 48
)

// PeerAlert is the TLS alert with which the peer refused our handshake
// (ok is false when err is not such a refusal: our own verification of
// the peer failed, or the network did).
func PeerAlert(err error) (alert uint8, ok bool) { return connection.PeerAlert(err) }

// PeerReason is the reason the peer gave for closing the session that
// ended with err (Session.Err), on either transport: what it passed to
// CloseWithReason.
func PeerReason(err error) (reason string, ok bool) { return connection.PeerReason(err) }

// IsAuthError reports whether err is a refusal by TLS on either side: a
// certificate the peer rejected (expired, revoked, wrong CA, none), a
// server certificate we could not verify, or no common ALPN. Retrying the
// same handshake cannot fix it, and Dial does not fall back to TCP for it.
func IsAuthError(err error) bool { return connection.IsAuthError(err) }
