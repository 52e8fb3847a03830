package settings

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

type tunnelPart struct {
	KeepAlive, IdleTimeout time.Duration
	Dir                    string // filled in by New, no setting
}

type daemon struct {
	Listen   string
	Tunnel   tunnelPart
	Branches map[string][]string
}

func daemonTable(d *daemon) []Setting {
	return []Setting{
		{Key: "listen", Flag: "listen", Usage: "address", Value: &d.Listen, Env: []string{"OLD_LISTEN"}},
		{Key: "keepalive", Flag: "keepalive", Usage: "keepalive", Value: &d.Tunnel.KeepAlive},
		{Key: "tunnel.idle_timeout", Flag: "idle-timeout", Usage: "idle", Value: &d.Tunnel.IdleTimeout},
		{Key: "git.branches", Usage: "patterns", Value: &d.Branches},
	}
}

// loaded registers the daemon's table as a command would and reads args,
// env and yaml, returning where each setting came from.
func loaded(t *testing.T, args []string, env map[string]string, yaml string) (*daemon, []Setting, func(Setting) Source) {
	t.Helper()
	d := &daemon{Listen: ":1", Tunnel: tunnelPart{KeepAlive: time.Second, IdleTimeout: 2 * time.Second}}
	fs, v, list := pflag.NewFlagSet("test", pflag.ContinueOnError), viper.New(), daemonTable(d)
	Register(fs, v, list)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	for k, val := range env {
		t.Setenv(k, val)
	}
	v.SetEnvPrefix("TEST")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_", ".", "_"))
	v.AutomaticEnv()
	if yaml != "" {
		p := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		v.SetConfigFile(p)
		if err := v.ReadInConfig(); err != nil {
			t.Fatal(err)
		}
	}
	if err := Load(v, list); err != nil {
		t.Fatal(err)
	}
	return d, list, func(s Setting) Source { return Where(fs, v, "TEST", s) }
}

// TestWhere: each setting's source is the one viper took its value from:
// flag, then its variable, then its other variables, then the config
// file, then the default.
func TestWhere(t *testing.T) {
	cases := []struct {
		name string
		args []string
		env  map[string]string
		yaml string
		want string
	}{
		{"default", nil, nil, "", "default"},
		{"config file", nil, nil, "listen: ':2'\n", "config file "},
		{"other variable", nil, map[string]string{"OLD_LISTEN": ":3"}, "listen: ':2'\n", "env OLD_LISTEN"},
		{"own variable first", nil, map[string]string{"OLD_LISTEN": ":3", "TEST_LISTEN": ":4"}, "", "env TEST_LISTEN"},
		{"an empty variable is unset", nil, map[string]string{"TEST_LISTEN": ""}, "", "default"},
		{"flag", []string{"--listen", ":5"}, map[string]string{"TEST_LISTEN": ":4"}, "listen: ':2'\n", "flag --listen"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, list, where := loaded(t, c.args, c.env, c.yaml)
			if got := where(list[0]).String(); !strings.HasPrefix(got, c.want) {
				t.Fatalf("listen came from %q, want %q", got, c.want)
			}
		})
	}
	_, list, where := loaded(t, nil, map[string]string{"TEST_TUNNEL_IDLE_TIMEOUT": "3s"}, "git:\n  branches:\n    gastown: [x]\n")
	if got := where(list[2]); got != (Source{FromEnv, "TEST_TUNNEL_IDLE_TIMEOUT"}) {
		t.Errorf("nested key from %v", got)
	}
	if got := where(list[3]); got.Origin != FromFile {
		t.Errorf("map from %v", got)
	}
}

// TestExplain: a Validate's errors on the Config come out naming the
// setting that filled each field, its value and source (and the other
// setting of a rule across two), an entry of a map by its key; errors on
// fields no setting fills are dropped, other errors kept.
func TestExplain(t *testing.T) {
	d, list, where := loaded(t, []string{"--keepalive", "5s"}, map[string]string{"TEST_TUNNEL_IDLE_TIMEOUT": "4s"},
		"git:\n  branches:\n    gastown: ['polecat/*']\n")
	validate := func(d daemon) error {
		return errors.Join(
			Under("Tunnel", errors.Join(
				Below("KeepAlive", d.Tunnel.KeepAlive, "IdleTimeout", d.Tunnel.IdleTimeout),
				Required("Dir", d.Tunnel.Dir),
			)),
			Invalid("Branches.gastown", d.Branches["gastown"], errors.New("needs {name} exactly once")),
			Required("Listen", ""),
			AtMost("Tunnel.KeepAlive", d.Tunnel.KeepAlive, "Tunnel.Dir", time.Second),
			errors.New("the policy's patterns overlap"),
		)
	}
	err := Explain(validate(*d), d, list, where)
	want := []string{
		"setting keepalive is 5s (flag --keepalive): it must be below tunnel.idle_timeout, 4s (env TEST_TUNNEL_IDLE_TIMEOUT)",
		"setting git.branches.gastown is [polecat/*] (config file ",
		"): needs {name} exactly once",
		"setting listen is required",
		"setting keepalive is 5s (flag --keepalive): it must be at most 1s\n",
		"the policy's patterns overlap",
	}
	if err == nil {
		t.Fatal("nothing explained")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("explained:\n%v\nwant it to say %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "Dir") {
		t.Errorf("kept an error on a field no setting fills:\n%v", err)
	}
	if Explain(Required("Tunnel.Dir", ""), d, list, where) != nil {
		t.Error("an error only on a field no setting fills was kept")
	}
}
