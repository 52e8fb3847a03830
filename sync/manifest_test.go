package sync

import (
	"strings"
	"testing"
)

func TestDecodeManifest(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	cases := []struct {
		name, json, want string
	}{
		{"good", `{"version":1,"entries":[{"path":"results","type":"dir","mode":493},{"path":"results/a","type":"file","mode":420,"size":3,"sha256":"` + hash + `"},{"path":"results/l","type":"symlink","mode":511,"target":"a"}]}`, ""},
		{"version", `{"version":2,"entries":[]}`, "version"},
		{"unknown field", `{"version":1,"entries":[],"extra":1}`, "unknown field"},
		{"trailing data", `{"version":1,"entries":[]} {}`, "after the JSON"},
		{"traversal", `{"version":1,"entries":[{"path":"../x","type":"dir"}]}`, "not a clean path"},
		{"absolute", `{"version":1,"entries":[{"path":"/x","type":"dir"}]}`, "not a clean path"},
		{"the manifest itself", `{"version":1,"entries":[{"path":".sidecar-manifest.json","type":"dir"}]}`, "not a clean path"},
		{"setuid", `{"version":1,"entries":[{"path":"x","type":"dir","mode":2048}]}`, "permission bits"},
		{"type", `{"version":1,"entries":[{"path":"x","type":"fifo"}]}`, "unknown type"},
		{"negative size", `{"version":1,"entries":[{"path":"x","type":"file","size":-1,"sha256":"` + hash + `"}]}`, "bad size"},
		{"bad hash", `{"version":1,"entries":[{"path":"x","type":"file","size":1,"sha256":"zz"}]}`, "bad size or hash"},
		{"symlink out", `{"version":1,"entries":[{"path":"x","type":"symlink","target":"../../etc"}]}`, "leaves the data root"},
		{"duplicate", `{"version":1,"entries":[{"path":"x","type":"dir"},{"path":"x","type":"dir"}]}`, "twice"},
	}
	for _, c := range cases {
		_, err := DecodeManifest([]byte(c.json))
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func FuzzDecodeManifest(f *testing.F) {
	f.Add([]byte(`{"version":1,"entries":[{"path":"results/a","type":"file","mode":420,"size":3,"sha256":"` + strings.Repeat("ab", 32) + `"}]}`))
	f.Add([]byte(`{"version":1,"entries":[{"path":"x","type":"symlink","target":"y"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeManifest(b)
		if err != nil {
			return
		}
		for _, e := range m.Entries {
			if err := e.validate(); err != nil {
				t.Fatalf("accepted an invalid entry: %v", err)
			}
		}
	})
}
