package sync

import (
	"io/fs"
	"path"
	"strings"
)

// Survey is what a data root holds for its polecats, as a storage budget
// and a merge's check of symlinks see it.
type Survey struct {
	// Bytes is what the paths that cross take, and the conflict copies
	// beside them that do not cross themselves (the copy of an included
	// file, CLAUDE.md.conflict-..., or of a directory leading to one):
	// each file its size, and every entry at least entryCost more, so a
	// tree of empty files and directories costs what it takes on disk.
	Bytes int64
	// Links are the symlinks among them.
	Links []string
}

// entryCost is what every entry is counted as on top of its content: a
// block and an inode.
const entryCost = 4096

// SurveyRoot surveys the data root dir (nothing when it is missing).
func SurveyRoot(dir string, p Policy) (Survey, error) {
	t, err := openTreeRead(dir)
	if err != nil || t == nil {
		return Survey{}, err
	}
	defer t.Close()
	return t.survey(p)
}

// survey walks the paths p lets cross, then the conflict copies in the
// directories on the way to them.
func (t *Tree) survey(p Policy) (Survey, error) {
	var s Survey
	pk := &packer{root: t, policy: p}
	pk.visit = func(rel string, fi fs.FileInfo) error {
		pk.done[rel] = true
		s.count(rel, fi)
		return nil
	}
	if err := pk.walkIncludes(); err != nil {
		return s, err
	}
	dirs := map[string]bool{}
	for _, inc := range p.include() {
		for d := path.Dir(inc); !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	for dir := range dirs {
		names, err := t.ReadDir(dir)
		if err != nil {
			continue // not there: nor are copies in it
		}
		for _, n := range names {
			rel := path.Join(dir, n)
			if strings.Contains(n, "."+conflictInfix) && !p.Allowed(rel) && !pk.done[rel] {
				if err := t.walkAll(rel, s.count); err != nil {
					return s, err
				}
			}
		}
	}
	return s, nil
}

// count adds one entry to the survey.
func (s *Survey) count(rel string, fi fs.FileInfo) {
	s.Bytes += entryCost
	switch {
	case fi.Mode().IsRegular():
		s.Bytes += fi.Size()
	case fi.Mode()&fs.ModeSymlink != 0:
		s.Links = append(s.Links, rel)
	}
}

// walkAll calls visit for rel and everything under it, following no
// symlink.
func (t *Tree) walkAll(rel string, visit func(string, fs.FileInfo)) error {
	fi, err := t.Lstat(rel)
	if err != nil {
		return err
	}
	return t.walkInfo(rel, fi, visit)
}

// walkInfo is walkAll for rel as a listing described it.
func (t *Tree) walkInfo(rel string, fi fs.FileInfo, visit func(string, fs.FileInfo)) error {
	visit(rel, fi)
	if !fi.IsDir() {
		return nil
	}
	infos, err := t.readDirInfo(rel)
	if err != nil {
		return err
	}
	for _, ci := range infos {
		if err := t.walkInfo(rel+"/"+ci.Name(), ci, visit); err != nil {
			return err
		}
	}
	return nil
}
