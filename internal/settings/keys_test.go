package settings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckKeys: a config file's key that names no setting is refused,
// with the nearest known key; keys under a map setting are its entries.
func TestCheckKeys(t *testing.T) {
	var c config
	list := table(&c)
	cases := []struct {
		name, yaml string
		want       []string // each part of the error; none: accepted
	}{
		{"known keys", "listen: ':1'\nrelay:\n  max_streams: 3\n  allow:\n    gt: [prime]\n    bd: []\n", nil},
		{"misspelt", "cert_tll: 1h\n", []string{"cert_tll is not a setting (did you mean cert_ttl?)"}},
		{"misspelt and nested", "relay:\n  max_stream: 3\n", []string{"relay.max_stream is not a setting (did you mean relay.max_streams?)"}},
		{"at the wrong level", "max_streams: 3\n", []string{"max_streams is not a setting (did you mean relay.max_streams?)"}},
		{"nothing near", "colour: blue\n", []string{"colour is not a setting"}},
		{"each one", "lisen: x\nupstream: true\n", []string{"lisen is not a setting (did you mean listen?)", "upstream is not a setting (did you mean git.upstream?)"}},
		{"under a plain setting", "cert_ttl:\n  hours: 1\n", []string{"cert_ttl.hours is not a setting"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(p, []byte(c.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			keys, err := FileKeys(p)
			if err != nil {
				t.Fatal(err)
			}
			err = CheckKeys(keys, list)
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			for _, w := range c.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("error %v, want it to say %q", err, w)
				}
			}
		})
	}
	if _, err := FileKeys(filepath.Join(t.TempDir(), "none.yaml")); err == nil {
		t.Error("FileKeys of a missing file succeeded")
	}
}

// TestCheckEnv: a variable with the command's prefix that names no
// setting is refused, with the nearest that does; other variables and
// a setting's other variables are left alone.
func TestCheckEnv(t *testing.T) {
	list := []Setting{{Key: "idle_timeout"}, {Key: "liveness.grace"}, {Key: "town", Env: []string{"GT_TOWN"}}}
	cases := []struct {
		env  []string
		want string
	}{
		{[]string{"TEST_IDLE_TIMEOUT=1s", "TEST_LIVENESS_GRACE=1m", "GT_TOWN=/t", "PATH=/bin", "TESTING=1"}, ""},
		{[]string{"TEST_IDLE_TIMOUT=1s"}, "environment variable TEST_IDLE_TIMOUT is not a setting (did you mean TEST_IDLE_TIMEOUT?)"},
		{[]string{"TEST_GRACE=1m"}, "TEST_GRACE is not a setting (did you mean TEST_LIVENESS_GRACE?)"},
	}
	for _, c := range cases {
		err := CheckEnv(c.env, "TEST", list)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v: error %v, want %q", c.env, err, c.want)
		}
	}
}
