package git

import (
	"log/slog"
	"maps"
	"path/filepath"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/settings/settingstest"
)

func TestPorcelainResults(t *testing.T) {
	cases := []struct {
		name, out string
		want      map[string]bool
	}{
		{"mixed", "To /srv/origin.git\n*\trefs/heads/polecat/a:refs/heads/polecat/a\t[new branch]\n+\trefs/heads/polecat/b:refs/heads/polecat/b\t1a2b...3c4d (forced update)\n-\t:refs/heads/polecat/c\t[deleted]\n=\trefs/heads/polecat/d:refs/heads/polecat/d\t[up to date]\n!\trefs/heads/polecat/e:refs/heads/polecat/e\t[rejected] (fetch first)\nDone\n",
			map[string]bool{"refs/heads/polecat/a": true, "refs/heads/polecat/b": true, "refs/heads/polecat/c": true, "refs/heads/polecat/d": true, "refs/heads/polecat/e": false}},
		{"total failure", "fatal: 'origin' does not appear to be a git repository\n", map[string]bool{}},
		{"junk", "\t\t\n!!\ta\tb\n*\tno-colon\tx\n", map[string]bool{}},
	}
	for _, c := range cases {
		if got := porcelainResults(c.out); !maps.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestRefTips(t *testing.T) {
	got := refTips("abc\trefs/heads/main\ndef refs/heads/polecat/x\n\nbroken line with words\n")
	want := map[string]string{"refs/heads/main": "abc", "refs/heads/polecat/x": "def"}
	if !maps.Equal(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
}

// TestUpstreamConfig: OpenUpstream takes zero fields as the defaults and
// refuses a field out of its range, naming it.
func TestUpstreamConfig(t *testing.T) {
	open := func(c UpstreamConfig) error {
		_, err := OpenUpstream(t.TempDir(), filepath.Join(t.TempDir(), "upstream.json"), c, slog.New(slog.DiscardHandler))
		return err
	}
	settingstest.Run(t, DefaultUpstreamConfig, open, []settingstest.Case[UpstreamConfig]{
		{Name: "defaults"},
		{Name: "zero is the default", Set: func(c *UpstreamConfig) { *c = UpstreamConfig{} }},
		{Name: "negative min backoff", Set: func(c *UpstreamConfig) { c.MinBackoff = -time.Second }, Want: "upstream: MinBackoff is -1s: it must be above 0"},
		{Name: "max backoff below min", Set: func(c *UpstreamConfig) { c.MinBackoff = 10 * time.Minute }, Want: "MaxBackoff is 5m0s: it must be at least 10m0s"},
		{Name: "negative timeout", Set: func(c *UpstreamConfig) { c.Timeout = -time.Second }, Want: "Timeout is -1s: it must be above 0"},
		{Name: "negative batch", Set: func(c *UpstreamConfig) { c.Batch = -1 }, Want: "Batch is -1: it must be above 0"},
		{Name: "negative queue", Set: func(c *UpstreamConfig) { c.MaxPerPolecat = -1 }, Want: "MaxPerPolecat is -1: it must be above 0"},
	})
}
