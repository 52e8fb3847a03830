// Package yamux is github.com/hashicorp/yamux v0.1.2 (MPL-2.0, LICENSE),
// kept in the tree for the TCP fallback's session with patches, marked
// "patch" where it is:
//
//   - A stream's received data is read in pooled 64 KiB chunks without
//     holding the stream's receive lock, each handed to the reader as it
//     arrives (stream.readData, recvqueue.go). Upstream held the lock
//     across the network read of a whole frame, so the reader waited for
//     the network and the network for the reader, and grew a bytes.Buffer
//     per stream, copying and clearing as it grew. A short piece is copied
//     into the last chunk when it fits, so small frames cannot each pin a
//     whole chunk (the queue holds at most about twice its bytes).
//   - So a FIN on a data frame takes effect after that frame's data is
//     queued (stream.readData), or a reader could see the stream closed
//     before its last bytes.
//   - A frame's header and body are sent in one write (session.sendLoop):
//     one TLS record and one system call per frame, where upstream made
//     two.
//
// Everything else, the wire format included, is upstream's; so are the
// tests, two of which now read with io.ReadFull where they assumed one
// Read returns a whole frame (and one accepts the window update a
// partial read sends covering at least half the window rather than
// exactly what was read), and TestHalfCloseSessionShutdown waits for the
// data to be received before closing the sender (upstream's version races
// TCP's reset and failed 2 times in 30 here, unpatched); the tests'
// write and keepalive timeout is 2 s, not 250 ms (a keepalive's answer
// missed it beside another make test), TestKeepAlive_Timeout waiting in
// proportion; recvqueue_test.go is added for the patch.
//
// UPSTREAM names the upstream commit and sidecar.patch holds every change
// from it; rederive.sh (make yamux-check, make yamux-patch) checks the copy
// against it, rewrites it, and re-applies it to a newer upstream.
package yamux
