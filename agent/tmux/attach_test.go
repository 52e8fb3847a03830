package tmux

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAttach: a client attached in a container with no locale set shows
// the pane's non-ASCII text as it is (tmux would draw it as '_' outside
// a UTF-8 locale), is read-only unless asked to write, and follows its
// terminal's size.
func TestAttach(t *testing.T) {
	for _, k := range []string{"LC_ALL", "LC_CTYPE", "LANG"} {
		t.Setenv(k, "")
	}
	sock := []string{"-S", filepath.Join(t.TempDir(), "tmux.sock")}
	srv := Server{Args: sock}
	t.Cleanup(func() { _ = exec.Command("tmux", append(sock, "kill-server")...).Run() })
	if err := srv.NewSession(context.Background(), "polecat", Spawn{Argv: []string{"sh", "-c", "printf 'caf\\303\\251 \\342\\234\\223\\n'; sleep 30"}}); err != nil {
		t.Fatal(err)
	}
	for _, write := range []bool{false, true} {
		cmd, term, err := srv.Attach("polecat", write, 100, 30)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		read := make(chan struct{})
		go func() {
			defer close(read)
			buf := make([]byte, 4096)
			for {
				n, err := term.Read(buf)
				out.Write(buf[:n])
				if err != nil || bytes.Contains(out.Bytes(), []byte("café ✓")) {
					return
				}
			}
		}()
		select {
		case <-read:
		case <-time.After(5 * time.Second):
		}
		if !bytes.Contains(out.Bytes(), []byte("café ✓")) {
			t.Errorf("write=%v: the client's screen lacks %q: %q", write, "café ✓", out.String())
		}
		client := func(format string) string {
			b, _ := exec.Command("tmux", append(sock, "list-clients", "-t", "=polecat", "-F", format)...).Output()
			return strings.TrimSpace(string(b))
		}
		if got, want := client("#{client_readonly}"), map[bool]string{false: "1", true: "0"}[write]; got != want {
			t.Errorf("write=%v: client_readonly %q, want %q", write, got, want)
		}
		if err := SetSize(term, 120, 40); err != nil {
			t.Fatal(err)
		}
		size := ""
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if size = client("#{client_width}x#{client_height}"); size == "120x40" {
				break
			}
		}
		if size != "120x40" {
			t.Errorf("write=%v: client size %q after SetSize(120, 40)", write, size)
		}
		_ = cmd.Process.Signal(syscall.SIGHUP)
		_ = cmd.Wait()
		term.Close()
		<-read
	}
}
