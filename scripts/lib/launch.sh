#!/usr/bin/env bash
# Runs a built command of this checkout: the repository's `drover`, `drover-agent` and
# `drover-coordinator` are this script with their name and program. It runs on the Node.js
# scripts/lib/node.sh chooses, without fetching or printing anything: this machine's `node` when
# Drover runs on it (22 from 22.14, or 24), else the pinned Node.js 24 that setup fetched into
# .cache/node/. The Node flags of the program's first line are given too (the coordinator's
# --max-semi-space-size), as running the file itself would. Paths on the command line stay the
# caller's: nothing changes the working directory.
#   scripts/lib/launch.sh NAME PROGRAM [ARGUMENTS...]   (PROGRAM relative to the repository)
set -euo pipefail
root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
. "$root/scripts/lib/node-version.sh"
name=$1
program=$root/$2
shift 2

pinned=$root/.cache/node/v$DROVER_NODE_VERSION/bin/node
found=$(node --version 2>/dev/null || true)
if [ -n "$found" ] && drover_node_supported "$found"; then
  node=$(command -v node)
elif [ -x "$pinned" ]; then
  node=$pinned
else
  echo "$name: $DROVER_NODE_SUPPORTED is required (found ${found:-no node}); run \`bash scripts/setup.sh\` in $root, which fetches Node.js $DROVER_NODE_VERSION into .cache/node" >&2
  exit 1
fi
if [ ! -f "$program" ]; then
  echo "$name: not built yet: run \`bash scripts/setup.sh\` in $root" >&2
  exit 1
fi

flags=()
IFS= read -r first <"$program" || true
case $first in
  '#!'*node\ *) read -r -a flags <<<"${first#*node }" ;;
esac
exec "$node" ${flags[@]+"${flags[@]}"} "$program" "$@"
