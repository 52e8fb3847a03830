package kube

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// waiting is a pod whose agent container waits for reason, with message.
func waiting(reason, message string) *corev1.Pod {
	return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
		Name: container, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}},
	}}}}
}

// TestPodProblem: why a pod does not run, in the cluster's words, from
// its statuses as the kubelet and the scheduler write them; nothing for a
// pod on its way or running, and never the container's termination
// message, which the polecat writes.
func TestPodProblem(t *testing.T) {
	crash := waiting("CrashLoopBackOff", "back-off 10s restarting failed container=polecat pod=gt-x-0")
	crash.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "\x1b]0;pwned\x07"}
	unscheduled := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
		Message: "0/1 nodes are available: 1 Insufficient memory.\n preemption: 0/1 nodes are available",
	}}}}
	evicted := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gt-x-0"}, Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory."}}
	runningPod := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
		Name: container, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
	}}}}
	deleting := waiting("ErrImagePull", "x")
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"image pull", waiting("ErrImagePull", `failed to pull and unpack image "docker.io/library/polecat:v9": not found`), `ErrImagePull: failed to pull and unpack image "docker.io/library/polecat:v9": not found`},
		{"pull back-off", waiting("ImagePullBackOff", `Back-off pulling image "polecat:v9"`), `ImagePullBackOff: Back-off pulling image "polecat:v9"`},
		{"never pull", waiting("ErrImageNeverPull", `Container image "polecat:v9" is not present with pull policy of Never`), `ErrImageNeverPull: Container image "polecat:v9" is not present with pull policy of Never`},
		{"config", waiting("CreateContainerConfigError", `secret "x" not found`), `CreateContainerConfigError: secret "x" not found`},
		{"crash loop", crash, "CrashLoopBackOff: back-off 10s restarting failed container=polecat pod=gt-x-0 (last exit: code 1, Error)"},
		{"unschedulable", unscheduled, "Unschedulable: 0/1 nodes are available: 1 Insufficient memory. preemption: 0/1 nodes are available"},
		{"evicted", evicted, "pod gt-x-0 failed: Evicted: The node was low on resource: memory."},
		{"being made", waiting("ContainerCreating", ""), ""},
		{"running", runningPod, ""},
		{"being deleted", deleting, ""},
	}
	for _, tt := range tests {
		if got := podProblem(tt.pod); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	if running(waiting("ContainerCreating", "")) || !running(runningPod) || running(evicted) {
		t.Error("running")
	}
}

// TestEventProblem: the newest event of the reasons asked for.
func TestEventProblem(t *testing.T) {
	at := func(reason, msg string, sec int) corev1.Event {
		return corev1.Event{Reason: reason, Message: msg, LastTimestamp: metav1.Time{Time: time.Unix(int64(sec), 0)}}
	}
	events := []corev1.Event{
		at("FailedCreate", `create Pod gt-x-0 in StatefulSet gt-x failed error: pods "gt-x-0" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1`, 20),
		at("SuccessfulCreate", "create Pod gt-x-0", 30),
		at("FailedCreate", "older", 10),
	}
	if got := eventProblem(events, setReasons...); !strings.HasPrefix(got, `FailedCreate: create Pod gt-x-0 in StatefulSet gt-x failed error: pods "gt-x-0" is forbidden: exceeded quota`) {
		t.Errorf("FailedCreate: %q", got)
	}
	if got := eventProblem(events); got != "SuccessfulCreate: create Pod gt-x-0" {
		t.Errorf("newest of all: %q", got)
	}
	if got := eventProblem(events, podReasons...); got != "" {
		t.Errorf("no FailedMount: %q", got)
	}
	pending := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "gt-x"}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}
	noPV := []corev1.Event{at("FailedBinding", "no persistent volumes available for this claim and no storage class is set", 5)}
	if got := claimProblem(pending, noPV); got != "PersistentVolumeClaim gt-x is Pending: FailedBinding: no persistent volumes available for this claim and no storage class is set" {
		t.Errorf("pending claim: %q", got)
	}
	if got := claimProblem(pending, []corev1.Event{at("WaitForFirstConsumer", "waiting for first consumer to be created before binding", 5)}); got != "" {
		t.Errorf("a claim waiting for its pod: %q", got)
	}
	bound := pending.DeepCopy()
	bound.Status.Phase = corev1.ClaimBound
	if got := claimProblem(bound, noPV); got != "" {
		t.Errorf("bound claim: %q", got)
	}
}

// TestClip: a Problem is bounded, cut at a character.
func TestClip(t *testing.T) {
	long := strings.Repeat("é", maxProblem)
	got := clip(long)
	if len(got) > maxProblem+len("…") || !strings.HasSuffix(got, "…") || !strings.HasPrefix(long, strings.TrimSuffix(got, "…")) {
		t.Errorf("clip: %d bytes, %q...", len(got), got[:10])
	}
	if both("a", "") != "a" || both("", "b") != "b" || both("a", "b") != "a; b" {
		t.Error("both")
	}
}

// TestNormalImage: an image as hostd's settings name it and as a node
// lists it compare equal.
func TestNormalImage(t *testing.T) {
	for in, want := range map[string]string{
		"polecat:0.1.0":                        "docker.io/library/polecat:0.1.0",
		"polecat":                              "docker.io/library/polecat:latest",
		"docker.io/library/polecat:0.1.0":      "docker.io/library/polecat:0.1.0",
		"me/polecat:1":                         "docker.io/me/polecat:1",
		"ghcr.io/polecat-sidecar/polecat:v1":   "ghcr.io/polecat-sidecar/polecat:v1",
		"localhost:5000/polecat":               "localhost:5000/polecat:latest",
		"polecat@sha256:abc":                   "docker.io/library/polecat@sha256:abc",
		"k8s-local.invalid/busybox:1":          "k8s-local.invalid/busybox:1",
		"polecat:v1@sha256:abc":                "docker.io/library/polecat@sha256:abc",
		"registry:5000/team/polecat:v2":        "registry:5000/team/polecat:v2",
		"docker.io/library/polecat@sha256:abc": "docker.io/library/polecat@sha256:abc",
	} {
		if got := normalImage(in); got != want {
			t.Errorf("normalImage(%q) = %q, want %q", in, got, want)
		}
	}
	if !isUID("0b7c3a6e-3f4d-4c1e-9a55-2b2f1f0f9d10") || isUID("gt-gastown-furiosa") || isUID("0B7C3A6E-3F4D-4C1E-9A55-2B2F1F0F9D10") {
		t.Error("isUID")
	}
}
