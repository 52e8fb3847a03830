#!/usr/bin/env bash
# Build the local polecat base image with no registry at all: a minimal
# Debian bookworm with git, tmux, ca-certificates and tini, made by
# mmdebstrap and imported into Docker. The tag is a hash of this recipe,
# so an unchanged recipe is built once; SOURCE_DATE_EPOCH makes the
# tarball reproducible. Prints the image's name.
#
#   images/base/build.sh            build (or reuse) polecat-base:<hash>
#   images/base/build.sh --tar F    write the tarball to F instead (two runs
#                                   give the same bytes while the mirror
#                                   serves the same packages)
#   MIRROR=http://... build.sh      another Debian mirror
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
SUITE=bookworm
PACKAGES=git,tmux,ca-certificates,tini
MIRROR=${MIRROR:-http://deb.debian.org/debian}
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1735689600} # 2025-01-01

tar_out=
if [ "${1:-}" = --tar ]; then
  tar_out=${2:?--tar needs a file}
fi

hash=$( { cat "$here/build.sh"; echo "$SUITE $PACKAGES"; } | sha256sum | cut -c1-12)
image=polecat-base:$hash
if [ -z "$tar_out" ] && docker image inspect "$image" >/dev/null 2>&1; then
  echo "$image"
  exit 0
fi
command -v mmdebstrap >/dev/null || {
  echo "images/base: mmdebstrap is needed (Debian: apt-get install mmdebstrap)" >&2
  exit 1
}
# resolv.conf and hostname are the build machine's; Docker provides its own.
# mmdebstrap says what it does on stderr, step by step (it takes a few
# minutes, most of them downloading and unpacking packages).
bootstrap() {
  mmdebstrap --variant=minbase --include="$PACKAGES" \
    --customize-hook='rm -f "$1/etc/resolv.conf" "$1/etc/hostname"' \
    "$SUITE" "$1" "$MIRROR"
}
if [ -n "$tar_out" ]; then
  echo "images/base: writing the base tarball to $tar_out" >&2
  bootstrap "$tar_out"
  exit 0
fi
echo "images/base: building $image with mmdebstrap ($SUITE: $PACKAGES), about 3 minutes; once built it is reused" >&2
bootstrap - | docker import - "$image" >/dev/null
echo "images/base: built $image" >&2
echo "$image"
