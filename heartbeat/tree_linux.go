package heartbeat

// Measuring is Linux's alone (procfs, hence the file's name): gt-agent,
// the only measurer, runs in Linux containers. hostd, which only judges
// beats, builds on macOS without it.

import (
	"fmt"
	"sort"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
)

// ProcID names a process across pid reuse: a pid and its start time (in
// clock ticks since boot).
type ProcID struct {
	PID   int
	Start uint64
}

// TreeStats is a process tree's size and use.
type TreeStats struct {
	Processes  int
	Names      []string
	CPUSeconds float64
	CPUPercent float64
	RSSBytes   uint64
	Threads    int
}

// TreeSampler measures a process tree from procfs, remembering each
// process's CPU time between samples for CPU%.
type TreeSampler struct {
	fs     procfs.FS
	prev   map[ProcID]float64
	prevAt time.Time
}

// NewTreeSampler reads the proc filesystem at mount ("" for /proc).
func NewTreeSampler(mount string) (*TreeSampler, error) {
	if mount == "" {
		mount = procfs.DefaultMountPoint
	}
	fs, err := procfs.NewFS(mount)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", mount, err)
	}
	return &TreeSampler{fs: fs, prev: map[ProcID]float64{}}, nil
}

// Identify returns pid's ProcID now.
func (t *TreeSampler) Identify(pid int) (ProcID, error) {
	p, err := t.fs.Proc(pid)
	if err != nil {
		return ProcID{}, err
	}
	st, err := p.Stat()
	if err != nil {
		return ProcID{}, err
	}
	return ProcID{PID: pid, Start: st.Starttime}, nil
}

// Sample measures root and its descendants (by parent pid, and started no
// earlier than their parent, so a reused pid never adopts a stranger's
// processes). found is false when root no longer exists as that process.
func (t *TreeSampler) Sample(root ProcID, now time.Time) (stats TreeStats, found bool, err error) {
	procs, err := t.fs.AllProcs()
	if err != nil {
		return TreeStats{}, false, fmt.Errorf("listing processes: %w", err)
	}
	byPID := make(map[int]procfs.ProcStat, len(procs))
	children := map[int][]int{}
	for _, p := range procs {
		st, err := p.Stat()
		if err != nil {
			continue // exited while we looked
		}
		byPID[st.PID] = st
		children[st.PPID] = append(children[st.PPID], st.PID)
	}
	rs, ok := byPID[root.PID]
	if !ok || rs.Starttime != root.Start {
		t.prev, t.prevAt = map[ProcID]float64{}, now
		return TreeStats{}, false, nil
	}
	cpu := map[ProcID]float64{}
	names := map[string]bool{}
	queue := []procfs.ProcStat{rs}
	var delta float64
	for len(queue) > 0 {
		st := queue[0]
		queue = queue[1:]
		id := ProcID{PID: st.PID, Start: st.Starttime}
		c := st.CPUTime()
		cpu[id] = c
		if prev, ok := t.prev[id]; ok {
			delta += c - prev
		} else if !t.prevAt.IsZero() {
			delta += c // new since the last sample
		}
		stats.Processes++
		stats.CPUSeconds += c
		stats.RSSBytes += uint64(st.ResidentMemory())
		stats.Threads += st.NumThreads
		names[st.Comm] = true
		for _, child := range children[st.PID] {
			if cs := byPID[child]; cs.Starttime >= st.Starttime {
				queue = append(queue, cs)
			}
		}
	}
	if wall := now.Sub(t.prevAt).Seconds(); !t.prevAt.IsZero() && wall > 0 && delta > 0 {
		stats.CPUPercent = 100 * delta / wall
	}
	t.prev, t.prevAt = cpu, now
	for n := range names {
		stats.Names = append(stats.Names, n)
	}
	sort.Strings(stats.Names)
	if len(stats.Names) > maxProcNames {
		stats.Names = stats.Names[:maxProcNames]
	}
	return stats, true, nil
}

// FindProcess returns the oldest process whose name (comm) is name.
func (t *TreeSampler) FindProcess(name string) (ProcID, bool) {
	procs, err := t.fs.AllProcs()
	if err != nil {
		return ProcID{}, false
	}
	var best ProcID
	found := false
	for _, p := range procs {
		st, err := p.Stat()
		if err != nil || st.Comm != name {
			continue
		}
		if !found || st.Starttime < best.Start {
			best, found = ProcID{PID: st.PID, Start: st.Starttime}, true
		}
	}
	return best, found
}

// ContainerStats reads the container's load average, available memory and
// the free space of the filesystem holding dir.
func (t *TreeSampler) ContainerStats(dir string) Container {
	var c Container
	if la, err := t.fs.LoadAvg(); err == nil {
		c.Load1 = la.Load1
	}
	if mi, err := t.fs.Meminfo(); err == nil && mi.MemAvailableBytes != nil {
		c.MemAvailable = *mi.MemAvailableBytes
	}
	free, err := diskFree(dir)
	if err != nil {
		c.DiskFreeError = err.Error()
	}
	c.DiskFree = free
	return c
}

// diskFree is the space available to unprivileged users on dir's
// filesystem.
func diskFree(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}
