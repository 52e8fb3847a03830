package main

import "testing"

func TestGitAdmit(t *testing.T) {
	tests := []struct {
		list      []string
		check, ok bool // a check made; no error
	}{
		{[]string{"1000"}, true, true},
		{[]string{"0", "1000"}, true, true},
		{[]string{"1000", "any"}, false, true},
		{[]string{"root"}, false, false},
		{[]string{"-1"}, false, false},
	}
	for _, tt := range tests {
		admit, err := gitAdmit(tt.list)
		if (admit != nil) != tt.check || (err == nil) != tt.ok {
			t.Errorf("gitAdmit(%q) = check %v, %v; want check %v, ok %v", tt.list, admit != nil, err, tt.check, tt.ok)
		}
	}
}
