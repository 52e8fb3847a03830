package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// undoTimeout bounds removing what a failed Create made.
const undoTimeout = 30 * time.Second

// Create makes polecat id's sandbox in town: its NetworkPolicy, the
// Secret with token, its claim, then its StatefulSet, whose controller
// starts the pod. It returns once the API server has taken them all, not
// once the pod runs: Inspect says when it does, or why not. An object of
// the sandbox's name already there fails it; on any failure it deletes
// what it made (by UID, so nothing it did not make).
func (r *Runtime) Create(ctx context.Context, s sandbox.Spec, town string, id wire.Identity, home, token string) (failure error) {
	o, err := r.cfg.objects(s, town, id, home, token)
	if err != nil {
		return err
	}
	var undo []func(context.Context) error
	defer func() {
		if failure == nil {
			return
		}
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
		defer cancel()
		var errs []error
		for i := len(undo) - 1; i >= 0; i-- {
			if err := undo[i](uctx); err != nil && !notFound(err) {
				errs = append(errs, err)
			}
		}
		if err := errors.Join(errs...); err != nil {
			failure = fmt.Errorf("%w (and deleting what it had made: %v)", failure, err)
		}
	}()
	name := o.set.Name
	for _, m := range []struct {
		kind      string
		k         endpoint
		obj, made runtime.Object
	}{
		{"NetworkPolicy", r.policies, o.policy, &networkingv1.NetworkPolicy{}},
		{"Secret", r.secrets, o.secret, &corev1.Secret{}},
		{"PersistentVolumeClaim", r.claims, o.claim, &corev1.PersistentVolumeClaim{}},
		{"StatefulSet", r.sets, o.set, &appsv1.StatefulSet{}},
	} {
		err := m.k.create(ctx, m.obj, m.made)
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("making the sandbox of %s: %s %s is in namespace %s already, left by an earlier sandbox: delete it (hostd nuke %s)", id, m.kind, name, r.cfg.Namespace, id)
		}
		if err != nil {
			return r.wrap("making the sandbox's "+m.kind, err)
		}
		k, uid := m.k, m.made.(metav1.Object).GetUID()
		undo = append(undo, func(ctx context.Context) error { return k.remove(ctx, name, deleteUID(uid)) })
	}
	return nil
}

// deleteUID deletes the object of uid only, in the background (its
// dependents, a StatefulSet's pod, go after it).
func deleteUID(uid types.UID) metav1.DeleteOptions {
	bg := metav1.DeletePropagationBackground
	return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &bg}
}

// Start starts a stopped sandbox: its StatefulSet scaled back to one
// replica (one that runs already is left as it is).
func (r *Runtime) Start(ctx context.Context, name string) error {
	set, err := r.find(ctx, name)
	if err != nil {
		return err
	}
	if set == nil {
		return fmt.Errorf("starting sandbox %s: it is not in namespace %s", name, r.cfg.Namespace)
	}
	if set.Spec.Replicas != nil && *set.Spec.Replicas >= 1 {
		return nil
	}
	err = r.sets.patch(ctx, set.Name, types.MergePatchType, []byte(`{"spec":{"replicas":1}}`))
	return r.wrap("scaling sandbox "+name+" to one replica", err)
}

// DropToken deletes sandbox name's Secret, its spent join token: a pod
// made again later finds its certificate on the claim.
func (r *Runtime) DropToken(ctx context.Context, name string) error {
	err := r.secrets.remove(ctx, ObjectName(name), metav1.DeleteOptions{})
	if notFound(err) {
		return nil
	}
	return r.wrap("deleting the join token of sandbox "+name, err)
}

// Remove deletes sandbox ref (its name or its ID) with its claim, Secret
// and NetworkPolicy, and waits until they and its pod are gone (a claim
// goes once no pod uses it; the pod has its grace period), so that a
// sandbox of the same name can be made at once. None is not an error.
func (r *Runtime) Remove(ctx context.Context, ref string) error {
	set, err := r.find(ctx, ref)
	if err != nil {
		return err
	}
	name := ObjectName(ref)
	if set != nil {
		name = set.Name
		err := r.sets.remove(ctx, name, deleteUID(set.UID))
		if err != nil && !notFound(err) {
			return r.wrap("deleting the StatefulSet of sandbox "+ref, err)
		}
	} else if isUID(ref) {
		return nil // that sandbox is gone; another may have its name now
	}
	for _, k := range []endpoint{r.claims, r.secrets, r.policies} {
		if err := k.remove(ctx, name, metav1.DeleteOptions{}); err != nil && !notFound(err) {
			return r.wrap("deleting sandbox "+ref, err)
		}
	}
	return r.waitGone(ctx, ref, name)
}

// waitGone waits until no object of the sandbox named name is left,
// asking every removePoll, until ctx ends.
func (r *Runtime) waitGone(ctx context.Context, ref, name string) error {
	gets := []struct {
		kind, name string
		k          endpoint
	}{
		{"StatefulSet", name, r.sets}, {"Pod", PodName(name), r.pods}, {"PersistentVolumeClaim", name, r.claims},
		{"Secret", name, r.secrets}, {"NetworkPolicy", name, r.policies},
	}
	t := time.NewTicker(removePoll)
	defer t.Stop()
	for {
		left := ""
		for _, g := range gets {
			if err := g.k.exists(ctx, g.name); err == nil {
				left = g.kind
				break
			} else if !notFound(err) {
				return r.wrap("waiting for sandbox "+ref+" to go", err)
			}
		}
		if left == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("removing sandbox %s: its %s %s is still there: %w", ref, left, name, ctx.Err())
		case <-t.C:
		}
	}
}

// removePoll is how often Remove looks whether the sandbox is gone.
const removePoll = 250 * time.Millisecond
