package sync

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"
)

// ManifestName is the archive's last member, the manifest. It is never
// data: no policy lets a file of that name cross.
const ManifestName = ".sidecar-manifest.json"

// RootMarkerName is the file at the top of a container's data root that
// binds it to the agent's base (package agent/data). Like the manifest it
// is never data: its name is reserved, so no policy lets it cross.
const RootMarkerName = ".sidecar-root-id"

// Entry types.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
)

// Entry is one path of an archive.
type Entry struct {
	// Path is relative to the data root, slash-separated.
	Path string `json:"path"`
	// Type is TypeFile, TypeDir or TypeSymlink.
	Type string `json:"type"`
	// Mode is the permission bits (no setuid, setgid or sticky).
	Mode fs.FileMode `json:"mode"`
	// MTime is the modification time, to the second (files and
	// directories).
	MTime time.Time `json:"mtime,omitzero"`
	// Size and SHA256 are a file's length and content hash (hex).
	Size   int64  `json:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// Target is a symlink's target, relative and inside the root.
	Target string `json:"target,omitempty"`
	// Unchanged marks a file the archive leaves out because it is as in
	// the base both sides share (archive.Pack with archive.Since); the
	// receiver takes it from its base, or refuses the archive
	// (archive.ErrBaseMismatch).
	Unchanged bool `json:"unchanged,omitempty"`
}

// Manifest lists an archive's entries in archive order.
type Manifest struct {
	Version int     `json:"version"`
	Entries []Entry `json:"entries"`
	// Skipped lists what the sender left out of the archive although its
	// policy lets the path cross: symlinks leading out of its data root or
	// to a path that does not cross, and what is not a file, directory or
	// symlink. The receiver reports them; they count toward the entry
	// limit.
	Skipped []string `json:"skipped,omitempty"`
	// Racy lists, for the packer's own record only (never sent), the
	// files whose modification time was too recent at packing to tell a
	// later write in the same second from what was read
	// (archive.TrackRacy).
	Racy []string `json:"-"`
}

// ManifestVersion is the manifest format archive.Pack writes and
// DecodeManifest reads.
const ManifestVersion = 1

// Resolved is m without the Unchanged marks (and what was skipped): the
// tree it describes. A racy file's entry keeps no modification time, so
// a later archive.Since reads the file again rather than trust it.
func (m *Manifest) Resolved() *Manifest {
	out := &Manifest{Version: m.Version, Entries: make([]Entry, len(m.Entries))}
	racy := map[string]bool{}
	for _, p := range m.Racy {
		racy[p] = true
	}
	for i, e := range m.Entries {
		e.Unchanged = false
		if racy[e.Path] {
			e.MTime = time.Time{}
		}
		out.Entries[i] = e
	}
	return out
}

// Files counts the file entries and their bytes.
func (m *Manifest) Files() (n int, bytes int64) {
	for _, e := range m.Entries {
		if e.Type == TypeFile {
			n++
			bytes += e.Size
		}
	}
	return n, bytes
}

// Index maps m's paths to its entries (none for a nil m).
func (m *Manifest) Index() map[string]*Entry {
	out := map[string]*Entry{}
	if m == nil {
		return out
	}
	for i := range m.Entries {
		out[m.Entries[i].Path] = &m.Entries[i]
	}
	return out
}

// DecodeManifest parses a manifest from outside and checks it: the
// version, every path valid and unique, known types, permission bits only,
// sizes not negative, hashes well-formed, symlink targets inside the root.
func DecodeManifest(b []byte) (*Manifest, error) {
	return decodeManifest(b, 0)
}

// MaxPathLen bounds a path or a symlink's target in a manifest: Linux's
// PATH_MAX.
const MaxPathLen = 4096

// MaxDepth bounds how many elements a path has: link resolution and the
// kernel's own path walks (reading a staged file by its path) still go
// through every level.
const MaxDepth = 256

// ReadManifest decodes a manifest of size bytes from r, checking each
// entry as DecodeManifest does, and refuses it at the entry past
// maxEntries (no limit when zero), so a hostile manifest costs no more
// memory than a real one that long. One of at most wholeBytesPerEntry
// bytes an allowed entry (no dearer held whole than decoded) is read whole
// and, in AppendJSON's form, decoded in one pass (decodeManifestFast); any
// other by encoding/json one entry at a time, whose verdict stands.
func ReadManifest(r io.Reader, size int64, maxEntries int) (*Manifest, error) {
	if size < 0 {
		return nil, fmt.Errorf("manifest of %d bytes", size)
	}
	if maxEntries > 0 && size > int64(maxEntries)*wholeBytesPerEntry {
		return readManifestJSON(io.LimitReader(r, size), maxEntries)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("reading the manifest: %w", err)
	}
	return decodeManifest(b, maxEntries)
}

// decodeManifest decodes the manifest b: decodeManifestFast, or
// readManifestJSON when that leaves it.
func decodeManifest(b []byte, maxEntries int) (*Manifest, error) {
	if m, ok, err := decodeManifestFast(b, maxEntries); ok || err != nil {
		return m, err
	}
	return readManifestJSON(bytes.NewReader(b), maxEntries)
}

// wholeBytesPerEntry is how many bytes of manifest an entry of the limit
// lets ReadManifest hold whole: about what an entry costs decoded (its
// Entry, path, hash and place in the duplicate check), and more than the
// 150-250 bytes AppendJSON writes for one.
const wholeBytesPerEntry = 400

// readManifestJSON is ReadManifest through encoding/json, one entry at a
// time, refusing the entry past maxEntries before decoding it.
func readManifestJSON(r io.Reader, maxEntries int) (*Manifest, error) {
	d := json.NewDecoder(r)
	d.DisallowUnknownFields()
	if err := expectDelim(d, '{'); err != nil {
		return nil, err
	}
	m := &Manifest{Version: -1}
	var seen map[string]bool
	for d.More() {
		key, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("manifest: %w", err)
		}
		switch key {
		case "version":
			err = d.Decode(&m.Version)
		case "entries":
			if seen != nil {
				return nil, errors.New("manifest: entries listed twice")
			}
			seen = map[string]bool{}
			err = readEntries(d, m, seen, maxEntries)
		case "skipped":
			err = readSkipped(d, m, maxEntries)
		default:
			return nil, fmt.Errorf("manifest: unknown field %v", key)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := expectDelim(d, '}'); err != nil {
		return nil, err
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("manifest: data after the JSON object")
	}
	if m.Version != ManifestVersion {
		return nil, fmt.Errorf("manifest version %d, want %d", m.Version, ManifestVersion)
	}
	return m, nil
}

// readEntries decodes the entries array into m.
func readEntries(d *json.Decoder, m *Manifest, seen map[string]bool, maxEntries int) error {
	if tok, err := d.Token(); err != nil {
		return fmt.Errorf("manifest: %w", err)
	} else if tok == nil {
		return nil // "entries": null, an empty tree
	} else if tok != json.Delim('[') {
		return fmt.Errorf("manifest: entries is %v, not a list", tok)
	}
	for d.More() {
		if maxEntries > 0 && len(m.Entries) >= maxEntries {
			return &LimitError{Limit: "entry count", Setting: "sync.max_files", Max: int64(maxEntries)}
		}
		var e Entry
		if err := d.Decode(&e); err != nil {
			return fmt.Errorf("manifest: %w", err)
		}
		if err := e.validate(); err != nil {
			return fmt.Errorf("manifest: %w", err)
		}
		if seen[e.Path] {
			return fmt.Errorf("manifest: %q listed twice", e.Path)
		}
		seen[e.Path] = true
		m.Entries = append(m.Entries, e)
	}
	return expectDelim(d, ']')
}

// readSkipped decodes the skipped list into m, within what is left of
// the entry limit.
func readSkipped(d *json.Decoder, m *Manifest, maxEntries int) error {
	if tok, err := d.Token(); err != nil {
		return fmt.Errorf("manifest: %w", err)
	} else if tok == nil {
		return nil
	} else if tok != json.Delim('[') {
		return fmt.Errorf("manifest: skipped is %v, not a list", tok)
	}
	for d.More() {
		if maxEntries > 0 && len(m.Entries)+len(m.Skipped) >= maxEntries {
			return &LimitError{Limit: "entry count", Setting: "sync.max_files", Max: int64(maxEntries)}
		}
		var p string
		if err := d.Decode(&p); err != nil {
			return fmt.Errorf("manifest: %w", err)
		}
		if len(p) > MaxPathLen || !ValidRel(p) {
			return fmt.Errorf("manifest: skipped path %q is not a clean path inside the data root", p)
		}
		m.Skipped = append(m.Skipped, p)
	}
	return expectDelim(d, ']')
}

// expectDelim reads one JSON delimiter.
func expectDelim(d *json.Decoder, want json.Delim) error {
	tok, err := d.Token()
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	if tok != want {
		return fmt.Errorf("manifest: %v where %v belongs", tok, want)
	}
	return nil
}

func (e Entry) validate() error {
	if len(e.Path) > MaxPathLen || len(e.Target) > MaxPathLen || strings.Count(e.Path, "/") >= MaxDepth {
		return fmt.Errorf("a path or target of %d bytes or %d levels is longer than %d bytes or deeper than %d",
			max(len(e.Path), len(e.Target)), strings.Count(e.Path, "/")+1, MaxPathLen, MaxDepth)
	}
	if !ValidRel(e.Path) || reserved(e.Path) {
		return fmt.Errorf("path %q is not a clean path inside the data root", e.Path)
	}
	if e.Mode&^fs.ModePerm != 0 {
		return fmt.Errorf("%s: mode %v has more than permission bits", e.Path, e.Mode)
	}
	if e.Unchanged && e.Type != TypeFile {
		return fmt.Errorf("%s: only files can be unchanged", e.Path)
	}
	switch e.Type {
	case TypeFile:
		if e.Size < 0 || len(e.SHA256) != 64 {
			return fmt.Errorf("%s: bad size or hash", e.Path)
		}
		if _, err := hex.DecodeString(e.SHA256); err != nil {
			return fmt.Errorf("%s: hash: %w", e.Path, err)
		}
	case TypeDir:
	case TypeSymlink:
		if !SymlinkInside(e.Path, e.Target) {
			return fmt.Errorf("%s: symlink target %q leaves the data root", e.Path, e.Target)
		}
	default:
		return fmt.Errorf("%s: unknown type %q", e.Path, e.Type)
	}
	return nil
}

// Hash is the hex SHA-256 of what r holds: an Entry's SHA256.
func Hash(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// HashBytes is Hash of b.
func HashBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
