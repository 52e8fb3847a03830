#!/bin/sh
# rederive.sh: this directory is the module UPSTREAM names with sidecar.patch
# applied. Pristine upstream comes from the Go module cache (go mod download,
# through GOPROXY, so it works offline with only the module proxy).
#
#   rederive.sh check  fail unless upstream + sidecar.patch is this directory exactly
#   rederive.sh patch  rewrite sidecar.patch from this directory
#   rederive.sh apply  rewrite this directory as upstream + sidecar.patch; after
#                      bumping UPSTREAM's version (and commit, date, sum) this takes
#                      the new upstream, leaving *.rej where a hunk no longer fits
#                      (resolve them by hand, then run patch and check)
#
# UPSTREAM, sidecar.patch and this script describe the copy and are not part of it.
set -eu

dir=$(cd "$(dirname "$0")" && pwd)
own='UPSTREAM sidecar.patch rederive.sh'
GO=${GO:-go}

field() { sed -n "s/^$1: *//p" "$dir/UPSTREAM"; }
module=$(field module)
version=$(field version)
sum=$(field sum)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Download outside any module, so the repository's go.mod and go.sum are left alone.
json=$(cd "$tmp" && "$GO" mod download -json "$module@$version") || {
	echo "$json" >&2
	echo "rederive.sh: downloading $module@$version" >&2
	exit 1
}
src=$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
got=$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Sum": "\(.*\)",*$/\1/p')
if [ "$got" != "$sum" ]; then
	echo "rederive.sh: $module@$version has sum $got, UPSTREAM records $sum (update UPSTREAM's version, commit, date and sum together)" >&2
	exit 1
fi

# The tree's diff and patch paths are a/... and b/..., so upstream is copied to
# a (writable: the module cache is read-only) and this directory, without the
# files that describe it, to b.
cp -R "$src" "$tmp/a"
chmod -R u+w "$tmp/a"
cp -R "$dir" "$tmp/b"
for f in $own; do rm -f "$tmp/b/$f"; done

# applied builds upstream + sidecar.patch in $tmp/c; git apply's other options
# are its arguments.
applied() {
	cp -R "$tmp/a" "$tmp/c"
	(cd "$tmp/c" && git apply --whitespace=nowarn "$@" "$dir/sidecar.patch")
}

case ${1:-} in
check)
	applied || { echo "rederive.sh: sidecar.patch does not apply to $module@$version" >&2; exit 1; }
	(cd "$tmp" && diff -ru c b) >&2 || {
		echo "rederive.sh: $dir (b above) is not $module@$version + sidecar.patch (c above): if the change is meant, run make yamux-patch" >&2
		exit 1
	}
	echo "yamux: $module@$version + sidecar.patch reproduces $dir"
	;;
patch)
	# git diff exits 1 when the trees differ, which they do.
	(cd "$tmp" && git -c core.quotepath=off diff --no-index --no-color --no-ext-diff --no-renames \
		--src-prefix= --dst-prefix= a b) >"$tmp/patch" || [ $? -eq 1 ]
	mv "$tmp/patch" "$dir/sidecar.patch"
	echo "yamux: wrote $dir/sidecar.patch ($(grep -c '^diff --git' "$dir/sidecar.patch") files differ from $module@$version)"
	;;
apply)
	status=0
	applied --reject || status=$?
	find "$dir" -mindepth 1 -maxdepth 1 $(for f in $own; do printf ' ! -name %s' "$f"; done) -exec rm -rf {} +
	cp -R "$tmp/c/." "$dir/"
	[ $status -eq 0 ] || { echo "rederive.sh: some hunks did not apply: resolve $dir/**/*.rej, then rederive.sh patch" >&2; exit 1; }
	echo "yamux: $dir is now $module@$version + sidecar.patch"
	;;
*)
	echo "usage: rederive.sh check|patch|apply" >&2
	exit 2
	;;
esac
