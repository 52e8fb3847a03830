package main

import "testing"

func TestParseProxyURL(t *testing.T) {
	good := map[string][2]string{
		"https://localhost:9876":       {"localhost:9876", "localhost"},
		"https://host.docker.internal": {"host.docker.internal:9876", "host.docker.internal"},
		"https://10.0.0.1:443/":        {"10.0.0.1:443", "10.0.0.1"},
		"https://[::1]:9876":           {"[::1]:9876", "::1"},
	}
	for in, want := range good {
		addr, name, err := parseProxyURL(in)
		if err != nil || addr != want[0] || name != want[1] {
			t.Errorf("parseProxyURL(%q) = %q, %q, %v; want %q, %q", in, addr, name, err, want[0], want[1])
		}
	}
	for _, in := range []string{
		"", "localhost:9876", "http://localhost:9876", "https://", "https://:9876", "https://h:0", "https://h:65536",
		"https://h:port", "https://user:pw@h:9876", "https://h:9876/v1/exec", "https://h:9876?x=1", "ftp://h", "https://h:9876\n",
	} {
		if addr, _, err := parseProxyURL(in); err == nil {
			t.Errorf("parseProxyURL(%q) accepted as %q", in, addr)
		}
	}
}

func TestJoinIdentity(t *testing.T) {
	t.Setenv("GT_RIG", "gastown")
	t.Setenv("GT_POLECAT", "furiosa")
	if id, err := joinIdentity(""); err != nil || id.String() != "gastown/furiosa" {
		t.Errorf("from env: %v, %v", id, err)
	}
	if id, err := joinIdentity("gastown/nux"); err != nil || id.Name != "nux" {
		t.Errorf("from flag: %v, %v", id, err)
	}
	for _, bad := range []string{"nux", "gastown/nux/x", "../x", "gastown/-nux"} {
		if _, err := joinIdentity(bad); err == nil {
			t.Errorf("joinIdentity(%q) accepted", bad)
		}
	}
	t.Setenv("GT_POLECAT", "")
	if _, err := joinIdentity(""); err == nil {
		t.Error("no identity anywhere accepted")
	}
}
