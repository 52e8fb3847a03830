package importgraph

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// edge is one import of ours: the file that makes it and the package it
// names, both relative to the module's root.
type edge struct {
	file, to string
}

// inTest says whether a test file makes the import.
func (e edge) inTest() bool { return strings.HasSuffix(e.file, "_test.go") }

// graph is each package of the module (its directory relative to the
// module's root) with the imports of ours its files make.
type graph map[string][]edge

// loadGraph reads the import clauses of every Go file of the module whose
// root is root, whatever its build constraints, so that every system's and
// every build tag's files count. It skips what the go command skips:
// testdata, names beginning with . or _, and nested modules. An external
// test package's import of the package it tests is no edge.
func loadGraph(root string) (graph, error) {
	module, err := modulePath(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	g := graph{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path == root {
				return nil
			}
			if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		pkg := filepath.ToSlash(filepath.Dir(rel))
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return fmt.Errorf("reading the imports of %s: %w", rel, err)
		}
		if _, ok := g[pkg]; !ok {
			g[pkg] = []edge{} // a package that imports nothing of ours is still one
		}
		for _, spec := range f.Imports {
			p, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return fmt.Errorf("reading the imports of %s: %w", rel, err)
			}
			to, ours := strings.CutPrefix(p, module+"/")
			if p == module {
				to, ours = ".", true
			}
			if ours && to != pkg {
				g[pkg] = append(g[pkg], edge{file: rel, to: to})
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walking the module at %s: %w", root, err)
	}
	return g, nil
}

// moduleRoot is the directory of the go.mod nearest above the working
// directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the module's root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("finding the module's root: no go.mod above the working directory")
		}
		dir = up
	}
}

// modulePath is the module path the go.mod file at path declares.
func modulePath(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("reading the module's path: %w", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	if err := s.Err(); err != nil {
		return "", fmt.Errorf("reading the module's path from %s: %w", path, err)
	}
	return "", fmt.Errorf("%s declares no module", path)
}

// matches says whether pattern names pkg: "..." names every package,
// "x/..." x and every package below it, anything else the package of that
// path alone.
func matches(pattern, pkg string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

// matchesAny is the first of patterns that names pkg, if any.
func matchesAny(patterns []string, pkg string) (string, bool) {
	for _, p := range patterns {
		if matches(p, pkg) {
			return p, true
		}
	}
	return "", false
}
