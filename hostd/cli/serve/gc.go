package serve

import (
	"os"
	"runtime/debug"
)

// serveGCPercent is hostd serve's garbage collection target unless GOGC
// sets one: a collection once the heap has grown by half of what is live,
// not by all of it (Go's default, 100). hostd's live heap is mostly
// per-tunnel state that lasts as long as its tunnel, and its steady state
// allocates little (beats, keepalives), so collecting sooner costs little
// CPU and keeps the memory each polecat costs down (make bench's "memory
// per agent" row, measured both ways in docs/benchmarks.md).
const serveGCPercent = 50

// setServeGC applies serveGCPercent, leaving an operator's GOGC alone.
func setServeGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(serveGCPercent)
	}
}
