#!/bin/sh
# Stand-in for the host's gt and bd in the relay tests. argv[1] is the
# (allowed) subcommand, one that takes free-text arguments (gt nudge, bd
# show); argv[2] picks what to do with the rest, after an optional '--'
# (which lets arguments that look like flags through hostd's grammar).
mode=$2
shift 2
[ "$1" = "--" ] && shift
case "$mode" in
args) for a in "$@"; do printf '%s\0' "$a"; done ;;
env) env ;;
pwd) pwd ;;
sha) sha256sum | cut -d' ' -f1 ;;
zeros) head -c "$1" /dev/zero ;;
exit) exit "$1" ;;
killself) kill -9 $$ ;;
trap)
	echo $$ >"$1"
	trap 'echo got-INT; exit 130' INT
	echo ready
	while :; do sleep 0.05; done
	;;
sleep)
	echo $$ >"$1"
	exec sleep "$2"
	;;
touch) touch "$1" ;;
log) printf '%s\n' "$1" >>"$TMPDIR/ran" ;; # the soak: record this call's op id in the polecat's temporary directory (hostd's)
conc)
	touch "$1/run.$$"
	ls "$1" | grep -c '^run\.' >>"$1/counts"
	sleep "$2"
	rm "$1/run.$$"
	;;
*) echo "fake-gt: unknown mode $mode" >&2; exit 99 ;;
esac
