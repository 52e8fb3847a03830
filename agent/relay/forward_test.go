package relay

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

var furiosa = wire.Identity{Rig: "gastown", Name: "furiosa"}

// frame is one relay frame.
type frame struct {
	typ     byte
	payload string
}

// readFrames reads frames from r until it ends.
func readFrames(r io.Reader) []frame {
	var out []frame
	fr := wire.NewRelayFrameReader(r)
	for {
		typ, payload, err := fr.Next()
		if err != nil {
			return out
		}
		out = append(out, frame{typ, string(payload)})
	}
}

// TestForwarder: a shim's connection becomes one relay stream: the shim
// hears it is attached, then the host's frames; the host hears the shim's
// frames, then, when the shim goes mid-command, that it has gone. With no tunnel, the shim hears why.
func TestForwarder(t *testing.T) {
	tests := []struct {
		name     string
		down     bool
		shim     []frame // what the shim reads
		host     []frame // what the host reads
		errorMsg string  // in the shim's error frame
	}{
		{"relayed", false,
			[]frame{{wire.RelayFrameAttached, ""}, {wire.RelayFrameStdout, "ok\n"}},
			[]frame{{wire.RelayFrameRequest, "req"}, {wire.RelayFrameStdinClose, ""}, {wire.RelayFrameGone, ""}}, ""},
		{"tunnel down", true, nil, nil, "the tunnel to hostd is down and did not come back within 100ms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client, server := tunneltest.Pair(t, furiosa)
			hostGot := make(chan []frame, 1)
			mux := tunnel.NewServeMux()
			mux.HandleFunc(wire.KindRelay, func(_ context.Context, st *tunnel.Stream) {
				w := wire.NewRelayFrameWriter(st)
				_ = w.Frame(wire.RelayFrameStdout, []byte("ok\n"))
				hostGot <- readFrames(st) // the command runs until the shim goes
			})
			tunneltest.Serve(t, server, mux)
			sessions := tunneltest.Fixed{S: client}
			if tc.down {
				sessions.S = nil
			}
			ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "agent.sock"))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			go func() { _ = NewForwarder(sessions, 100*time.Millisecond, slog.New(slog.DiscardHandler)).Serve(ctx, ln) }()

			c, err := net.Dial("unix", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			_ = wire.WriteRelayFrame(c, wire.RelayFrameRequest, []byte("req"))
			_ = wire.WriteRelayFrame(c, wire.RelayFrameStdinClose, nil)
			fr := wire.NewRelayFrameReader(c)
			var shim []frame
			for len(shim) < 2 {
				typ, payload, err := fr.Next()
				if err != nil {
					break
				}
				shim = append(shim, frame{typ, string(payload)})
				if typ == wire.RelayFrameError || typ == wire.RelayFrameExit {
					break
				}
			}
			if tc.errorMsg != "" {
				if len(shim) != 1 || shim[0].typ != wire.RelayFrameError || !strings.Contains(shim[0].payload, tc.errorMsg) {
					t.Fatalf("shim read %q, want one error saying %q", shim, tc.errorMsg)
				}
				return
			}
			if !slices.Equal(shim, tc.shim) {
				t.Errorf("shim read %q, want %q", shim, tc.shim)
			}
			c.Close() // the shim exits
			select {
			case got := <-hostGot:
				if !slices.Equal(got, tc.host) {
					t.Errorf("host read %q, want %q", got, tc.host)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the host's stream did not end when the shim went")
			}
		})
	}
}
