# Sourced by the tests/install scripts: arguments, a scratch directory removed
# on exit, and an install of the build tree into it (DESTDIR, prefix /usr, as
# the .deb lays it out).
#   $build    the build tree (CMAKE_BINARY_DIR)
#   $source   the source tree
#   $work     the scratch directory (command outputs land here; see testlib.sh)
#   $root     the DESTDIR after install_tree
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR SOURCE_DIR}
source=${2:?usage: $0 BUILD_DIR SOURCE_DIR}
# shellcheck source=../testlib.sh
. "$source/tests/testlib.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/topotune-install-test.XXXXXX")
root=$work/root
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# Needs a tool, or skips the test (exit 77).
need() {
  command -v "$1" >/dev/null || {
    echo "SKIP: $1 is not installed (Debian package $2; deploy/install-deps.sh installs it)"
    exit 77
  }
}

install_tree() {
  case_name="cmake --install"
  run env DESTDIR="$root" cmake --install "$build" --prefix /usr
  ((status == 0)) || fail "cmake --install exited $status"
}
