package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
)

// serveHTTP serves srv on ln until ctx ends, then shuts it down: it
// waits for the handlers in progress, whose requests' context is ctx, so
// that they see it end (Run's parts.Group bounds that wait, naming the
// server if one does not return). An error of Serve's own, before ctx ended, is
// returned; a hijacked connection (pane attach) is its handler's to end.
func serveHTTP(ctx context.Context, srv *http.Server, ln net.Listener) error {
	srv.BaseContext = func(net.Listener) context.Context { return ctx }
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serving on %s stopped: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	shutErr := srv.Shutdown(context.WithoutCancel(ctx))
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return errors.Join(err, shutErr)
	}
	return shutErr
}
