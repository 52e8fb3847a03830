package tunnel

import (
	"context"

	"github.com/polecat-sidecar/sidecar/tunnel/internal/connection"
)

// OpenRawStream opens a transport stream on s with nothing of the tunnel's
// own on it, for tests that play a peer writing what a Stream never would.
func OpenRawStream(ctx context.Context, s *Session) (connection.Stream, error) {
	return s.t.Open(ctx)
}
