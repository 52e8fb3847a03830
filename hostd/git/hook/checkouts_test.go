package hook

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/hostd/git/branch"
	"github.com/polecat-sidecar/sidecar/hostd/git/internal/fixture"
)

// TestPreReceiveCheckout runs the hook in a repository with a linked
// worktree: a branch checked out there is pushed only with a tree within
// git.max_checkout_size (its blob sizes, times the growth its
// .gitattributes allow) and git.max_checkout_files; a branch checked out
// nowhere is not looked at, bounds or none.
func TestPreReceiveCheckout(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "repo.git")
	_, main := fixture.WorktreeRepo(t, repo)
	many := make([]fixture.File, 11)
	for i := range many {
		many[i] = fixture.Text(fmt.Sprintf("f%02d", i), "")
	}
	ident := fixture.CommitTree(t, repo, "", fixture.Text(".gitattributes", "a ident\n"), fixture.Text("a", strings.Repeat("$Id$", 23)))
	commits := map[string]string{
		"small": fixture.CommitTree(t, repo, main, fixture.Text("a", strings.Repeat("x", 1000))),
		"big":   fixture.CommitTree(t, repo, main, fixture.File{Name: "a", Data: fixture.Zeros(1001)}),
		"many":  fixture.CommitTree(t, repo, main, many...),
		// 100 bytes of blobs, which could check out as 1,800 (ident).
		"ident":  ident,
		"nested": fixture.CommitTree(t, repo, main, fixture.File{Name: "deep", Dir: ident}),
		"crlf":   fixture.CommitTree(t, repo, main, fixture.Text(".GitAttributes", "* eol=crlf\n"), fixture.Text("a", strings.Repeat("\n", 600))), // as a case-insensitive host reads it
		"utf32":  fixture.CommitTree(t, repo, main, fixture.Text(".gitattributes", "* eol=crlf working-tree-encoding=UTF-32\n"), fixture.Text("a", strings.Repeat("\n", 100))),
		// Words that only look like the attributes.
		"identity": fixture.CommitTree(t, repo, main, fixture.Text(".gitattributes", "a identity=x\n"), fixture.Text("a", strings.Repeat("x", 900))),
	}
	t.Chdir(repo)
	t.Setenv(IdentityEnv, "gastown/furiosa")
	t.Setenv(PatternsEnv, strings.Join(branch.DefaultPatterns, ","))
	t.Setenv(PolecatsEnv, "furiosa")
	t.Setenv(WorktreeGuardEnv, GuardRefuse)
	const wt, other = "refs/heads/polecat/furiosa-wt", "refs/heads/polecat/furiosa-other"
	zero := strings.Repeat("0", 40)
	cases := []struct {
		name, commit, ref string
		bounds            []string // size, files; nil: unset
		want, limit       string   // what the hook says and records; "" accepts
	}{
		{"within", "small", wt, []string{"1000", "10"}, "", ""},
		{"over size", "big", wt, []string{"1000", "10"}, "more than 1000 bytes, over git.max_checkout_size", "git.max_checkout_size"},
		{"over files", "many", wt, []string{"1000", "10"}, "more than 10 files, links and directories, over git.max_checkout_files", "git.max_checkout_files"},
		{"ident", "ident", wt, []string{"1000", "10"}, "(ident) let checkout write up to 18 times that, more than 1000 bytes, over git.max_checkout_size", "git.max_checkout_size"},
		{"nested", "nested", wt, []string{"1000", "10"}, "(ident) let checkout write up to 18 times that", "git.max_checkout_size"},
		{"crlf", "crlf", wt, []string{"1000", "10"}, "(crlf) let checkout write up to 2 times that", "git.max_checkout_size"},
		{"crlf within", "crlf", wt, []string{"1000000", "10"}, "", ""},
		{"encoding", "utf32", wt, []string{"1000", "10"}, "(crlf, working-tree-encoding) let checkout write up to 8 times that", "git.max_checkout_size"},
		{"look-alike", "identity", wt, []string{"1000", "10"}, "", ""},
		{"not checked out", "big", other, []string{"1000", "10"}, "", ""},
		{"not checked out, no bounds", "big", other, nil, "", ""},
		{"no bounds", "small", wt, nil, "hostd gave no valid bounds", ""},
		{"zero bound", "small", wt, []string{"0", "10"}, "hostd gave no valid bounds", ""},
		{"deleted", "", wt, nil, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.bounds == nil {
				t.Setenv(MaxCheckoutSizeEnv, "")
				os.Unsetenv(MaxCheckoutSizeEnv)
			} else {
				t.Setenv(MaxCheckoutSizeEnv, c.bounds[0])
				t.Setenv(MaxCheckoutFilesEnv, c.bounds[1])
			}
			record := filepath.Join(t.TempDir(), "limit")
			t.Setenv(LimitEnv, record)
			newID := zero
			if c.commit != "" {
				newID = commits[c.commit]
			}
			var stderr bytes.Buffer
			code := RunPreReceive(strings.NewReader(main+" "+newID+" "+c.ref+"\n"), &stderr)
			if c.want == "" && (code != 0 || stderr.Len() > 0) {
				t.Fatalf("refused: exit %d, %q", code, stderr.String())
			}
			if c.want != "" && (code == 0 || !strings.Contains(stderr.String(), c.want)) {
				t.Fatalf("exit %d, %q; want a refusal saying %q", code, stderr.String(), c.want)
			}
			got, _ := os.ReadFile(record)
			if strings.TrimSpace(string(got)) != c.limit {
				t.Errorf("limit recorded: %q, want %q", got, c.limit)
			}
		})
	}
}
