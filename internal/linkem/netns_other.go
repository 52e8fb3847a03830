//go:build !linux

package linkem

import (
	"errors"
	"os"
)

// errNotLinux is what a link answers where there are no network namespaces.
var errNotLinux = errors.New("linkem: network namespaces and TUN devices are Linux's")

// Run fails: there are no network namespaces here.
func (n *Namespace) Run(f func() error) error { return errNotLinux }

// openTUN fails: there are no TUN devices of Linux's kind here.
func (n *Namespace) openTUN() (*os.File, error) { return nil, errNotLinux }

// unavailable says that links are Linux's.
func unavailable() string { return errNotLinux.Error() }
