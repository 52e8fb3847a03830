//go:build !linux

// Command gt, the shim in a polecat's container, runs in Linux containers
// only, as gt-agent does (it uses Linux socket options). Built for another
// system, this file stops the build with an error that says so.
package main

var _ = gt_runs_in_Linux_containers_only__build_it_with_GOOS_linux
