package merge

import (
	"io/fs"
	"path"
	"strings"

	"github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/tree"
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
func SurveyRoot(dir string, p sync.Policy) (Survey, error) {
	t, err := tree.OpenRead(dir)
	if err != nil || t == nil {
		return Survey{}, err
	}
	defer t.Close()
	return surveyTree(t, p)
}

// surveyTree walks the paths p lets cross in t, then the conflict copies in
// the directories on the way to them.
func surveyTree(t *tree.Tree, p sync.Policy) (Survey, error) {
	var s Survey
	walked := map[string]bool{}
	err := t.Walk(p, func(rel string, fi fs.FileInfo) error {
		walked[rel] = true
		s.count(rel, fi)
		return nil
	}, nil)
	if err != nil {
		return s, err
	}
	dirs := map[string]bool{}
	for _, inc := range p.Includes() {
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
			if strings.Contains(n, "."+conflictInfix) && !p.Allowed(rel) && !walked[rel] {
				if err := t.WalkAll(rel, s.count); err != nil {
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
