#!/usr/bin/env bash
# Installs what topotune needs, builds it, and runs the whole test suite.
#
#   1. build/       configured with -DTOPOTUNE_WERROR=ON and -DTOPOTUNE_BUILD_SMPI=ON;
#                   runs every ctest test (labels unit, property, cli, mpi, smpi, snmp,
#                   testbed, daemon, shim) but the long sweeps (label sweep: the
#                   20,000-cluster property sweep of capacity_scheduled, of which
#                   `property` runs every tenth batch); run those with
#                   `ctest --test-dir build -L sweep`, or set TOPOTUNE_SWEEP=1.
#   2. build-asan/  configured with -DTOPOTUNE_SANITIZE=ON (AddressSanitizer and
#                   UndefinedBehaviorSanitizer); builds only the programs those
#                   tests run (deploy/ctest_tool.py programs: read from build/'s
#                   ctest, not the whole product), at nice 19 beside the first
#                   pass's tests (on the cores they leave idle; its log is
#                   build/asan-build.log), then runs the unit tests, and
#                   fails if it found fewer of them than build/ has. The property
#                   tests (hundreds of random trees) already take minutes per shard
#                   without sanitizers, so they are left out of this pass to keep CI
#                   well under an hour on two cores; set TOPOTUNE_SANITIZE_LABELS to
#                   '^(unit|property)$' to include them.
#
# Both passes run even when the first has failing tests, so one CI run shows
# every failure. Each pass ends with its 15 slowest tests (ctest's JUnit file,
# build*/ctest-junit.xml), so a slow test is seen the day it arrives. When
# ccache is installed (install-deps.sh installs it), CMake compiles through it
# (TOPOTUNE_CCACHE in CMakeLists.txt), and the run prints its hit counts. The exit status is non-zero if any build or any test failed.
#
# Usage: deploy/run-tests.sh [--no-install] [--no-sanitize]
#   --no-install    skip deploy/install-deps.sh (packages are already present)
#   --no-sanitize   skip the sanitizer pass
# Environment:
#   TOPOTUNE_JOBS             parallel build and test jobs (default: nproc)
#   TOPOTUNE_SANITIZE_LABELS  ctest label regex of the sanitizer pass (default: ^unit$)
#   TOPOTUNE_SWEEP            1: the first pass runs the sweep label too
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

install=1
sanitize=1
for arg in "$@"; do
  case "$arg" in
    --no-install) install=0 ;;
    --no-sanitize) sanitize=0 ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "run-tests: unknown argument '$arg' (try --help)" >&2
      exit 2
      ;;
  esac
done

jobs=${TOPOTUNE_JOBS:-$(nproc)}
labels=${TOPOTUNE_SANITIZE_LABELS:-'^unit$'}
start=$SECONDS
step() { printf '\n==> [%4ds] %s\n' "$((SECONDS - start))" "$*"; }
# The 15 slowest tests of the last ctest run in build dir $1.
slowest() {
  [[ -f $1/ctest-junit.xml ]] && python3 deploy/ctest_tool.py slowest "$1/ctest-junit.xml" 15 || true
}
# How many tests of label regex $2 build dir $1 has.
count_tests() { ctest --test-dir "$1" -N -L "$2" | sed -n 's/^Total Tests: //p'; }
# ccache's hits and misses since the last call (nothing without ccache).
cache_stats() {
  command -v ccache >/dev/null || return 0
  ccache --show-stats | grep -E '^ *(Hits|Misses|Cacheable calls):' || true
  ccache --zero-stats >/dev/null
}

if ((install)); then
  step "installing dependencies (deploy/install-deps.sh)"
  deploy/install-deps.sh
fi

failed=()
command -v ccache >/dev/null && ccache --zero-stats >/dev/null

# The tests start Python thousands of times. Debian's /usr/bin/python3 is the
# interpreter install-deps.sh equips (python3-yaml, -grpcio, -protobuf); a
# version manager's shim ahead of it in PATH (pyenv's took 110 ms a start
# against 10 ms) is bypassed for this run, for CMake and the tests alike.
if [[ -x /usr/bin/python3 && $(command -v python3) != /usr/bin/python3 ]]; then
  mkdir -p build/python-bin
  ln -sfn /usr/bin/python3 build/python-bin/python3
  export PATH=$root/build/python-bin:$PATH
  echo "run-tests: python3 is /usr/bin/python3 for this run (not $(PATH=${PATH#*:} command -v python3))"
fi

step "configuring build/ (warnings are errors)"
cmake -S . -B build -G Ninja -DTOPOTUNE_WERROR=ON -DTOPOTUNE_BUILD_TESTS=ON -DTOPOTUNE_SANITIZE=OFF -DTOPOTUNE_BUILD_SMPI=ON
step "building build/ with $jobs jobs"
cmake --build build -j "$jobs"
cache_stats
# The sanitizer build needs nothing from the tests, so it runs beside them at
# nice 19: it takes the cores the tests leave idle (waiting on emulated links,
# daemons and timeouts) and yields them whenever a test wants them. Once the
# tests end it has the machine to itself, at full speed.
asan_build() {
  # Benchmarks are not run under sanitizers, so they are not built there.
  echo "configuring build-asan/ (ASan + UBSan)"
  cmake -S . -B build-asan -G Ninja -DTOPOTUNE_SANITIZE=ON -DTOPOTUNE_WERROR=ON -DTOPOTUNE_BUILD_TESTS=ON \
    -DTOPOTUNE_BUILD_BENCHMARKS=OFF || return 1
  local programs
  mapfile -t programs < <(python3 deploy/ctest_tool.py programs build "$labels" build-asan || true)
  ((${#programs[@]})) || { echo "run-tests: found no program of the tests labelled $labels" >&2; return 1; }
  echo "building the ${#programs[@]} programs of the tests labelled $labels in build-asan/ with $jobs jobs"
  cmake --build build-asan -j "$jobs" --target "${programs[@]}"
}
asan_pid=
if ((sanitize)); then
  step "building build-asan/ (ASan + UBSan) at nice 19 beside the tests (log: build/asan-build.log)"
  export -f asan_build
  export labels jobs
  # Its own process group (setsid), so that a stopped run (Ctrl-C, a failed
  # step) ends the whole build, compilers included.
  setsid nice -n 19 bash -c asan_build >build/asan-build.log 2>&1 &
  asan_pid=$!
  trap '[[ -n $asan_pid ]] && kill -- "-$asan_pid" 2>/dev/null; true' EXIT
fi

exclude=(-LE '^sweep$')
[[ ${TOPOTUNE_SWEEP:-0} == 1 ]] && exclude=()
step "running the whole test suite (ctest -j $jobs ${exclude[*]})"
if ! ctest --test-dir build --output-on-failure --no-tests=error --timeout 900 -j "$jobs" "${exclude[@]}" \
  --output-junit "$root/build/ctest-junit.xml"; then
  failed+=("tests in build/")
fi
slowest build

if ((sanitize)); then
  step "waiting for build-asan/ (its log follows)"
  asan_ok=1
  wait "$asan_pid" || asan_ok=0
  asan_pid=
  cat build/asan-build.log
  cache_stats
  if ((!asan_ok)); then
    failed+=("the build of build-asan/")
  else
    expected=$(count_tests build "$labels")
    found=$(count_tests build-asan "$labels")
    step "running the $found tests labelled $labels under ASan + UBSan"
    if [[ $found != "$expected" ]]; then
      echo "run-tests: build-asan/ has $found tests labelled $labels, build/ has $expected" >&2
      failed+=("the sanitizer pass's test list")
    fi
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
    if ! ctest --test-dir build-asan --output-on-failure --no-tests=error --timeout 1800 -j "$jobs" -L "$labels" \
      --output-junit "$root/build-asan/ctest-junit.xml"; then
      failed+=("sanitizer tests in build-asan/")
    fi
    slowest build-asan
  fi
fi

if ((${#failed[@]})); then
  step "FAILED: ${failed[*]}"
  exit 1
fi
step "all tests passed"
