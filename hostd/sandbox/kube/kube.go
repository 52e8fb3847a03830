// Package kube is the kubernetes runtime of hostd run: a polecat's
// sandbox made on a Kubernetes cluster through its API (client-go's REST
// client, on a scheme of the three API groups it uses: client.go), the
// same sandbox.Runtime as docker's and podman's, and a sandbox.TokenHolder.
//
// A sandbox is four objects of one name (ObjectName of sandbox.Name: a
// DNS-1123 label with a hash, since gt-<rig>-<name> need not be one), in
// the namespace of the settings (Config, sandbox.kubernetes.*):
//
//   - a StatefulSet of one replica, whose pod runs the image's gt-agent
//     up, watching the session hostd run starts over the tunnel;
//   - a PersistentVolumeClaim mounted at /work, which holds the polecat's
//     clone and work and, at /work/.sidecar-agent, the agent's state
//     directory (its key and certificate; a name the data channel keeps
//     for itself and never ships, sync.ReservedPrefix);
//   - a Secret holding the one-time join token, mounted (optional) where
//     GT_AGENT_JOIN_FILE points, and deleted by DropToken once the agent
//     has joined;
//   - a NetworkPolicy that lets the pod reach hostd's address and port
//     (sandbox.url: an IP address; UDP for QUIC, TCP for the fallback)
//     and nothing else, and lets nothing reach it. A CNI that enforces
//     NetworkPolicy (Calico, Cilium, ...) must be there: others ignore it.
//
// A StatefulSet and not a bare Pod: a sandbox outlives its sessions, and
// a pod the cluster deletes (a drain, an eviction, a node lost) must come
// back by itself with its work, which no one recreates for a bare pod.
// Its controller makes the pod again under the same name with the same
// claim, so the agent finds its certificate on the claim and rejoins
// without a token, and every session cycle starts in the same sandbox. A
// Deployment would also recreate it, but may run two pods of one polecat
// at once (a rollout), two agents of one identity; a StatefulSet runs at
// most one. The claim is made by hostd rather than from a
// volumeClaimTemplate, so that its storage class and size are the
// settings' and Remove deletes it with the rest.
//
// The pod runs as the image's uid 1000 and nothing more: runAsNonRoot, no
// privilege escalation, every capability dropped, seccomp RuntimeDefault,
// fsGroup 1000, no service account token, and a shared process namespace
// whose pause process reaps what the session leaves (docker's --init).
//
// Labels hold what label values can (a hash of the town, the rig, the
// name); annotations hold the full values, which are the ones read.
package kube

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
)

// RuntimeName is the runtime's name in sandbox.runtime and in messages.
const RuntimeName = "kubernetes"

// Runtime makes, inspects and removes sandboxes on one cluster, in one
// namespace.
type Runtime struct {
	cfg    Config
	server string // the API server's URL, for messages
	http   *http.Client
	core   *rest.RESTClient // for /version
	// The kinds of object it uses, in its namespace but the last two.
	sets, pods, claims, secrets, events, policies, nodes, namespaces endpoint
}

var (
	_ sandbox.Runtime     = (*Runtime)(nil)
	_ sandbox.TokenHolder = (*Runtime)(nil)
)

// New is the runtime cfg describes, its kubeconfig read (the cluster is
// not asked yet); its error says which setting is wrong.
func New(cfg Config) (*Runtime, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sandbox.kubernetes: %w", err)
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = cfg.Kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: cfg.Context})
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig (sandbox.kubernetes.kubeconfig %q, context %q): %w", cfg.Kubeconfig, cfg.Context, err)
	}
	if cfg.Namespace == "" {
		if cfg.Namespace, _, err = cc.Namespace(); err != nil {
			return nil, fmt.Errorf("reading the kubeconfig's namespace: %w", err)
		}
		cfg.Namespace = cmp.Or(cfg.Namespace, "default")
	}
	rc = rest.CopyConfig(rc)
	rc.UserAgent = "hostd (polecat-sidecar)"
	r := &Runtime{cfg: cfg, server: rc.Host}
	if r.http, err = rest.HTTPClientFor(rc); err != nil {
		return nil, fmt.Errorf("the kubeconfig's transport: %w", err)
	}
	var apps, net *rest.RESTClient
	for _, c := range []struct {
		rc **rest.RESTClient
		gv schema.GroupVersion
	}{{&r.core, corev1.SchemeGroupVersion}, {&apps, appsv1.SchemeGroupVersion}, {&net, networkingv1.SchemeGroupVersion}} {
		if *c.rc, err = restClient(rc, r.http, c.gv); err != nil {
			return nil, fmt.Errorf("the API client of %s: %w", c.gv, err)
		}
	}
	ns := cfg.Namespace
	r.sets, r.policies = endpoint{apps, "statefulsets", ns}, endpoint{net, "networkpolicies", ns}
	r.pods, r.claims, r.secrets, r.events = endpoint{r.core, "pods", ns}, endpoint{r.core, "persistentvolumeclaims", ns}, endpoint{r.core, "secrets", ns}, endpoint{r.core, "events", ns}
	r.nodes, r.namespaces = endpoint{r.core, "nodes", ""}, endpoint{r.core, "namespaces", ""}
	return r, nil
}

// Name is "kubernetes".
func (r *Runtime) Name() string { return RuntimeName }

// Namespace is the namespace the sandboxes are in.
func (r *Runtime) Namespace() string { return r.cfg.Namespace }

// PullPolicy is the sandbox container's imagePullPolicy.
func (r *Runtime) PullPolicy() string { return r.cfg.PullPolicy }

// Server is the API server's URL.
func (r *Runtime) Server() string { return r.server }

// Close closes the idle connections to the API server.
func (r *Runtime) Close() { utilnet.CloseIdleConnectionsFor(r.http.Transport) }

// ServerVersion is the API server's version: whether it answers with the
// kubeconfig's credentials.
func (r *Runtime) ServerVersion(ctx context.Context) (string, error) {
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	body, err := r.core.Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return "", r.wrap("asking the API server its version", err)
	}
	if err := json.Unmarshal(body, &v); err != nil || v.GitVersion == "" {
		return "", fmt.Errorf("the API server at %s answered /version with %.100q", r.server, body)
	}
	return v.GitVersion, nil
}

// NamespaceExists says whether the sandboxes' namespace is there.
func (r *Runtime) NamespaceExists(ctx context.Context) (bool, error) {
	err := r.namespaces.exists(ctx, r.cfg.Namespace)
	if notFound(err) {
		return false, nil
	}
	return err == nil, r.wrap("looking for namespace "+r.cfg.Namespace, err)
}

// wrap is err, when not nil, with what was being attempted and where.
func (r *Runtime) wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s (API server %s, namespace %s): %w", what, r.server, r.cfg.Namespace, err)
}
