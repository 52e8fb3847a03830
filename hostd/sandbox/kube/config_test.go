package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/polecat-sidecar/sidecar/internal/settings/settingstest"
)

// TestConfig: Validate names each setting Kubernetes would refuse, by its
// field, before anything is made.
func TestConfig(t *testing.T) {
	settingstest.Run(t, DefaultConfig, Config.Validate, []settingstest.Case[Config]{
		{Name: "defaults"},
		{Name: "everything set", Set: func(c *Config) {
			c.Namespace, c.ServiceAccount, c.PullPolicy, c.StorageClass = "polecats", "polecat", "Never", "fast"
			c.Requests = map[string]string{"cpu": "500m", "memory": "1Gi"}
			c.Limits = map[string]string{"cpu": "2", "memory": "1Gi", "ephemeral-storage": "10Gi"}
			c.NodeSelector = map[string]string{"kubernetes.io/arch": "amd64"}
			c.Tolerations = []string{"dedicated=polecats:NoSchedule", "gpu:NoExecute", "spot"}
			c.Labels = map[string]string{"team": "gastown"}
			c.Egress = []string{"160.79.104.0/23", "10.0.0.7/32:3128", "[2607:6bc0::/48]:443", "2607:6bc0::/48"}
		}},
		{Name: "namespace not a label", Set: func(c *Config) { c.Namespace = "Polecats" }, Want: `Namespace is "Polecats"`},
		{Name: "service account not a name", Set: func(c *Config) { c.ServiceAccount = "a/b" }, Want: `ServiceAccount is "a/b"`},
		{Name: "pull policy", Set: func(c *Config) { c.PullPolicy = "Sometimes" }, Want: `PullPolicy is "Sometimes": want one of Always, IfNotPresent, Never`},
		{Name: "no storage size", Set: func(c *Config) { c.StorageSize = "" }, Want: "StorageSize is required"},
		{Name: "storage size not a size", Set: func(c *Config) { c.StorageSize = "ten gigs" }, Want: `StorageSize is "ten gigs"`},
		{Name: "zero storage", Set: func(c *Config) { c.StorageSize = "0" }, Want: `StorageSize is "0"`},
		{Name: "request not a quantity", Set: func(c *Config) { c.Requests = map[string]string{"cpu": "lots"} }, Want: `Requests.cpu is "lots"`},
		{Name: "limit not a resource name", Set: func(c *Config) { c.Limits = map[string]string{"c p u": "1"} }, Want: `Limits.c p u is "1"`},
		{Name: "limit below request", Set: func(c *Config) {
			c.Requests, c.Limits = map[string]string{"memory": "2Gi"}, map[string]string{"memory": "1Gi"}
		}, Want: `Limits.memory is "1Gi": it must be at least Requests.memory ("2Gi")`},
		{Name: "toleration effect", Set: func(c *Config) { c.Tolerations = []string{"a=b:Never"} }, Want: `Tolerations.0 is "a=b:Never": effect "Never"`},
		{Name: "toleration key", Set: func(c *Config) { c.Tolerations = []string{"spot", "=b"} }, Want: `Tolerations.1 is "=b"`},
		{Name: "node selector value", Set: func(c *Config) { c.NodeSelector = map[string]string{"zone": "a b"} }, Want: `NodeSelector.zone is "a b"`},
		{Name: "a label of hostd's", Set: func(c *Config) { c.Labels = map[string]string{TownHashLabel: "x"} }, Want: "hostd sets this label itself"},
		{Name: "egress not a CIDR", Set: func(c *Config) { c.Egress = []string{"api.anthropic.com:443"} }, Want: `Egress.0 is "api.anthropic.com:443": want CIDR or CIDR:port`},
		{Name: "egress port", Set: func(c *Config) { c.Egress = []string{"10.0.0.0/8", "10.0.0.0/8:0"} }, Want: `Egress.1 is "10.0.0.0/8:0": want CIDR or CIDR:port with a port of 1-65535`},
		{Name: "egress address without bits", Set: func(c *Config) { c.Egress = []string{"10.0.0.1"} }, Want: `Egress.0 is "10.0.0.1"`},
		{Name: "label key", Set: func(c *Config) { c.Labels = map[string]string{"-x": "y"} }, Want: `Labels.-x is "y"`},
	})
}

// TestToleration: a toleration written as a taint.
func TestToleration(t *testing.T) {
	tests := []struct {
		in   string
		want corev1.Toleration
	}{
		{"dedicated=polecats:NoSchedule", corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "polecats", Effect: corev1.TaintEffectNoSchedule}},
		{"dedicated=polecats", corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "polecats"}},
		{"gpu:NoExecute", corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
		{"node.kubernetes.io/unreachable", corev1.Toleration{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists}},
	}
	for _, tt := range tests {
		got, err := toleration(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("toleration(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

// TestResources: requests and limits as quantities.
func TestResources(t *testing.T) {
	c := DefaultConfig()
	if r, err := c.resources(); err != nil || r.Requests != nil || r.Limits != nil {
		t.Errorf("no resources: %+v, %v", r, err)
	}
	c.Requests, c.Limits = map[string]string{"cpu": "500m"}, map[string]string{"memory": "2Gi"}
	r, err := c.resources()
	if err != nil || r.Requests.Cpu().MilliValue() != 500 || r.Limits.Memory().Value() != 2<<30 {
		t.Errorf("resources %+v, %v", r, err)
	}
}
