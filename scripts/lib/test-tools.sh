# Sourced by test.sh: system packages the tests use, installed when missing and possible.
# libfaketime (Debian's `libfaketime`) runs agents with a wrong clock (test/e2e/skewed-clock.test.ts);
# Chromium (Debian's `chromium-headless-shell`, else `chromium`) runs the dashboard's browser tests
# (test/browser/); curl
# (Debian's `curl`) calls the API with a token issued in the dashboard (test/browser/access.test.ts).
# The Debian packages (`pnpm package`, test/e2e/packages.test.ts) need dpkg-deb and binutils
# (drover_need_package_tools); their test also runs lintian, shellcheck and systemd-analyze.

# drover_apt_install PACKAGE WHAT: installs a Debian package as root; fails (1) when it cannot.
drover_apt_install() {
  local package=$1 what=$2
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing $package ($what)" >&2
    if DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" >/dev/null 2>&1 ||
      { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" >/dev/null 2>&1; }; then
      return 0
    fi
  fi
  return 1
}

# drover_missing_tool PACKAGE WHAT: in CI a missing tool stops the run; elsewhere its tests are skipped.
drover_missing_tool() {
  local package=$1 what=$2
  if [ -n "${CI:-}" ]; then
    echo "setup: $package is missing and could not be installed (apt-get install $package)" >&2
    exit 1
  fi
  echo "setup: $package is missing (apt-get install $package); $what will be skipped" >&2
}

# drover_need_package_tools: what `pnpm package` cannot do without (dpkg-deb, readelf and strip),
# installed when missing and possible, else it stops; binutils-aarch64-linux-gnu, which strips the
# arm64 runtime, only when it can be installed (the arm64 packages are built unstripped otherwise).
drover_need_package_tools() {
  if ! command -v dpkg-deb >/dev/null 2>&1 && ! drover_apt_install dpkg 'dpkg-deb, which builds the packages'; then
    echo "package: dpkg-deb is missing and could not be installed (apt-get install dpkg)" >&2
    exit 1
  fi
  if ! command -v readelf >/dev/null 2>&1 && ! drover_apt_install binutils 'readelf and strip, for the executables in the packages'; then
    echo "package: readelf is missing and could not be installed (apt-get install binutils)" >&2
    exit 1
  fi
  if ! command -v aarch64-linux-gnu-strip >/dev/null 2>&1 && [ "$(uname -m)" != aarch64 ]; then
    drover_apt_install binutils-aarch64-linux-gnu 'strip for the arm64 executables' || true
  fi
}

drover_need_test_tools() {
  local lib found=
  for lib in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1; do
    [ -e "$lib" ] && found=1 && break
  done
  if [ -z "$found" ] && ! drover_apt_install libfaketime 'for the tests of agents with a wrong clock'; then
    drover_missing_tool libfaketime 'the skewed-clock tests'
  fi
  # Chromium's headless shell when it can be had (lighter: test/helpers/browser.ts), else Chromium.
  if ! command -v chromium-headless-shell >/dev/null 2>&1 &&
    ! drover_apt_install chromium-headless-shell "for the dashboard's browser tests" &&
    ! command -v chromium >/dev/null 2>&1 && ! drover_apt_install chromium "for the dashboard's browser tests"; then
    drover_missing_tool chromium "the dashboard's browser tests"
  fi
  if ! command -v curl >/dev/null 2>&1 && ! drover_apt_install curl "for the dashboard's API token test"; then
    drover_missing_tool curl "the dashboard's API token test"
  fi
  if ! command -v dpkg-deb >/dev/null 2>&1 && ! drover_apt_install dpkg "dpkg-deb, for the Debian packages' test"; then
    drover_missing_tool dpkg "the Debian packages' test"
  fi
  if ! command -v readelf >/dev/null 2>&1 && ! drover_apt_install binutils "readelf, for the Debian packages' test"; then
    drover_missing_tool binutils "the Debian packages' test"
  fi
  if ! command -v lintian >/dev/null 2>&1 && ! drover_apt_install lintian "for the Debian packages' test"; then
    drover_missing_tool lintian "the packages' lintian check"
  fi
  if ! command -v shellcheck >/dev/null 2>&1 && ! drover_apt_install shellcheck "for the packages' maintainer scripts"; then
    drover_missing_tool shellcheck "the maintainer scripts' shellcheck"
  fi
  if ! command -v systemd-analyze >/dev/null 2>&1 && ! drover_apt_install systemd "systemd-analyze, for the packages' units"; then
    drover_missing_tool systemd "the units' systemd-analyze verify"
  fi
}
