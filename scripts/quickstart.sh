#!/usr/bin/env bash
# The main job of a fresh clone: sets the checkout up, then runs a coordinator on its embedded
# defaults (data in ./data) with a local agent enrolled to it and the sample workflow `hello`,
# and prints ready-to-paste curl lines that trigger it (async and sync). See scripts/quickstart.ts.
#   DROVER_BOOTSTRAP_EMAIL    owner on the first run (default admin@localhost)
#   DROVER_BOOTSTRAP_PASSWORD owner's password on the first run (default: generated, printed)
#   DROVER_DATA_DIR, DROVER_PORT, DROVER_HOST, DROVER_PUBLIC_URL as for the coordinator.
# Stop with Ctrl-C; run again to continue on the same data (delete ./data to start over).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/lib/node.sh

# Already running on this data, a bad setting, or the port taken: said in one line before
# anything is set up, when an earlier setup left the tools this check needs. The quick start
# itself checks again, and takes its lock, once set up.
if [ -e node_modules/tsx/package.json ]; then
  node --conditions=drover-source --import tsx scripts/quickstart.ts --check
fi
bash scripts/setup.sh
exec node --conditions=drover-source --import tsx scripts/quickstart.ts
