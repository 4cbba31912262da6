#!/usr/bin/env bash
# Benchmarks every algorithm of Open MPI's coll/tuned for one collective as a
# topotune candidate: one topotune-bench run per algorithm, forced with
# coll_tuned_use_dynamic_rules and coll_tuned_<collective>_algorithm, its
# `native` samples labelled ompi:NAME, all appended to one JSON Lines file.
# The algorithm names come from this Open MPI's own ompi_info, so the list
# is always the installed library's (4.1.4: alltoall linear, pairwise,
# modified_bruck, linear_sync, two_proc; allgather linear, bruck,
# recursive_doubling, ring, neighbor, two_proc; alltoallv basic_linear,
# pairwise). two_proc is skipped unless NP is 2.
#
# Usage: bench/ompi-candidates.sh COLLECTIVE NP OUT.jsonl [TOPOTUNE-BENCH OPTIONS...]
#   e.g. bench/ompi-candidates.sh alltoall 8 ompi.jsonl --sizes 1KiB,64KiB,1MiB
# Environment:
#   BENCH         the topotune-bench executable (default: build/bench_kernels/driver/topotune-bench)
#   MPIRUN        the launcher (default: mpirun)
#   MPIRUN_FLAGS  extra launcher flags, e.g. "--hostfile hosts" or
#                 "--oversubscribe --mca btl self,vader" (word-split)
set -euo pipefail

if [[ $# -lt 3 || $1 == -h || $1 == --help ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  [[ $# -ge 1 && ($1 == -h || $1 == --help) ]] && exit 0
  exit 2
fi
collective=$1 np=$2 out=$3
shift 3
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bench=${BENCH:-$root/build/bench_kernels/driver/topotune-bench}
mpirun=${MPIRUN:-mpirun}
read -r -a flags <<<"${MPIRUN_FLAGS:-}"

param=coll_tuned_${collective}_algorithm
mapfile -t names < <(ompi_info --param coll tuned --level 9 --parsable |
  sed -n "s/^mca:coll:tuned:param:${param}:enumerator:value:[0-9]*://p")
if [[ ${#names[@]} -eq 0 ]]; then
  echo "ompi-candidates: ompi_info lists no values of $param (collective '$collective'?)" >&2
  exit 2
fi

for name in "${names[@]}"; do
  [[ $name == ignore ]] && continue
  [[ $name == two_proc && $np -ne 2 ]] && continue
  echo "ompi-candidates: $collective ompi:$name" >&2
  "$mpirun" "${flags[@]}" --mca coll_tuned_use_dynamic_rules 1 --mca "$param" "$name" -np "$np" \
    "$bench" --collective "$collective" --algorithms native --label-native "ompi:$name" "$@" >>"$out"
done
echo "ompi-candidates: wrote $out" >&2
