# Sourced by test.sh: system packages the tests use, installed when missing and possible.
# libfaketime (Debian's `libfaketime`) runs agents with a wrong clock (test/e2e/skewed-clock.test.ts).

drover_need_test_tools() {
  local lib
  for lib in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1; do
    [ -e "$lib" ] && return 0
  done
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing libfaketime (for the tests of agents with a wrong clock)" >&2
    if DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libfaketime >/dev/null 2>&1 ||
      { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libfaketime >/dev/null 2>&1; }; then
      return 0
    fi
  fi
  if [ -n "${CI:-}" ]; then
    echo "setup: libfaketime is missing and could not be installed (apt-get install libfaketime)" >&2
    exit 1
  fi
  echo "setup: libfaketime is missing (apt-get install libfaketime); the skewed-clock tests will be skipped" >&2
}
