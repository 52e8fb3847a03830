package limits

import (
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

func TestRate(t *testing.T) {
	furiosa, nux := wire.Identity{Rig: "gastown", Name: "furiosa"}, wire.Identity{Rig: "gastown", Name: "nux"}
	r := NewRate(3, 300*time.Millisecond) // a burst of 3, then one per 100 ms
	for i := range 3 {
		if ok, _ := r.Take(furiosa); !ok {
			t.Fatalf("take %d of the burst refused", i+1)
		}
	}
	ok, wait := r.Take(furiosa)
	if ok || wait <= 0 || wait > 100*time.Millisecond {
		t.Fatalf("4th take: ok=%v wait=%v; want refused with a wait of at most 100ms", ok, wait)
	}
	if ok, _ := r.Take(nux); !ok {
		t.Fatal("another polecat was limited by furiosa's takes")
	}
	time.Sleep(wait + 10*time.Millisecond)
	if ok, _ := r.Take(furiosa); !ok {
		t.Fatal("refused after the wait it was told")
	}
}
