package kube

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	datasync "github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Where the sandbox's files are in its container: the claim at WorkDir,
// the agent's state directory on it (under a name the data channel keeps
// for itself, so that its key never crosses), the join token's Secret at
// JoinDir.
const (
	WorkDir   = "/work"
	StateDir  = WorkDir + "/" + datasync.ReservedPrefix + "agent"
	JoinDir   = "/run/gt-join"
	tokenKey  = "token"
	container = "polecat"
	// uid is the image's polecat user (Dockerfile.polecat).
	uid = 1000
	// gracePeriod gives the agent's final upload at SIGTERM its time.
	gracePeriod = 15
)

// objects are the objects of one sandbox, as Create makes them, in that
// order: the policy before anything runs, the set last.
type objects struct {
	policy *networkingv1.NetworkPolicy
	secret *corev1.Secret
	claim  *corev1.PersistentVolumeClaim
	set    *appsv1.StatefulSet
}

// objects are the objects of polecat id's sandbox in town for s, made for
// its directory's home, its agent joining with token.
func (c Config) objects(s sandbox.Spec, town string, id wire.Identity, home, token string) (objects, error) {
	if err := CheckSpec(s); err != nil {
		return objects{}, err
	}
	ip, port, _ := hostdAddr(s.URL)
	res, err := c.resources()
	if err != nil {
		return objects{}, err
	}
	size, err := resource.ParseQuantity(c.StorageSize)
	if err != nil {
		return objects{}, fmt.Errorf("sandbox.kubernetes.storage_size %q: %w", c.StorageSize, err)
	}
	name := ObjectName(sandbox.Name(id))
	meta := metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: labels(c.Labels, town, id, name), Annotations: annotations(town, id, home)}
	o := objects{
		policy: &networkingv1.NetworkPolicy{ObjectMeta: meta, Spec: policySpec(name, ip, port, c.Egress)},
		secret: &corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeOpaque, StringData: map[string]string{tokenKey: token}},
		claim: &corev1.PersistentVolumeClaim{ObjectMeta: meta, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		}},
	}
	if c.StorageClass != "" {
		o.claim.Spec.StorageClassName = &c.StorageClass
	}
	pod, err := c.podSpec(s, id, name, res)
	if err != nil {
		return objects{}, err
	}
	one := int32(1)
	o.set = &appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{
		Replicas: &one,
		Selector: &metav1.LabelSelector{MatchLabels: selector(name)},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: meta.Labels, Annotations: meta.Annotations}, Spec: pod},
	}}
	return o, nil
}

// podSpec is the pod of polecat id's sandbox, named object: its agent up,
// watching the session the sessions start in, as docker's sandbox runs it;
// the claim at WorkDir, the token's Secret (optional: gone once spent) at
// JoinDir; uid 1000 with nothing more, no service account token.
func (c Config) podSpec(s sandbox.Spec, id wire.Identity, object string, res corev1.ResourceRequirements) (corev1.PodSpec, error) {
	env := []corev1.EnvVar{
		{Name: "GT_PROXY_URL", Value: s.URL},
		{Name: "GT_AGENT_IDENTITY", Value: id.String()},
		{Name: "GT_RIG", Value: id.Rig},
		{Name: "GT_POLECAT", Value: id.Name},
		{Name: "GT_AGENT_STATE_DIR", Value: StateDir},
		{Name: "GT_AGENT_JOIN_FILE", Value: JoinDir + "/" + tokenKey},
	}
	if s.BeatInterval > 0 {
		env = append(env, corev1.EnvVar{Name: "GT_AGENT_BEAT_INTERVAL", Value: s.BeatInterval.String()})
	}
	if s.Transport != "" {
		env = append(env, corev1.EnvVar{Name: "GT_AGENT_TRANSPORT", Value: s.Transport})
	}
	var tolerations []corev1.Toleration
	for _, t := range c.Tolerations {
		tol, err := toleration(t)
		if err != nil {
			return corev1.PodSpec{}, fmt.Errorf("sandbox.kubernetes.tolerations %q: %w", t, err)
		}
		tolerations = append(tolerations, tol)
	}
	no, yes, user, grace := false, true, int64(uid), int64(gracePeriod)
	mode := int32(0o440)
	return corev1.PodSpec{
		AutomountServiceAccountToken: &no,
		EnableServiceLinks:           &no,
		ServiceAccountName:           c.ServiceAccount,
		// The pause container is PID 1 and reaps what the session leaves,
		// as docker's --init does.
		ShareProcessNamespace:         &yes,
		TerminationGracePeriodSeconds: &grace,
		NodeSelector:                  c.NodeSelector,
		Tolerations:                   tolerations,
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot: &yes, RunAsUser: &user, RunAsGroup: &user, FSGroup: &user,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{{
			Name:            container,
			Image:           s.Image,
			ImagePullPolicy: corev1.PullPolicy(c.PullPolicy),
			Command:         []string{s.Agent, "up", "--watch-session", sandbox.SessionName},
			WorkingDir:      WorkDir,
			Env:             env,
			Resources:       res,
			SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: &no, RunAsNonRoot: &yes,
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			},
			VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: WorkDir}, {Name: "join", MountPath: JoinDir, ReadOnly: true}},
		}},
		Volumes: []corev1.Volume{
			{Name: "work", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: object}}},
			{Name: "join", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: object, Optional: &yes, DefaultMode: &mode}}},
		},
	}, nil
}

// policySpec lets the pods of the sandbox named object reach hostd at ip
// and port, over UDP (QUIC) and TCP, and the egress destinations (valid:
// Config.Validate took them), and nothing else; nothing reaches them.
func policySpec(object string, ip net.IP, port int, egress []string) networkingv1.NetworkPolicySpec {
	bits := 32
	if ip.To4() == nil {
		bits = 128
	}
	rules := []networkingv1.NetworkPolicyEgressRule{rule(fmt.Sprintf("%s/%d", ip, bits), port)}
	for _, e := range egress {
		if cidr, port, err := egressRule(e); err == nil {
			rules = append(rules, rule(cidr, port))
		}
	}
	return networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: selector(object)},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		Ingress:     []networkingv1.NetworkPolicyIngressRule{},
		Egress:      rules,
	}
}

// rule lets a pod reach cidr on port (every port when 0), UDP and TCP.
func rule(cidr string, port int) networkingv1.NetworkPolicyEgressRule {
	r := networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: cidr}}}}
	if port == 0 {
		return r
	}
	p := intstr.FromInt32(int32(port))
	udp, tcp := corev1.ProtocolUDP, corev1.ProtocolTCP
	r.Ports = []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &p}, {Protocol: &tcp, Port: &p}}
	return r
}

// egressRule reads an Egress entry, CIDR or CIDR:port ([v6-CIDR]:port for
// IPv6 with a port); port 0 for every port.
func egressRule(e string) (cidr string, port int, err error) {
	cidr = e
	if i := strings.LastIndex(e, ":"); i > 0 && (strings.Count(e, ":") == 1 || strings.HasPrefix(e, "[")) {
		cidr = strings.Trim(e[:i], "[]")
		if port, err = strconv.Atoi(e[i+1:]); err != nil || port < 1 || port > 65535 {
			return "", 0, errors.New("want CIDR or CIDR:port with a port of 1-65535")
		}
	}
	if _, _, err := net.ParseCIDR(cidr); err != nil {
		return "", 0, fmt.Errorf("want CIDR or CIDR:port: %w", err)
	}
	return cidr, port, nil
}

// CheckSpec refuses what of s the kubernetes runtime cannot use, before
// anything is made: a sandbox.url that is no IP address, or one a pod
// cannot reach hostd at (loopback), and docker's own settings.
func CheckSpec(s sandbox.Spec) error {
	_, _, err := hostdAddr(s.URL)
	return errors.Join(err, dockerOnly(s))
}

// hostdAddr is hostd's address and port in sandbox.url, which a pod must
// reach and the NetworkPolicy names: an IP address, neither loopback nor
// unspecified (a pod's loopback is its own).
func hostdAddr(raw string) (net.IP, int, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" {
		return nil, 0, fmt.Errorf("sandbox.url %q: want https://<hostd's IP address as the cluster's pods reach it>:<port>", raw)
	}
	ip := net.ParseIP(u.Hostname())
	switch {
	case ip == nil:
		return nil, 0, fmt.Errorf("sandbox.url %q: the kubernetes runtime needs hostd's IP address, not a name: the sandbox's NetworkPolicy lets its pod reach that address alone (and no DNS); set sandbox.url to https://<hostd's IP as the pods reach it>:<port>", raw)
	case ip.IsLoopback() || ip.IsUnspecified():
		return nil, 0, fmt.Errorf("sandbox.url %q is a loopback address: a pod's loopback is its own, not hostd's; set sandbox.url to hostd's address as the cluster's pods reach it (and give hostd serve that address in server_names if its certificate lacks it)", raw)
	}
	port := wire.DefaultPort
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil || port < 1 || port > 65535 {
			return nil, 0, fmt.Errorf("sandbox.url %q: bad port", raw)
		}
	}
	return ip, port, nil
}

// dockerOnly refuses the settings of s that only docker and podman take,
// rather than make a sandbox without them.
func dockerOnly(s sandbox.Spec) error {
	var set []error
	for _, f := range []struct {
		key, instead string
		given        bool
	}{
		{"sandbox.network", "a NetworkPolicy of its own", s.Network != ""},
		{"sandbox.mounts", "its claim alone", len(s.Mounts) > 0},
		{"sandbox.cpus", "sandbox.kubernetes.limits", s.CPUs != ""},
		{"sandbox.memory", "sandbox.kubernetes.limits", s.Memory != ""},
		{"sandbox.pids_limit", "the kubelet's podPidsLimit", s.PidsLimit > 0},
	} {
		if f.given {
			set = append(set, fmt.Errorf("%s is docker's and podman's: the kubernetes runtime takes %s instead; unset it", f.key, f.instead))
		}
	}
	return errors.Join(set...)
}
