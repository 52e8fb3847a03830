package settings

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

type config struct {
	Listen  string
	Names   []string
	Streams int
	On      bool
	TTL     time.Duration
	Allow   map[string][]string
	Stored  int64
	Share   float64
	Grace   time.Duration
	Labels  map[string]string
	Context string
}

func table(c *config) []Setting {
	return []Setting{
		{Key: "listen", Flag: "listen", Usage: "address", Value: &c.Listen},
		{Key: "server_names", Flag: "server-name", Usage: "names", Value: &c.Names},
		{Key: "relay.max_streams", Flag: "relay-max-streams", Usage: "streams", Value: &c.Streams},
		{Key: "git.upstream", Flag: "git-upstream", Usage: "on", Value: &c.On},
		{Key: "cert_ttl", Flag: "cert-ttl", Usage: "lifetime", Value: &c.TTL},
		{Key: "relay.allow", Value: &c.Allow},
		{Key: "sync.max_stored_bytes", Flag: "sync-max-stored-bytes", Usage: "bytes", Value: &c.Stored},
		{Key: "sync.max_delete_share", Flag: "sync-max-delete-share", Usage: "share", Value: &c.Share},
		{Key: "liveness.grace", Flag: "grace", Usage: "grace", Value: &c.Grace},
		{Key: "labels", Value: &c.Labels},
		{Key: "kubernetes.context", Value: &c.Context},
	}
}

func defaults() config {
	return config{Listen: ":9876", Streams: 8, On: true, TTL: time.Hour, Allow: map[string][]string{"gt": {"prime"}}, Stored: 2 << 30, Share: 0.5, Grace: time.Minute, Labels: map[string]string{}, Context: "current"}
}

// load registers the table, applies args, env and yaml as a command would,
// and loads.
func load(t *testing.T, args []string, env map[string]string, yaml string) (config, error) {
	t.Helper()
	c := defaults()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	v := viper.New()
	list := table(&c)
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
	return c, Load(v, list)
}

func TestLoad(t *testing.T) {
	cases := []struct {
		name string
		args []string
		env  map[string]string
		yaml string
		want func(*config)
	}{
		{"defaults", nil, nil, "", func(*config) {}},
		{"flags", []string{"--listen", ":1", "--server-name", "a", "--server-name", "b", "--relay-max-streams", "3", "--git-upstream=false", "--cert-ttl", "2m"}, nil, "",
			func(c *config) {
				c.Listen, c.Names, c.Streams, c.On, c.TTL = ":1", []string{"a", "b"}, 3, false, 2*time.Minute
			}},
		{"environment", nil, map[string]string{"TEST_RELAY_MAX_STREAMS": "5", "TEST_CERT_TTL": "3s"}, "",
			func(c *config) { c.Streams, c.TTL = 5, 3*time.Second }},
		{"yaml, nested and config-only", nil, nil, "relay:\n  max_streams: 7\n  allow:\n    bd: [show]\n",
			func(c *config) { c.Streams, c.Allow = 7, map[string][]string{"bd": {"show"}} }},
		{"flag beats yaml", []string{"--cert-ttl", "9s"}, nil, "cert_ttl: 1s\n", func(c *config) { c.TTL = 9 * time.Second }},
		{"64-bit and fractional numbers", []string{"--sync-max-stored-bytes", "10737418240"}, nil, "sync:\n  max_delete_share: 0.25\n",
			func(c *config) { c.Stored, c.Share = 10<<30, 0.25 }},
		{"a bare 0 is a duration", nil, nil, "cert_ttl: 0\n", func(c *config) { c.TTL = 0 }},
		{"durations written as Go does", nil, map[string]string{"TEST_CERT_TTL": " 1h30m "}, "", func(c *config) { c.TTL = 90 * time.Minute }},
		{"a whole number written with a point", nil, nil, "relay:\n  max_streams: 4.0\n", func(c *config) { c.Streams = 4 }},
		{"a whole number from the environment", nil, map[string]string{"TEST_RELAY_MAX_STREAMS": "012"}, "", func(c *config) { c.Streams = 12 }},
		{"string map", nil, nil, "labels:\n  a: b\n", func(c *config) { c.Labels = map[string]string{"a": "b"} }},
		{"config-only string", nil, nil, "kubernetes:\n  context: prod\n", func(c *config) { c.Context = "prod" }},
		{"config-only string from the environment", nil, map[string]string{"TEST_KUBERNETES_CONTEXT": "dev"}, "kubernetes:\n  context: prod\n", func(c *config) { c.Context = "dev" }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := load(t, c.args, c.env, c.yaml)
			if err != nil {
				t.Fatal(err)
			}
			want := defaults()
			c.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestLoadHostile(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		yaml string
		want string
	}{
		{"duration", nil, "cert_ttl: forever\n", "setting cert_ttl: forever is not a duration"},
		{"number", nil, "relay:\n  max_streams: lots\n", "setting relay.max_streams: lots is not a whole number"},
		{"boolean", nil, "git:\n  upstream: maybe\n", "setting git.upstream: maybe is not true or false"},
		{"64-bit number", nil, "sync:\n  max_stored_bytes: 1GB\n", "setting sync.max_stored_bytes: 1GB is not a whole number"},
		{"fraction", nil, "sync:\n  max_delete_share: half\n", "setting sync.max_delete_share: half is not a number"},
		{"environment", map[string]string{"TEST_CERT_TTL": "later"}, "", "setting cert_ttl: later is not a duration"},
		{"list of maps", nil, "server_names:\n  - {a: 1}\n", "setting server_names"},
		{"bare number as a duration", nil, "liveness:\n  grace: 10\n", "setting liveness.grace: 10 has no unit: give one, as in 10s or 10m"},
		{"bare fraction as a duration", nil, "liveness:\n  grace: 1.5\n", "setting liveness.grace: 1.5 has no unit: give one, as in 1.5s"},
		{"bare number as a duration, environment", map[string]string{"TEST_CERT_TTL": "30"}, "", "setting cert_ttl: 30 has no unit"},
		{"list as a duration", nil, "cert_ttl: [1s]\n", "setting cert_ttl: [1s] is not a duration"},
		{"fraction as a whole number", nil, "relay:\n  max_streams: 1.5\n", "setting relay.max_streams: 1.5 is not a whole number"},
		{"hexadecimal", nil, "relay:\n  max_streams: '0x10'\n", "setting relay.max_streams: 0x10 is not a whole number"},
		{"list as a map", nil, "relay:\n  allow: [gt, bd]\n", "setting relay.allow: [gt bd] is not a map of names to a list of strings"},
		{"string as a map", nil, "labels: a\n", "setting labels: a is not a map of names to a string"},
		{"map of maps", nil, "relay:\n  allow:\n    gt: {prime: yes}\n", "setting relay.allow"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := load(t, nil, c.env, c.yaml)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

// TestBind: two commands registering the same key each read their own
// flag once the running one binds again; without Bind the one registered
// last would be read.
func TestBind(t *testing.T) {
	v := viper.New()
	var serve, run string
	serveFlags, runFlags := pflag.NewFlagSet("serve", pflag.ContinueOnError), pflag.NewFlagSet("run", pflag.ContinueOnError)
	serveTable := []Setting{{Key: "sandbox.runtime", Flag: "sandbox-runtime", Value: &serve}}
	runTable := []Setting{{Key: "sandbox.runtime", Flag: "runtime", Value: &run}}
	Register(serveFlags, v, serveTable)
	Register(runFlags, v, runTable)
	if err := serveFlags.Parse([]string{"--sandbox-runtime", "podman"}); err != nil {
		t.Fatal(err)
	}
	Bind(serveFlags, v, serveTable)
	if err := Load(v, serveTable); err != nil {
		t.Fatal(err)
	}
	if serve != "podman" {
		t.Errorf("serve read %q, want its own flag's podman", serve)
	}
}
