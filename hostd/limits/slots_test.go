package limits

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

func TestSlots(t *testing.T) {
	furiosa, nux := wire.Identity{Rig: "r", Name: "furiosa"}, wire.Identity{Rig: "r", Name: "nux"}
	s := NewSlots(2)
	ctx := context.Background()
	var held []func()
	for range 2 {
		release, err := s.Take(ctx, furiosa, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, release)
	}
	if _, err := s.Take(ctx, furiosa, 20*time.Millisecond); !errors.Is(err, ErrBusy) {
		t.Fatalf("third slot: %v, want ErrBusy", err)
	}
	if release, err := s.Take(ctx, nux, 20*time.Millisecond); err != nil {
		t.Fatalf("another polecat waited on furiosa's slots: %v", err)
	} else {
		release()
	}
	held[0]()
	if _, err := s.Take(ctx, furiosa, 20*time.Millisecond); err != nil {
		t.Fatalf("a released slot was not given back: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := NewPool(0).Take(cancelled, time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled wait: %v", err)
	}
}
