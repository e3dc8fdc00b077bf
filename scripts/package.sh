#!/usr/bin/env bash
# `pnpm package`: the Debian packages drover-agent and drover-coordinator, for amd64 and arm64, in
# dist/packages/ (docs/install.md; the options: scripts/package/main.ts). Builds with Node.js 24
# (scripts/lib/node.sh), the runtime the packages carry; needs dpkg-deb (Debian's `dpkg`) and
# readelf (`binutils`), installed with apt-get when missing and possible.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export DROVER_NODE_MAJOR=24
. scripts/lib/pnpm.sh
. scripts/lib/test-tools.sh
drover_need_package_tools
exec node --conditions=drover-source --import tsx scripts/package/main.ts "$@"
