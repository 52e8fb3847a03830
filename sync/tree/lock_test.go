package tree

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestLock: a second lock on a root waits while the first is held, no
// longer than its context lets it, and gets the root once it is released.
func TestLock(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	unlock, err := a.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := b.Lock(ctx); err == nil || !strings.Contains(err.Error(), "waiting for another transfer") {
		t.Fatalf("a second lock while the first is held: %v", err)
	}
	unlock()
	unlockB, err := b.Lock(context.Background())
	if err != nil {
		t.Fatalf("the lock once released: %v", err)
	}
	unlockB()
}
