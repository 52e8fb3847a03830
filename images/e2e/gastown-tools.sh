#!/usr/bin/env bash
# Builds Gas Town's own programs for the Gas Town suite (make e2e-gastown)
# from the Go module proxy, each in a module of its own so it gets the
# dependency versions its own go.mod selects: gt, bd (cgo: Dolt's regex
# engine links ICU) and the dolt that bd's go.mod requires (Gas Town runs
# a Dolt SQL server for the town's beads). They land in DIR, which the
# Makefile names after the versions; a DIR that has all three is reused.
#
#   gastown-tools.sh DIR GT_VERSION BD_VERSION DOLT_VERSION
#
# The go.sum lines below pin what the proxy serves: the checksum database
# has no record of gastown's release tags, so GONOSUMDB lets go fetch
# gastown and these lines check it instead.
set -euo pipefail

dir=$1 gt_version=$2 bd_version=$3 dolt_version=$4
if [ -x "$dir/gt" ] && [ -x "$dir/bd" ] && [ -x "$dir/dolt" ]; then
  echo "gastown-tools: gt $gt_version, bd $bd_version, dolt $dolt_version already built in $dir"
  exit 0
fi
command -v gcc >/dev/null || { echo "gastown-tools: bd and dolt need cgo: install gcc"; exit 1; }
[ -e /usr/include/unicode/uregex.h ] || { echo "gastown-tools: bd and dolt need ICU's headers: apt-get install libicu-dev"; exit 1; }
mkdir -p "$dir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# build NAME MODULE VERSION PACKAGE [GO.SUM LINES]: one program in a
# module that requires MODULE@VERSION alone.
build() {
  local name=$1 module=$2 version=$3 pkg=$4 sums=${5:-}
  if [ -x "$dir/$name" ]; then
    echo "gastown-tools: $name already built"
    return
  fi
  mkdir -p "$work/$name"
  printf 'module gastowntools/%s\n\ngo 1.25\n\nrequire %s %s\n' "$name" "$module" "$version" >"$work/$name/go.mod"
  printf '%s' "$sums" >"$work/$name/go.sum"
  echo "gastown-tools: building $name ($pkg@$version) ..."
  local start=$SECONDS
  (cd "$work/$name" && CGO_ENABLED=1 GOFLAGS=-mod=mod GONOSUMDB=github.com/steveyegge/gastown \
    go build -trimpath -o "$dir/$name.tmp" "$pkg")
  mv "$dir/$name.tmp" "$dir/$name"
  echo "gastown-tools: built $name in $((SECONDS - start))s"
}

build bd github.com/steveyegge/beads "$bd_version" github.com/steveyegge/beads/cmd/bd
build gt github.com/steveyegge/gastown "$gt_version" github.com/steveyegge/gastown/cmd/gt \
  "github.com/steveyegge/gastown v1.0.1 h1:vWsX+/Dgn9HzdHTwfff5FNg4QxhQeV4Z2kfm9646kXQ=
github.com/steveyegge/gastown v1.0.1/go.mod h1:uv4NFiPcJd0CRF7PDnGNiU12iinxfTm9SB0yaPooSuk=
"
build dolt github.com/dolthub/dolt/go "$dolt_version" github.com/dolthub/dolt/go/cmd/dolt
"$dir/gt" version 2>/dev/null | head -1 || true
"$dir/bd" version 2>/dev/null | head -1 || true
"$dir/dolt" version 2>/dev/null | head -1 || true
