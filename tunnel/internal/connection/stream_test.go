package connection_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// TestStreams: on both transports a stream carries bytes both ways,
// CloseWrite gives the peer EOF while it may still write back, and the
// connection measures its round trip.
func TestStreams(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			client, srv := pair(t, tr)
			if client.Name() != tr || srv.Name() != tr {
				t.Errorf("names %q, %q", client.Name(), srv.Name())
			}
			if client.RemoteAddr().String() != srv.LocalAddr().String() {
				t.Errorf("client's remote %v, server's local %v", client.RemoteAddr(), srv.LocalAddr())
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cs, err := client.Open(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if _, err := cs.Write([]byte("hello")); err != nil {
				t.Fatal(err)
			}
			if err := cs.CloseWrite(); err != nil {
				t.Fatal(err)
			}
			ss, err := srv.Accept(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_ = ss.SetDeadline(time.Now().Add(5 * time.Second))
			if b, err := io.ReadAll(ss); err != nil || string(b) != "hello" {
				t.Fatalf("server read %q, %v", b, err)
			}
			if _, err := ss.Write([]byte("bye")); err != nil {
				t.Fatalf("server wrote after the client's CloseWrite: %v", err)
			}
			_ = ss.Close()
			_ = cs.SetDeadline(time.Now().Add(5 * time.Second))
			if b, err := io.ReadAll(cs); err != nil || string(b) != "bye" {
				t.Fatalf("client read %q, %v", b, err)
			}
			for range 100 {
				if client.RTT() > 0 {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if client.RTT() <= 0 || client.RTT() > time.Second {
				t.Errorf("client RTT %v on loopback", client.RTT())
			}
		})
	}
}

// TestClose: closing ends the connection on both sides, and says why on
// the closing side.
func TestClose(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			client, srv := pair(t, tr)
			_ = client.Close("going away")
			for name, c := range map[string]conn{"client": client, "server": srv} {
				select {
				case <-c.Done():
				case <-time.After(5 * time.Second):
					t.Fatalf("%s still up after the client closed", name)
				}
			}
			if err := client.Err(); err == nil || !strings.Contains(err.Error(), "going away") {
				t.Errorf("client's error %v, want the reason", err)
			}
			if srv.Err() == nil {
				t.Error("server's connection ended without an error")
			}
			if _, err := client.Open(context.Background()); err == nil {
				t.Error("opened a stream on a closed connection")
			}
		})
	}
}
