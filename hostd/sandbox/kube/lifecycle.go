package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	ns, name := r.cfg.Namespace, o.set.Name
	made := func(what string, obj metav1.Object, err error, del func(context.Context, string, metav1.DeleteOptions) error) error {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("making the sandbox of %s: %s %s is in namespace %s already, left by an earlier sandbox: delete it (hostd nuke %s)", id, what, name, ns, id)
		}
		if err != nil {
			return r.wrap("making the sandbox's "+what, err)
		}
		uid := obj.GetUID()
		undo = append(undo, func(ctx context.Context) error { return del(ctx, name, deleteUID(uid)) })
		return nil
	}
	p, err := r.net.NetworkPolicies(ns).Create(ctx, o.policy, metav1.CreateOptions{})
	if err := made("NetworkPolicy", p, err, r.net.NetworkPolicies(ns).Delete); err != nil {
		return err
	}
	sec, err := r.core.Secrets(ns).Create(ctx, o.secret, metav1.CreateOptions{})
	if err := made("Secret", sec, err, r.core.Secrets(ns).Delete); err != nil {
		return err
	}
	c, err := r.core.PersistentVolumeClaims(ns).Create(ctx, o.claim, metav1.CreateOptions{})
	if err := made("PersistentVolumeClaim", c, err, r.core.PersistentVolumeClaims(ns).Delete); err != nil {
		return err
	}
	set, err := r.apps.StatefulSets(ns).Create(ctx, o.set, metav1.CreateOptions{})
	return made("StatefulSet", set, err, r.apps.StatefulSets(ns).Delete)
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
	_, err = r.apps.StatefulSets(r.cfg.Namespace).Patch(ctx, set.Name, types.MergePatchType, []byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{})
	return r.wrap("scaling sandbox "+name+" to one replica", err)
}

// DropToken deletes sandbox name's Secret, its spent join token: a pod
// made again later finds its certificate on the claim.
func (r *Runtime) DropToken(ctx context.Context, name string) error {
	err := r.core.Secrets(r.cfg.Namespace).Delete(ctx, ObjectName(name), metav1.DeleteOptions{})
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
		err := r.apps.StatefulSets(r.cfg.Namespace).Delete(ctx, name, deleteUID(set.UID))
		if err != nil && !notFound(err) {
			return r.wrap("deleting the StatefulSet of sandbox "+ref, err)
		}
	} else if isUID(ref) {
		return nil // that sandbox is gone; another may have its name now
	}
	ns := r.cfg.Namespace
	all := metav1.DeleteOptions{}
	for _, del := range []func() error{
		func() error { return r.core.PersistentVolumeClaims(ns).Delete(ctx, name, all) },
		func() error { return r.core.Secrets(ns).Delete(ctx, name, all) },
		func() error { return r.net.NetworkPolicies(ns).Delete(ctx, name, all) },
	} {
		if err := del(); err != nil && !notFound(err) {
			return r.wrap("deleting sandbox "+ref, err)
		}
	}
	return r.waitGone(ctx, ref, name)
}

// waitGone waits until no object of the sandbox named name is left,
// asking every removePoll, until ctx ends.
func (r *Runtime) waitGone(ctx context.Context, ref, name string) error {
	ns := r.cfg.Namespace
	gets := []struct {
		kind string
		get  func() error
	}{
		{"StatefulSet", func() error { _, err := r.apps.StatefulSets(ns).Get(ctx, name, getOpts); return err }},
		{"Pod", func() error { _, err := r.core.Pods(ns).Get(ctx, PodName(name), getOpts); return err }},
		{"PersistentVolumeClaim", func() error { _, err := r.core.PersistentVolumeClaims(ns).Get(ctx, name, getOpts); return err }},
		{"Secret", func() error { _, err := r.core.Secrets(ns).Get(ctx, name, getOpts); return err }},
		{"NetworkPolicy", func() error { _, err := r.net.NetworkPolicies(ns).Get(ctx, name, getOpts); return err }},
	}
	t := time.NewTicker(removePoll)
	defer t.Stop()
	for {
		left := ""
		for _, g := range gets {
			if err := g.get(); err == nil {
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
