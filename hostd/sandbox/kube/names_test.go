package kube

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestObjectName: every sandbox name becomes a DNS-1123 label of at most
// 52 characters, the same each time, readable where it can be, and two
// names that read alike (case, a '-' in the rig or the name, '_', a cut)
// two different ones.
func TestObjectName(t *testing.T) {
	long := strings.Repeat("a", 64)
	tests := []struct {
		name, prefix string
	}{
		{"gt-gastown-furiosa", "gt-gastown-furiosa-"},
		{"gt-Gastown-Toast", "gt-gastown-toast-"},
		{"gt-gastown-toast", "gt-gastown-toast-"},
		{"gt-a-b-c", "gt-a-b-c-"},
		{"gt-my_rig-nux", "gt-my-rig-nux-"},
		{"gt-my-rig-nux", "gt-my-rig-nux-"},
		{"gt-" + long + "-" + long, "gt-aaaa"},
		{"gt-" + long + "-" + long + "b", "gt-aaaa"},
		{"gt-_-_", "gt-"},
		{"___", "gt-"},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		got := ObjectName(tt.name)
		if msgs := validation.IsDNS1123Label(got); len(msgs) > 0 || len(got) > maxObjectName {
			t.Errorf("ObjectName(%q) = %q (%d characters): not a DNS-1123 label of at most %d: %v", tt.name, got, len(got), maxObjectName, msgs)
		}
		if !strings.HasPrefix(got, tt.prefix) {
			t.Errorf("ObjectName(%q) = %q, want it to start %q", tt.name, got, tt.prefix)
		}
		if again := ObjectName(tt.name); again != got {
			t.Errorf("ObjectName(%q) is %q, then %q", tt.name, got, again)
		}
		if other, ok := seen[got]; ok {
			t.Errorf("ObjectName(%q) = ObjectName(%q) = %q", tt.name, other, got)
		}
		seen[got] = tt.name
	}
	if ObjectName(sandbox.Name(wire.Identity{Rig: "a-b", Name: "c"})) != ObjectName(sandbox.Name(wire.Identity{Rig: "a", Name: "b-c"})) {
		t.Error("two identities of one sandbox name (docker's name) got two objects: Inspect and Remove, which have the name alone, could not find them")
	}
}

// FuzzObjectName: whatever the name, a DNS-1123 label of at most 52.
func FuzzObjectName(f *testing.F) {
	for _, s := range []string{"gt-gastown-furiosa", "", "-", "gt-Ä-ö", strings.Repeat("x-", 80)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got := ObjectName(name)
		if msgs := validation.IsDNS1123Label(got); len(msgs) > 0 || len(got) > maxObjectName {
			t.Fatalf("ObjectName(%q) = %q: %v", name, got, msgs)
		}
	})
}

// TestLabels: the town goes in as a hash, the rig and name as label
// values where they can, the extra labels under ours; the annotations
// keep the full values.
func TestLabels(t *testing.T) {
	town := "/home/me/gt"
	id := wire.Identity{Rig: "_rig_", Name: strings.Repeat("n", 64)}
	l := labels(map[string]string{"team": "a", ManagedLabel: "someone"}, town, id, "obj")
	want := map[string]string{ManagedLabel: ManagedValue, TownHashLabel: TownHash(town), ObjectLabel: "obj", RigLabel: "rig", NameLabel: strings.Repeat("n", 63), "team": "a"}
	for k, v := range want {
		if l[k] != v {
			t.Errorf("label %s = %q, want %q", k, l[k], v)
		}
	}
	for k, v := range l {
		if msgs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); len(msgs) > 0 {
			t.Errorf("label %s=%q: %v", k, v, msgs)
		}
	}
	if l := labels(nil, town, wire.Identity{Rig: "__", Name: "x"}, "obj"); l[RigLabel] != "" {
		t.Errorf("a rig with nothing a label value can hold got label %q", l[RigLabel])
	}
	a := annotations(town, id, "ino-1")
	if a[sandbox.TownLabel] != town || a[sandbox.PolecatLabel] != id.String() || a[sandbox.HomeLabel] != "ino-1" || a[SandboxAnnotation] != sandbox.Name(id) {
		t.Errorf("annotations %v", a)
	}
	if TownHash(town) == TownHash(town+"2") || len(TownHash(town)) != 16 {
		t.Errorf("TownHash %q, %q", TownHash(town), TownHash(town+"2"))
	}
}
