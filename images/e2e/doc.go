// Package e2e is the container end-to-end suite: the polecat image with
// gt-agent baked in, hostd on the host, three polecat containers on a
// Docker network that can reach hostd's port and nothing else, and the
// product's checks run through them (relay, git policy, liveness under
// pause, kill, disconnect and restart, the UDP-to-TCP fallback, nudges,
// peek and attach, data at docker stop, isolation, a hostile container),
// and Dockerfile.polecat's ways to bring Claude Code (image_test.go).
//
// Its tests carry the build tag e2e and need root (iptables) and a Docker
// engine; 'make e2e' builds the images and runs them:
//
//	make e2e
//
// The test binary doubles as every program the suite puts in a container
// (the stand-in claude, the probes and the hostile client): it is mounted
// at /usr/local/bin/claude, and E2E_ROLE (or E2E_PANE) picks the role.
package e2e
