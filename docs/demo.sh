#!/usr/bin/env bash
# make demo: the whole product on one machine, in a throw-away town.
# Needs only the binaries from 'make build'. Cleans up after itself.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$PWD/bin
TOWN=$(mktemp -d "${TMPDIR:-/tmp}/polecat-demo.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for s in "$TOWN"/tmux-*; do [ -S "$s" ] && { tmux -S "$s" kill-server 2>/dev/null || true; }; done
  rm -rf "$TOWN"
}
trap cleanup EXIT

if [ -t 1 ]; then B=$'\033[1m' N=$'\033[0m'; else B='' N=''; fi
step() { printf '\n%s== %s%s\n' "$B" "$*" "$N"; }
hostd() { "$BIN/hostd" --town "$TOWN" "$@"; }

# wait_for CMD...: retry CMD quietly for up to 10 seconds.
wait_for() {
  for _ in $(seq 100); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "timed out waiting for: $*" >&2; return 1
}

step "a throw-away town at $TOWN with a rig 'gastown' (its .repo.git cloned from an 'origin'); create its CA"
git -c init.defaultBranch=main init -q "$TOWN/seed"
echo "hello from the rig" >"$TOWN/seed/README"
git -C "$TOWN/seed" add README
git -C "$TOWN/seed" -c user.name=operator -c user.email=op@example.com commit -q -m "first commit"
git clone -q --bare "$TOWN/seed" "$TOWN/origin.git"
git clone -q --bare "$TOWN/origin.git" "$TOWN/gastown/.repo.git"
hostd ca init --new   # a throw-away town: never a copy of your gt-proxy-server's CA

# The operator's real gt is not needed: a stand-in shows what a relayed
# command receives on the host.
cat >"$TOWN/gt" <<'EOF'
#!/bin/sh
echo "host gt $*: GT_ROLE=$GT_ROLE BD_ACTOR=$BD_ACTOR GT_PROXY_IDENTITY=$GT_PROXY_IDENTITY cwd=$(pwd)"
echo "reading stdin on the host: $(cat)"
exit 3
EOF
chmod +x "$TOWN/gt"

step "start hostd (QUIC on UDP and TLS+yamux on TCP, one port; gt relayed to a stand-in)"
# The binary itself in the background (not the hostd function: $! would be a
# subshell, and cleanup would leave the daemon running).
"$BIN/hostd" --town "$TOWN" serve --listen 127.0.0.1:0 --relay-gt "$TOWN/gt" --beat-interval 1s >"$TOWN/hostd.log" 2>&1 &
pids+=($!)
wait_for hostd status
ADDR=$(hostd status --json | sed -n 's/.*"listen": "\(.*\)".*/\1/p')
PORT=${ADDR##*:}
echo "hostd listens on port $PORT (log: hostd.log)"

step "hostd doctor: what the town needs on this machine, a line each with the fix (warnings expected here: a stand-in gt, no bd, no rigs, no image)"
# serve's flags, as serve was started with them; exit status 1 is warnings, 2 a failure: the demo goes on
hostd doctor --listen "$ADDR" --relay-gt "$TOWN/gt" || echo "(hostd doctor exit status $?)"

step "issue a certificate for gastown/furiosa (hostd cert issue)"
hostd cert issue gastown/furiosa --ttl 1h --out "$TOWN/furiosa"

step "start gt-agent with Gas Town's GT_PROXY_* settings; it runs the polecat's command in tmux"
# The stand-in polecat works until the demo tells it to stop, then exits 3.
GT_PROXY_URL=https://localhost:$PORT \
GT_PROXY_CERT=$TOWN/furiosa/client.crt GT_PROXY_KEY=$TOWN/furiosa/client.key GT_PROXY_CA=$TOWN/furiosa/ca.crt \
  "$BIN/gt-agent" up --socket "$TOWN/furiosa.sock" --git-listen 127.0.0.1:0 --tmux-socket "$TOWN/tmux-furiosa" --beat-interval 1s \
  --data-root "$TOWN/furiosa-data" \
  -- sh -c "echo polecat furiosa at work; while [ ! -e '$TOWN/stop' ]; do sleep 0.2; done; echo done; exit 3" >"$TOWN/furiosa.log" 2>&1 &
FURIOSA=$!
pids+=($FURIOSA)

step "a second polecat joins with a one-time token: its key is made in the container"
TOKEN=$(hostd token create gastown/nux)
echo "token: ${TOKEN:0:24}..."
GT_PROXY_URL=https://localhost:$PORT \
  "$BIN/gt-agent" up --join "$TOKEN" --identity gastown/nux --state-dir "$TOWN/nux" --socket "$TOWN/nux.sock" --git-listen "" \
  --tmux-socket "$TOWN/tmux-nux" --beat-interval 1s --data-root "$TOWN/nux-data" --hook-socket "$TOWN/nux/hooks.sock" \
  -- bash -c 'while read -r -p "> " line; do echo "nux read: $line"; done' >"$TOWN/nux.log" 2>&1 &
pids+=($!)
wait_for sh -c "test \$('$BIN/hostd' --town '$TOWN' status --json | grep -c '\"state\": \"working\"') = 2"
ls -l "$TOWN/nux"

step "hostd status: both polecats working, judged from heartbeats measured in their containers"
hostd status

step "the token is spent: using it again is refused"
GT_PROXY_URL=https://localhost:$PORT "$BIN/gt-agent" up --join "$TOKEN" --identity gastown/nux --state-dir "$TOWN/again" --socket "$TOWN/again.sock" --git-listen "" 2>&1 | tail -1 || true

step "relay: in furiosa's container, 'gt' (the shim program bin/gt) runs on the host as furiosa"
echo "\$ echo hello | gt status --verbose"
set +e
echo hello | GT_AGENT_SOCKET=$TOWN/furiosa.sock GT_ROLE=mayor "$BIN/gt" status --verbose
echo "exit status: $? (the host command's own; GT_ROLE=mayor in the container was not passed on)"
echo "\$ gt rig remove gastown"
GT_AGENT_SOCKET=$TOWN/furiosa.sock "$BIN/gt" rig remove gastown
echo "exit status: $?"
echo "\$ gt mail inbox --identity mayor"
GT_AGENT_SOCKET=$TOWN/furiosa.sock "$BIN/gt" mail inbox --identity mayor
echo "exit status: $?"
set -e

step "git: furiosa clones through its agent, commits, pushes its own branch"
GIT_URL=$(sed -n 's/.*msg="serving git" origin=\(http:[^ ]*\)\/v1\/git.*/\1/p' "$TOWN/furiosa.log")/v1/git/gastown
echo "origin inside the container: $GIT_URL"
git clone -q "$GIT_URL" "$TOWN/work"
cat "$TOWN/work/README"
echo "furiosa was here" >>"$TOWN/work/README"
git -C "$TOWN/work" -c user.name=furiosa -c user.email=furiosa@example.com commit -q -am "furiosa's change"
git -C "$TOWN/work" push origin HEAD:polecat/furiosa-demo 2>&1
step "git: a push to main is refused inside git, with the reason"
set +e
git -C "$TOWN/work" push origin HEAD:main 2>&1
set -e
wait_for sh -c "git -C '$TOWN/origin.git' rev-parse --verify -q refs/heads/polecat/furiosa-demo"
echo "origin now has: $(git -C "$TOWN/origin.git" branch --list 'polecat/*' | tr -d ' ') (hostd pushed it upstream); main is unchanged: $(git -C "$TOWN/gastown/.repo.git" log -1 --format=%s main)"

step "data: hostd sends nux's whitelisted data into its container; secrets stay home"
NUXHOME=$TOWN/gastown/polecats/nux
mkdir -p "$NUXHOME/results" "$NUXHOME/.ssh"
printf 'one\ntwo\nthree\nfour\nfive\n' >"$NUXHOME/CLAUDE.md"
echo "draft" >"$NUXHOME/results/report.txt"
echo "PRIVATE KEY" >"$NUXHOME/.ssh/id_rsa"
hostd sync push gastown/nux
echo "in the container ($TOWN/nux-data):"; (cd "$TOWN/nux-data" && find . -type f | sort)

step "data: the container and the host change different lines of CLAUDE.md; the pull merges them"
sed -i 's/one/ONE (container)/' "$TOWN/nux-data/CLAUDE.md"
sed -i 's/five/FIVE (host)/' "$NUXHOME/CLAUDE.md"
hostd sync pull gastown/nux
cat "$NUXHOME/CLAUDE.md"

step "data: both change the report: the host's stays, the container's is saved beside it"
echo "container's report" >"$TOWN/nux-data/results/report.txt"
echo "host's report" >"$NUXHOME/results/report.txt"
hostd sync pull gastown/nux
ls "$NUXHOME/results"

step "data: every transfer, in the journal"
hostd sync log

step "nudge: nux is busy (its Claude Code hooks say so), so a wait-idle nudge waits, and says why"
"$BIN/gt-agent" hook --socket "$TOWN/nux/hooks.sock" PreToolUse
hostd nudge gastown/nux --wait 2s 'check your mail; then run -x "gt done"' || echo "(exit status $?: queued)"
hostd nudge gastown/nux --list

step "nudge: nux goes idle (the Stop hook); the nudge is typed once and submitted"
"$BIN/gt-agent" hook --socket "$TOWN/nux/hooks.sock" Stop
wait_for sh -c "'$BIN/hostd' --town '$TOWN' peek gastown/nux --lines 5 | grep -q 'nux read: check your mail'"
hostd nudge gastown/nux 'one more, typed at once' --mode immediate

step "peek: nux's pane, as text"
hostd peek gastown/nux --lines 6

step "furiosa's command exits: hostd sees it at the next beat"
touch "$TOWN/stop"
wait_for sh -c "'$BIN/hostd' --town '$TOWN' status --json | grep -q '\"state\": \"dead\"'"
hostd status gastown/furiosa
set +e
hostd alive gastown/furiosa
echo "hostd alive exit status: $? (nux: $(hostd alive gastown/nux >/dev/null; echo $?))"
set -e

step "revoke furiosa: its live tunnel closes and the agent stops"
hostd cert revoke gastown/furiosa
wait_for sh -c "'$BIN/hostd' --town '$TOWN' status --json | grep -q '\"state\": \"revoked\"'"
hostd status
wait_for sh -c "! kill -0 $FURIOSA"
echo "furiosa's agent exited: $(tail -1 "$TOWN/furiosa.log")"

step "certificates"
hostd cert list

step "demo finished; cleaning up"
