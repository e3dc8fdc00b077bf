# Sourced by the other scripts: stops with one line unless Node.js 20.19 or newer is on the PATH.

drover_need_node() {
  if ! command -v node >/dev/null 2>&1; then
    echo "setup: Node.js 20.19 or newer is required (node not found)" >&2
    exit 1
  fi
  if ! node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>20||(a===20&&b>=19)?0:1)'; then
    echo "setup: Node.js 20.19 or newer is required, found $(node --version)" >&2
    exit 1
  fi
}

drover_need_node
