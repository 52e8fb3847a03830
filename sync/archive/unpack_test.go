package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/internal/fixture"
)

// TestUnpackManifestMemory: a manifest of many more entries than the
// limit is refused at the entry past it, without decoding the rest: the
// memory it costs is that of the limit, not of the manifest.
func TestUnpackManifestMemory(t *testing.T) {
	const limit, sent = 1000, 200_000
	var b strings.Builder
	b.WriteString(`{"version":1,"entries":[`)
	for i := range sent {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"path":"results/%d","type":"dir","mode":493}`, i)
	}
	b.WriteString(`]}`)
	manifest := b.String()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := sync.ReadManifest(strings.NewReader(manifest), int64(len(manifest)), limit)
	runtime.ReadMemStats(&after)
	var le *sync.LimitError
	if !errors.As(err, &le) || le.Setting != "sync.max_files" {
		t.Fatalf("a manifest of %d entries with a limit of %d: %v", sent, limit, err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > uint64(len(manifest))/4 {
		t.Errorf("decoding allocated %d bytes for a %d-byte manifest refused at entry %d", grew, len(manifest), limit)
	}
	// And its size is checked before it is read at all.
	ms := []fixture.Member{fixture.Dir("results"), fixture.File(sync.ManifestName, strings.Repeat(" ", 2<<20))}
	_, err = Unpack(context.Background(), bytes.NewReader(fixture.ArchiveRaw(t, ms)), t.TempDir(), sync.Policy{Include: []string{"results"}}, sync.Limits{MaxManifest: 1 << 20})
	if !errors.As(err, &le) || le.Setting != "sync.max_manifest_bytes" {
		t.Fatalf("a 2 MiB manifest with a 1 MiB limit: %v", err)
	}
}
