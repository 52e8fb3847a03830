package tunnel

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Handler serves one accepted stream. The stream is closed when
// ServeStream returns.
type Handler interface {
	ServeStream(ctx context.Context, st *Stream)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, st *Stream)

// ServeStream calls f.
func (f HandlerFunc) ServeStream(ctx context.Context, st *Stream) { f(ctx, st) }

// ServeMux dispatches streams by kind, and refuses kinds it does not serve
// with a reason naming the ones it does.
type ServeMux struct {
	mu sync.RWMutex
	m  map[string]Handler
}

// NewServeMux returns an empty ServeMux.
func NewServeMux() *ServeMux { return &ServeMux{m: map[string]Handler{}} }

// Handle registers h for streams of the given kind, replacing any earlier
// handler.
func (m *ServeMux) Handle(kind string, h Handler) {
	if !wire.ValidKind(kind) {
		panic(fmt.Sprintf("tunnel: ServeMux.Handle: invalid kind %q", kind))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m[kind] = h
}

// HandleFunc registers f for streams of the given kind.
func (m *ServeMux) HandleFunc(kind string, f func(context.Context, *Stream)) {
	m.Handle(kind, HandlerFunc(f))
}

// ServeStream gives st to the handler for its kind, or refuses it.
func (m *ServeMux) ServeStream(ctx context.Context, st *Stream) {
	m.mu.RLock()
	h, ok := m.m[st.Kind()]
	kinds := slices.Sorted(maps.Keys(m.m))
	m.mu.RUnlock()
	if !ok {
		_ = st.Reject(fmt.Sprintf("unknown stream kind %q (this side serves: %s)", st.Kind(), strings.Join(kinds, ", ")))
		return
	}
	h.ServeStream(ctx, st)
}
