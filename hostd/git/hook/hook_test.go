package hook

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/hostd/git/branch"
)

// TestPreReceive runs the hook in a real repository.
func TestPreReceive(t *testing.T) {
	repo := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", "--bare", repo).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	// Dangling: main does not exist in this empty repository, and a push
	// through the symref would create it.
	if out, err := exec.Command("git", "-C", repo, "symbolic-ref", "refs/heads/polecat/furiosa-sym", "refs/heads/main").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	t.Chdir(repo)
	zero := strings.Repeat("0", 40)
	one := strings.Repeat("1", 40)
	cases := []struct {
		identity, updates string
		ok                bool
		want              string
	}{
		{"gastown/furiosa", zero + " " + one + " refs/heads/polecat/furiosa-a\n", true, ""},
		{"gastown/furiosa", one + " " + zero + " refs/heads/polecat/furiosa/b\n", true, ""},
		{"gastown/furiosa", zero + " " + one + " refs/heads/polecat/furiosa-a\n" + zero + " " + one + " refs/heads/main\n", false, "refusing refs/heads/main"},
		{"gastown/furiosa", zero + " " + one + " refs/heads/polecat/furiosa-sym\n", false, "symbolic ref to refs/heads/main"},
		{"gastown/furiosa", "garbage\n", false, "malformed update line"},
		{"", zero + " " + one + " refs/heads/polecat/furiosa-a\n", false, "no polecat identity"},
		{"gastown", zero + " " + one + " refs/heads/polecat/furiosa-a\n", false, "no polecat identity"},
		{"gastown/furiosa/x", zero + " " + one + " refs/heads/polecat/furiosa-a\n", false, "no polecat identity"},
	}
	t.Setenv(PatternsEnv, strings.Join(branch.DefaultPatterns, ","))
	t.Setenv(PolecatsEnv, "furiosa,nux")
	for _, c := range cases {
		t.Setenv(IdentityEnv, c.identity)
		if c.identity == "" {
			os.Unsetenv(IdentityEnv)
		}
		var stderr bytes.Buffer
		code := RunPreReceive(strings.NewReader(c.updates), &stderr)
		if (code == 0) != c.ok || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("identity %q updates %q: exit %d, %q", c.identity, c.updates, code, stderr.String())
		}
	}
}

// TestPreReceiveFailsClosed: without the rig's branch patterns from hostd,
// or with patterns it cannot use, nothing is accepted.
func TestPreReceiveFailsClosed(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv(IdentityEnv, "gastown/furiosa")
	update := strings.Repeat("0", 40) + " " + strings.Repeat("1", 40) + " refs/heads/polecat/furiosa-a\n"
	for name, patterns := range map[string]*string{"unset": nil, "not usable": ptr("polecat/*"), "no name": ptr("x")} {
		if patterns == nil {
			os.Unsetenv(PatternsEnv)
		} else {
			t.Setenv(PatternsEnv, *patterns)
		}
		var stderr bytes.Buffer
		if code := RunPreReceive(strings.NewReader(update), &stderr); code == 0 || !strings.Contains(stderr.String(), "no valid branch patterns") {
			t.Errorf("%s: exit %d, %q", name, code, stderr.String())
		}
	}
}

func ptr(s string) *string { return &s }
