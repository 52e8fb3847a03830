package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/agent/nudge"
	"github.com/polecat-sidecar/sidecar/agent/shim"
)

// TestHelpEnvironment: gt-agent's help and up's list every environment
// variable gt-agent reads: each of up's settings, the root flags', Gas
// Town's GT_PROXY_* names, and every variable the code under agent/ reads
// with os.Getenv or os.LookupEnv (found in the source, so that a new one
// cannot be left out).
func TestHelpEnvironment(t *testing.T) {
	want := []string{"GT_RIG", "GT_POLECAT", "LC_ALL", "LC_CTYPE", "LANG", "TMPDIR", shim.SocketEnv, nudge.HookSocketEnv}
	for _, k := range rootEnv {
		want = append(want, settingEnv(k))
	}
	for _, s := range upSettings(new(defaultUpConfig())) {
		want = append(want, settingEnv(s.Key))
	}
	for _, v := range proxyEnv {
		want = append(want, v)
	}
	want = append(want, readInSource(t)...)
	// The shim's and hook's variables are up's settings' own.
	if shim.SocketEnv != settingEnv("socket") || nudge.HookSocketEnv != settingEnv("hook-socket") {
		t.Errorf("%s and %s are not up's --socket and --hook-socket variables (%s, %s)", shim.SocketEnv, nudge.HookSocketEnv, settingEnv("socket"), settingEnv("hook-socket"))
	}
	for _, args := range [][]string{{"--help"}, {"up", "--help"}} {
		got, code := runAgent(t, args...)
		if code != 0 {
			t.Fatalf("gt-agent %v: exit %d: %s", args, code, got)
		}
		_, env, _ := strings.Cut(got, "\nEnvironment")
		for _, name := range want {
			if !strings.Contains(env, " "+name) {
				t.Errorf("gt-agent %v: the Environment section lacks %s", args, name)
			}
		}
	}
}

// readInSource is every variable named in an os.Getenv or os.LookupEnv
// call in agent/'s code: a string literal, or one of the constants
// resolved here. A call naming anything else fails the test until it is
// added here and to envHelp.
func readInSource(t *testing.T) []string {
	t.Helper()
	constants := map[string]string{"SocketEnv": shim.SocketEnv, "HookSocketEnv": nudge.HookSocketEnv}
	var names []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 1 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "os" || (sel.Sel.Name != "Getenv" && sel.Sel.Name != "LookupEnv") {
				return true
			}
			switch a := call.Args[0].(type) {
			case *ast.BasicLit:
				s, _ := strconv.Unquote(a.Value)
				names = append(names, s)
			case *ast.Ident:
				if c, ok := constants[a.Name]; ok {
					names = append(names, c)
				} else if !(path == "cmd_session.go" && a.Name == "name") { // session start --env: names the operator gives
					t.Errorf("%s: os.%s(%s): resolve it in readInSource and list it in envHelp", path, sel.Sel.Name, a.Name)
				}
			default:
				t.Errorf("%s: os.%s with an argument readInSource cannot read", path, sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 4 {
		t.Fatalf("found only %v read in agent/'s source: is the scan still looking in the right place?", names)
	}
	return names
}
