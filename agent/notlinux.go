//go:build !linux

// Command gt-agent runs in Linux containers only: it reads procfs, drives
// tmux through a pseudo-terminal and uses Linux socket options. Built for
// another system, this file stops the build with an error that says so;
// on macOS, run hostd (which builds there) and put gt-agent in the
// polecats' Linux containers (GOOS=linux, GOARCH amd64 or arm64).
package main

var _ = gt_agent_runs_in_Linux_containers_only__build_it_with_GOOS_linux
