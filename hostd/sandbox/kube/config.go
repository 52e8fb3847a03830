package kube

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/polecat-sidecar/sidecar/internal/settings"
)

// Config is where and how the runtime makes sandboxes: the settings under
// sandbox.kubernetes in config.yaml (Settings).
type Config struct {
	// Kubeconfig is the kubeconfig file ("": $KUBECONFIG, else
	// ~/.kube/config, else the cluster hostd runs in).
	Kubeconfig string
	// Context is the kubeconfig's context to use ("": its current one).
	Context string
	// Namespace holds the sandboxes ("": the context's, else default).
	Namespace string
	// PullPolicy is the sandbox container's imagePullPolicy: Always,
	// IfNotPresent or Never (the image must be on a node already).
	PullPolicy string
	// StorageClass is the storage class of each sandbox's claim ("": the
	// cluster's default class).
	StorageClass string
	// StorageSize is the size each sandbox's claim asks for.
	StorageSize string
	// Requests and Limits are the container's resources (cpu, memory,
	// ephemeral-storage), as quantities: "500m", "2Gi".
	Requests, Limits map[string]string
	// NodeSelector is the pod's nodeSelector.
	NodeSelector map[string]string
	// Tolerations are the pod's tolerations, as taints are written:
	// key=value:Effect, key:Effect (any value), key (any value and effect).
	Tolerations []string
	// ServiceAccount is the pod's service account ("": the namespace's
	// default); its token is never mounted.
	ServiceAccount string
	// Labels are more labels for every object of a sandbox.
	Labels map[string]string
	// Egress are more destinations the sandbox's NetworkPolicy lets its
	// pod reach besides hostd, CIDR or CIDR:port each (TCP and UDP): the
	// model provider's addresses or an egress proxy, without which Claude
	// Code cannot reach its API. None by default: hostd alone.
	Egress []string
}

// DefaultConfig is a claim of 10Gi in the default storage class, images
// pulled when not on the node, and nothing else set.
func DefaultConfig() Config {
	return Config{PullPolicy: string(corev1.PullIfNotPresent), StorageSize: "10Gi",
		Requests: map[string]string{}, Limits: map[string]string{}, NodeSelector: map[string]string{}, Labels: map[string]string{}}
}

// Settings is the table of Config's settings, each under
// sandbox.kubernetes in config.yaml (HOSTD_SANDBOX_KUBERNETES_* in the
// environment), with no flag: hostd run, hostd nuke and hostd serve read
// the same ones.
func Settings(c *Config) []settings.Setting {
	const k = "sandbox.kubernetes."
	return []settings.Setting{
		{Key: k + "kubeconfig", Usage: "kubeconfig file (default $KUBECONFIG, else ~/.kube/config, else the cluster hostd runs in)", Value: &c.Kubeconfig},
		{Key: k + "context", Usage: "the kubeconfig's context (default its current one)", Value: &c.Context},
		{Key: k + "namespace", Usage: "namespace of the sandboxes (default the context's, else default)", Value: &c.Namespace},
		{Key: k + "image_pull_policy", Usage: "the sandbox container's imagePullPolicy: Always, IfNotPresent or Never (the image on a node already)", Value: &c.PullPolicy},
		{Key: k + "storage_class", Usage: "storage class of each sandbox's claim, which holds /work (default the cluster's default class)", Value: &c.StorageClass},
		{Key: k + "storage_size", Usage: "size of each sandbox's claim", Value: &c.StorageSize},
		{Key: k + "requests", Usage: "map of resource (cpu, memory, ephemeral-storage) to the container's request", Value: &c.Requests},
		{Key: k + "limits", Usage: "map of resource to the container's limit", Value: &c.Limits},
		{Key: k + "node_selector", Usage: "map of node label to value: the pod's nodeSelector", Value: &c.NodeSelector},
		{Key: k + "tolerations", Usage: "the pod's tolerations, as taints are written: key=value:Effect, key:Effect, key", Value: &c.Tolerations},
		{Key: k + "service_account", Usage: "the pod's service account (default the namespace's; its token is never mounted)", Value: &c.ServiceAccount},
		{Key: k + "labels", Usage: "map of more labels for every object of a sandbox", Value: &c.Labels},
		{Key: k + "egress", Usage: "more destinations the sandbox's NetworkPolicy allows besides hostd, CIDR or CIDR:port each (the model provider's addresses, an egress proxy)", Value: &c.Egress},
	}
}

// pullPolicies are the values PullPolicy may take.
var pullPolicies = []string{string(corev1.PullAlways), string(corev1.PullIfNotPresent), string(corev1.PullNever)}

// Validate names each field Kubernetes would refuse, as
// settings.FieldErrors, before anything is made.
func (c Config) Validate() error {
	errs := []error{
		dns("Namespace", c.Namespace, validation.IsDNS1123Label),
		dns("ServiceAccount", c.ServiceAccount, validation.IsDNS1123Subdomain),
		settings.Required("StorageSize", c.StorageSize),
	}
	if !slices.Contains(pullPolicies, c.PullPolicy) {
		errs = append(errs, settings.Invalid("PullPolicy", c.PullPolicy, fmt.Errorf("want one of %s", strings.Join(pullPolicies, ", "))))
	}
	if q, err := resource.ParseQuantity(c.StorageSize); c.StorageSize != "" && (err != nil || q.Sign() <= 0) {
		errs = append(errs, settings.Invalid("StorageSize", c.StorageSize, errors.New("want a size such as 10Gi")))
	}
	if _, err := c.resources(); err != nil {
		errs = append(errs, err)
	}
	for i, t := range c.Tolerations {
		if _, err := toleration(t); err != nil {
			errs = append(errs, settings.Invalid(fmt.Sprintf("Tolerations.%d", i), t, err))
		}
	}
	for i, e := range c.Egress {
		if _, _, err := egressRule(e); err != nil {
			errs = append(errs, settings.Invalid(fmt.Sprintf("Egress.%d", i), e, err))
		}
	}
	errs = append(errs, labelMap("NodeSelector", c.NodeSelector, nil), labelMap("Labels", c.Labels, ownLabels))
	return errors.Join(errs...)
}

// ownLabels are the label keys hostd sets itself: Labels may not set them.
var ownLabels = []string{ManagedLabel, TownHashLabel, RigLabel, NameLabel, ObjectLabel}

// dns is a FieldError for v, when set, unless valid (a validation.IsDNS*
// function) takes it.
func dns(field, v string, valid func(string) []string) error {
	if v == "" {
		return nil
	}
	if msgs := valid(v); len(msgs) > 0 {
		return settings.Invalid(field, v, errors.New(strings.Join(msgs, "; ")))
	}
	return nil
}

// labelMap is a FieldError for each entry of m that is not a label (key
// and value), or whose key is reserved.
func labelMap(field string, m map[string]string, reserved []string) error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(m)) {
		msgs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(m[k])...)
		if slices.Contains(reserved, k) {
			msgs = append(msgs, "hostd sets this label itself")
		}
		if len(msgs) > 0 {
			errs = append(errs, settings.Invalid(field+"."+k, m[k], errors.New(strings.Join(msgs, "; "))))
		}
	}
	return errors.Join(errs...)
}

// resources is Requests and Limits as the container's resources; its
// error names the entry that is not a quantity, or a limit below its
// request.
func (c Config) resources() (corev1.ResourceRequirements, error) {
	var r corev1.ResourceRequirements
	var errs []error
	parse := func(field string, m map[string]string) corev1.ResourceList {
		if len(m) == 0 {
			return nil
		}
		l := corev1.ResourceList{}
		for k, v := range m {
			q, err := resource.ParseQuantity(v)
			if msgs := validation.IsQualifiedName(k); err != nil || len(msgs) > 0 || q.Sign() < 0 {
				errs = append(errs, settings.Invalid(field+"."+k, v, errors.New("want a resource name and a quantity, such as cpu: 500m or memory: 2Gi")))
				continue
			}
			l[corev1.ResourceName(k)] = q
		}
		return l
	}
	r.Requests, r.Limits = parse("Requests", c.Requests), parse("Limits", c.Limits)
	for k, req := range r.Requests {
		if lim, ok := r.Limits[k]; ok && lim.Cmp(req) < 0 {
			errs = append(errs, &settings.FieldError{Field: "Limits." + string(k), Value: lim.String(), Rule: "it must be at least", Other: "Requests." + string(k), OtherValue: req.String()})
		}
	}
	return r, errors.Join(errs...)
}

// toleration reads a toleration written as a taint: key=value:Effect
// (Equal), key:Effect (Exists), key (Exists, every effect).
func toleration(s string) (corev1.Toleration, error) {
	rest, effect, hasEffect := strings.Cut(s, ":")
	key, value, hasValue := strings.Cut(rest, "=")
	t := corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists}
	if hasValue {
		t.Operator, t.Value = corev1.TolerationOpEqual, value
	}
	if hasEffect {
		t.Effect = corev1.TaintEffect(effect)
	}
	switch {
	case len(validation.IsQualifiedName(key)) > 0:
		return t, fmt.Errorf("%q is not a taint's key", key)
	case hasValue && len(validation.IsValidLabelValue(value)) > 0:
		return t, fmt.Errorf("%q is not a taint's value", value)
	case hasEffect && !slices.Contains([]corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}, t.Effect):
		return t, fmt.Errorf("effect %q: want NoSchedule, PreferNoSchedule or NoExecute", effect)
	}
	return t, nil
}
