package tunnel

import "context"

// Sessions gives the current tunnel session, waiting for one until ctx
// ends. It is what every channel half that opens streams needs: the
// agent's supervisor is one, and its forwarders and senders take it as
// this, so they import the transport and not the supervisor.
type Sessions interface {
	Session(ctx context.Context) (*Session, error)
}
