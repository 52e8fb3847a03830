//go:build e2e

package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	harness "github.com/polecat-sidecar/sidecar/hostd/e2e"
)

// TestImageClaudeCode: Dockerfile.polecat built on the local base (no
// Claude Code) still builds and says claude is missing; built on a base
// that has Claude Code installed for its uid-1000 user, as Anthropic's
// native installer leaves it in docker/sandbox-templates:claude-code
// (~/.local/bin/claude, a link into ~/.local/share/claude/versions), the
// polecat runs that claude; and the CLAUDE_CODE build argument is wired (a
// value it does not know fails the build, naming it). Installing with npm
// needs a registry, which the suite does not count on.
func TestImageClaudeCode(t *testing.T) {
	out, err := exec.Command("../base/build.sh").Output()
	if err != nil {
		t.Fatalf("images/base/build.sh: %v", err)
	}
	base := strings.TrimSpace(string(out))
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	tag := "pe2e-image-" + hex.EncodeToString(b)

	// A Claude Code base: the local one with an 'agent' user whose
	// native-installed claude is a stand-in saying its version.
	claudeBase := tag + "-claude-base"
	dir := t.TempDir()
	harness.WriteFile(t, filepath.Join(dir, "Dockerfile"), `FROM `+base+`
RUN useradd -u 1000 -m agent && mkdir -p /home/agent/.local/bin /home/agent/.local/share/claude/versions && \
    printf '#!/bin/sh\necho "claude stand-in 9.9.9 $*"\n' > /home/agent/.local/share/claude/versions/9.9.9 && \
    chmod 0755 /home/agent/.local/share/claude/versions/9.9.9 && \
    ln -s /home/agent/.local/share/claude/versions/9.9.9 /home/agent/.local/bin/claude && chown -R agent:agent /home/agent
USER agent
`)
	if out, err := tryDocker("build", "--force-rm", "-q", "-t", claudeBase, dir); err != nil {
		t.Fatalf("building the Claude Code base: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		_, _ = tryDocker("rmi", "-f", claudeBase)
		_, _ = tryDocker("image", "prune", "-f", "--filter", "label=polecat-sidecar.stage=build") // as 'make image' does
	})

	// The build context 'make image' gives: the binaries and the settings.
	ctx := t.TempDir()
	for _, f := range []string{"gt-agent", "gt"} {
		copyFile(t, filepath.Join(harness.BinDir, f), filepath.Join(ctx, "bin", f))
	}
	copyFile(t, "../claude-settings.json", filepath.Join(ctx, "images", "claude-settings.json"))

	for _, tc := range []struct {
		name, base, claudeCode string
		built                  []string // in the build's output; the build fails when it has "want npm"
		claude                 string   // what 'claude hello' prints in the image; "" wants no claude
	}{
		{"the local base", base, "", []string{"no Claude Code (claude) in this image"}, ""},
		{"a base with Claude Code", claudeBase, "", []string{"Claude Code is /usr/local/bin/claude"}, "claude stand-in 9.9.9 hello"},
		{"CLAUDE_CODE unknown", base, "yarn", []string{"CLAUDE_CODE=yarn: want npm or npm:<version>"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			image := tag + "-" + strings.ReplaceAll(strings.ToLower(tc.name), " ", "-")
			out, err := tryDocker("build", "--force-rm", "-f", "../../Dockerfile.polecat", "-t", image, "--build-arg", "BASE_IMAGE="+tc.base,
				"--build-arg", "GO_IMAGE="+base, "--build-arg", "PREBUILT=true", "--build-arg", "CLAUDE_CODE="+tc.claudeCode, ctx)
			t.Cleanup(func() { _, _ = tryDocker("rmi", "-f", image) })
			for _, want := range tc.built {
				if !strings.Contains(out, want) {
					t.Errorf("the build does not say %q:\n%s", want, out)
				}
			}
			if strings.Contains(strings.Join(tc.built, ""), "want npm") {
				if err == nil {
					t.Error("the build succeeded")
				}
				return
			}
			if err != nil {
				t.Fatalf("build: %v\n%s", err, out)
			}
			got, err := tryDocker("run", "--rm", "--entrypoint", "sh", image, "-c", "id -un; command -v claude && claude hello")
			lines := strings.Split(strings.TrimSpace(got), "\n")
			if lines[0] != "polecat" {
				t.Errorf("the image runs as %q, want polecat", lines[0])
			}
			if tc.claude == "" && err == nil || tc.claude != "" && !strings.Contains(got, tc.claude) {
				t.Errorf("claude in the image: %v\n%s\nwant %q", err, got, tc.claude)
			}
		})
	}
}

// copyFile copies src to dst, making dst's directory, keeping src's mode.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, st.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
}
