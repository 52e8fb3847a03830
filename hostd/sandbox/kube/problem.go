package kube

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// maxProblem bounds a Problem: a cluster's messages (an image pull's)
// can run long.
const maxProblem = 600

// podProblem is why pod does not run, in the cluster's words: its
// container waiting for another reason than being made, the pod failed
// (evicted), or not scheduled. "" when it runs or is on its way. A
// container's termination message is never quoted: the polecat writes it.
func podProblem(pod *corev1.Pod) string {
	if pod.DeletionTimestamp != nil {
		return ""
	}
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return clip(fmt.Sprintf("pod %s %s: %s", pod.Name, strings.ToLower(string(pod.Status.Phase)), join(pod.Status.Reason, pod.Status.Message)))
	}
	for _, cs := range pod.Status.ContainerStatuses {
		w := cs.State.Waiting
		if cs.Name != container || w == nil || w.Reason == "" || w.Reason == "ContainerCreating" || w.Reason == "PodInitializing" {
			continue
		}
		p := join(w.Reason, w.Message)
		if t := cs.LastTerminationState.Terminated; t != nil {
			p += fmt.Sprintf(" (last exit: code %d, %s)", t.ExitCode, t.Reason)
		}
		return clip(p)
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason != "" {
			return clip(join(c.Reason, c.Message))
		}
	}
	return ""
}

// scheduled says whether pod has been placed on a node.
func scheduled(pod *corev1.Pod) bool { return pod.Spec.NodeName != "" }

// eventProblem is the newest of events whose reason is one of reasons
// (any when none), as "reason: message"; "" when there is none.
func eventProblem(events []corev1.Event, reasons ...string) string {
	var newest *corev1.Event
	for i := range events {
		e := &events[i]
		if len(reasons) > 0 && !slices.Contains(reasons, e.Reason) {
			continue
		}
		if newest == nil || !eventTime(e).Before(eventTime(newest)) {
			newest = e
		}
	}
	if newest == nil {
		return ""
	}
	return clip(join(newest.Reason, newest.Message))
}

// eventTime is when e last happened, by whichever of its times it has.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// claimProblem is why claim is not bound, by its newest event that says
// it cannot be: "" while it is bound, or only waits (for its pod, for a
// provisioner).
func claimProblem(claim *corev1.PersistentVolumeClaim, events []corev1.Event) string {
	e := eventProblem(events, claimReasons...)
	if claim.Status.Phase != corev1.ClaimPending || e == "" {
		return ""
	}
	return clip("PersistentVolumeClaim " + claim.Name + " is Pending: " + e)
}

// Reasons of the events that say why a pod is not made or not started.
var (
	// setReasons are a StatefulSet's: a pod it could not create (a
	// quota, an admission webhook, Pod Security).
	setReasons = []string{"FailedCreate"}
	// podReasons are a scheduled pod's, while its container is made.
	podReasons = []string{"FailedMount", "FailedAttachVolume", "FailedCreatePodSandBox", "FailedSync"}
	// claimReasons are a claim's that no volume is, or will be, there.
	claimReasons = []string{"ProvisioningFailed", "FailedBinding", "VolumeMismatch"}
)

// join is reason and message as one line: "reason: message".
func join(reason, message string) string {
	message = strings.Join(strings.Fields(message), " ")
	switch {
	case reason == "":
		return message
	case message == "":
		return reason
	}
	return reason + ": " + message
}

// both is a and b as one Problem, either alone when the other is "".
func both(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return clip(a + "; " + b)
}

// clip bounds p to maxProblem bytes, cut at a character.
func clip(p string) string {
	if len(p) <= maxProblem {
		return p
	}
	cut := maxProblem
	for cut > 0 && p[cut]&0xC0 == 0x80 {
		cut--
	}
	return p[:cut] + "…"
}
