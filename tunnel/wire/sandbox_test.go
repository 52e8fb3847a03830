package wire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestSandboxAnswersHostile: what an agent answers hostd run with is
// checked and bounded: unknown statuses and fields, garbage, what a status
// does not carry, oversized names and errors, out-of-range exit statuses
// and endless answers are refused; a session's two answers are read.
func TestSandboxAnswersHostile(t *testing.T) {
	started := `{"status":"started"}` + "\n"
	cases := []struct {
		name, in, want string // want: the error, or the statuses read
	}{
		{"a session's answers", started + `{"status":"exited","code":7}`, "started exited"},
		{"prepared", `{"status":"prepared","clone":{"dir":"/work/gastown","from":"a","to":"b","stash":"c0ffee","unpushed":2}}`, "prepared"},
		{"failed", `{"status":"failed","error":"fatal: no"}`, "failed"},
		{"unknown status", `{"status":"exited-honest"}`, "unknown status"},
		{"two statuses", `{"status":"prepared started"}`, "unknown status"},
		{"unknown field", `{"status":"started","rig":"other"}`, "unknown field"},
		{"garbage", "\x1b]52;c;aGk=\x07", "invalid"},
		{"negative code", `{"status":"exited","code":-1}`, "exit status -1"},
		{"code too big", `{"status":"exited","code":256}`, "exit status 256"},
		{"code on another status", `{"status":"started","code":3}`, "exit status 3"},
		{"error on another status", `{"status":"exited","error":"x"}`, "does not fit"},
		{"error too long", `{"status":"failed","error":"` + strings.Repeat("x", MaxReasonLen+1) + `"}`, "does not fit"},
		{"prepared without what it did", `{"status":"prepared"}`, "missing"},
		{"what prepare did on a session", `{"status":"started","clone":{"dir":"/w"}}`, "another status"},
		{"name too long", `{"status":"prepared","clone":{"dir":"/w","to":"` + strings.Repeat("b", MaxSandboxText+1) + `"}}`, "over 512 bytes"},
		{"negative commits", `{"status":"prepared","clone":{"dir":"/w","unpushed":-3}}`, "-3 commits"},
		{"endless answers", strings.Repeat(started, MaxSandboxAnswers+1), "more than"},
		{"endless bytes", `{"status":"failed","error":"` + strings.Repeat("x", MaxSandboxAnswers*MaxSandboxAnswer), "unexpected EOF"},
	}
	for _, c := range cases {
		r := NewSandboxAnswers(strings.NewReader(c.in))
		var got []string
		var err error
		for {
			var a SandboxAnswer
			if a, err = r.Next(); err != nil {
				break
			}
			got = append(got, a.Status)
		}
		res := strings.Join(got, " ")
		if !errors.Is(err, io.EOF) {
			res = err.Error()
		}
		if !strings.Contains(res, c.want) {
			t.Errorf("%s: %q, want %q", c.name, res, c.want)
		}
	}
}

// TestSandboxRequest: the agent reads back what hostd wrote, and refuses
// requests it cannot act on, unknown fields and oversized ones.
func TestSandboxRequest(t *testing.T) {
	session := SandboxRequest{Op: SandboxSession, Tag: "t1", Command: []string{"claude", "--x"}, Env: []string{"GT_RIG=gastown", "K=a=b\nc"}}
	cases := []struct {
		name string
		in   string
		want string // "" for accepted
	}{
		{"session", "", ""},
		{"prepare", `{"op":"prepare","branch":"polecat/toast-1","name":"toast","email":"op@example.com"}`, ""},
		{"stop", `{"op":"stop","tag":"t1"}`, ""},
		{"unknown op", `{"op":"exec","tag":"t1"}`, "unknown operation"},
		{"unknown field", `{"op":"stop","tag":"t1","dir":"/etc"}`, "unknown field"},
		{"no tag", `{"op":"wait"}`, "needs the session's tag"},
		{"no command", `{"op":"session","tag":"t1"}`, "needs its command"},
		{"branch as an option", `{"op":"prepare","branch":"--upload-pack=x"}`, "reads as an option"},
		{"too big", `{"op":"session","tag":"t1","command":["` + strings.Repeat("x", MaxSandboxRequest) + `"]}`, "unexpected EOF"},
	}
	for _, c := range cases {
		var buf bytes.Buffer
		if c.in == "" {
			if err := WriteSandboxRequest(&buf, session); err != nil {
				t.Fatal(err)
			}
		} else {
			buf.WriteString(c.in)
		}
		req, err := ReadSandboxRequest(&buf)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error about %q", c.name, err, c.want)
		case c.in == "" && strings.Join(req.Env, "|") != strings.Join(session.Env, "|"):
			t.Errorf("read back %+v, wrote %+v", req, session)
		}
	}
	big := SandboxRequest{Op: SandboxSession, Tag: "t", Command: []string{strings.Repeat("x", MaxSandboxRequest)}}
	if err := WriteSandboxRequest(io.Discard, big); err == nil {
		t.Error("a request over MaxSandboxRequest was written")
	}
}

func FuzzSandboxAnswers(f *testing.F) {
	f.Add([]byte(`{"status":"started"}` + "\n" + `{"status":"exited","code":3}`))
	f.Add([]byte(`{"status":"prepared","clone":{"dir":"/work/gastown","cloned":true,"to":"polecat/toast-1"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewSandboxAnswers(bytes.NewReader(b))
		for range MaxSandboxAnswers + 2 {
			a, err := r.Next()
			if err != nil {
				return
			}
			// Whatever is accepted survives a round trip unchanged.
			var buf bytes.Buffer
			if err := WriteSandboxAnswer(&buf, a); err != nil {
				t.Fatalf("%+v: %v", a, err)
			}
			again, err := NewSandboxAnswers(&buf).Next()
			if err != nil || again.Status != a.Status || again.Code != a.Code || again.Error != a.Error || (again.Clone == nil) != (a.Clone == nil) {
				t.Fatalf("round trip of %+v: %+v %v", a, again, err)
			}
		}
		t.Fatal("more answers than MaxSandboxAnswers were read")
	})
}

func FuzzReadSandboxRequest(f *testing.F) {
	f.Add([]byte(`{"op":"session","tag":"t1","command":["claude"],"env":["GT_RIG=gastown"]}`))
	f.Add([]byte(`{"op":"prepare","branch":"polecat/toast-1"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := ReadSandboxRequest(bytes.NewReader(b))
		if err != nil {
			return
		}
		if req.Validate() != nil || req.Op != SandboxPrepare && req.Tag == "" {
			t.Fatalf("accepted %+v", req)
		}
	})
}
