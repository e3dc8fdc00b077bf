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

step "typecheck and lint, side by side: tsc (Node $(node --version)), ESLint, Prettier --check and import cycles"
# Three single-threaded checks at once on a multi-core machine: the step takes as long as ESLint,
# not as long as all three. Each one's output is printed whole when all have ended.
checks=$(mktemp -d)
pnpm -s typecheck >"$checks/typecheck" 2>&1 &
typecheck=$!
pnpm -s lint:eslint >"$checks/eslint" 2>&1 &
eslint=$!
{ pnpm -s lint:format && pnpm -s lint:cycles; } >"$checks/format" 2>&1 &
format=$!
failed=''
wait "$typecheck" || failed="$failed typecheck"
wait "$eslint" || failed="$failed eslint"
wait "$format" || failed="$failed prettier/cycles"
for check in typecheck eslint format; do
  if [ -s "$checks/$check" ]; then
    echo "--- $check"
    cat "$checks/$check"
  fi
done
rm -rf "$checks"
if [ -n "$failed" ]; then
  echo "failed:$failed" >&2
  exit 1
fi
step "test: unit and end-to-end tests against real coordinators (on SQLite) and agents (Vitest, Node $(node --version), a few minutes)"
pnpm test
step "test: the end-to-end files again with the coordinators on PostgreSQL (Vitest, a few minutes)"
pnpm test:postgres
step_done
bash scripts/smoke-node22.sh
