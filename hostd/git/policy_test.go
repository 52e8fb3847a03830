package git

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

var furiosa = wire.Identity{Rig: "gastown", Name: "furiosa"}

func TestAllowedRef(t *testing.T) {
	allowed := []string{
		"refs/heads/polecat/furiosa-abc",
		"refs/heads/polecat/furiosa-gt-123-x",
		"refs/heads/polecat/furiosa/gt-42@1700000000",
		"refs/heads/polecat/furiosa/a/b",
	}
	for _, r := range allowed {
		if ok, why := AllowedRef(furiosa, r); !ok {
			t.Errorf("%s refused: %s", r, why)
		}
	}
	refused := []string{
		"refs/heads/main", "refs/heads/master", "HEAD", "main", "",
		"refs/heads/polecat/furiosa", "refs/heads/polecat/furiosa-", "refs/heads/polecat/furiosa/",
		"refs/heads/polecat/furiosa2-x", "refs/heads/polecat/furiosaX/y", "refs/heads/polecat/Furiosa-x",
		"refs/heads/polecat/nux-abc", "refs/heads/polecat/nux/furiosa-x", "refs/heads/polecat/-furiosa-x",
		"refs/tags/polecat/furiosa-x", "refs/notes/commits", "refs/remotes/origin/polecat/furiosa-x",
		"refs/heads/x/refs/heads/polecat/furiosa-x", "polecat/furiosa-x", "refs/heads//polecat/furiosa-x",
		" refs/heads/polecat/furiosa-x",
	}
	for _, r := range refused {
		if ok, _ := AllowedRef(furiosa, r); ok {
			t.Errorf("%q allowed", r)
		}
	}
}

// FuzzAllowedRef: whatever the ref name, one polecat's allowance never
// covers a ref outside its own two prefixes, nor another polecat's.
func FuzzAllowedRef(f *testing.F) {
	f.Add("refs/heads/polecat/furiosa-x")
	f.Add("refs/heads/polecat/furiosa2-x")
	f.Fuzz(func(t *testing.T, ref string) {
		ok, _ := AllowedRef(furiosa, ref)
		if !ok {
			return
		}
		if !strings.HasPrefix(ref, "refs/heads/polecat/furiosa-") && !strings.HasPrefix(ref, "refs/heads/polecat/furiosa/") {
			t.Fatalf("%q allowed outside furiosa's prefixes", ref)
		}
		if ok2, _ := AllowedRef(wire.Identity{Rig: "gastown", Name: "furiosa2"}, ref); ok2 {
			t.Fatalf("%q allowed for two polecats", ref)
		}
	})
}

func TestProtocolEnv(t *testing.T) {
	for h, want := range map[string]string{"": "", "version=2": "GIT_PROTOCOL=version=2", "version=1": "GIT_PROTOCOL=version=1"} {
		env, err := protocolEnv(h)
		if err != nil || strings.Join(env, "") != want {
			t.Errorf("%q: %v %v", h, env, err)
		}
	}
	for _, h := range []string{"version=0", "version=3", "version=2:object-format=sha256", "version=2\nGIT_DIR=/etc", "version=2 ", "VERSION=2", strings.Repeat("x", 1000)} {
		if _, err := protocolEnv(h); err == nil {
			t.Errorf("%q accepted", h)
		}
	}
}

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
