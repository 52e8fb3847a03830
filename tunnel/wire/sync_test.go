package wire

import (
	"bytes"
	"strings"
	"testing"
)

func TestReadSyncResultHostile(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"good", `{"files":2,"bytes":10,"changes":[{"path":"a","action":"merged"}]}`, ""},
		{"unknown field", `{"files":1,"owned":true}`, "unknown field"},
		{"not json", "\x00\x01garbage", "invalid"},
		{"empty", "", "EOF"},
		{"too long", `{"error":"` + strings.Repeat("x", MaxSyncResult) + `"}`, "unexpected EOF"},
	}
	for _, c := range cases {
		_, err := ReadSyncResult(strings.NewReader(c.in))
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	var buf bytes.Buffer
	if err := WriteSyncResult(&buf, SyncResult{Files: 3, Error: "x"}); err != nil {
		t.Fatal(err)
	}
	if r, err := ReadSyncResult(&buf); err != nil || r.Files != 3 || r.Error != "x" {
		t.Errorf("round trip: %+v %v", r, err)
	}
}

func FuzzReadSyncResult(f *testing.F) {
	f.Add([]byte(`{"files":2,"bytes":10,"changes":[{"path":"a","action":"merged"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ReadSyncResult(bytes.NewReader(b))
		if err != nil {
			return
		}
		// What was accepted survives a round trip unchanged.
		var first, second bytes.Buffer
		_ = WriteSyncResult(&first, r)
		again, err := ReadSyncResult(bytes.NewReader(first.Bytes()))
		_ = WriteSyncResult(&second, again)
		if err != nil || !bytes.Equal(first.Bytes(), second.Bytes()) {
			t.Fatalf("round trip of %s: %s, %v", first.Bytes(), second.Bytes(), err)
		}
	})
}
