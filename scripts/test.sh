#!/usr/bin/env bash
# Sets up the checkout, then runs every check CI runs: type-check, lint, and the whole test suite.
# Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
. scripts/lib/pnpm.sh
. scripts/lib/steps.sh
. scripts/lib/test-tools.sh
drover_need_test_tools

step 'typecheck: the packages, the tests and the benchmarks (tsc)'
pnpm typecheck
step 'lint: ESLint, then Prettier --check'
pnpm lint
step 'test: unit and end-to-end tests against real coordinators and agents (Vitest, a few minutes)'
pnpm test
step_done
