package tunnel

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/polecat-sidecar/sidecar/tunnel/internal/connection"
)

// Transport names, as shown by hostd status and Session.Transport, and
// the choices for ClientConfig.Transport.
const (
	// TransportQUIC is QUIC over UDP.
	TransportQUIC = connection.NameQUIC
	// TransportTCP is TLS 1.3 with yamux over TCP, the fallback.
	TransportTCP = connection.NameTCP
	// TransportAuto tries QUIC and falls back to TCP.
	TransportAuto = "auto"
)

// ClientConfig configures Dial.
type ClientConfig struct {
	// GetClientCertificate returns our certificate; called per handshake,
	// so a renewed certificate is used from the next connection on.
	GetClientCertificate func(*tls.CertificateRequestInfo) (*tls.Certificate, error)
	// RootCAs verifies the server.
	RootCAs *x509.CertPool
	// ServerName is the name the server's certificate must carry.
	ServerName string
	// Transport is TransportAuto (or empty), TransportQUIC or TransportTCP.
	Transport string
	// Config tunes the session; zero fields take their defaults.
	Config Config
}

// Dial establishes a session with the server at addr ("host:port").
//
// With TransportAuto it tries QUIC first; if no QUIC session is established
// within Config.FallbackDelay it dials TLS+yamux on TCP instead. A
// certificate refusal on QUIC is returned as is (see IsAuthError): TCP
// would be refused too. Returning to QUIC later is the caller's choice
// (gt-agent's supervisor probes with TransportQUIC while on TCP).
func Dial(ctx context.Context, addr string, cc ClientConfig) (*Session, error) {
	cfg, err := cc.Config.withDefaults()
	if err != nil {
		return nil, err
	}
	tlsConf := connection.ClientTLS(cc.GetClientCertificate, cc.RootCAs, cc.ServerName)
	switch cc.Transport {
	case TransportQUIC:
		return dialQUIC(ctx, addr, tlsConf, cfg)
	case TransportTCP:
		return dialTCP(ctx, addr, tlsConf, cfg)
	case "", TransportAuto:
	default:
		return nil, fmt.Errorf("tunnel: unknown transport %q (want auto, quic or tcp)", cc.Transport)
	}
	qctx, cancel := context.WithTimeout(ctx, cfg.FallbackDelay)
	s, qerr := dialQUIC(qctx, addr, tlsConf, cfg)
	cancel()
	if qerr == nil || IsAuthError(qerr) || ctx.Err() != nil {
		return s, qerr
	}
	s, terr := dialTCP(ctx, addr, tlsConf, cfg)
	if terr != nil {
		return nil, fmt.Errorf("tunnel: no transport to %s: %w", addr, errors.Join(qerr, terr))
	}
	return s, nil
}
