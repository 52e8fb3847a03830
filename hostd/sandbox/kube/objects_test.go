package kube

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	datasync "github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

var (
	furiosa = wire.Identity{Rig: "gastown", Name: "furiosa"}
	spec    = sandbox.Spec{Image: "polecat:v1", URL: "https://10.244.0.1:9876", Agent: "/usr/local/bin/gt-agent", BeatInterval: 5 * time.Second, Transport: "tcp"}
)

// TestObjects: the objects of a sandbox, as the settings and the Spec
// make them: the policy to hostd's address and port alone, the token in
// the Secret and nowhere in the pod, the claim as set, one replica of a
// pod that runs gt-agent up as uid 1000 with nothing more.
func TestObjects(t *testing.T) {
	c := DefaultConfig()
	c.Namespace, c.StorageClass, c.StorageSize, c.PullPolicy, c.ServiceAccount = "polecats", "fast", "5Gi", "Never", "polecat"
	c.Limits, c.NodeSelector, c.Tolerations = map[string]string{"memory": "4Gi"}, map[string]string{"pool": "polecats"}, []string{"spot:NoSchedule"}
	o, err := c.objects(spec, "/home/me/gt", furiosa, "ino-7", "the-token")
	if err != nil {
		t.Fatal(err)
	}
	name := ObjectName("gt-gastown-furiosa")
	for _, m := range []struct {
		kind       string
		name, ns   string
		labels, an map[string]string
	}{
		{"policy", o.policy.Name, o.policy.Namespace, o.policy.Labels, o.policy.Annotations},
		{"secret", o.secret.Name, o.secret.Namespace, o.secret.Labels, o.secret.Annotations},
		{"claim", o.claim.Name, o.claim.Namespace, o.claim.Labels, o.claim.Annotations},
		{"set", o.set.Name, o.set.Namespace, o.set.Labels, o.set.Annotations},
		{"pod", name, "polecats", o.set.Spec.Template.Labels, o.set.Spec.Template.Annotations},
	} {
		if m.name != name || m.ns != "polecats" || m.labels[ObjectLabel] != name || m.labels[TownHashLabel] != TownHash("/home/me/gt") ||
			m.an[sandbox.TownLabel] != "/home/me/gt" || m.an[sandbox.PolecatLabel] != "gastown/furiosa" || m.an[sandbox.HomeLabel] != "ino-7" {
			t.Errorf("%s: %s/%s labels %v annotations %v", m.kind, m.ns, m.name, m.labels, m.an)
		}
	}

	eg := o.policy.Spec.Egress
	if len(eg) != 1 || len(eg[0].To) != 1 || eg[0].To[0].IPBlock.CIDR != "10.244.0.1/32" || len(eg[0].Ports) != 2 ||
		*eg[0].Ports[0].Protocol != corev1.ProtocolUDP || *eg[0].Ports[1].Protocol != corev1.ProtocolTCP || eg[0].Ports[0].Port.IntValue() != 9876 ||
		len(o.policy.Spec.Ingress) != 0 || len(o.policy.Spec.PolicyTypes) != 2 || o.policy.Spec.PodSelector.MatchLabels[ObjectLabel] != name {
		t.Errorf("policy %+v", o.policy.Spec)
	}
	c.Egress = []string{"160.79.104.0/23:443", "10.1.0.0/16"}
	if o, err = c.objects(spec, "/home/me/gt", furiosa, "ino-7", "the-token"); err != nil {
		t.Fatal(err)
	}
	if eg := o.policy.Spec.Egress; len(eg) != 3 || eg[1].To[0].IPBlock.CIDR != "160.79.104.0/23" || len(eg[1].Ports) != 2 || eg[1].Ports[1].Port.IntValue() != 443 ||
		eg[2].To[0].IPBlock.CIDR != "10.1.0.0/16" || len(eg[2].Ports) != 0 {
		t.Errorf("policy with egress %+v", eg)
	}
	if o.secret.StringData[tokenKey] != "the-token" {
		t.Errorf("secret %v", o.secret.StringData)
	}
	if *o.claim.Spec.StorageClassName != "fast" || o.claim.Spec.Resources.Requests.Storage().String() != "5Gi" {
		t.Errorf("claim %+v", o.claim.Spec)
	}
	if *o.set.Spec.Replicas != 1 || o.set.Spec.Selector.MatchLabels[ObjectLabel] != name {
		t.Errorf("set %+v", o.set.Spec)
	}

	p := o.set.Spec.Template.Spec
	sc := p.SecurityContext
	if *p.AutomountServiceAccountToken || !*p.ShareProcessNamespace || p.ServiceAccountName != "polecat" || p.NodeSelector["pool"] != "polecats" ||
		len(p.Tolerations) != 1 || p.Tolerations[0].Key != "spot" ||
		!*sc.RunAsNonRoot || *sc.RunAsUser != 1000 || *sc.RunAsGroup != 1000 || *sc.FSGroup != 1000 || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod %+v", p)
	}
	ct := p.Containers[0]
	csc := ct.SecurityContext
	if ct.Image != "polecat:v1" || ct.ImagePullPolicy != corev1.PullNever || strings.Join(ct.Command, " ") != "/usr/local/bin/gt-agent up --watch-session polecat" ||
		*csc.AllowPrivilegeEscalation || len(csc.Capabilities.Drop) != 1 || csc.Capabilities.Drop[0] != "ALL" || ct.Resources.Limits.Memory().String() != "4Gi" {
		t.Errorf("container %+v", ct)
	}
	env := map[string]string{}
	for _, e := range ct.Env {
		if e.ValueFrom != nil || strings.Contains(e.Value, "the-token") {
			t.Errorf("the pod's env has %s: the token is the Secret's alone", e.Name)
		}
		env[e.Name] = e.Value
	}
	for k, v := range map[string]string{"GT_PROXY_URL": spec.URL, "GT_AGENT_IDENTITY": "gastown/furiosa", "GT_RIG": "gastown", "GT_POLECAT": "furiosa",
		"GT_AGENT_STATE_DIR": StateDir, "GT_AGENT_JOIN_FILE": JoinDir + "/token", "GT_AGENT_BEAT_INTERVAL": "5s", "GT_AGENT_TRANSPORT": "tcp"} {
		if env[k] != v {
			t.Errorf("env %s = %q, want %q", k, env[k], v)
		}
	}
	vols := map[string]corev1.VolumeSource{}
	for _, v := range p.Volumes {
		vols[v.Name] = v.VolumeSource
	}
	if vols["work"].PersistentVolumeClaim.ClaimName != name || vols["join"].Secret.SecretName != name || !*vols["join"].Secret.Optional {
		t.Errorf("volumes %+v", p.Volumes)
	}
}

// TestStateDirNeverCrosses: the agent's state directory, on the claim
// under the data root, is a name the data channel keeps for itself: no
// policy lets its key cross, and none may whitelist it.
func TestStateDirNeverCrosses(t *testing.T) {
	rel := strings.TrimPrefix(StateDir, WorkDir+"/")
	for _, p := range []datasync.Policy{datasync.DefaultPolicy(), {Include: []string{rel}}, {Include: []string{"."}}} {
		if p.Allowed(rel+"/client.key") || p.Allowed(rel+"/ca.crt") || p.Allowed(rel) {
			t.Errorf("policy %+v lets the state directory cross", p)
		}
	}
	if err := (datasync.Policy{Include: []string{rel}}).Validate(); err == nil {
		t.Error("a policy may whitelist the state directory")
	}
}

// TestHostdAddr: sandbox.url must name hostd's IP address as a pod
// reaches it; a loopback address, a name or no URL is refused, naming
// the setting.
func TestHostdAddr(t *testing.T) {
	tests := []struct {
		url, ip string
		port    int
		want    string
	}{
		{url: "https://10.244.0.1:9876", ip: "10.244.0.1", port: 9876},
		{url: "https://192.0.2.10", ip: "192.0.2.10", port: wire.DefaultPort},
		{url: "https://[2001:db8::1]:9000", ip: "2001:db8::1", port: 9000},
		{url: "https://127.0.0.1:9876", want: "sandbox.url \"https://127.0.0.1:9876\" is a loopback address"},
		{url: "https://[::1]:9876", want: "is a loopback address"},
		{url: "https://0.0.0.0:9876", want: "is a loopback address"},
		{url: "https://host.docker.internal:9876", want: "needs hostd's IP address, not a name"},
		{url: "", want: "sandbox.url \"\": want https://"},
		{url: "http://10.0.0.1:9876", want: "want https://"},
		{url: "https://10.0.0.1:99999", want: "bad port"},
	}
	for _, tt := range tests {
		ip, port, err := hostdAddr(tt.url)
		switch {
		case tt.want == "" && (err != nil || ip.String() != tt.ip || port != tt.port):
			t.Errorf("hostdAddr(%q) = %v, %d, %v; want %s, %d", tt.url, ip, port, err, tt.ip, tt.port)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("hostdAddr(%q): %v, want an error saying %q", tt.url, err, tt.want)
		}
	}
	c := DefaultConfig()
	o, err := c.objects(sandbox.Spec{Image: "i", URL: "https://[2001:db8::1]:9000", Agent: "a"}, "/t", furiosa, "", "x")
	if err != nil || o.policy.Spec.Egress[0].To[0].IPBlock.CIDR != "2001:db8::1/128" {
		t.Errorf("IPv6 policy: %v", err)
	}
}

// TestDockerOnly: a setting only docker and podman take is refused, by
// its key, rather than left out of the sandbox.
func TestDockerOnly(t *testing.T) {
	s := spec
	s.Mounts, s.Memory = []string{"/a:/b"}, "2g"
	_, err := DefaultConfig().objects(s, "/t", furiosa, "", "x")
	if err == nil || !strings.Contains(err.Error(), "sandbox.mounts is docker's and podman's") || !strings.Contains(err.Error(), "sandbox.memory is docker's and podman's: the kubernetes runtime takes sandbox.kubernetes.limits") {
		t.Errorf("docker's settings: %v", err)
	}
}
