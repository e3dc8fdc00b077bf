#!/usr/bin/env bash
# Sets up the checkout and runs the coordinator in the foreground with its data in ./data.
# On the first run (no database yet) it bootstraps an owner and an organization:
#   DROVER_BOOTSTRAP_EMAIL    (default admin@localhost)
#   DROVER_BOOTSTRAP_PASSWORD (default: a random password, printed once below)
#   DROVER_BOOTSTRAP_ORG      (default "default")
# Every other setting (DROVER_PORT, DROVER_HOST, DROVER_PUBLIC_URL, ...) is read by the coordinator
# itself; see README.md. Stop it with Ctrl-C.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh

export DROVER_DATA_DIR="${DROVER_DATA_DIR:-./data}"
if [ -e "$DROVER_DATA_DIR/drover.sqlite" ]; then
  echo
  echo "Using the existing data in $DROVER_DATA_DIR: sign in with the owner created on the first run."
  echo "(Delete $DROVER_DATA_DIR to start over.)"
else
  export DROVER_BOOTSTRAP_EMAIL="${DROVER_BOOTSTRAP_EMAIL:-admin@localhost}"
  if [ -z "${DROVER_BOOTSTRAP_PASSWORD:-}" ]; then
    DROVER_BOOTSTRAP_PASSWORD=$(node -e 'process.stdout.write(require("node:crypto").randomBytes(15).toString("base64url"))')
    export DROVER_BOOTSTRAP_PASSWORD
    echo
    echo "First run: the owner is $DROVER_BOOTSTRAP_EMAIL with the generated password"
    echo
    echo "    $DROVER_BOOTSTRAP_PASSWORD"
    echo
    echo "It is shown only this once; keep it somewhere safe."
  else
    echo
    echo "First run: the owner is $DROVER_BOOTSTRAP_EMAIL with the password from DROVER_BOOTSTRAP_PASSWORD."
  fi
fi
echo
exec node coordinator/dist/cli/main.js start
