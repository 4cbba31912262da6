#!/usr/bin/env bash
# The main job, until the emulated-cluster demo exists: installs what topotune
# needs, builds the `topotune` CLI into build/, and prints for an example
# topology (default deploy/examples/two-switch-4x4.yaml):
#
#   1. the switch tree, each link with its speed and all-to-all load, and the
#      bottleneck link marked            (topotune topology show)
#   2. the all-to-all and allgather lower bounds at 64 KiB per block
#                                        (topotune bound)
#   3. the contention-free all-to-all schedule of Faraj and Yuan, checked by
#      the verifier                      (topotune schedule --algorithm tree_scheduled)
#
# Usage: deploy/demo.sh [--no-install] [TOPOLOGY.yaml [MSIZE]]
#   --no-install   skip deploy/install-deps.sh (packages are already present)
# Environment:
#   TOPOTUNE_JOBS  parallel build jobs (default: nproc)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

install=1
positional=()
for arg in "$@"; do
  case "$arg" in
    --no-install) install=0 ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    -*)
      echo "demo: unknown option '$arg' (try --help)" >&2
      exit 2
      ;;
    *) positional+=("$arg") ;;
  esac
done
topology=${positional[0]:-deploy/examples/two-switch-4x4.yaml}
msize=${positional[1]:-64KiB}
jobs=${TOPOTUNE_JOBS:-$(nproc)}

if ((install)); then
  deploy/install-deps.sh
fi

cmake -S . -B build -G Ninja >/dev/null
cmake --build build -j "$jobs" --target topotune
topotune=build/daemon/cli/topotune

banner() { printf '\n=== %s\n\n' "$*"; }

banner "topotune topology show $topology"
"$topotune" topology show "$topology"

banner "topotune bound --topology $topology --msize $msize"
"$topotune" bound --topology "$topology" --msize "$msize"

banner "topotune schedule --topology $topology --collective alltoall --algorithm tree_scheduled --format table"
"$topotune" schedule --topology "$topology" --collective alltoall --algorithm tree_scheduled --format table
