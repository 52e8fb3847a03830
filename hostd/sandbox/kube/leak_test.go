//go:build !k8s

package kube

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine they started, or
// that the code under test started, still runs once they have all ended
// (the cluster tests' TestMain does too).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
