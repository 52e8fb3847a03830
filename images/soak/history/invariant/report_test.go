package invariant

import (
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/images/soak/history"
	"github.com/polecat-sidecar/sidecar/images/soak/history/internal/fixture"
)

func TestWriteText(t *testing.T) {
	evs := then(
		fixture.With(history.Event{T: fixture.At(200.5), Kind: history.KindTyped, Phase: history.PhaseObserve, Agent: "rig/a", NudgeID: "h-1"}),
		edit(is(history.KindDisk, history.PhaseObserve, ""), func(e *history.Event) { e.Bytes = 1001 }),
	)(fixture.Clean())
	out := text(t, Check(evs, Options{}))
	for _, want := range []string{
		"soak history: FAIL, seed 42",
		"relay    invoked 3, ok 1, failed 1, indeterminate 1",
		"hostd-kill9          1, worst recovery 10s",
		"nudge exactly once     checked 2      FAIL (1 violation)",
		"push durable           checked 3      PASS",
		"VIOLATION nudge exactly once: nudge op n1 (h-1) typed 2 times",
		"    00:00:10.000 nudge invoke agent=rig/a op=n1 mode=immediate",
		"    00:03:20.500 typed observe agent=rig/a nudge_id=h-1",
		"VIOLATION no leak: disk: 1001 bytes used",
		"    00:03:11.000 disk observe bytes=1001 budget=1000",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// text is r.WriteText's output.
func text(t *testing.T, r Report) string {
	t.Helper()
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
