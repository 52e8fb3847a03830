package server

import (
	"context"
	"runtime"
	"runtime/debug"
	"time"
)

// reclaimSlack is how much memory hostd may hold beyond what it uses
// before it gives it back: after a polecat floods it (streams, stdin, git),
// the garbage would otherwise stay in hostd's RSS until the runtime's
// two-minute forced collection and its gradual scavenger, and an operator
// graphing RSS would see the attack long after it ended.
const reclaimSlack = 64 << 20

// reclaim checks every period whether hostd holds more than reclaimSlack
// of garbage or free heap, and returns it to the system if so.
func reclaim(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	var ms runtime.MemStats
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		runtime.ReadMemStats(&ms)
		if held := ms.HeapSys - ms.HeapReleased - ms.HeapAlloc; held > reclaimSlack {
			debug.FreeOSMemory()
		}
	}
}
