package upstream

import (
	"maps"
	"testing"
)

func TestRefTips(t *testing.T) {
	got := refTips("abc\trefs/heads/main\ndef refs/heads/polecat/x\n\nbroken line with words\n")
	want := map[string]string{"refs/heads/main": "abc", "refs/heads/polecat/x": "def"}
	if !maps.Equal(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
}
