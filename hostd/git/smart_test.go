package git

import (
	"strings"
	"testing"
)

func TestProtocolEnv(t *testing.T) {
	for h, want := range map[string]string{"": "", "version=2": "GIT_PROTOCOL=version=2", "version=1": "GIT_PROTOCOL=version=1"} {
		env, err := protocolEnv(h)
		if err != nil || strings.Join(env, "") != want {
			t.Errorf("%q: %v %v", h, env, err)
		}
	}
	for _, h := range []string{"version=0", "version=3", "version=2:object-format=sha256", "version=2\nGIT_DIR=/etc", "version=2 ", "VERSION=2", strings.Repeat("x", 1000)} {
		if _, err := protocolEnv(h); err == nil {
			t.Errorf("%q accepted", h)
		}
	}
}
