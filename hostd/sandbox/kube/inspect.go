package kube

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

func notFound(err error) bool { return apierrors.IsNotFound(err) }

// Inspect says whether sandbox ref (its name, or the ID List gave) exists,
// whose it is, and whether it runs: its pod runs, or the cluster makes it
// with nothing in the way (a pod's status lags behind its container).
// Else Info.Problem says why not in the cluster's words (its pod's, its
// claim's, its StatefulSet's), which may pass (a pod unschedulable until
// a node is added): a caller waiting reports one that stays.
func (r *Runtime) Inspect(ctx context.Context, ref string) (sandbox.Info, error) {
	set, err := r.find(ctx, ref)
	if err != nil || set == nil {
		return sandbox.Info{}, err
	}
	a := set.Annotations
	info := sandbox.Info{Exists: true, Town: a[sandbox.TownLabel], Polecat: a[sandbox.PolecatLabel], Home: a[sandbox.HomeLabel]}
	if set.Spec.Replicas != nil && *set.Spec.Replicas == 0 {
		return info, nil // stopped: Start scales it up
	}
	info.Problem, err = r.problem(ctx, set)
	info.Running = info.Problem == "" && err == nil
	return info, err
}

// problem is why the pod of set does not run, "" when it runs or is on
// its way.
func (r *Runtime) problem(ctx context.Context, set *appsv1.StatefulSet) (string, error) {
	pod := &corev1.Pod{}
	err := r.pods.get(ctx, PodName(set.Name), pod)
	if err != nil && !notFound(err) {
		return "", r.wrap("reading the sandbox's pod", err)
	}
	if err != nil || !metav1.IsControlledBy(pod, set) {
		return r.notMade(ctx, set)
	}
	if running(pod) {
		return "", nil
	}
	problem := podProblem(pod)
	if problem == "" && scheduled(pod) {
		events, err := r.eventsOf(ctx, "Pod", pod.Name, pod.UID)
		if err != nil {
			return "", err
		}
		problem = eventProblem(events, podReasons...)
	}
	if !scheduled(pod) {
		claim, err := r.claimProblem(ctx, set.Name)
		return both(problem, claim), err
	}
	return problem, nil
}

// running says whether pod's agent container runs.
func running(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == container {
			return cs.State.Running != nil
		}
	}
	return false
}

// notMade is why set has no pod: the StatefulSet's own FailedCreate
// events, and its claim when that is Pending.
func (r *Runtime) notMade(ctx context.Context, set *appsv1.StatefulSet) (string, error) {
	events, err := r.eventsOf(ctx, "StatefulSet", set.Name, set.UID)
	if err != nil {
		return "", err
	}
	claim, err := r.claimProblem(ctx, set.Name)
	return both(eventProblem(events, setReasons...), claim), err
}

// claimProblem is why the claim named name is not bound ("" when it is,
// or is not there: the pod's Problem says so).
func (r *Runtime) claimProblem(ctx context.Context, name string) (string, error) {
	claim := &corev1.PersistentVolumeClaim{}
	err := r.claims.get(ctx, name, claim)
	if notFound(err) || err == nil && claim.Status.Phase != corev1.ClaimPending {
		return "", nil
	}
	if err != nil {
		return "", r.wrap("reading the sandbox's claim", err)
	}
	events, err := r.eventsOf(ctx, "PersistentVolumeClaim", name, claim.UID)
	return claimProblem(claim, events), err
}

// eventsOf are the events of the object of kind named name, this one
// (uid), not an earlier one of its name.
func (r *Runtime) eventsOf(ctx context.Context, kind, name string, uid types.UID) ([]corev1.Event, error) {
	sel := fields.Set{"involvedObject.kind": kind, "involvedObject.name": name, "involvedObject.uid": string(uid)}.AsSelector().String()
	var l corev1.EventList
	if err := r.events.list(ctx, metav1.ListOptions{FieldSelector: sel, Limit: 100}, &l); err != nil {
		return nil, r.wrap("reading the events of "+kind+" "+name, err)
	}
	return l.Items, nil
}

// find is the StatefulSet of sandbox ref, a sandbox's name or the UID
// List gave as its ID; nil when there is none, or it is not hostd's.
func (r *Runtime) find(ctx context.Context, ref string) (*appsv1.StatefulSet, error) {
	if isUID(ref) {
		sets, err := r.listSets(ctx, nil)
		for i := range sets {
			if string(sets[i].UID) == ref {
				return &sets[i], nil
			}
		}
		return nil, err
	}
	set := &appsv1.StatefulSet{}
	err := r.sets.get(ctx, ObjectName(ref), set)
	switch {
	case notFound(err):
		return nil, nil
	case err != nil:
		return nil, r.wrap("reading the StatefulSet of sandbox "+ref, err)
	case !ours(set.Labels) || set.Annotations[SandboxAnnotation] != ref:
		return nil, nil
	}
	return set, nil
}

// listSets is hostd's StatefulSets in the namespace, with labels more.
func (r *Runtime) listSets(ctx context.Context, more map[string]string) ([]appsv1.StatefulSet, error) {
	sel := k8slabels.Set{ManagedLabel: ManagedValue}
	for k, v := range more {
		sel[k] = v
	}
	var l appsv1.StatefulSetList
	if err := r.sets.list(ctx, metav1.ListOptions{LabelSelector: sel.String()}, &l); err != nil {
		return nil, r.wrap("listing the sandboxes", err)
	}
	return l.Items, nil
}

// List is every sandbox of town, running or not, by the hash of town in
// its labels and town itself in its annotations; ID is its StatefulSet's
// UID.
func (r *Runtime) List(ctx context.Context, town string) ([]sandbox.Sandbox, error) {
	sets, err := r.listSets(ctx, map[string]string{TownHashLabel: TownHash(town)})
	if err != nil {
		return nil, err
	}
	var list []sandbox.Sandbox
	for _, s := range sets {
		a := s.Annotations
		id, err := wire.ParseIdentity(a[sandbox.PolecatLabel])
		if err != nil || a[sandbox.TownLabel] != town || !ours(s.Labels) {
			continue
		}
		list = append(list, sandbox.Sandbox{Name: a[SandboxAnnotation], ID: string(s.UID), Polecat: id, Home: a[sandbox.HomeLabel]})
	}
	return list, nil
}

// isUID says whether ref has a UID's form (8-4-4-4-12 hex digits), which
// no sandbox's name (gt-...) has.
func isUID(ref string) bool {
	if len(ref) != 36 {
		return false
	}
	for i, c := range ref {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdef", c) {
				return false
			}
		}
	}
	return true
}

// ImageExists says whether a sandbox of image can start: with pull policy
// Never, whether a node of the cluster has it (the first 50 images a
// node lists, by the kubelet's default); else true, the cluster pulls it.
func (r *Runtime) ImageExists(ctx context.Context, image string) (bool, error) {
	if r.cfg.PullPolicy != string(corev1.PullNever) {
		return true, nil
	}
	var nodes corev1.NodeList
	if err := r.nodes.list(ctx, metav1.ListOptions{}, &nodes); err != nil {
		return false, fmt.Errorf("listing the nodes for their images (with sandbox.kubernetes.image_pull_policy Never hostd needs to list nodes): %w", err)
	}
	want := normalImage(image)
	for _, n := range nodes.Items {
		for _, img := range n.Status.Images {
			for _, name := range img.Names {
				if normalImage(name) == want {
					return true, nil
				}
			}
		}
	}
	return false, nil
}

// normalImage is an image reference as a node lists it: the registry
// (docker.io), library/ for a single name there, and the tag (latest)
// made explicit.
func normalImage(ref string) string {
	name, digest, _ := strings.Cut(ref, "@")
	tag := "latest"
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, tag = name[:i], name[i+1:]
	}
	if digest != "" {
		return normalName(name) + "@" + digest
	}
	return normalName(name) + ":" + tag
}

// normalName is a repository's name with its registry: docker.io/library/
// before a single name, docker.io/ before a path whose first part names
// no registry (no '.' or ':', not localhost).
func normalName(name string) string {
	first, _, nested := strings.Cut(name, "/")
	switch {
	case !nested:
		return "docker.io/library/" + name
	case strings.ContainsAny(first, ".:") || first == "localhost":
		return name
	}
	return "docker.io/" + name
}
