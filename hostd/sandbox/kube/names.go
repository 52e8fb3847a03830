package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Labels of every object a sandbox is made of. Label values hold at most
// 63 characters of [A-Za-z0-9._-]: a town (an absolute path) goes in as
// a hash, a rig and a name as they are when they fit, and the annotations
// (sandbox.TownLabel, PolecatLabel, HomeLabel, SandboxAnnotation) keep the
// full values, which are the ones read.
const (
	// ManagedLabel marks the objects hostd made: ManagedValue.
	ManagedLabel = "app.kubernetes.io/managed-by"
	ManagedValue = "polecat-sidecar"
	// TownHashLabel is TownHash of the sandbox's town: List's selector.
	TownHashLabel = "polecat-sidecar.town-hash"
	// RigLabel and NameLabel are the polecat's rig and name, for kubectl.
	RigLabel  = "polecat-sidecar.rig"
	NameLabel = "polecat-sidecar.name"
	// ObjectLabel is ObjectName of the sandbox: its pod's selector.
	ObjectLabel = "polecat-sidecar.sandbox"
)

// SandboxAnnotation holds sandbox.Name of the polecat, the name hostd
// knows the sandbox by.
const SandboxAnnotation = "polecat-sidecar.sandbox-name"

// maxObjectName keeps a StatefulSet's name short enough for the
// controller-revision-hash label its controller puts on its pods
// (<name>-<hash>, at most 63 characters).
const maxObjectName = 52

// ObjectName is the name of the objects of the sandbox hostd names name
// (sandbox.Name, gt-<rig>-<name>): a DNS-1123 label of at most 52
// characters, name lower-cased with every other character as '-', cut,
// then '-' and 8 hex digits of name's SHA-256, so that two names that
// read alike (gt-Toast-x, gt-toast-x; gt-a-b-c from rig a-b or a) get two.
func ObjectName(name string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(name) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
		} else {
			b.WriteByte('-')
		}
	}
	sum := sha256.Sum256([]byte(name))
	suffix := "-" + hex.EncodeToString(sum[:4])
	base := strings.Trim(b.String(), "-")
	base = strings.TrimRight(base[:min(len(base), maxObjectName-len(suffix))], "-")
	if base == "" {
		base = "gt"
	}
	return base + suffix
}

// PodName is the pod of the StatefulSet named object: its only replica.
func PodName(object string) string { return object + "-0" }

// TownHash is the label value that stands for town: 16 hex digits of its
// SHA-256.
func TownHash(town string) string {
	sum := sha256.Sum256([]byte(town))
	return hex.EncodeToString(sum[:8])
}

// labelValue is s as a label value: s when it is one, else s cut to 63
// characters and trimmed to start and end alphanumeric ("" when nothing
// is left: no label).
func labelValue(s string) string {
	s = s[:min(len(s), 63)]
	return strings.TrimFunc(s, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9')
	})
}

// selector is the labels that pick the pod of the sandbox named object.
func selector(object string) map[string]string {
	return map[string]string{ObjectLabel: object}
}

// labels are the labels of every object of polecat id's sandbox in town,
// named object, with the extra labels of the settings under ours.
func labels(extra map[string]string, town string, id wire.Identity, object string) map[string]string {
	l := map[string]string{}
	for k, v := range extra {
		l[k] = v
	}
	l[ManagedLabel] = ManagedValue
	l[TownHashLabel] = TownHash(town)
	l[ObjectLabel] = object
	for k, v := range map[string]string{RigLabel: labelValue(id.Rig), NameLabel: labelValue(id.Name)} {
		if v != "" {
			l[k] = v
		}
	}
	return l
}

// annotations are the full values the labels stand for: the town, the
// polecat, its directory's Home and the sandbox's name.
func annotations(town string, id wire.Identity, home string) map[string]string {
	return map[string]string{
		sandbox.TownLabel:    town,
		sandbox.PolecatLabel: id.String(),
		sandbox.HomeLabel:    home,
		SandboxAnnotation:    sandbox.Name(id),
	}
}

// ours reports whether labels are those of a sandbox hostd made.
func ours(l map[string]string) bool { return l[ManagedLabel] == ManagedValue && l[ObjectLabel] != "" }
