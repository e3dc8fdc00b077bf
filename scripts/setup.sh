#!/usr/bin/env bash
# Sets up a checkout: Node.js (the pinned Node 24, fetched when this machine's is older than 22:
# scripts/lib/node.sh), pnpm (installed when missing), the locked dependencies, and a build.
# Idempotent: running it again only re-checks and rebuilds what changed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/lib/pnpm.sh
. scripts/lib/steps.sh

step 'setup: installing the locked dependencies (pnpm install)'
# No TTY in CI: never stop to ask before replacing a node_modules made by another pnpm version.
pnpm install --frozen-lockfile --config.confirmModulesPurge=false
drover_link_node
step 'setup: building shared, coordinator, agent and cli (tsc -b), then the dashboard (vite build)'
pnpm build
step_done
