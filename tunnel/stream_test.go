package tunnel_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// request is a ping stream's metadata in TestDecodeRequest.
type request struct {
	N int `json:"n"`
}

func (r request) validate() error {
	if r.N < 0 {
		return errors.New("n is negative")
	}
	return nil
}

// TestDecodeRequest: a handler's opening refuses metadata that does not
// decode or does not validate, with the reason the opener reads, and
// hands on the request otherwise.
func TestDecodeRequest(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			p := newPair(t, tr, pairOpts{})
			got := make(chan request, 1)
			mux := tunnel.NewServeMux()
			mux.HandleFunc(wire.KindPing, func(ctx context.Context, st *tunnel.Stream) {
				req, ok := tunnel.DecodeRequest(st, request.validate)
				if !ok {
					return
				}
				got <- req
				_, _ = st.Write([]byte("ok"))
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go p.server.Serve(ctx, mux)
			for _, tc := range []struct {
				name   string
				meta   any
				reason string // "" for accepted
			}{
				{"valid", request{N: 3}, ""},
				{"invalid", request{N: -1}, "n is negative"},
				{"unknown field", map[string]int{"n": 1, "m": 2}, `unknown field "m"`},
				{"wrong type", map[string]string{"n": "x"}, "cannot unmarshal"},
			} {
				st, err := p.client.OpenStream(ctx, wire.KindPing, tc.meta)
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				_ = st.CloseWrite()
				_ = st.SetReadDeadline(time.Now().Add(5 * time.Second))
				b, err := io.ReadAll(st)
				st.Close()
				var re *wire.RemoteError
				switch {
				case tc.reason == "" && (err != nil || string(b) != "ok"):
					t.Errorf("%s: read %q, %v; want accepted", tc.name, b, err)
				case tc.reason == "":
					if r := <-got; r != tc.meta {
						t.Errorf("%s: handler got %+v, want %+v", tc.name, r, tc.meta)
					}
				case !errors.As(err, &re) || !strings.Contains(re.Reason, tc.reason):
					t.Errorf("%s: %v; want a refusal saying %q", tc.name, err, tc.reason)
				}
			}
		})
	}
}
