// Package archive makes and takes the data channel's archives: Pack
// walks a data root through a tree.Tree and writes what the policy lets
// cross as tar+zstd with its manifest last; Extract, Unpack and
// UnpackSince read one without trusting it, within sync.Limits, through a
// Tree; Contents keeps the base's file contents a three-way merge needs.
package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/mholt/archives"

	"github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/tree"
)

// Pack writes the whitelisted contents of root to w as a tar+zstd archive,
// sorted (the same tree gives the same archive), manifest last, and
// returns the manifest. It walks root itself through a tree.Tree, which
// follows no symlink, so one swapped in during the walk cannot lead it
// out; a symlink crosses only if, followed through every link, it leads
// to a path that crosses. Others, anything not a file, directory or
// symlink, and names not in UTF-8 are left out and listed in skipped.
func Pack(ctx context.Context, root string, p sync.Policy, w io.Writer, opts ...PackOption) (m *sync.Manifest, skipped []string, err error) {
	if err := p.Validate(); err != nil {
		return nil, nil, err
	}
	r, err := tree.OpenRead(root)
	if err != nil {
		return nil, nil, err
	}
	if r == nil {
		return nil, nil, fmt.Errorf("opening data root %s: %w", root, fs.ErrNotExist)
	}
	defer r.Close()
	// The fastest level: the data is small text or already compressed, and
	// the tunnel is fast; compression must not be the bottleneck.
	zw, err := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		return nil, nil, fmt.Errorf("starting zstd: %w", err)
	}
	pk := &packer{ctx: ctx, rootDir: root, root: r, links: r.View(), policy: p, jobs: make(chan archives.ArchiveAsyncJob), m: &sync.Manifest{Version: sync.ManifestVersion}}
	defer pk.links.Close()
	for _, o := range opts {
		o(pk)
	}
	archived := make(chan error, 1)
	go func() { archived <- (archives.Tar{Format: 0}).ArchiveAsync(ctx, zw, pk.jobs) }()
	err = r.Walk(p, pk.add, pk.skip)
	if err == nil {
		err = pk.writeManifest()
	}
	close(pk.jobs)
	err = errors.Join(err, <-archived)
	if pk.keep != nil && err == nil {
		if cerr := pk.keep.Close(); cerr != nil {
			err = fmt.Errorf("finishing the kept contents: %w", cerr)
		}
	}
	// archives ignores the tar trailer's error; the zstd writer's Close
	// flushes everything to w and reports what went wrong there.
	if cerr := zw.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("finishing the archive: %w", cerr)
	}
	if err != nil {
		return nil, pk.skipped, err
	}
	return pk.m, pk.skipped, nil
}

// PackOption changes what Pack does.
type PackOption func(*packer)

// Since leaves out the files that are as prev (the base both sides share)
// lists them: same size, modification time and mode, and not modified in
// the last two seconds (by the data root's clock with TrackRacy, else this
// process's). prev must have its racy files forgotten (TrackRacy or
// MarkRacy, then Manifest.Resolved): a write in the second of the pack
// that recorded it keeps all three. They stay listed, Unchanged, with
// prev's hash, for the receiver to take from its base.
func Since(prev *sync.Manifest) PackOption { return func(pk *packer) { pk.prev = prev.Index() } }

// Rewrite packs each file for which match is true as f makes it from its
// contents (at most MaxRewrite bytes; a larger file, or an error from f,
// fails the pack) instead of as it is: the manifest describes what is
// sent, and the file itself is left as it was.
func Rewrite(match func(rel string) bool, f func([]byte) ([]byte, error)) PackOption {
	return func(pk *packer) { pk.rewrite = &rewrite{match: match, f: f} }
}

// MaxRewrite bounds a file Rewrite reads whole to rewrite it.
const MaxRewrite = 1 << 20

// rewrite is a Rewrite option.
type rewrite struct {
	match func(rel string) bool
	f     func([]byte) ([]byte, error)
}

// apply reads rel's contents from r and rewrites them.
func (rw *rewrite) apply(rel string, r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxRewrite+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("reading %s to rewrite it: %w", rel, err)
	case len(b) > MaxRewrite:
		return nil, fmt.Errorf("rewriting %s: it is larger than %d bytes", rel, MaxRewrite)
	}
	out, err := rw.f(b)
	if err != nil {
		return nil, fmt.Errorf("rewriting %s: %w", rel, err)
	}
	return out, nil
}

// WithProgress calls f after each file packed with the files and bytes
// packed so far (files left out by Since count too).
func WithProgress(f func(files int, bytes int64)) PackOption {
	return func(pk *packer) { pk.progress = f }
}

// Size counts the files and bytes under root that p lets cross, without
// reading them (for progress: what Pack will send at most).
func Size(root string, p sync.Policy) (files int, bytes int64, err error) {
	if err := p.Validate(); err != nil {
		return 0, 0, err
	}
	r, err := tree.OpenRead(root)
	if err != nil || r == nil {
		return 0, 0, err
	}
	defer r.Close()
	err = r.Walk(p, func(rel string, fi fs.FileInfo) error {
		if fi.Mode().IsRegular() {
			files++
			bytes += fi.Size()
		}
		return nil
	}, nil)
	return files, bytes, err
}

// packer walks a root and feeds the tar writer one member at a time.
type packer struct {
	ctx     context.Context
	rootDir string
	root    *tree.Tree
	links   *tree.View // the root as its symlinks are judged against
	policy  sync.Policy
	jobs    chan archives.ArchiveAsyncJob
	m       *sync.Manifest
	skipped []string
	prev    map[string]*sync.Entry
	// progress, when set, hears of each file packed.
	progress func(files int, bytes int64)
	// rewrite, when set, changes some files on their way (Rewrite).
	rewrite *rewrite
	// keep, when set, receives a copy of what is sent (KeepContents).
	keep *tar.Writer
	// racyFrom, when set (TrackRacy), is the time from which a file's
	// modification time is too recent to trust later.
	racyFrom time.Time
	files    int // packed so far
	bytes    int64
}

// skip lists a path the walk left out.
func (pk *packer) skip(rel string) {
	pk.skipped = append(pk.skipped, strings.ToValidUTF8(rel, "\uFFFD"))
}

// add packs one member.
func (pk *packer) add(rel string, fi fs.FileInfo) error {
	e := sync.Entry{Path: rel, Mode: fi.Mode().Perm(), MTime: fi.ModTime().Truncate(time.Second).UTC()}
	info := archives.FileInfo{NameInArchive: rel}
	switch {
	case fi.IsDir():
		e.Type = sync.TypeDir
		info.FileInfo = memberInfo{name: path.Base(rel), mode: fs.ModeDir | e.Mode, mtime: e.MTime}
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := pk.root.Readlink(rel)
		if err != nil {
			return fmt.Errorf("reading symlink %s: %w", rel, err)
		}
		if pk.policy.JudgeLink(pk.links, rel, target) != nil {
			pk.skipped = append(pk.skipped, rel)
			return nil
		}
		e.Type, e.Target, e.MTime, e.Mode = sync.TypeSymlink, target, time.Time{}, 0o777
		info.FileInfo = memberInfo{name: path.Base(rel), mode: fs.ModeSymlink | 0o777}
		info.LinkTarget = target
	case fi.Mode().IsRegular():
		return pk.addFile(rel, fi, e, info)
	default:
		pk.skipped = append(pk.skipped, rel)
		return nil
	}
	if err := pk.send(info); err != nil {
		return err
	}
	pk.m.Entries = append(pk.m.Entries, e)
	return nil
}

// settled says whether a file modified at mtime is old enough to be
// taken as prev has it: before racyFrom, by the data root's clock, when
// TrackRacy set it, else more than 2 s ago by this process's clock.
func (pk *packer) settled(mtime time.Time) bool {
	if !pk.racyFrom.IsZero() {
		return mtime.Before(pk.racyFrom)
	}
	return time.Since(mtime) > racyMargin
}

// addFile packs one regular file: as the base has it (Since), as it is,
// or as the rewrite makes it (Rewrite).
func (pk *packer) addFile(rel string, fi fs.FileInfo, e sync.Entry, info archives.FileInfo) error {
	rewrite := pk.rewrite != nil && pk.rewrite.match(rel)
	if pe := pk.prev[rel]; !rewrite && pe != nil && pe.Type == sync.TypeFile && pe.Size == fi.Size() && pe.Mode == fi.Mode().Perm() &&
		pe.MTime.Equal(fi.ModTime().Truncate(time.Second).UTC()) && pk.settled(fi.ModTime()) {
		e := *pe
		e.Unchanged = true
		pk.m.Entries = append(pk.m.Entries, e)
		pk.packed(e.Size)
		return nil
	}
	f, err := pk.root.OpenAs(rel, fi) // the file the listing saw, or a refusal
	if err != nil {
		pk.skipped = append(pk.skipped, rel)
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("reading %s: %w", rel, err)
	}
	e.Type, e.Size, e.Mode, e.MTime = sync.TypeFile, st.Size(), st.Mode().Perm(), st.ModTime().Truncate(time.Second).UTC()
	if !pk.racyFrom.IsZero() && !st.ModTime().Before(pk.racyFrom) {
		pk.m.Racy = append(pk.m.Racy, rel)
	}
	var body io.Reader = io.LimitReader(f, e.Size)
	if rewrite {
		b, err := pk.rewrite.apply(rel, f)
		if err != nil {
			return err
		}
		e.Size, body = int64(len(b)), bytes.NewReader(b)
	}
	h := sha256.New()
	info.FileInfo = memberInfo{name: path.Base(rel), mode: e.Mode, mtime: e.MTime, size: e.Size}
	info.Open = func() (fs.File, error) {
		kept, err := pk.keepMember(e)
		if err != nil {
			return nil, err
		}
		return hashedFile{r: io.TeeReader(body, io.MultiWriter(h, kept)), info: info.FileInfo}, nil
	}
	if err := pk.send(info); err != nil {
		return err
	}
	e.SHA256 = hex.EncodeToString(h.Sum(nil))
	pk.m.Entries = append(pk.m.Entries, e)
	pk.packed(e.Size)
	return nil
}

// packed counts one file for progress.
func (pk *packer) packed(size int64) {
	pk.files++
	pk.bytes += size
	if pk.progress != nil {
		pk.progress(pk.files, pk.bytes)
	}
}

// writeManifest packs the manifest as the last member.
func (pk *packer) writeManifest() error {
	pk.m.Skipped = pk.skipped
	b, err := pk.m.AppendJSON(nil)
	if err != nil {
		return err
	}
	f := memFile{r: bytes.NewReader(b), info: memberInfo{name: sync.ManifestName, mode: 0o644, size: int64(len(b)), mtime: time.Unix(0, 0).UTC()}}
	return pk.send(archives.FileInfo{FileInfo: f.info, NameInArchive: sync.ManifestName, Open: func() (fs.File, error) { return f, nil }})
}

// send writes one member and waits for it to be written.
func (pk *packer) send(info archives.FileInfo) error {
	res := make(chan error, 1)
	select {
	case pk.jobs <- archives.ArchiveAsyncJob{File: info, Result: res}:
	case <-pk.ctx.Done():
		return pk.ctx.Err()
	}
	if err := <-res; err != nil {
		return fmt.Errorf("packing %s: %w", info.NameInArchive, err)
	}
	return nil
}

// memberInfo is the fs.FileInfo a member is written with: only the bits
// the archive keeps (no owner, no setuid), whatever the disk says.
type memberInfo struct {
	name  string
	mode  fs.FileMode
	mtime time.Time
	size  int64
}

func (m memberInfo) Name() string       { return m.name }
func (m memberInfo) Size() int64        { return m.size }
func (m memberInfo) Mode() fs.FileMode  { return m.mode }
func (m memberInfo) ModTime() time.Time { return m.mtime }
func (m memberInfo) IsDir() bool        { return m.mode.IsDir() }
func (m memberInfo) Sys() any           { return nil }

// hashedFile is a file's contents read through the hash, no further than
// the size it was archived with.
type hashedFile struct {
	r    io.Reader
	info fs.FileInfo
}

func (h hashedFile) Read(p []byte) (int, error) { return h.r.Read(p) }
func (h hashedFile) Stat() (fs.FileInfo, error) { return h.info, nil }
func (h hashedFile) Close() error               { return nil } // addFile closes the file

// memFile is the manifest as an fs.File.
type memFile struct {
	r    io.Reader
	info memberInfo
}

func (m memFile) Read(p []byte) (int, error) { return m.r.Read(p) }
func (m memFile) Stat() (fs.FileInfo, error) { return m.info, nil }
func (m memFile) Close() error               { return nil }
