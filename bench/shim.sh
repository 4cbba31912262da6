#!/usr/bin/env bash
# Benchmarks what libtopotune-mpi.so adds to a job, against the issue's two
# targets, side by side in one run:
#
#   overhead  When the plan chooses the MPI library's own collective, the
#             shim adds at most 1 us per call, with in-job adaptation on
#             (the default) and every bucket tuned, so that nothing
#             explores: an 8-byte MPI_Alltoall on 4 ranks, 200,000 calls,
#             without the shim and with it (the daemon's database holds
#             tuned tables, "native" for every size, for alltoall on 4 and
#             1 ranks and for every alltoallv class on 4), alternating,
#             --rounds times each; the medians and their difference. The
#             same on 1 rank, where the collective itself costs almost
#             nothing and the shim's bookkeeping shows alone. Then the same
#             4-rank job against a daemon that has tuned nothing: the
#             bucket explores (the stats file's exploring calls are shown)
#             and settles, and what the whole job pays per call.
#   alltoallv's agreement
#             What an MPI_Alltoallv call pays for the ranks to agree on its
#             pattern class and mean block size (one PMPI_Allreduce of six
#             integers), that the call skips it when the plan runs the same
#             algorithm for every class, and that calls run native at once,
#             some agreeing in the background (a PMPI_Iallreduce read by the
#             next call), while agreed calls run native
#             (agreement_backoff.h): an 8-byte-per-pair
#             MPI_Alltoallv on 4 ranks without the shim; with a plan whose
#             classes all run native; with linear forced; with a plan whose
#             uniform class runs linear and skewed native (every call
#             agrees, then runs linear); and with one whose skewed class
#             runs linear (uniform calls agree, run native, then defer);
#             alternating, --rounds jobs each, each job's stats file checked;
#             the medians and the differences. Each plan comes from a daemon
#             of its own.
#   other bindings
#             The same target for the Fortran binding (fshim_bench, `use
#             mpi`: MPI_ALLTOALL) and for MPI_Ialltoall + MPI_Wait (the
#             library passes it on and counts it), 4 ranks: --rounds rounds
#             of the job without and with the library, their order
#             alternating; the mean, median and p95 of the per-call times,
#             the mean paired difference with a 95 % t-interval, and an A/A
#             control (the same job without the library on both sides).
#   init      MPI_Init takes at most 50 ms longer with the shim, for 16 ranks
#             on this machine with a warm plan cache: the longest MPI_Init of
#             any rank without the shim, with it, and with TOPOTUNE_DISABLE=1,
#             alternating, --rounds times each, after one unmeasured job that
#             warms the daemon's cache; the medians and the differences. Also
#             the shim's own time in MPI_Init (init_seconds of
#             TOPOTUNE_STATS_FILE: host-name exchange, GetPlan, broadcast).
#
# The daemon is a real topotuned on loopback with a one-switch topology
# whose one host is this machine (`hostname`, 16 slots). Processes are
# oversubscribed when the machine has fewer cores than ranks: the absolute
# times then include the scheduler's, and only the differences matter.
#
# Builds nothing. Usage: bench/shim.sh [BUILD_DIR] [OPTIONS]
#   BUILD_DIR          build tree with topotuned, libtopotune-mpi.so,
#                      shim_bench and fshim_bench (-DTOPOTUNE_BUILD_BENCHMARKS=ON;
#                      default ./build)
#   --rounds N         measured jobs per configuration (default 5)
#   --iterations N     calls per overhead job (default 200000)
#   --out FILE         also write the output here
#                      (default: bench/results/shim-DATE-TIME.txt)
#   -h, --help         this help
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=./build rounds=5 iterations=200000 out=''
# shellcheck source=script_lib.sh
source "$root/bench/script_lib.sh"
parse_options value:--rounds=rounds value:--iterations=iterations value:--out=out positional=build -- "$@"
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "shim.sh: --rounds '$rounds' is not a positive whole number" >&2; exit 2; }
[[ $iterations =~ ^[1-9][0-9]*$ ]] || { echo "shim.sh: --iterations '$iterations' is not a positive whole number" >&2; exit 2; }
topotuned=$build/daemon/topotuned/topotuned
shim=$build/bench_kernels/shim/libtopotune-mpi.so
bench=$build/bench/shim_bench fbench=$build/bench/fshim_bench
for f in "$topotuned" "$shim" "$bench" "$fbench"; do
  [[ -x $f || -f $f ]] || { echo "shim.sh: $f is missing; build it: cmake --build $build --target topotuned topotune-mpi shim_bench" >&2; exit 1; }
done
[[ -n $out ]] || out=$root/bench/results/shim-$(date +%Y%m%d-%H%M%S).txt
mkdir -p "$(dirname "$out")"
exec > >(tee "$out") 2>&1

work=$(mktemp -d /tmp/topotune-shim-bench-XXXXXX)
daemon_pids=''
cleanup() {
  for pid in $daemon_pids; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

host=$(hostname)
cat > "$work/topology.yaml" <<TOPO
# One switch and this machine, for bench/shim.sh.
switches:
  - name: s0
hosts:
  - name: ${host%%.*}
    slots: 16
links:
  - [${host%%.*}, s0, 1Gbps]
TOPO
# start_daemon NAME: a topotuned with database $work/NAME.sqlite; sets port.
start_daemon() {
  "$topotuned" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --port-file "$work/$1.port" \
    --database "$work/$1.sqlite" --topology-file "$work/topology.yaml" > "$work/$1.log" 2>&1 &
  daemon_pids+=" $!"
  for _ in $(seq 100); do [[ -s $work/$1.port ]] && grep -q metrics "$work/$1.port" && break; sleep 0.1; done
  port=$(sed -n 's/^grpc=//p' "$work/$1.port")
  [[ -n $port ]] || { echo "shim.sh: topotuned did not start:" >&2; cat "$work/$1.log" >&2; exit 1; }
}
# seed NAME COLLECTIVE NPROCS PATTERN ALGORITHM: a tuned table of one row,
# ALGORITHM for every size, for NPROCS ranks on one host, in the database of
# daemon NAME (PATTERN: an alltoallv class, '' for other collectives).
seed() {
  local version
  version=$(sqlite3 -cmd '.timeout 5000' "$work/$1.sqlite" 'SELECT max(version) FROM topologies')
  sqlite3 -cmd '.timeout 5000' "$work/$1.sqlite" "INSERT INTO decisions (topology_version, collective, nprocs,
    ranks_per_node, pattern, table_json, choices_json, created_at) VALUES ($version, '$2', $3, $3, '$4',
    '[{\"min_msize\": 0, \"max_msize\": null, \"algorithm\": \"$5\"}]', '[]', 0);"
}
# seed_v NAME UNIFORM SKEWED SPARSE: alltoallv's three class tables for 4 ranks.
seed_v() { seed "$1" alltoallv 4 uniform "$2"; seed "$1" alltoallv 4 skewed "$3"; seed "$1" alltoallv 4 sparse "$4"; }
start_daemon default
seed default alltoall 4 '' native
seed default alltoall 1 '' native
seed_v default native native native

mpirun=(mpirun --oversubscribe --allow-run-as-root --mca btl self,vader)
with_shim=(-x LD_PRELOAD="$shim" -x TOPOTUNE_SERVER=127.0.0.1:$port -x TOPOTUNE_REPORT=0)
# value KEY: the number after KEY in the job's output.
job() {
  local key=$1; shift
  "${mpirun[@]}" "$@" | awk -v k="$key" '$1 == k { print $2 }'
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "# libtopotune-mpi.so: what it adds to a job ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
echo "machine: $(nproc) cores, $(uname -r), $(mpirun --version | head -1)"
echo "daemon: topotuned on 127.0.0.1:$port, topology: one switch, host '${host%%.*}' with 16 slots"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

echo "## overhead per call, native chosen and tuned, adaptation on (target: <= 1 us); 8-byte MPI_Alltoall," \
  "$iterations calls, $rounds jobs each"
# untuned_job I: the 4-rank job against daemon "untuned", which has tuned
# nothing: the bucket explores, then settles; appends its per-call time to
# $work/untuned and its exploring calls:choice to $work/explored.
untuned_job() {
  TOPOTUNE_STATS_FILE=$work/untuned-$1.json job per_call_us -np 4 -x LD_PRELOAD="$shim" \
    -x TOPOTUNE_SERVER=127.0.0.1:$untuned_port -x TOPOTUNE_REPORT=0 -x TOPOTUNE_STATS_FILE "$bench" calls \
    --iterations "$iterations" >> "$work/untuned"
  python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); assert j["plan"]["status"] == "ok", j["plan"]
a = [b for b in j["adapt"] if b["collective"] == "alltoall"]
print(" ".join("%d:%s" % (b["exploring_calls"], b["choice"]) for b in a) or "none")' "$work/untuned-$1.json" >> "$work/explored"
}
default_port=$port
start_daemon untuned
untuned_port=$port port=$default_port
: > "$work/untuned"; : > "$work/explored"
for np in 4 1; do
  : > "$work/native" ; : > "$work/shim"
  for i in $(seq "$rounds"); do
    job per_call_us -np $np "$bench" calls --iterations "$iterations" >> "$work/native"
    job per_call_us -np $np "${with_shim[@]}" "$bench" calls --iterations "$iterations" >> "$work/shim"
    if ((np == 4)); then untuned_job "$i"; fi
  done
  a=$(median < "$work/native") b=$(median < "$work/shim")
  printf '%d ranks: without %.3f us/call, with the shim %.3f us/call (median of %d); added %.3f us/call  [jobs: without %s | with %s]\n' \
    "$np" "$a" "$b" "$rounds" "$(awk -v a="$a" -v b="$b" 'BEGIN { print b - a }')" \
    "$(tr '\n' ' ' < "$work/native")" "$(tr '\n' ' ' < "$work/shim")"
  if ((np == 4)); then
    c=$(median < "$work/untuned")
    printf '4 ranks, nothing tuned (the bucket explores, then settles), in the same rounds: %.3f us/call (median of %d);' \
      "$c" "$rounds"
    printf ' added %.3f us/call  [jobs: %s; exploring calls:choice per job: %s]\n' \
      "$(awk -v a="$a" -v b="$c" 'BEGIN { print b - a }')" "$(tr '\n' ' ' < "$work/untuned")" \
      "$(tr '\n' ' ' < "$work/explored")"
  fi
done
echo

echo "## alltoallv's agreement on class and size; 8 bytes per pair, 4 ranks, $iterations calls, $rounds jobs each"
# Plans of daemons of their own: "agree" runs linear for uniform calls and
# native for skewed ones, so every call agrees, then runs linear; forcing
# linear runs it without agreement; "backoff" runs linear for skewed calls,
# so uniform ones agree, run native, then defer the agreement.
with_daemon() { with=(-x LD_PRELOAD="$shim" -x TOPOTUNE_SERVER=127.0.0.1:$port -x TOPOTUNE_REPORT=0); }
start_daemon agree
seed_v agree linear native native
with_daemon
with_agree=("${with[@]}")
with_linear=("${with_shim[@]}" -x TOPOTUNE_FORCE_ALLTOALLV=linear)
start_daemon backoff
seed_v backoff native linear native
with_daemon
with_backoff=("${with[@]}")
# vjob NAME FILE ARGS...: one job, per-call time appended to FILE, the stats
# file's alltoallv counts checked by the Python expression CHECK (c: the
# classes, algs: the algorithms run).
vjob() {
  local name=$1 file=$2 check=$3
  shift 3
  TOPOTUNE_STATS_FILE=$work/$name.json job per_call_us -np 4 "$@" -x TOPOTUNE_STATS_FILE "$bench" vcalls \
    --iterations "$iterations" >> "$file"
  python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); c = j["alltoallv_classes"]
algs = {e["algorithm"] for e in j["stats"] if e["collective"] == "alltoallv"}
assert j["plan"]["status"] == "ok" and eval(sys.argv[2]), (sys.argv[2], c, algs)' "$work/$name.json" "$check" ||
    { echo "shim.sh: job $name did not run as planned" >&2; exit 1; }
}
for f in native shim linear agree backoff; do : > "$work/v-$f"; done
for i in $(seq "$rounds"); do
  job per_call_us -np 4 "$bench" vcalls --iterations "$iterations" >> "$work/v-native"
  vjob shim-$i "$work/v-shim" 'algs == {"native"} and c["unclassified"] > 0' "${with_shim[@]}"
  vjob linear-$i "$work/v-linear" 'algs == {"linear"} and c["unclassified"] > 0' "${with_linear[@]}"
  vjob agree-$i "$work/v-agree" 'algs == {"linear"} and c["uniform"] > 0 and c["deferred"] + c["skipped"] == 0' "${with_agree[@]}"
  vjob backoff-$i "$work/v-backoff" 'algs == {"native"} and c["deferred"] + c["skipped"] > 60 * c["uniform"]' "${with_backoff[@]}"
done
us() { awk -v x="$1" 'BEGIN { printf "%.3f", x }'; }
row() { printf '%-46s %s us/call  [%s]\n' "$1" "$(us "$(median < "$work/v-$2")")" "$(tr '\n' ' ' < "$work/v-$2")"; }
row "without the shim (native):" native
row "with the shim, native, no agreement needed:" shim
row "with the shim, linear forced (no agreement):" linear
row "with the shim, linear after agreeing:" agree
row "with the shim, native, agreement backing off:" backoff
delta() { us "$(awk -v a="$(median < "$work/v-$1")" -v b="$(median < "$work/v-$2")" 'BEGIN { print b - a }')"; }
echo "the agreement costs $(delta linear agree) us/call (linear after agreeing - linear forced); backing off adds" \
  "$(delta native backoff) us/call to native, the shim without agreement $(delta native shim) (medians)"
echo

echo "## other bindings, native chosen (target: <= 1 us added per call); 4 ranks, 8 bytes, $iterations calls," \
  "$rounds rounds, sides alternating"
# paired LABEL: --rounds rounds of the jobs side_a and side_b (arrays of
# mpirun arguments), their order alternating; the statistics of both sides
# and of the paired differences (b - a).
paired() {
  local i a b
  : > "$work/paired"
  for i in $(seq "$rounds"); do
    if ((i % 2)); then
      a=$(job per_call_us "${side_a[@]}") b=$(job per_call_us "${side_b[@]}")
    else
      b=$(job per_call_us "${side_b[@]}") a=$(job per_call_us "${side_a[@]}")
    fi
    echo "$a $b" >> "$work/paired"
  done
  python3 - "$1" "$work/paired" <<'PY'
import statistics, sys
label, rows = sys.argv[1], [tuple(map(float, l.split())) for l in open(sys.argv[2]) if l.strip()]
T95 = [12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23, 2.20, 2.18, 2.16, 2.14, 2.13, 2.12, 2.11, 2.10,
       2.09, 2.09, 2.08, 2.07, 2.07, 2.06, 2.06, 2.06, 2.05, 2.05, 2.05, 2.04]
def side(v):
    v = sorted(v)
    return (f"mean {statistics.mean(v):.3f} median {statistics.median(v):.3f} "
            f"p95 {v[min(len(v) - 1, int(0.95 * len(v)))]:.3f} us/call")
d = [b - a for a, b in rows]
half = (T95[min(len(d), 31) - 2] if len(d) <= 31 else 1.96) * statistics.stdev(d) / len(d) ** 0.5 if len(d) > 1 else float("nan")
mean = statistics.mean(d)
print(f"{label}: a {side([a for a, _ in rows])}; b {side([b for _, b in rows])}; "
      f"b - a {mean:+.3f} us/call, 95 % interval [{mean - half:+.3f}, {mean + half:+.3f}] over {len(d)} rounds")
PY
}
side_a=(-np 4 "$bench" calls --iterations "$iterations") side_b=("${side_a[@]}")
paired "A/A: C MPI_Alltoall, a and b both without the library"
side_a=(-np 4 "$fbench" "$iterations") side_b=(-np 4 "${with_shim[@]}" "$fbench" "$iterations")
paired "Fortran MPI_ALLTOALL (use mpi): a without, b with the library"
side_a=(-np 4 "$bench" icalls --iterations "$iterations") side_b=(-np 4 "${with_shim[@]}" "$bench" icalls --iterations "$iterations")
paired "MPI_Ialltoall + MPI_Wait: a without, b with the library"
echo

echo "## MPI_Init, 16 ranks, warm plan cache (target: <= 50 ms added); $rounds jobs each"
TOPOTUNE_STATS_FILE=$work/warm.json "${mpirun[@]}" -np 16 "${with_shim[@]}" -x TOPOTUNE_STATS_FILE "$bench" init > /dev/null
: > "$work/native"; : > "$work/shim"; : > "$work/disabled"; : > "$work/own"
for i in $(seq "$rounds"); do
  job init_max_s -np 16 "$bench" init >> "$work/native"
  TOPOTUNE_STATS_FILE=$work/stats-$i.json job init_max_s -np 16 "${with_shim[@]}" -x TOPOTUNE_STATS_FILE "$bench" init >> "$work/shim"
  python3 -c 'import json,sys; j = json.load(open(sys.argv[1])); assert j["plan"]["status"] == "ok", j["plan"]; print(j["init_seconds"])' \
    "$work/stats-$i.json" >> "$work/own"
  job init_max_s -np 16 "${with_shim[@]}" -x TOPOTUNE_DISABLE=1 "$bench" init >> "$work/disabled"
done
a=$(median < "$work/native") b=$(median < "$work/shim") c=$(median < "$work/disabled") d=$(median < "$work/own")
ms() { awk -v x="$1" 'BEGIN { printf "%.1f", x * 1000 }'; }
echo "without the shim:          $(ms "$a") ms  [$(tr '\n' ' ' < "$work/native")]"
echo "with the shim:             $(ms "$b") ms  [$(tr '\n' ' ' < "$work/shim")]"
echo "with TOPOTUNE_DISABLE=1:   $(ms "$c") ms  [$(tr '\n' ' ' < "$work/disabled")]"
echo "added by the shim:         $(ms "$(awk -v a="$a" -v b="$b" 'BEGIN { print b - a }')") ms (median with - median without)"
echo "the shim's own init (rank 0: names, GetPlan, broadcast): $(ms "$d") ms  [$(tr '\n' ' ' < "$work/own")]"
echo
echo "results: $out"
