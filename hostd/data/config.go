package data

import (
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/settings"
	datasync "github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/merge"
)

// Config configures the data service.
type Config struct {
	// Town is the Gas Town root.
	Town string
	// Roots maps a rig to its polecats' data root on the host, {name}
	// standing for the polecat; rigs not listed use DefaultRoot. A root
	// without {name} is shared by the rig's polecats: each merges into it
	// against its own base, one at a time.
	Roots map[string]string
	// RigRoots maps a rig to the directory on the host whose files its
	// polecats share (DefaultRigRoot for rigs not listed): the paths of
	// RigInclude there go into each of its polecats' containers after the
	// polecat's own data, and never come back.
	RigRoots map[string]string
	// Include and Exclude are the policy of a polecat's own data
	// (datasync.DefaultInclude and the blacklist alone when empty).
	Include, Exclude []string
	// RigInclude is the paths under a rig root that go into containers,
	// read-only (datasync.DefaultRigInclude when empty; Exclude applies
	// too). None may be, or be above or under, a path of Include.
	RigInclude []string
	// MaxBytes, MaxFiles, MaxFileSize and MaxRatio bound what one archive
	// from a container may write (datasync.Limits; its defaults when zero).
	MaxBytes, MaxFiles, MaxFileSize, MaxRatio int
	// MaxManifestBytes bounds an archive's manifest (sync.max_manifest_bytes).
	MaxManifestBytes int
	// MaxStoredBytes bounds what hostd stores for one polecat
	// (sync.max_stored_bytes): its data root's files that cross and its
	// base's kept contents. A transfer that would take it over is refused
	// before anything is written, and nothing changes.
	MaxStoredBytes int64
	// MaxConflicts bounds the paths changed on both sides that one
	// transfer merges (sync.max_conflicts): each is a git merge-file run or
	// a conflict copy. A transfer with more is refused whole.
	MaxConflicts int
	// MaxDeleteShare holds a transfer when the container would then have
	// taken away more than this share (0 to 1) of the files the operator
	// last confirmed for the polecat, counted over every transfer since
	// (sync.max_delete_share; hold.go), as rsync's --max-delete guards a
	// sync: nothing changes until the operator confirms with hostd sync
	// pull --allow-deletes. 1 turns the hold off.
	MaxDeleteShare float64
	// MergeProcesses bounds the git merge-file processes running at once,
	// across polecats (sync.merge_processes).
	MergeProcesses int
	// Dir keeps each polecat's base and the journal (state.Dir.Data).
	Dir string
	// Timeout bounds one transfer.
	Timeout time.Duration
	// AgentTransfersPerHour bounds the transfers a polecat's agent may
	// start (fetches and uploads) per hour, that many at once; an agent
	// checkpoints every 10 minutes by default.
	AgentTransfersPerHour int
	// Logger receives one line per transfer.
	Logger *slog.Logger
}

// DefaultRoot is a polecat's data root unless Roots says otherwise: its
// directory in the rig, as Gas Town lays it out.
const DefaultRoot = "<town>/<rig>/polecats/{name}"

// DefaultRigRoot is a rig's root unless RigRoots says otherwise: the
// directory of its polecats, whose .claude Gas Town gives them all (it
// starts each with claude --settings <rig>/polecats/.claude/settings.json).
const DefaultRigRoot = "<town>/<rig>/polecats"

// DefaultConfig is the default policy and limits (datasync.DefaultLimits),
// 2 GiB stored per polecat, 500 paths changed on both sides per transfer,
// a hold on transfers deleting more than half a polecat's files, two
// merge processes at once, 10 minutes a transfer, 30 transfers an agent
// starts per hour. Town, Roots, RigRoots, Exclude and Dir have no
// default.
func DefaultConfig() Config {
	l := datasync.DefaultLimits()
	return Config{
		Include:               datasync.DefaultInclude,     // relative paths
		RigInclude:            datasync.DefaultRigInclude,  // relative paths, none meeting Include's
		MaxBytes:              int(l.MaxBytes),             // at least 1
		MaxFiles:              l.MaxFiles,                  // at least 1
		MaxFileSize:           int(l.MaxFileSize),          // at least 1
		MaxRatio:              int(l.MaxRatio),             // at least 1
		MaxManifestBytes:      int(l.MaxManifest),          // at least 1
		MaxStoredBytes:        2 << 30,                     // at least 1
		MaxConflicts:          merge.DefaultMaxBothChanged, // at least 1
		MaxDeleteShare:        0.5,                         // from 0 to 1; 1 turns the hold off
		MergeProcesses:        2,                           // at least 1
		Timeout:               10 * time.Minute,            // above 0
		AgentTransfersPerHour: 30,                          // at least 1
		Logger:                slog.Default(),
	}
}

// Validate names each field out of its range, a malformed policy, a rig
// path that is also a polecat's own, or a relative root; New calls it once
// zero fields have their defaults.
func (c Config) Validate() error {
	errs := []error{
		settings.Required("Dir", c.Dir),
		settings.Positive("MaxBytes", c.MaxBytes),
		settings.Positive("MaxFiles", c.MaxFiles),
		settings.Positive("MaxFileSize", c.MaxFileSize),
		settings.AtMost("MaxFileSize", c.MaxFileSize, "MaxBytes", c.MaxBytes),
		settings.Positive("MaxRatio", c.MaxRatio),
		settings.Positive("MaxManifestBytes", c.MaxManifestBytes),
		settings.Positive("MaxStoredBytes", c.MaxStoredBytes),
		settings.Positive("MaxConflicts", c.MaxConflicts),
		settings.InRange("MaxDeleteShare", c.MaxDeleteShare, 0, 1),
		settings.Positive("MergeProcesses", c.MergeProcesses),
		settings.Positive("Timeout", c.Timeout),
		settings.Positive("AgentTransfersPerHour", c.AgentTransfersPerHour),
		c.policy().Validate(),
		c.rigPolicy().Validate(),
	}
	if own, rig, ok := c.policy().Overlap(c.rigPolicy()); ok {
		errs = append(errs, &settings.FieldError{Field: "RigInclude", Value: rig, Other: "Include", OtherValue: own,
			Rule: "a path is either the polecat's own (it comes back) or its rig's (it never does): it must not meet"})
	}
	for rig, root := range c.Roots {
		if !filepath.IsAbs(root) {
			errs = append(errs, settings.Invalid("Roots."+rig, root, errors.New("it must be an absolute path ({name} stands for the polecat)")))
		}
	}
	for rig, root := range c.RigRoots {
		if !filepath.IsAbs(root) || strings.Contains(root, "{name}") {
			errs = append(errs, settings.Invalid("RigRoots."+rig, root, errors.New("it must be an absolute path, the same for all the rig's polecats (no {name})")))
		}
	}
	return errors.Join(errs...)
}

// policy is what crosses of a polecat's own data, both ways.
func (c Config) policy() datasync.Policy {
	return datasync.Policy{Include: c.Include, Exclude: c.Exclude}
}

// rigPolicy is what goes of its rig's files into a container.
func (c Config) rigPolicy() datasync.Policy {
	return datasync.Policy{Include: c.RigInclude, Exclude: c.Exclude}
}

// limits is what one archive from a container may write: no more than the
// storage budget either, so staging is bounded by it too.
func (c Config) limits() datasync.Limits {
	l := datasync.Limits{MaxBytes: int64(c.MaxBytes), MaxFiles: c.MaxFiles, MaxFileSize: int64(c.MaxFileSize), MaxRatio: int64(c.MaxRatio),
		MaxManifest: int64(c.MaxManifestBytes)}
	l.MaxBytes = min(l.MaxBytes, c.MaxStoredBytes)
	return l
}
