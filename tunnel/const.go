package tunnel

// The wire format, in one place.
//
// Every stream starts with a header written by the opener:
//
//	byte 0      version (HeaderVersion)
//	byte 1      length K of the kind, 1..MaxKindLen
//	K bytes     kind: lowercase ASCII letters, digits and '-'
//	2 bytes     length M of the metadata, big-endian, 0..MaxMetaLen
//	M bytes     metadata: a JSON object, or nothing
//
// The acceptor answers with one status byte before any bytes of its own:
// statusAccepted, or statusRejected followed by a 2-byte big-endian length
// and that many bytes of UTF-8 reason (at most maxReasonLen), after which
// the stream ends. The status is sent with the acceptor's first write (or
// when it closes), so a channel costs no extra round trip.
//
// When a connection is established the server sends a welcome before
// anything else: on QUIC as the only content of a unidirectional stream, on
// TCP as the first bytes of the TLS connection (yamux starts after it):
//
//	byte 0      welcomeVersion
//	2 bytes     length, big-endian, then that many bytes of JSON (Welcome)
//
// The welcome tells the client that the server accepted its certificate;
// a TLS 1.3 client cannot otherwise tell before its first read.
const (
	// HeaderVersion is the stream header version this package writes and
	// the only one it reads.
	HeaderVersion byte = 1
	// MaxKindLen is the longest stream kind.
	MaxKindLen = 32
	// MaxMetaLen is the largest stream metadata in bytes.
	MaxMetaLen = 16 << 10

	statusAccepted byte = 0
	statusRejected byte = 1
	maxReasonLen        = 1 << 10

	welcomeVersion byte = 1
	maxWelcomeLen       = 4 << 10
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

// Stream kinds: which service on the other side a stream is for.
const (
	KindRelay     = "relay"     // gt/bd command relay (agent -> hostd)
	KindGit       = "git"       // git smart HTTP (agent -> hostd)
	KindHeartbeat = "heartbeat" // liveness beats (agent -> hostd)
	KindSync      = "sync"      // data archives (both ways)
	KindNudge     = "nudge"     // terminal nudges (hostd -> agent)
	KindCert      = "cert"      // certificate renewal (agent -> hostd)
	KindPing      = "ping"      // echo, for tests and benchmarks
)

// Transport names, as shown by hostd status and Session.Transport.
const (
	TransportQUIC = "quic"
	TransportTCP  = "tcp"
)
