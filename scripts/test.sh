#!/usr/bin/env bash
# Sets up the checkout, then runs every check CI runs: on Node 24 (the machine's own 24, else the
# pinned one fetched into .cache/node: scripts/lib/node.sh) the type-check, lint, the whole test
# suite with the test coordinators on SQLite, and its PostgreSQL pass: the end-to-end files
# again with each test coordinator on a PostgreSQL database of its own
# (vitest.postgres.config.ts); then on Node 22 a smoke run of the quick start
# (scripts/smoke-node22.sh).
# Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export DROVER_NODE_MAJOR=24

bash scripts/setup.sh
. scripts/lib/pnpm.sh
. scripts/lib/steps.sh
. scripts/lib/test-tools.sh
drover_need_test_tools

step "typecheck: the packages, the tests and the benchmarks (tsc, Node $(node --version))"
pnpm typecheck
# One after the other: run side by side on 2 cores, tsc and ESLint's typed rules (each building
# the programs of the projects) took 138 s together, against 123 s in turn.
step 'lint: ESLint, beside it Prettier --check then import cycles (madge)'
pnpm lint
step "test: unit and end-to-end tests against real coordinators (on SQLite) and agents (Vitest, Node $(node --version), a few minutes)"
pnpm test
step "test: the end-to-end files again with the coordinators on PostgreSQL (Vitest, a few minutes)"
pnpm test:postgres
step_done
bash scripts/smoke-node22.sh
