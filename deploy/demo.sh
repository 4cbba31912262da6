#!/usr/bin/env bash
# The main job: topotune end to end on an emulated cluster, on one machine.
#
#   1. installs what topotune needs (deploy/install-deps.sh) and builds it
#      into build/;
#   2. brings up the emulated cluster of TOPOLOGY (default: two 100 Mbit/s
#      switches with 4 hosts each) in network namespaces: Linux bridges as
#      switches, tc-shaped veth links, lldpd and snmpd on the switches,
#      topotuned on the head node and topotune-agent on every host
#      (deploy/testbed/testbed.py up);
#   3. prints the tree topotuned discovered over SNMP (LLDP-MIB, IF-MIB);
#   4. tunes alltoall and allgather: topotuned benchmarks every algorithm on
#      the hosts through mpirun and stores decision tables, printed next;
#   5. runs an MPI job with libtopotune-mpi.so that times, size by size, Open
#      MPI's own MPI_Alltoall and MPI_Allgather and the same calls served by
#      the library (topotune-bench --via-mpi), the two alternated call by
#      call, and prints them side by side (topotune compare): the algorithm
#      the tuned plan ran, the fraction of the physical lower bound each
#      reached, and each speedup with its 95 % interval;
#   6. tears the cluster down (unless --keep).
#
# It needs root (network namespaces) and takes about 11 minutes once built
# (tuning 6.5 minutes: tuning.size_budget is 30 s per size; the side by side
# 4 minutes).
#
# Usage: sudo deploy/demo.sh [--no-install] [--keep] [--topology FILE]
#   --no-install      skip deploy/install-deps.sh (packages are already present)
#   --keep            leave the cluster, topotuned and its /metrics up at the end,
#                     and say how to look at them and how to tear it down
#   --topology FILE   another topology file (default deploy/examples/two-switch-4x4.yaml)
# Environment:
#   TOPOTUNE_JOBS     parallel build jobs (default: nproc)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

install=1 keep=0
topology=deploy/examples/two-switch-4x4.yaml
while (($#)); do
  case "$1" in
    --no-install) install=0 ;;
    --keep) keep=1 ;;
    --topology)
      [[ $# -ge 2 ]] || { echo "demo: --topology needs a file" >&2; exit 2; }
      topology=$2
      shift
      ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "demo: unknown argument '$1' (try --help)" >&2
      exit 2
      ;;
  esac
  shift
done
[[ -f $topology ]] || { echo "demo: no topology file '$topology'" >&2; exit 2; }
if [[ $(id -u) -ne 0 ]]; then
  echo "demo: must run as root (sudo deploy/demo.sh): the emulated cluster uses network namespaces" >&2
  exit 1
fi
jobs=${TOPOTUNE_JOBS:-$(nproc)}
started=$SECONDS
sizes=1024,16384,65536,262144,1048576 # the job's sizes, bytes per block
tune_sizes=1KiB,16KiB,64KiB,256KiB    # measured by tuning; crossovers are bisected between them

step() { printf '\n=== [%s] %s\n\n' "$(date -u -d "@$((SECONDS - started))" +%M:%S)" "$*"; }

if ((install)); then
  step "installing the Debian packages topotune needs"
  deploy/install-deps.sh
fi

step "building topotune into build/"
cmake -S . -B build -G Ninja >/dev/null
cmake --build build -j "$jobs" --target topotune topotuned topotune-agent topotune-mpi topotune-mpi-client \
  topotune-bench
build=$root/build
topotune=$build/daemon/cli/topotune

prefix=tt-
state=/run/topotune-testbed/$prefix
tb() { python3 deploy/testbed/testbed.py --prefix "$prefix" "$@"; }
admin() { tb exec head -- "$topotune" "$@"; }
work=$(mktemp -d /tmp/topotune-demo.XXXXXX)
up=0 done=0
cleanup() {
  local status=$?
  if ((up)) && ! ((keep && done)); then
    step "tearing the emulated cluster down"
    tb down || status=1
  fi
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT

step "bringing up the emulated cluster of $topology"
if tb status >/dev/null 2>&1; then
  echo "demo: an emulated cluster is already up (left by --keep?); remove it with: sudo deploy/testbed/testbed.py down" >&2
  exit 1
fi
up=1
tb up "$topology" --bin-dir "$build"
nhosts=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["hosts"]))' "$state/testbed.json")

step "the tree topotuned discovered over SNMP from the first switch"
admin topology show
admin topology show --yaml >"$work/discovered.yaml"

step "tuning alltoall and allgather on $nhosts hosts (sizes $tune_sizes, then bisection)"
# One progress line per change of state (not per sample).
admin tune start --token-file "$state/token" --collective alltoall,allgather --nodes "$nhosts" \
  --ranks-per-node 1 --sizes "$tune_sizes" --iterations 5 --wait 2>&1 |
  awk '{ key = $0; sub(/[0-9]+ samples/, "", key); if (key != last) print; last = key; fflush() }'

step "the decision tables topotuned stored"
admin decisions show

step "MPI_Alltoall and MPI_Allgather without and with libtopotune-mpi.so, side by side"
# topotune-bench times Open MPI's own collective (its native kernel calls
# PMPI_, which the library does not intercept) and, with --via-mpi, the public
# MPI_ function, which libtopotune-mpi.so serves from the tuned plan: both in
# one job, size by size. --interleave alternates the two call by call (each
# round times both, in a fresh random order), so drift and neighbours hit both
# alike; --times keeps every call, for the intervals of topotune compare.
# 20 rounds at every size: one job per collective, so one TOPOTUNE_STATS_FILE
# says what the library ran at each size. 30 rounds up to 256 KiB would need
# a second job for 1 MiB, where an all-to-all call on the 4+4 tree takes 1.3
# to 3 s (bound 1.34 s); with 20 rounds the step takes about 4 minutes.
server=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["services"]["server"])' \
  "$state/testbed.json")
for coll in alltoall allgather; do
  echo "$coll ..."
  "$state/mpirun" -np "$nhosts" --hostfile "$state/hostfile" \
    -x "LD_PRELOAD=$build/bench_kernels/shim/libtopotune-mpi.so" -x "TOPOTUNE_SERVER=$server" \
    -x "TOPOTUNE_STATS_FILE=$work/$coll.stats.json" -x "TOPOTUNE_JOB_ID=demo-$coll" \
    "$build/bench_kernels/driver/topotune-bench" --collective "$coll" --algorithms native \
    --label-native ompi:default --via-mpi topotune:tuned --sizes "$sizes" --interleave --iterations 20 \
    --times --topology "$work/discovered.yaml" --out "$work/$coll.jsonl" 2> >(grep -v 'setpgid' >&2)
done
# Each size: mean, median and p95 of both sides, the fraction of the bound,
# the algorithm the plan ran, and the speedup with its 95 % interval ("no
# difference" when it includes 1; "same algorithm" where the plan ran native).
for coll in alltoall allgather; do
  echo
  "$topotune" compare --stats "$work/$coll.stats.json" "$work/$coll.jsonl"
done

done=1
step "done in $(((SECONDS - started) / 60)) min $(((SECONDS - started) % 60)) s"
if ((keep)); then
  cat <<EOF
The emulated cluster is still up (--keep), with topotuned and its Prometheus metrics:
  sudo deploy/testbed/testbed.py metrics                # topotuned's /metrics, read inside the head node
  sudo deploy/testbed/testbed.py status                 # namespaces, daemons, topotuned's addresses
  sudo deploy/testbed/testbed.py exec head -- $topotune decisions show
  sudo $state/mpirun -np $nhosts --hostfile $state/hostfile -x LD_PRELOAD=$build/bench_kernels/shim/libtopotune-mpi.so -x TOPOTUNE_SERVER=198.18.0.254:50051 YOUR_MPI_PROGRAM
Tear it down with:
  sudo deploy/testbed/testbed.py down
EOF
fi
