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

# What `cmake --install` (prefix /usr) and the .deb put on a machine: the
# mode and path of every file, in path order (LC_ALL=C). deploy/CMakeLists.txt
# says what each one is for.
expected_files="644 etc/topotune/agent.yaml
644 etc/topotune/topotuned.yaml
755 usr/bin/topotune
755 usr/bin/topotune-agent
755 usr/bin/topotune-bench
755 usr/bin/topotune-export-rules
755 usr/bin/topotune-mpirun
644 usr/lib/libtopotune-mpi-client.so
644 usr/lib/libtopotune-mpi.so
644 usr/lib/libtopotune-mpich.so
644 usr/lib/systemd/system/topotune-agent.service
644 usr/lib/systemd/system/topotune-export-rules.service
644 usr/lib/systemd/system/topotune-export-rules.timer
644 usr/lib/systemd/system/topotune-tune-from-demand.service
644 usr/lib/systemd/system/topotune-tune-from-demand.timer
644 usr/lib/systemd/system/topotuned.service
644 usr/lib/sysusers.d/topotune.conf
755 usr/sbin/topotuned
644 usr/share/doc/topotune/README.md
644 usr/share/doc/topotune/slurm/README.md
644 usr/share/topotune/grafana/dashboards/topotune-collectives.json
644 usr/share/topotune/grafana/dashboards/topotune-service.json
644 usr/share/topotune/grafana/provisioning/dashboards/topotune.yaml
644 usr/share/topotune/grafana/provisioning/datasources/prometheus.yaml
644 usr/share/topotune/mpi/openmpi-mca-params.conf.snippet
644 usr/share/topotune/prometheus/prometheus.yml
644 usr/share/topotune/prometheus/topotune.rules.test.yml
644 usr/share/topotune/prometheus/topotune.rules.yml
644 usr/share/topotune/slurm/job.env.example
644 usr/share/topotune/slurm/slurm.conf.snippet
755 usr/share/topotune/slurm/topotune-task-prolog.sh"

# Fails unless the "MODE PATH" lines on stdin are $expected_files.
check_files() {
  local actual
  actual=$(LC_ALL=C sort -k2)
  [[ $actual == "$expected_files" ]] || fail "the installed files or their modes differ from the expected list:
$(diff <(echo "$expected_files") <(echo "$actual"))"
}

install_tree() {
  case_name="cmake --install"
  run env DESTDIR="$root" cmake --install "$build" --prefix /usr
  ((status == 0)) || fail "cmake --install exited $status"
}
