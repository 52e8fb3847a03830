// Package wire is everything that crosses between gt-agent and hostd, in
// one place: the stream header and the acceptor's verdict, the server's
// welcome, the polecat identity and its certificate form, and each
// channel's own messages and limits (relay frames, join, renewal,
// heartbeat lines, the git path). The transport (package tunnel) carries
// these bytes and knows nothing of the channels; both binaries import
// this package for the channels' formats. docs/protocol.md explains it.
package wire

import "time"

// The stream header, which the opener of every stream writes: version
// (HeaderVersion), the kind's length (1..MaxKindLen) and the kind
// ([a-z0-9-]), the metadata's length (2 bytes, big-endian, 0..MaxMetaLen)
// and the metadata (a JSON object, or nothing). The acceptor answers with
// one verdict byte, in its first write so a channel costs no round trip
// more: VerdictAccepted, or VerdictRejected, a 2-byte length and a reason
// (at most MaxReasonLen), and the stream ends. docs/protocol.md, "Streams".
const (
	// HeaderVersion is the stream header version this side writes and the
	// only one it reads.
	HeaderVersion byte = 1
	// MaxKindLen is the longest stream kind.
	MaxKindLen = 32
	// MaxMetaLen is the largest stream metadata in bytes.
	MaxMetaLen = 16 << 10

	// VerdictAccepted is the acceptor's first byte on a stream it serves.
	VerdictAccepted byte = 0
	// VerdictRejected starts a refusal: a length and a reason follow.
	VerdictRejected byte = 1
	// MaxReasonLen bounds a refusal's reason.
	MaxReasonLen = 1 << 10
)

// The welcome, which the server sends before anything else once a
// connection is established (on QUIC as a unidirectional stream's only
// content, on TCP as the TLS connection's first bytes, before yamux):
// WelcomeVersion, a 2-byte big-endian length, that much JSON (Welcome).
// It tells a TLS 1.3 client its certificate was accepted, which it could
// not otherwise tell before its first read. docs/protocol.md, "Welcome".
const (
	// WelcomeVersion is the welcome's version byte.
	WelcomeVersion byte = 1
	// MaxWelcomeLen bounds the welcome's JSON.
	MaxWelcomeLen = 4 << 10
)

// ALPN protocol names. The tunnel and the join protocol never share one, so
// a client can never reach the unauthenticated join service by mistake and
// the join service never yields a stream.
const (
	// ALPN is the one application protocol the tunnel speaks, on both
	// transports.
	ALPN = "polecat-tunnel/1"
	// JoinALPN selects hostd's join service on the TCP port: a client
	// without a certificate exchanges a one-time token for its first one.
	JoinALPN = "polecat-join/1"
)

// DefaultPort is the port hostd listens on, UDP and TCP alike (Gas Town's
// proxy port).
const DefaultPort = 9876

// Stream kinds: which service on the other side a stream is for. Kinds
// lists them all (hostd's metrics label streams by it).
const (
	KindRelay     = "relay"     // gt/bd command relay (agent -> hostd), relay.go
	KindGit       = "git"       // git smart HTTP under GitPathPrefix (agent -> hostd)
	KindHeartbeat = "heartbeat" // liveness beats, one JSON line each (agent -> hostd)
	KindSync      = "sync"      // data archives (both ways)
	KindNudge     = "nudge"     // terminal nudges (hostd -> agent), nudge.go
	KindPane      = "pane"      // peek at and attach to the polecat's pane (hostd -> agent), pane.go
	KindSandbox   = "sandbox"   // hostd run's clone and sessions in the sandbox (hostd -> agent), sandbox.go
	KindCert      = "cert"      // certificate renewal (agent -> hostd)
	KindPing      = "ping"      // echo, for tests and benchmarks
	KindClose     = "close"     // the opener is closing the session, TCP only (package tunnel)
)

// Kinds are every stream kind this version defines.
var Kinds = []string{KindRelay, KindGit, KindHeartbeat, KindSync, KindNudge, KindPane, KindSandbox, KindCert, KindPing, KindClose}

// Closing a session: QUIC carries the reason in its CONNECTION_CLOSE
// frame. yamux cannot, so on TCP the closing side first opens a KindClose
// stream whose metadata is a Goodbye; package tunnel consumes it (no
// service sees it) and ends the session with that reason.
type Goodbye struct {
	// Reason says why, for the peer's log; at most MaxReasonLen bytes.
	Reason string `json:"reason"`
}

// CloseRevoked is the reason hostd closes a tunnel with when the
// certificate it stands on is revoked; the agent, hearing it, knows the
// handshake refused next is a revocation.
const CloseRevoked = "certificate revoked"

// The git channel: each git stream carries one HTTP/1.1 connection of
// git's smart HTTP protocol, for URLs under GitPathPrefix + "<rig>".
const GitPathPrefix = "/v1/git/"

// The renewal channel (KindCert): the agent writes a PKCS#10 request (DER)
// of at most MaxCSR bytes over a key it made and half-closes; hostd
// answers with the certificate as PEM (at most MaxCertPEM bytes), or
// refuses the stream with the reason.
const (
	// MaxCSR bounds a renewal request.
	MaxCSR = 16 << 10
	// MaxCertPEM bounds hostd's answer to a renewal or a join.
	MaxCertPEM = 64 << 10
)

// The heartbeat channel (KindHeartbeat): one beat per line, a JSON object
// (package heartbeat's Beat) shorter than MaxBeatSize bytes with its
// newline, every interval.
const MaxBeatSize = 16 << 10

// The join exchange, on a TLS connection with JoinALPN and no client
// certificate: the client sends one JoinRequest as a JSON line, the server
// answers with one JoinResponse as a JSON line and closes, all within
// JoinTimeout. Each line is at most MaxJoinMessage bytes.
const (
	// MaxJoinMessage bounds a join request or response.
	MaxJoinMessage = 32 << 10
	// JoinTimeout bounds the whole join exchange.
	JoinTimeout = 10 * time.Second
)
