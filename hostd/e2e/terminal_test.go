package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/polecat-sidecar/sidecar/hostd/api"

	"github.com/polecat-sidecar/sidecar/heartbeat"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Issue 20, items 5 and 6: what a polecat sends reached the operator's
// terminal raw (a refusal reason through peek and attach, C1 controls
// through peek --json), peek --follow grew without bound on a pane with
// no newline, the attach filter let answer-back requests through, and a
// read-only attach forwarded the operator's keys to a hostile agent.

// evil is what a hostile polecat puts in everything it sends: a clipboard
// write, a screen clear, a title, C1 CSI and OSC (as UTF-8 and as a raw
// byte), a bidi override, a carriage return and DEL. marker is part of it
// that shows, escaped, wherever it is printed.
const (
	evil   = "\x1b]52;c;cHduZWQ=\x07\x1b[2J\x1b]0;owned\x1b\\\u009b6n\u009d0;t\u009c\u202eexe.txt\x9b\r\x7f\x1bZ"
	marker = "]52;c;cHduZWQ="
)

// evilScreen is what the hostile agent's "terminal" sends to an attach,
// and screenShown what the operator's terminal may get of it: colours, the
// screen clear and the carriage return; what a dropped C1 introducer
// leaves as text; nothing else.
const (
	evilScreen  = "hello\x1b[31mred\x1b[0m" + evil + "\x1b[6n\x1b[c\x1b[?u\x1b[1$w\x1b[?2004$p\x1b%@\x9b6n\x1bP$qm\x1b\\\x1b_x\x1b\\bye"
	screenShown = "hello\x1b[31mred\x1b[0m\x1b[2J6n0;texe.txt\r6nbye"
)

// hostileAgent is a polecat's own client on the tunnel: it beats with
// evil in every string, and answers every stream hostd opens with evil.
type hostileAgent struct {
	s *tunnel.Session
	// keys receives every attach input frame that reaches it, resizes
	// receives every resize.
	keys, resizes chan []byte
}

// startHostileAgent dials hostd as id and serves it until the test ends.
func startHostileAgent(t *testing.T, tw *Town, addr, id string) *hostileAgent {
	t.Helper()
	h := &hostileAgent{s: newAttacker(t, tw, addr, id).mustDial(tunnel.TransportQUIC, tunnel.Config{}),
		keys: make(chan []byte, 100), resizes: make(chan []byte, 100)}
	beats, err := h.s.OpenStream(context.Background(), wire.KindHeartbeat, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		w := heartbeat.NewWriter(beats)
		for seq := uint64(1); ; seq++ {
			b := &heartbeat.Beat{Seq: seq, Interval: 0.5, Session: heartbeat.Session{Name: "polecat" + evil, State: heartbeat.SessionRunning,
				Command: evil + "claude", Processes: 1, Names: []string{"node" + evil}, IdleSeconds: -1}, Agent: heartbeat.Agent{Version: "v1" + evil}}
			if w.Write(b) != nil {
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
	}()
	go func() {
		for {
			st, err := h.s.AcceptStream(context.Background())
			if err != nil {
				return
			}
			go h.serve(st)
		}
	}()
	return h
}

// serve answers one stream hostd opened. Pane requests choose what they
// get by their size: a peek of 6 lines and an attach 81 columns wide are
// refused, a peek of 7 lines gets 64 MiB with no newline.
func (h *hostileAgent) serve(st *tunnel.Stream) {
	defer st.Close()
	switch st.Kind() {
	case wire.KindPane:
		var req wire.PaneRequest
		_ = st.DecodeMeta(&req)
		switch {
		case req.Op == wire.PanePeek && req.Lines == 6, req.Op == wire.PaneAttach && req.Cols == 81:
			_ = st.Reject("no" + evil)
		case req.Op == wire.PanePeek && req.Lines == 7:
			chunk := bytes.Repeat([]byte("x"), 256<<10)
			for range 256 {
				if _, err := st.Write(chunk); err != nil {
					return
				}
			}
			_, _ = io.Copy(io.Discard, st) // until hostd ends the peek
		case req.Op == wire.PanePeek:
			_, _ = st.Write([]byte("pane" + evil + "\n\tsecond" + evil + "\nno newline" + evil))
		case req.Cols == 80: // the CLI's attach: a screen, and the end
			_, _ = st.Write([]byte(evilScreen))
		default: // a terminal that types what it is sent
			_, _ = st.Write([]byte("$ "))
			buf := make([]byte, wire.MaxPaneFrame)
			for {
				typ, payload, _, _, err := wire.ReadPaneFrame(st, buf)
				if err != nil {
					return
				}
				ch := h.keys
				if typ == wire.PaneResize {
					ch = h.resizes
				}
				ch <- bytes.Clone(payload)
			}
		}
	case wire.KindNudge:
		var req wire.NudgeRequest
		_ = st.DecodeMeta(&req)
		text := make([]byte, req.Size)
		_, _ = io.ReadFull(st, text)
		outcome := wire.NudgeBusy
		if strings.Contains(string(text), "fail") {
			outcome = wire.NudgeFailed
		}
		_ = wire.WriteNudgeResult(st, wire.NudgeResult{Outcome: outcome, At: time.Now(), Detail: "typed" + evil})
	default:
		_ = st.Reject(st.Kind() + evil)
	}
}

// printable fails t if out holds anything a terminal would obey: a C0
// control but newline and tab, ESC, DEL, a C1 control as a raw byte or as
// UTF-8, or a bidirectional control.
func printable(t *testing.T, what string, out []byte) {
	t.Helper()
	if !utf8.Valid(out) {
		t.Errorf("%s: not UTF-8 (a raw C1 byte?): %q", what, out)
		return
	}
	for i, r := range string(out) {
		if r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f ||
			r == 0x061c || r == 0x200e || r == 0x200f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 {
			t.Errorf("%s: %U reached the terminal at byte %d: %q", what, r, i, out)
			return
		}
	}
}

// runSplit runs bin from BinDir and returns its stdout and stderr apart.
func runSplit(bin string, args ...string) (stdout, stderr []byte, err error) {
	cmd := exec.Command(filepath.Join(BinDir, bin), args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.Bytes(), e.Bytes(), err
}

// TestHostileTerminalText walks every hostd and gt-agent command that
// prints what a polecat sent, with a hostile agent putting escape
// sequences, C1 and bidi controls in all of it: none reaches stdout or
// stderr raw, and each shows the polecat's text escaped.
func TestHostileTerminalText(t *testing.T) {
	tw := NewTown(t)
	hostd, addr := tw.Serve()
	h := startHostileAgent(t, tw, addr, "gastown/furiosa")
	tw.WaitStatus(10*time.Second, InState("furiosa", "working"))
	hostdCmd := func(args ...string) []string { return append([]string{"--town", tw.Dir}, args...) }
	type step struct {
		bin  string
		args []string
		want string // what of the polecat's text it must show, escaped
	}
	walk := func(steps []step) {
		t.Helper()
		for _, s := range steps {
			what := s.bin + " " + strings.Join(s.args, " ")
			if s.bin == "hostd" {
				what = "hostd " + strings.Join(s.args[2:], " ")
			}
			stdout, stderr, err := runSplit(s.bin, s.args...)
			printable(t, what+" (stdout)", stdout)
			printable(t, what+" (stderr)", stderr)
			if !strings.Contains(string(stdout)+string(stderr), s.want) {
				t.Errorf("%s shows no %q (exit %v):\nstdout: %s\nstderr: %s", what, s.want, err, stdout, stderr)
			}
		}
	}
	walk([]step{
		{"hostd", hostdCmd("status"), `\x1b]52;c;c`},
		{"hostd", hostdCmd("status", "--json"), marker},
		{"hostd", hostdCmd("status", "gastown/furiosa"), marker},
		{"hostd", hostdCmd("status", "gastown/furiosa", "--json"), marker},
		{"hostd", hostdCmd("peek", "gastown/furiosa", "--lines", "5"), marker},
		{"hostd", hostdCmd("peek", "gastown/furiosa", "--lines", "5", "--json"), marker},
		{"hostd", hostdCmd("peek", "gastown/furiosa", "--lines", "5", "--follow"), marker},
		{"hostd", hostdCmd("peek", "gastown/furiosa", "--lines", "5", "--follow", "--json"), marker},
		{"hostd", hostdCmd("peek", "gastown/furiosa", "--lines", "6"), marker},
		{"hostd", hostdCmd("nudge", "gastown/furiosa", "--mode", "immediate", "fail"), marker},
		{"hostd", hostdCmd("nudge", "gastown/furiosa", "--mode", "immediate", "--json", "fail"), marker},
		{"hostd", hostdCmd("nudge", "gastown/furiosa", "--mode", "immediate", "--wait", "2s", "wait"), marker},
		{"hostd", hostdCmd("nudge", "gastown/furiosa", "--list"), `\x1b]52`},
		{"hostd", hostdCmd("nudge", "gastown/furiosa", "--list", "--json"), marker},
		{"hostd", hostdCmd("sync", "pull", "gastown/furiosa"), marker},
		{"hostd", hostdCmd("sync", "pull", "gastown/furiosa", "--json"), marker},
		{"hostd", hostdCmd("sync", "push", "gastown/furiosa"), marker},
		{"gt-agent", []string{"hook", "--socket", "/nonexistent/" + evil, "Stop"}, marker},
		{"gt-agent", []string{"up", "--config", "/nonexistent/" + evil}, marker},
	})
	attachShows(t, tw, 80, screenShown, "")
	attachShows(t, tw, 81, "", marker)

	_ = h.s.CloseWithReason("bye" + evil)
	tw.WaitStatus(5*time.Second, InState("furiosa", "disconnected"))
	walk([]step{
		{"hostd", hostdCmd("status", "gastown/furiosa"), marker},
		{"hostd", hostdCmd("status", "gastown/furiosa", "--json"), marker},
		{"hostd", hostdCmd("alive", "gastown/furiosa"), marker},
		{"hostd", hostdCmd("sync", "log"), ""},
		{"hostd", hostdCmd("sync", "log", "--json"), ""},
	})
	printable(t, "hostd serve's log", []byte(hostd.Output()))
}

// attachShows runs hostd attach in a terminal cols wide (script(1) gives
// it one; its stderr is kept apart) against the hostile agent, and checks
// the terminal gets exactly screen and stderr shows want, escaped.
func attachShows(t *testing.T, tw *Town, cols int, screen, want string) {
	t.Helper()
	errFile := filepath.Join(t.TempDir(), "stderr")
	shell := fmt.Sprintf("stty cols %d rows 24 && exec %s --town %s attach gastown/furiosa 2>%s",
		cols, filepath.Join(BinDir, "hostd"), tw.Dir, errFile)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "script", "-qec", shell, "/dev/null")
	in, keep, err := os.Pipe() // held open: an EOF would end script
	if err != nil {
		t.Fatal(err)
	}
	defer keep.Close()
	cmd.Stdin = in
	terminal, err := cmd.Output()
	in.Close()
	stderr, _ := os.ReadFile(errFile)
	printable(t, "hostd attach (stderr)", stderr)
	if !strings.Contains(string(stderr), want) {
		t.Errorf("hostd attach %d columns: stderr shows no %q (%v): %q", cols, want, err, stderr)
	}
	if got := strings.ReplaceAll(string(terminal), "\r\n", "\n"); screen != "" && got != screen {
		t.Errorf("hostd attach (%v): the terminal got %q, want %q; stderr %q", err, got, screen, stderr)
	}
}

// TestHostileReadOnlyAttach: a read-only attach to a hostile agent that
// types whatever it is sent gets no key from hostd, only resizes; with
// write on the keys arrive (so the test would see them).
func TestHostileReadOnlyAttach(t *testing.T) {
	tw := NewTown(t)
	_, addr := tw.Serve()
	h := startHostileAgent(t, tw, addr, "gastown/furiosa")
	tw.WaitStatus(10*time.Second, InState("furiosa", "working"))
	id := wire.Identity{Rig: "gastown", Name: "furiosa"}
	for _, write := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		conn, err := tw.Client().Attach(ctx, api.Identity(id), write, 90, 30)
		if err != nil {
			t.Fatal(err)
		}
		for _, keys := range []string{"rm -rf ~\r", "\x1b[12;1R", "\x03"} {
			if err := wire.WritePaneFrame(conn, wire.PaneInput, []byte(keys)); err != nil {
				t.Fatal(err)
			}
		}
		_ = wire.WritePaneFrame(conn, wire.PaneResize, wire.ResizePayload(100, 40))
		select {
		case <-h.resizes:
		case <-time.After(5 * time.Second):
			t.Fatalf("write %v: the resize never reached the agent", write)
		}
		var typed []string
		for more := true; more; {
			select {
			case k := <-h.keys:
				typed = append(typed, string(k))
			case <-time.After(500 * time.Millisecond):
				more = false
			}
		}
		if !write && len(typed) > 0 {
			t.Errorf("read-only attach: the agent received keys %q", typed)
		}
		if write && strings.Join(typed, "") != "rm -rf ~\r\x1b[12;1R\x03" {
			t.Errorf("read-write attach: the agent received %q", typed)
		}
		conn.Close()
		cancel()
	}
}

// TestHostilePeekNoNewline: a pane that sends 64 MiB with no newline to
// peek --follow grew the CLI to 900 MiB; now it holds a 64 KiB piece.
func TestHostilePeekNoNewline(t *testing.T) {
	tw := NewTown(t)
	_, addr := tw.Serve()
	startHostileAgent(t, tw, addr, "gastown/furiosa")
	tw.WaitStatus(10*time.Second, InState("furiosa", "working"))
	cmd := exec.Command(filepath.Join(BinDir, "hostd"), "--town", tw.Dir, "peek", "gastown/furiosa", "--lines", "7", "--follow")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	read, longest := 0, 0
	lines := bufio.NewReaderSize(stdout, 1<<20)
	for read < 63<<20 { // the last piece waits for more, or the end
		line, err := lines.ReadSlice('\n')
		if err != nil {
			t.Fatalf("peek after %d bytes: %v (a line over 1 MiB?)", read, err)
		}
		longest = max(longest, len(line)-1)
		read += len(line)
	}
	status, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	var peakKiB int
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			peakKiB, _ = strconv.Atoi(strings.Fields(v)[0])
		}
	}
	t.Logf("peek --follow read %d MiB with no newline: peak RSS %d MiB, longest line %d bytes", read>>20, peakKiB>>10, longest)
	if longest > 64<<10 {
		t.Errorf("a line of %d bytes printed, bound 64 KiB", longest)
	}
	if peakKiB > 48<<10 {
		t.Errorf("peek --follow peaked at %d MiB resident, bound 48 MiB", peakKiB>>10)
	}
}
