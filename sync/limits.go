package sync

import (
	"cmp"
	"fmt"
)

// Limits bound what one archive may make its receiver write. Each refusal
// names the limit and the setting that raises it.
type Limits struct {
	// MaxBytes bounds the files' total size (sync.max_bytes).
	MaxBytes int64
	// MaxFiles bounds the number of entries (sync.max_files).
	MaxFiles int
	// MaxFileSize bounds one file (sync.max_file_size).
	MaxFileSize int64
	// MaxRatio bounds decompressed bytes per compressed byte
	// (sync.max_ratio), against decompression bombs.
	MaxRatio int64
	// MaxManifest bounds the manifest's size in bytes
	// (sync.max_manifest_bytes); its entries are bounded by MaxFiles.
	MaxManifest int64
	// DecoderMemory bounds the zstd decoder's window and memory.
	DecoderMemory uint64
}

// DefaultLimits take 1 GiB of files, 100,000 entries, 512 MiB in one file,
// a compression ratio of 1000, a 32 MiB manifest (100,000 entries of a
// typical path take about 20 MiB) and 64 MiB of decoder memory.
func DefaultLimits() Limits {
	return Limits{MaxBytes: 1 << 30, MaxFiles: 100_000, MaxFileSize: 512 << 20, MaxRatio: 1000, MaxManifest: 32 << 20, DecoderMemory: 64 << 20}
}

// LimitError is a transfer refused for going over one of the Limits, or
// over the bound of paths a merge takes changed on both sides
// (sync.max_conflicts).
type LimitError struct {
	// Limit names what was exceeded, Setting the setting that raises it.
	Limit, Setting string
	// Max is the limit's value.
	Max int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("archive refused: over the %s limit of %d (%s)", e.Limit, e.Max, e.Setting)
}

// WithDefaults fills lim's zero fields from DefaultLimits.
func (lim Limits) WithDefaults() Limits {
	d := DefaultLimits()
	lim.MaxBytes = cmp.Or(lim.MaxBytes, d.MaxBytes)
	lim.MaxFiles = cmp.Or(lim.MaxFiles, d.MaxFiles)
	lim.MaxFileSize = cmp.Or(lim.MaxFileSize, d.MaxFileSize)
	lim.MaxRatio = cmp.Or(lim.MaxRatio, d.MaxRatio)
	lim.MaxManifest = cmp.Or(lim.MaxManifest, d.MaxManifest)
	lim.DecoderMemory = cmp.Or(lim.DecoderMemory, d.DecoderMemory)
	return lim
}
