package doctor

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/polecat-sidecar/sidecar/hostd/confine"
)

// TestConfinement: relayed commands confined is ok; unconfined fails
// (hostd serve refuses to relay) unless relay.allow_unconfined, which is
// a warning. The machine's own probe gives one of these.
func TestConfinement(t *testing.T) {
	none := confine.Support{Reason: "Landlock is not enabled"}
	tests := []struct {
		name      string
		s         confine.Support
		allow     bool
		status    Status
		want, fix string
	}{
		{"landlock", confine.Support{Mechanism: "landlock", Version: 6}, false, OK, "confined by landlock (ABI 6)", ""},
		{"sandbox-exec", confine.Support{Mechanism: "sandbox-exec"}, true, OK, "confined by sandbox-exec", ""},
		{"none", none, false, Fail, "(Landlock is not enabled): hostd serve refuses to relay", "relay.allow_unconfined"},
		{"none, allowed", none, true, Warn, "relay.allow_unconfined is set", "Landlock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expect(t, Confinement(tt.s, tt.allow), tt.status, tt.want, tt.fix)
		})
	}
	probe := confine.Probe()
	if got := Confinement(probe, false); (got.Status == OK) != probe.Available() {
		t.Errorf("this machine's %v: %+v", probe, got)
	}
	if runtime.GOOS == "linux" && probe.Mechanism != "landlock" && probe.Available() {
		t.Errorf("Linux confines with %q", probe.Mechanism)
	}
}

// TestDisk: the town's filesystem has room for the data channel's budget
// of each of its polecats; less than one polecat's fails, less than all
// of theirs warns.
func TestDisk(t *testing.T) {
	town := t.TempDir()
	for _, d := range []string{"gastown/polecats/furiosa", "gastown/polecats/nux", "beads/polecats/slit", "gastown/polecats/.claude"} {
		if err := os.MkdirAll(filepath.Join(town, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(town, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(uint64(st.Bavail) * uint64(st.Bsize))
	tests := []struct {
		name      string
		town      string
		budget    int64
		status    Status
		want, fix string
	}{
		{"room", town, 1 << 20, OK, "room for the data budgets of 3 polecat(s) (sync.max_stored_bytes, 1.0 MiB a polecat)", ""},
		{"not for all", town, free / 2, Warn, "less than the data budgets of its 3 polecats", "lower sync.max_stored_bytes"},
		{"not for one", town, 1 << 62, Fail, "less than one polecat's data budget (sync.max_stored_bytes, 4.0 EiB a polecat)", "free space"},
		{"a town not made yet", filepath.Join(town, "new", "town"), 1 << 20, OK, "free on " + town + "'s filesystem: room for the data budgets of 1 polecat(s)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expect(t, Disk(tt.town, tt.budget), tt.status, tt.want, tt.fix)
		})
	}
}
