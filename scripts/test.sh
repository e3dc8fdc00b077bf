#!/usr/bin/env bash
# Sets up the checkout, then runs every check CI runs: type-check, lint, and the whole test suite.
# Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
. scripts/lib/pnpm.sh
. scripts/lib/test-tools.sh
drover_need_test_tools

echo '==> typecheck'
pnpm typecheck
echo '==> lint'
pnpm lint
echo '==> test'
pnpm test
