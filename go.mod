module github.com/polecat-sidecar/sidecar

go 1.26.8

require (
	github.com/hashicorp/yamux v0.1.2
	github.com/quic-go/quic-go v0.65.0
)

require (
	github.com/aclements/go-moremath v0.0.0-20210112150236-f10218a38794 // indirect
	golang.org/x/crypto v0.57.0 // indirect
	golang.org/x/net v0.59.0 // indirect
	golang.org/x/perf v0.0.0-20260908200009-22c9c6c9d4da // indirect
	golang.org/x/sys v0.48.0 // indirect
)

tool golang.org/x/perf/cmd/benchstat
