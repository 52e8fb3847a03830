// Package tunnel is the one connection between a polecat's gt-agent and
// hostd: a mutually authenticated QUIC connection (quic-go), or TLS 1.3 with
// yamux over TCP when UDP is blocked, carrying many independent streams.
//
// Nothing above this package knows which transport is in use, and within
// it only the unexported transport interface does, whose two
// implementations are in tunnel/internal/connection. A Session is used
// identically on both: either side opens streams with
// Session.OpenStream(ctx, kind, meta) and receives them with
// Session.AcceptStream (or Session.Serve with a ServeMux). Every stream
// begins with a small header (version, kind, JSON metadata; the format is
// in tunnel/wire's const.go) and the acceptor's one-byte verdict; after
// that the bytes belong to the channel.
//
// A session's peer wire.Identity comes only from the peer's certificate:
// the URI SAN spiffe://<trust-domain>/rig/<rig>/polecat/<name> (see
// tunnel/wire's identity.go).
package tunnel
