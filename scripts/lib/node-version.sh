# Sourced by scripts/lib/node.sh: the Node.js versions Drover runs on and the ones it pins.
# No side effects, so that a test can source it.

DROVER_NODE_VERSION=24.21.0   # the runtime of development, CI and the agent's single executable
DROVER_NODE22_VERSION=22.23.3 # the oldest supported line, for CI's smoke run (scripts/smoke-node22.sh)
DROVER_NODE_SUPPORTED='Node.js 22 (from 22.14) or 24'

# drover_node_supported VERSION: true when VERSION (as `node --version` prints it) is one Drover
# runs on. The same rule as the CLIs' own check (shared/src/node-version.ts) and `engines`.
drover_node_supported() {
  local version=${1#v} major minor
  major=${version%%.*}
  minor=${version#*.}
  minor=${minor%%.*}
  case "$major$minor" in '' | *[!0-9]*) return 1 ;; esac
  [ "$major" -ge 24 ] || { [ "$major" -eq 22 ] && [ "$minor" -ge 14 ]; }
}
