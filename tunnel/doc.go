// Package tunnel is the one connection between a polecat's gt-agent and
// hostd: a mutually authenticated QUIC connection (quic-go), or TLS 1.3 with
// yamux over TCP when UDP is blocked, carrying many independent streams.
//
// Nothing above this package knows which transport is in use. A Session is
// used identically on both: either side opens streams with
// Session.OpenStream(ctx, kind, meta) and receives them with
// Session.AcceptStream (or Session.Serve with a ServeMux). Every stream
// begins with a small header (version, kind, JSON metadata, see const.go)
// and the acceptor's one-byte verdict; after that the bytes belong to the
// channel.
//
// wire.Identity comes only from the peer's certificate: the URI SAN
// spiffe://<trust-domain>/rig/<rig>/polecat/<name> (see identity.go).
package tunnel
