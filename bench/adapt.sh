#!/usr/bin/env bash
# Benchmarks in-job adaptation on the emulated cluster, whole programs side by
# side: bench/exchange_app (a time-step loop of one MPI_Alltoall and one
# MPI_Alltoallv per step) on every host, on a testbed whose topotuned has
# tuned nothing (so every bucket is one adaptation explores), five ways in
# every round, in a fixed rotating order:
#
#   none      without libtopotune-mpi.so
#   none:aa   the same again: the A/A control, which must show no difference
#   off       with the library and TOPOTUNE_ADAPT=0 (the tables: native here)
#   first     with the library and adaptation (the default), after the
#             learned table was emptied: a first job, which explores
#   second    the same right after: a job that starts from what `first`
#             learned
#
# Per way: the mean, median and p95 of the slowest rank's loop time and of
# mpirun's wall time, and each mean's ratio to none's with a 95 % paired
# bootstrap interval (rounds are the pairs). From the `first` jobs' stats
# files: the exploring calls and their time over native, and what each
# bucket settled on; topotuned's learned table at the end. With
# --from-demand DURATION, then `topotune demand show` and `topotune tune
# start --from-demand --budget DURATION --wait`, timed, and then --rounds
# rounds of two more ways, their order alternating:
#
#   none      as above
#   tuned     with the library and adaptation, on the tables that tuning
#             from demand stored: the loop closed (the jobs' calls chose what
#             was tuned, and the next jobs run what tuning found)
#
# Before the jobs, the calibration: what the emulated links carried, as the
# fraction of the bound that topotune-bench's allgather `ring` reaches at
# 1 MiB on 3 hosts (one TCP flow per link direction: the ceiling of every
# fraction), and the fraction native alltoall reaches at --bytes on every
# host. Every job's checksum must equal the first `none` job's (the data do
# not change). The testbed is torn down at the end (--keep leaves it up).
#
# Usage: sudo bench/adapt.sh [--rounds N] [--steps N] [--bytes B] [--vbytes V]
#                            [--topology FILE] [--from-demand DURATION] [--out DIR] [--keep]
#   --rounds N        rounds of the five jobs (default 5)
#   --steps N         exchange_app's steps (default 60)
#   --bytes B         alltoall bytes per block (default 65536)
#   --vbytes V        alltoallv mean bytes per pair (default 65536)
#   --topology FILE   default deploy/examples/two-switch-4x4.yaml
#   --from-demand D   tune from the jobs' demand within budget D afterwards
#   --out DIR         where results go (default bench/reference/raw/adapt-DATE)
#   --keep            leave the testbed up
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
rounds=5 steps=60 bytes=65536 vbytes=65536 topology=deploy/examples/two-switch-4x4.yaml demand="" keep=0
out=bench/reference/raw/adapt-$(date -u +%Y%m%d-%H%M%S)
while (($#)); do
  case "$1" in
    --rounds | --steps | --bytes | --vbytes | --topology | --from-demand | --out)
      [[ $# -ge 2 ]] || { echo "adapt: $1 needs a value" >&2; exit 2; }
      case "$1" in
        --rounds) rounds=$2 ;; --steps) steps=$2 ;; --bytes) bytes=$2 ;; --vbytes) vbytes=$2 ;;
        --topology) topology=$2 ;; --from-demand) demand=$2 ;; --out) out=$2 ;;
      esac
      shift
      ;;
    --keep) keep=1 ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    *) echo "adapt: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
[[ $(id -u) -eq 0 ]] || { echo "adapt: must run as root: the testbed uses network namespaces" >&2; exit 1; }
build=$root/build
for f in bench/exchange_app bench_kernels/shim/libtopotune-mpi.so daemon/cli/topotune daemon/topotuned/topotuned; do
  [[ -e $build/$f ]] || { echo "adapt: $build/$f is missing; build first (cmake --build build)" >&2; exit 1; }
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
prefix=ad-
state=/run/topotune-testbed/$prefix
tb() { python3 deploy/testbed/testbed.py --prefix "$prefix" "$@"; }
admin() { tb exec head -- "$build/daemon/cli/topotune" "$@"; }
up=0
cleanup() { ((up && !keep)) && tb down >/dev/null 2>&1 || true; }
trap cleanup EXIT
echo "adapt: bringing up $topology"
tb up "$topology" --bin-dir "$build" >"$out/testbed.log" 2>&1
up=1
server=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["services"]["server"])' "$state/testbed.json")
db=$state/topotune.db
nhosts=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["hosts"]))' "$state/testbed.json")
# The calibration (see above); topotune-bench needs the testbed's names.
python3 bench/cluster_report.py topology --prefix "$prefix" "$topology" "$out/topology.yaml"
mapfile -t hosts < <(awk '{ print $1 }' "$state/hostfile")
# calibrate NAME MPIRUN_ARGS... -- BENCH_ARGS...: one topotune-bench job; prints its fractions of the bound.
calibrate() {
  local name=$1 run=()
  shift
  while [[ $1 != -- ]]; do run+=("$1"); shift; done
  shift
  "$state/mpirun" "${run[@]}" "$build/bench_kernels/driver/topotune-bench" "$@" --topology "$out/topology.yaml" --warmup 2 \
    --iterations 5 --times --progress never --out "$out/calibration-$name.jsonl" >"$out/calibration-$name.log" 2>&1 || true
  python3 -c 'import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(" ".join("%s %d B: %.2f of the bound" % (r["algorithm"], r["msize"], r["bound_s"] / r["mean_s"]) for r in rows
      if r.get("bound_s") and r.get("mean_s")) or "not measured (see the log)")' "$out/calibration-$name.jsonl" 2>/dev/null ||
    echo "not measured (see $out/calibration-$name.log)"
}
last=$((${#hosts[@]} - 1))
ring=$(calibrate ring -np 3 --host "${hosts[0]},${hosts[$((last / 2))]},${hosts[$last]}" -- --collective allgather \
  --hosts "${hosts[0]}:1,${hosts[$((last / 2))]}:1,${hosts[$last]}:1" --algorithms ring --sizes 1MiB)
native=$(calibrate native -np "$nhosts" --hostfile "$state/hostfile" -- --collective alltoall \
  --rank-hosts "$(IFS=,; echo "${hosts[*]}")" --algorithms native --sizes "$bytes")
echo "calibration: ring (3 hosts, 1 MiB): $ring; native alltoall ($nhosts hosts): $native" | tee "$out/calibration.txt"

# job WAY ROUND: one exchange_app job; appends "way round loop_s wall_s checksum" to results.txt.
job() {
  local way=$1 r=$2 env=()
  case "$way" in
    none | none:aa) ;;
    off) env=(-x "LD_PRELOAD=$build/bench_kernels/shim/libtopotune-mpi.so" -x "TOPOTUNE_SERVER=$server"
      -x TOPOTUNE_ADAPT=0) ;;
    tuned)
      env=(-x "LD_PRELOAD=$build/bench_kernels/shim/libtopotune-mpi.so" -x "TOPOTUNE_SERVER=$server"
        -x "TOPOTUNE_STATS_FILE=$out/$way-$r.stats.json" -x "TOPOTUNE_JOB_ID=adapt-$way-$r") ;;
    first | second)
      [[ $way == first ]] && python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1], timeout=30); c.execute("DELETE FROM learned"); c.commit()' "$db"
      env=(-x "LD_PRELOAD=$build/bench_kernels/shim/libtopotune-mpi.so" -x "TOPOTUNE_SERVER=$server"
        -x "TOPOTUNE_STATS_FILE=$out/$way-$r.stats.json" -x "TOPOTUNE_JOB_ID=adapt-$way-$r") ;;
  esac
  local t0 line
  t0=$(date +%s.%N)
  line=$("$state/mpirun" -np "$nhosts" --hostfile "$state/hostfile" "${env[@]}" "$build/bench/exchange_app" \
    --bytes "$bytes" --vbytes "$vbytes" --steps "$steps" 2> >(grep -v setpgid >>"$out/jobs.stderr"))
  echo "$way $r $(awk '{print $2}' <<<"$line") $(echo "$(date +%s.%N) - $t0" | bc) $(awk '{print $8}' <<<"$line")" |
    tee -a "$out/results.txt"
}
: >"$out/results.txt"
base=(none none:aa off)
for ((r = 1; r <= rounds; ++r)); do
  # The three baseline ways in an order rotated each round, then first and
  # second (second must follow first: it starts from what first learned).
  o=$(((r - 1) % 3))
  for w in "${base[@]:o}" "${base[@]:0:o}" first second; do job "$w" "$r"; done
done
# summarize WAY...: every way's statistics against none's, from results.txt.
summarize() {
  python3 - "$out" "$@" <<'EOF'
import glob, json, random, statistics, sys
out, ways = sys.argv[1], sys.argv[2:]
rows = [l.split() for l in open(f"{out}/results.txt") if l.strip()]
by = {}
for way, r, loop, wall, checksum in rows:
    by.setdefault(way, {})[int(r)] = (float(loop), float(wall), checksum)
sums = {v[2] for w in by.values() for v in w.values()}
print(f"checksums: {'all equal' if len(sums) == 1 else 'DIFFER: ' + ', '.join(sorted(sums))}")
def p95(x):
    x = sorted(x); return x[min(len(x) - 1, int(round(0.95 * (len(x) - 1))))]
def interval(a, b, seed=7, n=4000):
    rng = random.Random(seed); k = len(a); rs = []
    for _ in range(n):
        idx = [rng.randrange(k) for _ in range(k)]
        rs.append(sum(a[i] for i in idx) / sum(b[i] for i in idx))
    rs.sort(); return rs[int(0.025 * n)], rs[int(0.975 * n)]
for i, what in ((0, "loop_s (slowest rank)"), (1, "wall_s (mpirun)")):
    print(f"\n{what}: mean / median / p95, and the mean's ratio to none's [95 % paired bootstrap]")
    base = by["none"]
    for way in ways:
        rs = sorted(set(base) & set(by.get(way, {})))
        x = [by[way][r][i] for r in rs]; y = [base[r][i] for r in rs]
        lo, hi = interval(x, y)
        print(f"  {way:8s} {statistics.mean(x):8.3f} {statistics.median(x):8.3f} {p95(x):8.3f}   "
              f"{statistics.mean(x) / statistics.mean(y):.3f} [{lo:.3f}, {hi:.3f}]  ({len(rs)} rounds)")
print("\nfirst jobs' adaptation (world communicator): bucket calls exploring extra_s -> choice")
for path in sorted(glob.glob(f"{out}/first-*.stats.json")):
    stats = json.load(open(path))
    for a in stats.get("adapt", []):
        if a["comm_size"] >= 2:
            print(f"  {path.rsplit('/', 1)[1]:22s} {a['collective']:9s} {a.get('pattern', ''):7s} {a['size_bucket']:>8d} "
                  f"{a['calls']:4d} {a['exploring_calls']:3d} {a['extra_seconds']:+.3f} -> {a['choice'] or '(' + a['why'][:50] + ')'}")
for path in sorted(glob.glob(f"{out}/second-*.stats.json"))[:1]:
    stats = json.load(open(path))
    print(f"\n{path.rsplit('/', 1)[1]}: buckets explored again: {len(stats.get('adapt', []))}; calls by algorithm:")
    for e in stats["stats"]:
        print(f"  {e['collective']:9s} {e.get('pattern', ''):7s} msize {e['msize']:>8d} {e['algorithm']:14s} {e['calls']:4d} calls")
EOF
}
summarize none none:aa off first second | tee "$out/summary.txt"
admin decisions show >"$out/decisions.txt" 2>&1 || true
admin demand show >"$out/demand.txt" 2>&1 || true
echo; cat "$out/demand.txt"
if [[ -n $demand ]]; then
  t0=$SECONDS
  admin tune start --token-file "$state/token" --from-demand --budget "$demand" --wait >"$out/tune.txt" 2>&1 || true
  echo "tune start --from-demand --budget $demand: $((SECONDS - t0)) s" | tee -a "$out/tune.txt"
  tail -20 "$out/tune.txt"
  admin decisions show >"$out/decisions-after.txt" 2>&1 || true
  # The loop closed: jobs on what tuning from demand stored.
  mv "$out/results.txt" "$out/results-adapt.txt"
  : >"$out/results.txt"
  for ((r = 1; r <= rounds; ++r)); do
    if ((r % 2)); then job none "$r"; job tuned "$r"; else job tuned "$r"; job none "$r"; fi
  done
  echo
  summarize none tuned | sed '/^first jobs/,$d' | tee "$out/summary-tuned.txt"
  python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))
print(sys.argv[1].rsplit("/", 1)[1] + ": explored " + str(len(j["adapt"])) + " buckets; calls by algorithm:")
for e in j["stats"]:
    print("  %-9s %-7s msize %8d %-14s %4d calls" % (e["collective"], e.get("pattern", ""), e["msize"], e["algorithm"], e["calls"]))' \
    "$out/tuned-1.stats.json" | tee -a "$out/summary-tuned.txt"
fi
echo "adapt: results in $out"
