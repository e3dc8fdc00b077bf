#!/usr/bin/env bash
# side-by-side.sh COMMAND...: runs each COMMAND (a bash command line) at the same time, then prints
# the output of each whole, in the order given, once all have ended; exits 1 if any failed. For
# checks of the whole code that each keep one core busy (`pnpm lint`, `pnpm typecheck`).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

pids=()
for i in $(seq 1 $#); do
  bash -c "${!i}" >"$out/$i" 2>&1 &
  pids+=("$!")
done

status=0
for i in $(seq 1 $#); do
  if ! wait "${pids[$((i - 1))]}"; then
    status=1
    echo "side-by-side: failed: ${!i}" >>"$out/$i"
  fi
  cat "$out/$i"
done
exit "$status"
