# Sourced by the other scripts: makes `pnpm` (major 9 or 10) available, installing pnpm@10 with npm
# when it is missing, or running it through `npx -y pnpm@10` when a global install is not permitted.
# Checks Node.js first (scripts/lib/node.sh).
. "$(dirname "${BASH_SOURCE[0]}")/node.sh"

drover_need_pnpm() {
  if command -v pnpm >/dev/null 2>&1; then
    local major
    major=$(pnpm --version 2>/dev/null | cut -d. -f1)
    if [ "${major:-0}" -ge 9 ] 2>/dev/null; then
      return 0
    fi
    echo "setup: pnpm $(pnpm --version 2>/dev/null) is too old; using pnpm@10" >&2
  else
    echo "setup: pnpm not found; installing pnpm@10 with npm" >&2
    if npm install -g pnpm@10 >&2; then
      # npm's global bin directory may not be on PATH (a user prefix, for example).
      PATH="$(npm prefix -g)/bin:$PATH"
      export PATH
      if command -v pnpm >/dev/null 2>&1; then
        return 0
      fi
    fi
    echo "setup: could not install pnpm globally; running pnpm@10 through npx" >&2
  fi
  pnpm() { npx -y pnpm@10 "$@"; }
}

drover_need_pnpm
