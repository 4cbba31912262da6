#!/usr/bin/env bash
# Benchmarks topotune against Open MPI on the emulated cluster (the issue's
# performance benchmark): for each topology of bench/topologies/ it brings the
# testbed up (deploy/testbed/testbed.py), tunes the collectives with topotuned
# over the sweep's sizes, then times side by side, per collective and
# alltoallv pattern:
#
#   ompi:default    Open MPI's own decision (topotune-bench's `native`)
#   topotune:tuned  what a job gets from the tuned plan: MPI_Alltoall & co.
#                   through libtopotune-mpi.so (topotune-bench --via-mpi);
#                   which algorithm the library ran per size comes from its
#                   TOPOTUNE_STATS_FILE
#   KERNEL          every topotune kernel of the collective
#   native:aa       ompi:default a second time: the A/A control, two runs of
#                   one algorithm whose ratio must show no difference
#   ompi:NAME       every Open MPI coll/tuned algorithm, forced
#
# The first four come from ONE mpirun per collective and pattern, so they
# are measured side by side: interleaved rounds (topotune-bench --interleave),
# each round times every one of them once in a fresh random order drawn from
# --seed, so drift and neighbours hit all alike. A forced Open MPI algorithm needs MCA
# parameters, hence an mpirun of its own (as bench/ompi-candidates.sh does;
# the loop is repeated here so that each run has its progress line, timeout,
# failure and counters). Then it tears the testbed down and goes on with the
# next topology. At the end bench/cluster_report.py writes the tables, the
# targets check and a PNG per topology.
#
# All links are 100 Mbit/s (tc tbf). Sizes are bytes per block (alltoallv:
# mean per pair); the default sweep is 1 KiB to 1 MiB in powers of 4 (6
# sizes instead of 11 powers of 2: the time of the large sizes dominates, and
# every factor of 4 still shows where algorithms cross). The alltoallv
# patterns are `uniform`, `skewed` (one pair in eight, drawn with --seed,
# carries 8 times as much) and `sparse` (one pair in four sends). Tuning
# measures alltoallv once per pattern class (tune start --patterns), and the
# library gives each call the class of its counts.
#
# Usage: sudo bench/cluster.sh [OPTIONS]
#   --topologies NAME,...  bench/topologies/NAME.yaml, or paths to topology
#                          files (default: one-switch-8, two-switch-4x4,
#                          three-switch-chain, three-switch-star,
#                          four-switch-2-6-3-5)
#   --collectives LIST     alltoall,alltoallv,allgather (default: all three)
#   --patterns LIST        alltoallv patterns: uniform,skewed,sparse (default
#                          all three; random is measured but not a tuned class)
#   --seed N               seed of the skewed pattern (default 7)
#   --sizes LIST           bytes per block (default 1KiB,4KiB,16KiB,64KiB,256KiB,1MiB)
#   --iterations N         interleaved rounds per size, i.e. timed calls per
#                          algorithm and size (default 20: enough calls for a
#                          95 % interval of a ratio of means)
#   --warmup N             untimed calls before them (default 2: with 1, the
#                          first algorithm of a job ran up to 1.5x slower than
#                          the same algorithm right after it, on TCP
#                          connections still ramping up)
#   --tune-iterations N    timed calls per algorithm and size when tuning
#                          (default 10). Fewer where the largest sizes would
#                          outlast the testbed topotuned's job_timeout (900 s
#                          for every kernel at one size; its point_timeout,
#                          120 s, bounds the warm-up and each round); never
#                          fewer than 8, below which the tuner's permutation
#                          test cannot confirm that a kernel beats native
#                          (tuner/crossover.h)
#   --skip-tuning          do not tune: the plan is whatever topotuned has
#                          (on a fresh testbed: native everywhere)
#   --skip-ompi            do not run the forced Open MPI algorithms
#   --verify               check every received byte (outside the timed region)
#   --mpirun-flags "..."   extra mpirun flags for every measured job (word-split),
#                          e.g. "--mca btl_tcp_eager_limit 4194304 --mca
#                          btl_tcp_rndv_eager_limit 4194304 --mca
#                          btl_tcp_max_send_size 4194304"; tuning jobs,
#                          which topotuned starts, keep the testbed's flags
#   --run-timeout S        kill an mpirun (or a tuning sweep) after S seconds
#                          (default 3600)
#   --prefix P             testbed namespace prefix (default tb<pid>-)
#   --out DIR              results directory (default bench/results/cluster-DATE-TIME/)
#   --estimate             print the time estimate and exit
#   -h, --help             this help
# Environment: BUILD (default build/): the build tree with topotune-bench,
# topotune, topotuned, topotune-agent and libtopotune-mpi.so; PYTHON
# (default python3). Needs root (network namespaces).
#
# Progress goes to stderr (and progress.log): topology, step, elapsed time.
# Before starting it prints an estimate of the run time from the physical
# bounds (calls x bound / 0.6, plus startup costs); the default run on all
# five topologies takes several hours, dominated by the 16-host 2+6+3+5 star
# at 256 KiB and 1 MiB (an all-to-all of 1 MiB blocks there is >= 5 s).
# For a quick check:
#   sudo bench/cluster.sh --topologies two-switch-4x4 --sizes 16KiB,256KiB --iterations 3
#
# Results (printed at the end): DIR/tables.txt, DIR/targets.txt,
# DIR/TOPOLOGY.png, DIR/meta.txt, DIR/progress.log, and per topology
# DIR/TOPOLOGY/: topology.yaml (with the testbed's names), testbed.json,
# placement.txt, tune.log, decisions.txt and .json, per run RUN.jsonl with
# RUN.log (command line and stderr), stats-RUN.json (the library's statistics),
# calibration-ring.jsonl, calibration-ring-all.jsonl and
# calibration-pair.jsonl (1 MiB: a ring of 3 hosts, one TCP flow per link
# direction, i.e. what TCP over the emulated links reaches now; the same ring
# over every rank of the job, which also pays for as many MPI processes on
# this machine's cores as the measured runs; and a pair exchange, both
# directions on one connection)
# and counters.txt (TCP retransmissions and timeouts of every host, tc drops
# of every port, and the machine's CPU time, before and after every run).
# Every sample also carries the TCP retransmission timeouts and retransmitted
# segments of its own timed calls (topotune-bench --tcp-counters), which the
# tables list per algorithm.
# Exit status: 0 when every step ran (targets may still be missed: see
# targets.txt), 1 when a step failed (the others still ran), 2 on a usage
# error or missing binaries.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=script_lib.sh
source "$root/bench/script_lib.sh"

args="$*"
all_topologies=one-switch-8,two-switch-4x4,three-switch-chain,three-switch-star,four-switch-2-6-3-5
topologies=$all_topologies collectives=alltoall,alltoallv,allgather patterns=uniform,skewed,sparse seed=7
sizes=1KiB,4KiB,16KiB,64KiB,256KiB,1MiB iterations=20 warmup=2 tune_iterations=10
skip_tuning=0 skip_ompi=0 verify=0 run_timeout=3600 prefix=tb$$- out='' estimate_only=0 mpirun_flags=
parse_options value:--topologies=topologies value:--collectives=collectives value:--patterns=patterns \
  value:--seed=seed value:--sizes=sizes value:--iterations=iterations value:--warmup=warmup \
  value:--tune-iterations=tune_iterations value:--run-timeout=run_timeout value:--prefix=prefix value:--out=out \
  value:--mpirun-flags=mpirun_flags flag:--skip-tuning=skip_tuning flag:--skip-ompi=skip_ompi flag:--verify=verify \
  flag:--estimate=estimate_only -- "$@"
for pair in "iterations:$iterations" "tune-iterations:$tune_iterations" "run-timeout:$run_timeout"; do
  [[ ${pair#*:} =~ ^[1-9][0-9]*$ ]] || die_usage "--${pair%%:*} takes a positive whole number, not '${pair#*:}'"
done
[[ $warmup =~ ^[0-9]+$ ]] || die_usage "--warmup takes a whole number, not '$warmup'"
[[ $seed =~ ^[0-9]+$ ]] || die_usage "--seed takes a whole number, not '$seed'"
[[ $prefix =~ ^[a-z0-9][a-z0-9-]{0,11}$ ]] ||
  die_usage "--prefix '$prefix': 1 to 12 lower-case letters, digits or '-' (it starts every namespace and host name)"
[[ $prefix == tt-* ]] && die_usage "--prefix '$prefix': tt- is testbed.py's default, which others use; pick another"
((tune_iterations >= 8)) || echo "cluster.sh: warning: --tune-iterations $tune_iterations < 8: the tuner can only choose native" >&2

read -r -a extra_flags <<<"$mpirun_flags"
IFS=, read -r -a coll_list <<<"$collectives"
IFS=, read -r -a pattern_list <<<"$patterns"
IFS=, read -r -a topo_list <<<"$topologies"
IFS=, read -r -a size_list <<<"$sizes"
for c in "${coll_list[@]}"; do
  case $c in alltoall | alltoallv | allgather) ;; *) die_usage "--collectives: unknown collective '$c' (alltoall, alltoallv, allgather)" ;; esac
done
for p in "${pattern_list[@]}"; do
  case $p in uniform | skewed | sparse | random) ;; *) die_usage "--patterns: unknown pattern '$p' (uniform, skewed, sparse, random)" ;; esac
done
[[ ${#size_list[@]} -gt 0 && ${#topo_list[@]} -gt 0 && ${#coll_list[@]} -gt 0 ]] || die_usage "empty list"
# The runs of one topology: "alltoall", "alltoallv uniform", ...
runs=()
for c in "${coll_list[@]}"; do
  if [[ $c == alltoallv ]]; then
    for p in "${pattern_list[@]}"; do runs+=("alltoallv $p"); done
  else
    runs+=("$c")
  fi
done
# The topology files.
topo_files=()
for t in "${topo_list[@]}"; do
  if [[ -f $t ]]; then
    topo_files+=("$(cd "$(dirname "$t")" && pwd)/$(basename "$t")")
  elif [[ -f $root/bench/topologies/$t.yaml ]]; then
    topo_files+=("$root/bench/topologies/$t.yaml")
  else
    die_usage "--topologies: no file '$t' and no bench/topologies/$t.yaml (there: $(cd "$root/bench/topologies" && find . -name '*.yaml' | sed 's|^\./||; s/\.yaml$//' | sort | paste -sd, -))"
  fi
done

# Binaries.
build=${BUILD:-$root/build}
[[ $build == /* ]] || build=$PWD/$build
python=${PYTHON:-python3}
bench=$build/bench_kernels/driver/topotune-bench
topotune=$build/daemon/cli/topotune
shim=$build/bench_kernels/shim/libtopotune-mpi.so
testbed=$root/deploy/testbed/testbed.py
missing=()
for f in "$bench" "$topotune" "$build/daemon/topotuned/topotuned" "$build/agent/topotune-agent" "$shim"; do
  [[ -f $f ]] || missing+=("$f")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "cluster.sh: missing: ${missing[*]}" >&2
  echo "Build them: cmake --build $build --target topotune-bench topotune topotuned topotune-agent topotune-mpi" >&2
  echo "(or point BUILD at a build tree that has them)" >&2
  exit 2
fi
bench_help=$("$bench" --help)
[[ $bench_help == *--via-mpi* ]] ||
  { echo "cluster.sh: $bench has no --via-mpi; rebuild it (cmake --build $build --target topotune-bench)" >&2; exit 2; }
for tool in "$python" ompi_info gnuplot timeout; do
  command -v "$tool" >/dev/null || { echo "cluster.sh: '$tool' not found (deploy/install-deps.sh installs it)" >&2; exit 2; }
done

# What runs per collective: the kernels (from topotune-bench's registry
# table) and Open MPI's coll/tuned algorithms (from ompi_info, as
# bench/ompi-candidates.sh reads them; two_proc needs exactly 2 ranks).
kernels_of() { printf '%s\n' "$bench_help" | awk -v c="$1" '/^ALGORITHMS/ { on = 1; next } on && /^$/ { exit } on && $1 == c { print $2 }'; }
ompi_of() {
  ompi_info --param coll tuned --level 9 --parsable |
    sed -n "s/^mca:coll:tuned:param:coll_tuned_$1_algorithm:enumerator:value:[0-9]*://p" | grep -v -x -e ignore -e two_proc
}
declare -A n_kernels n_ompi
for c in alltoall alltoallv allgather; do
  n_kernels[$c]=$(kernels_of "$c" | wc -l)
  n_ompi[$c]=$(ompi_of "$c" | wc -l)
done
((skip_ompi)) && for c in alltoall alltoallv allgather; do n_ompi[$c]=0; done

estimate_args=(--topotune "$topotune" --sizes "$sizes" --iterations "$iterations" --warmup "$warmup"
  --tune-iterations "$((skip_tuning ? 0 : tune_iterations))")
for spec in "${runs[@]}"; do
  c=${spec%% *}
  estimate_args+=(--run "$spec:${n_kernels[$c]}:${n_ompi[$c]}")
done
if ((estimate_only)); then
  "$python" "$root/bench/cluster_report.py" estimate "${estimate_args[@]}" "${topo_files[@]}"
  exit 0
fi
[[ $EUID -eq 0 ]] || { echo "cluster.sh: needs root (network namespaces); run it with sudo" >&2; exit 2; }

out=${out:-$root/bench/results/cluster-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
progress_log=$out/progress.log
: >"$progress_log"
start=$SECONDS
failures=0
# say TEXT: a progress line on stderr and in progress.log, with the elapsed time.
say() {
  local e=$((SECONDS - start))
  printf 'cluster.sh [%d:%02d:%02d] %s\n' $((e / 3600)) $((e % 3600 / 60)) $((e % 60)) "$*" | tee -a "$progress_log" >&2
}
failed() {
  say "FAILED: $*"
  failures=$((failures + 1))
}

{
  echo "date: $(date -Iseconds)"
  echo "command: bench/cluster.sh $args"
  echo "commit: $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)"
  echo "machine: $(uname -n), $(nproc) cores, $(uname -r)"
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "build: $build"
  echo "topologies: ${topo_files[*]}"
  echo "runs: ${runs[*]}"
  echo "sizes: $sizes; --iterations $iterations --warmup $warmup; tuning: $( ((skip_tuning)) && echo skipped || echo "--iterations up to $tune_iterations, one sweep per size, --skip-refinement")"
  echo "alltoallv seed: $seed; forced Open MPI algorithms: $( ((skip_ompi)) && echo skipped || echo yes); verify: $verify"
  echo "extra mpirun flags of the measured jobs: ${mpirun_flags:-none}"
  for c in alltoall alltoallv allgather; do
    echo "$c: kernels $(kernels_of "$c" | paste -sd' ' -); Open MPI: $(ompi_of "$c" | paste -sd' ' -)"
  done
  ompi_info --version 2>/dev/null | head -1
} >"$out/meta.txt"

say "results: $out"
"$python" "$root/bench/cluster_report.py" estimate "${estimate_args[@]}" "${topo_files[@]}" 2>&1 |
  tee -a "$out/meta.txt" | sed 's/^/cluster.sh: /' >&2

# The testbed that is up, torn down on any exit; the job running now,
# stopped on a signal (commands run in the background and are waited for,
# so that a signal is handled at once rather than when the job ends).
current_prefix='' current_dir='' child=''
teardown() {
  [[ -n $current_prefix ]] || return 0
  say "tearing down the testbed $current_prefix"
  "$python" "$testbed" --prefix "$current_prefix" down >>"${current_dir:-$out}/testbed-down.log" 2>&1 ||
    say "testbed.py down failed; see ${current_dir:-$out}/testbed-down.log"
  current_prefix=''
}
on_exit() {
  local rc=$?
  if [[ -n $child ]]; then
    kill -TERM "$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
  fi
  teardown
  exit $rc
}
trap on_exit EXIT
trap 'say "interrupted"; exit 130' INT
trap 'say "terminated"; exit 143' TERM
# job CMD...: runs CMD in the background and waits for it; its status.
job() {
  local rc=0
  "$@" &
  child=$!
  wait "$child" || rc=$?
  child=''
  return $rc
}

# counters RUN WHEN: appends every host's TCP retransmissions and timeouts,
# every qdisc's drops (hosts' eth0, switch ports) and the machine's CPU time
# (jiffies: all, busy, softirq; every namespace shares the 2 cores) to
# counters.txt, as "RUN WHEN NAMESPACE KEY VALUE" lines. cluster_report.py
# shows the deltas.
counters() {
  local ns
  awk -v r="$1" -v w="$2" '$1 == "cpu" {
      total = 0; for (i = 2; i <= NF; i++) total += $i
      print r, w, "machine", "cpu_total", total; print r, w, "machine", "cpu_idle", $5 + $6
      print r, w, "machine", "cpu_softirq", $8; exit }' /proc/stat
  for ns in "${host_ns[@]}"; do
    ip netns exec "$ns" cat /proc/net/snmp /proc/net/netstat 2>/dev/null |
      awk -v r="$1" -v w="$2" -v ns="$ns" '
        $1 == "Tcp:" && !th { th = 1; for (i = 2; i <= NF; i++) tn[i] = $i; next }
        $1 == "Tcp:" { for (i = 2; i <= NF; i++) if (tn[i] == "RetransSegs" || tn[i] == "OutSegs") print r, w, ns, tn[i], $i; next }
        $1 == "TcpExt:" && !xh { xh = 1; for (i = 2; i <= NF; i++) xn[i] = $i; next }
        $1 == "TcpExt:" { for (i = 2; i <= NF; i++) if (xn[i] ~ /^(TCPTimeouts|TCPLossProbes|TCPFastRetrans|TCPSynRetrans)$/) print r, w, ns, xn[i], $i }'
  done
  for ns in "${host_ns[@]}" "${switch_ns[@]}"; do
    ip netns exec "$ns" tc -s qdisc show 2>/dev/null |
      awk -v r="$1" -v w="$2" -v ns="$ns" '
        $1 == "qdisc" && $2 == "tbf" { dev = $5; next }
        $1 == "Sent" && dev != "" { d = $7; sub(/,$/, "", d); print r, w, ns, "drops:" dev, d; print r, w, ns, "packets:" dev, $4; dev = "" }'
  done
}

# bench_job RUN LOG ARGS...: one job, `mpirun ARGS...` with the testbed's
# mpirun, the --mpirun-flags and the run timeout, its counters around it.
bench_job() {
  local run=$1 log=$2 t0=$SECONDS rc=0
  shift 2
  { printf '%q ' timeout --kill-after=30 "$run_timeout" "$state/mpirun" "${extra_flags[@]}" "$@" && echo; } >"$log"
  counters "$run" before >>"$dir/counters.txt"
  job timeout --kill-after=30 "$run_timeout" "$state/mpirun" "${extra_flags[@]}" "$@" 2>>"$log" >>"$log" || rc=$?
  counters "$run" after >>"$dir/counters.txt"
  if [[ $rc -ne 0 ]]; then
    if [[ $rc -eq 124 ]]; then
      failed "$run timed out after $run_timeout s; see $log"
    else
      failed "$run: exit status $rc; see $log"
    fi
    tail -n 5 "$log" | sed 's/^/    /' >&2
  else
    say "  $run done in $((SECONDS - t0)) s"
  fi
  return $rc
}

# tb ARGS...: testbed.py on the current testbed.
tb() { "$python" "$testbed" --prefix "$prefix" "$@"; }

for topo_file in "${topo_files[@]}"; do
  name=$(basename "$topo_file" .yaml)
  dir=$out/$name
  mkdir -p "$dir"
  say "== $name: bringing the testbed up ($prefix, $(basename "$topo_file"))"
  current_prefix=$prefix current_dir=$dir
  if ! job "$python" "$testbed" --prefix "$prefix" up "$topo_file" --bin-dir "$build" >"$dir/testbed-up.log" 2>&1; then
    failed "$name: testbed.py up; see $dir/testbed-up.log"
    tail -n 5 "$dir/testbed-up.log" | sed 's/^/    /' >&2
    teardown
    continue
  fi
  state=/run/topotune-testbed/$prefix
  cp "$state/testbed.json" "$dir/testbed.json"
  server=$("$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["services"]["server"])' "$state/testbed.json")
  mapfile -t host_ns < <("$python" -c 'import json, sys; [print(h["namespace"]) for h in json.load(open(sys.argv[1]))["hosts"].values()]' "$state/testbed.json")
  mapfile -t switch_ns < <("$python" -c 'import json, sys; [print(s["namespace"]) for s in json.load(open(sys.argv[1]))["switches"].values()]' "$state/testbed.json")
  # One rank per slot: the hostfile has "NAMESPACE slots=N" lines.
  np=$(awk '{ n += (sub(/^slots=/, "", $2) ? $2 : 1) } END { print n }' "$state/hostfile")
  # topotune-bench needs the topology with the testbed's names (the prefix).
  "$python" "$root/bench/cluster_report.py" topology --prefix "$prefix" "$topo_file" "$dir/topology.yaml"
  # Where mpirun puts each rank: topotune-bench must place ranks the same
  # way (the bound, the tree_scheduled programs), and the library finds it
  # out by itself from the host names.
  # shellcheck disable=SC2016  # expanded by each rank's shell
  if ! "$state/mpirun" -np "$np" --hostfile "$state/hostfile" sh -c 'echo "$OMPI_COMM_WORLD_RANK $(hostname)"' \
    >"$dir/placement.txt" 2>"$dir/placement.log"; then
    failed "$name: mpirun of hostname; see $dir/placement.log"
    teardown
    continue
  fi
  rank_hosts=$(awk 'NF == 2 && $1 ~ /^[0-9]+$/' "$dir/placement.txt" | sort -n | awk '{ print $2 }' | paste -sd, -)
  if [[ $(tr ',' '\n' <<<"$rank_hosts" | grep -c .) -ne $np ]]; then
    failed "$name: mpirun placed $(grep -c . "$dir/placement.txt") of $np ranks; see $dir/placement.txt"
    teardown
    continue
  fi
  say "$name: up, $(grep -c . "$state/hostfile") hosts, $np ranks; ranks on $rank_hosts"
  # Two references, 1 MiB, now (under this machine's current load):
  #  ring  3 ranks (first, middle and last host) pass blocks round a ring
  #        (allgather ring): one flow per link direction, each on its own
  #        TCP connection, so the fraction is what TCP over the emulated
  #        links reaches: the ceiling of every fraction below;
  #  pair  the first and the last host exchange blocks (alltoall): both
  #        directions on one TCP connection. Above the eager limit (64 KiB)
  #        Open MPI's TCP transport then reached about half the link rate
  #        each way, against ~0.9 for ring: every algorithm whose ranks
  #        exchange with the same peer at the same time pays for it.
  mapfile -t placed < <(tr ',' '\n' <<<"$rank_hosts")
  first_host=${placed[0]} middle_host=${placed[$((np / 2))]} last_host=${placed[$((np - 1))]}
  bench_job calibration-ring "$dir/calibration-ring.log" -np 3 --host "$first_host,$middle_host,$last_host" \
    "$bench" --collective allgather --topology "$dir/topology.yaml" --hosts "$first_host:1,$middle_host:1,$last_host:1" \
    --algorithms ring --sizes 1MiB --warmup 2 --iterations 5 --times --progress never \
    --out "$dir/calibration-ring.jsonl" || true
  bench_job calibration-ring-all "$dir/calibration-ring-all.log" -np "$np" --hostfile "$state/hostfile" \
    "$bench" --collective allgather --topology "$dir/topology.yaml" --rank-hosts "$rank_hosts" \
    --algorithms ring --sizes 1MiB --warmup 2 --iterations 5 --times --progress never --tcp-counters \
    --out "$dir/calibration-ring-all.jsonl" || true
  bench_job calibration-pair "$dir/calibration-pair.log" -np 2 --host "$first_host,$last_host" "$bench" \
    --collective alltoall --topology "$dir/topology.yaml" --hosts "$first_host:1,$last_host:1" --algorithms native \
    --sizes 1MiB --warmup 2 --iterations 5 --times --progress never --out "$dir/calibration-pair.jsonl" || true

  if ((skip_tuning)); then
    say "$name: tuning skipped"
  else
    tune_colls=$(printf '%s\n' "${coll_list[@]}" | paste -sd, -)
    # The tuned alltoallv classes: the patterns measured here, but random.
    classes=$(printf '%s\n' "${pattern_list[@]}" | grep -v -x random | paste -sd, -)
    tune_patterns=()
    [[ -n $classes ]] && tune_patterns=(--patterns "$classes")
    max_kernels=$(for c in "${coll_list[@]}"; do echo "${n_kernels[$c]}"; done | sort -n | tail -1)
    declare -A tune_n=()
    while read -r size n; do tune_n[$size]=$n; done < <("$python" "$root/bench/cluster_report.py" tune-iterations \
      --topotune "$topotune" --config "$state/topotuned.yaml" --max "$tune_iterations" --kernels "$max_kernels" \
      --sizes "$sizes" "$topo_file")
    : >"$dir/tune.log"
    # One sweep per size: samples of earlier sweeps count in every decision
    # (topotuned decides from all samples of a layout), and a job of all sizes
    # at once could outlast the testbed's tuning.job_timeout (900 s) on the
    # 16-host tree. --skip-refinement: only the sweep's sizes are measured
    # afterwards, so sizes between them do not matter here.
    for size in "${size_list[@]}"; do
      n=${tune_n[$size]:-$tune_iterations}
      say "$name: tuning $tune_colls at $size ($n iterations)"
      if ! job timeout --kill-after=30 "$run_timeout" "$python" "$testbed" --prefix "$prefix" exec head -- \
        "$topotune" tune start --token-file "$state/token" --collective "$tune_colls" --nodes "$np" \
        --ranks-per-node 1 --sizes "$size" --iterations "$n" --skip-refinement "${tune_patterns[@]}" --wait \
        >>"$dir/tune.log" 2>&1; then
        failed "$name: tuning at $size; see $dir/tune.log"
        tail -n 3 "$dir/tune.log" | sed 's/^/    /' >&2
      fi
    done
  fi
  tb exec head -- "$topotune" decisions show >"$dir/decisions.txt" 2>&1 || true
  tb exec head -- "$topotune" decisions show --json >"$dir/decisions.json" 2>/dev/null || true

  common=(--topology "$dir/topology.yaml" --rank-hosts "$rank_hosts" --sizes "$sizes" --warmup "$warmup"
    --iterations "$iterations" --interleave --order-seed "$seed" --times --progress never --tcp-counters)
  ((verify)) && common+=(--verify)
  for spec in "${runs[@]}"; do
    collective=${spec%% *} pattern_args=() tag=$collective
    if [[ $spec == *" "* ]]; then
      tag=$collective-${spec#* }
      pattern_args=(--pattern "${spec#* }" --seed "$seed")
    fi
    say "$name: $spec: kernels, ompi:default and topotune:tuned ($(kernels_of "$collective" | wc -l) kernels + the library)"
    bench_job "$tag" "$dir/$tag.log" -np "$np" --hostfile "$state/hostfile" \
      -x LD_PRELOAD="$shim" -x TOPOTUNE_SERVER="$server" -x TOPOTUNE_STATS_FILE="$dir/stats-$tag.json" \
      -x TOPOTUNE_LOG=info "$bench" --collective "$collective" "${pattern_args[@]}" "${common[@]}" \
      --label-native ompi:default --via-mpi topotune:tuned --aa-control --out "$dir/$tag.jsonl" || true
    ((skip_ompi)) && continue
    # Each Open MPI algorithm forced, as bench/ompi-candidates.sh does.
    mapfile -t forced < <(ompi_of "$collective")
    for algo in "${forced[@]}"; do
      say "$name: $spec: ompi:$algo forced"
      bench_job "$tag.ompi-$algo" "$dir/$tag.ompi-$algo.log" -np "$np" --hostfile "$state/hostfile" \
        --mca coll_tuned_use_dynamic_rules 1 --mca "coll_tuned_${collective}_algorithm" "$algo" \
        "$bench" --collective "$collective" "${pattern_args[@]}" "${common[@]}" \
        --algorithms native --label-native "ompi:$algo" --out "$dir/$tag.ompi-$algo.jsonl" || true
    done
  done
  teardown
  say "$name: done"
done

say "report"
"$python" "$root/bench/cluster_report.py" report --topotune "$topotune" "$out" || failed "cluster_report.py report $out"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/meta.txt"
say "finished in $((SECONDS - start)) s with $failures failed step(s); results: $out"
[[ $failures -eq 0 ]]
