#!/usr/bin/env bash
# CI's check of the oldest Node.js line Drover supports, after the whole suite ran on Node 24 in
# the same checkout (scripts/test.sh): with Node 22 (the machine's own 22, else the pinned 22.x,
# fetched as Node 24 is: scripts/lib/node.sh), the quick start as the README runs it
# (scripts/quickstart.sh: setup, a coordinator and an enrolled local agent) with its printed sync
# curl line run as printed: the sample job `hello` must succeed on that agent. No type-check here:
# tsc's verdict does not depend on the Node.js that runs it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export DROVER_NODE_MAJOR=22
. scripts/lib/node.sh
. scripts/lib/steps.sh

step "node 22: the quick start on Node $(node --version), and its sample job through the printed curl"
data=$(mktemp -d)
log="$data/quickstart.out"
port=$(node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
DROVER_DATA_DIR="$data/data" DROVER_PORT=$port bash scripts/quickstart.sh >"$log" 2>&1 &
quickstart=$!
stop() {
  kill -INT "$quickstart" 2>/dev/null || true
  wait "$quickstart" 2>/dev/null || true
  rm -rf "$data"
}
trap stop EXIT
fail() {
  echo "smoke: $1; the quick start's output:" >&2
  cat "$log" >&2
  exit 1
}
for _ in $(seq 1 600); do
  grep -q 'Press Ctrl-C to stop both.' "$log" && break
  kill -0 "$quickstart" 2>/dev/null || fail 'the quick start stopped'
  sleep 0.5
done
grep -q 'Press Ctrl-C to stop both.' "$log" || fail 'the quick start was not ready within 5 minutes'
# The curl lines after "(sync):" up to the blank line, run as printed.
sync=$(sed -n '/wait for the result (sync):/,/^$/p' "$log" | sed '1d')
answer=$(eval "$sync")
case "$answer" in
  *'"status":"success"'*'"greeting":"Hello, Drover!"'*) echo "    the sync run answered: $answer" ;;
  *) fail "the sync run answered: $answer" ;;
esac
kill -INT "$quickstart"
wait "$quickstart" || fail 'the quick start did not stop cleanly on Ctrl-C'
step_done
