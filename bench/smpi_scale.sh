#!/usr/bin/env bash
# The host-combined kernels at cluster scale under SimGrid's SMPI: one
# simulation per (shape, algorithm) of topotune-bench-smpi, hundreds of ranks
# with many per host, every rank's buffers and the host segments folded into
# SMPI's shared memory (--fold-buffers), so that they fit in memory.
#
# Default shapes (512 ranks or more, 64 KiB blocks):
#   two-leaf-16x16   deploy/examples: 2 leaves x 16 hosts x 16 ranks, 25 Gbit/s
#                    hosts, one 100 Gbit/s inter-leaf link (512 ranks)
#   three-level-512  bench/topologies: core, 2 aggregation and 4 leaf switches,
#                    8 hosts x 16 ranks per leaf, 25 Gbit/s hosts, 100 Gbit/s
#                    uplinks (512 ranks)
#   uneven-mixed     bench/topologies: leaves of 6, 10, 4 and 8 hosts, hosts
#                    at 10 and 25 Gbit/s, 8 to 32 ranks per host (560 ranks)
#
# Times are simulated, so one timed call per run says it all (--iterations
# 1): SMPI is deterministic. One untimed call comes first (--warmup 1), so
# that the timed one does not include what a job pays once per
# communicator (the host-combined kernels split it by host and allocate
# their shared segments on their first call). The link model is plain (SMPI's
# latency and bandwidth correction factors off: --cfg=smpi/lat-factor:0:1
# --cfg=smpi/bw-factor:0:1) and, unless --computation simulated,
# computation takes no simulated time, so the runs compare schedules on the
# links alone; the copies in and out of the host segments are free then.
# SimGrid's cross-traffic (acknowledgements
# loading the reverse direction of every link) stays on unless
# --crosstraffic off.
#
# The MPI library's own alltoall (native: SMPI's default, a linear
# exchange) and topotune's linear post every message at once: 512 ranks make
# 262,144 concurrent flows, and SimGrid's solver needs hours for one call.
# --slots-divisor 4 runs every algorithm on the same shapes with a quarter
# of the ranks per host (128 or 140 ranks), side by side with those two.
#
# After each shape it prints a table (bench/report.py): per algorithm, the
# simulated time and [bound_s / time], the fraction of the physical lower
# bound, and above it the fraction that `topotune schedule` models for the
# collective's default schedule and, per size, for each topotune algorithm
# that has a schedule: the schedule the kernel runs, which is built once for
# every size (`topotune schedule --as-served`). The results directory keeps meta.txt,
# tables.txt, runs.txt (exit status and wall time of every run) and, per
# shape, the topology, the exported platform, and ALGORITHM.jsonl with its
# .log.
#
# Usage: bench/smpi_scale.sh [OPTIONS]
#   --shapes LIST         comma-separated shape names (above) or topology files
#   --algorithms LIST     default for alltoall: capacity_scheduled,
#                         capacity_lockstep,host_direct,pairwise,
#                         tree_scheduled,native,linear; for allgather:
#                         node_aware_ring,ring,native. native:SELECTOR runs
#                         SMPI's own collective as chosen by that selector
#                         (--cfg=smpi/coll-selector:SELECTOR: ompi, the rules
#                         of Open MPI 4.1's coll/tuned, or mpich), labelled
#                         smpi:SELECTOR; plain native is SMPI's default
#   --collective NAME     alltoall (default) or allgather
#   --sizes LIST          block sizes, comma-separated (default 64KiB), all
#                         in each run; --size is the same option
#   --slots-divisor D     D times fewer ranks per host (rounded up; default 1)
#   --crosstraffic on|off SimGrid's network/crosstraffic (default on; fluid
#                         network only)
#   --network fluid|ns-3  fluid (default): SimGrid's max-min flow model, the
#                         plain link model above; ns-3: every packet
#                         simulated by ns-3 (--cfg=network/model:ns-3), with
#                         TCP (ns-3's default NewReno, 1000-byte segments),
#                         point-to-point links with ns-3's default queues,
#                         and losses; the platform comes from topotune
#                         topology export --ns3. ns-3 takes at most 128
#                         ranks here (use --slots-divisor), and messages
#                         between ranks of one host take no time under it
#   --computation free|simulated
#                         free (default): computation takes no simulated
#                         time, so the copies into and out of the host
#                         segments cost nothing; simulated: every stretch of
#                         code between MPI calls costs the time it took here
#                         (smpi/simulate-computation, with smpi/host-speed set
#                         to the exported hosts' speed, so one second here is
#                         one simulated second), copies and rotations
#                         included. With folded buffers the copies run in
#                         cache-hot shared pages, so they come out cheaper
#                         than on a real host
#   --message-overhead SEND_S,RECV_S
#                         CPU time per message (default: none, SMPI's
#                         default): every send keeps its rank busy SEND_S
#                         seconds (smpi/ois, smpi/os) and every receive
#                         RECV_S (smpi/or, charged as it completes, so part
#                         of it hides behind the wait), so that N x (N - 1)
#                         messages cost what they cost against a
#                         host-combined exchange's few; the barrier before
#                         each timed call is then the dissemination one.
#                         bench/message_overhead.c measures them on a real
#                         MPI (README, "SimGrid at cluster scale")
#   --warmup N            untimed calls before the timed one (default 1)
#   --phase-trace         also write trace/ALGORITHM.jsonl per shape: the
#                         host-combined kernels' step timestamps
#                         (topotune-bench --phase-trace), summarised by
#                         bench/phase_report.py into trace/ALGORITHM.txt
#   --time-limit SECONDS  wall time per run, 0 for none (default 0); a run
#                         that exceeds it is reported and the others go on
#   --out DIR             results directory (default: bench/results/smpi-scale-DATE-TIME/)
#   -h, --help            this help
# Environment:
#   BUILD    the build tree (default: build/), configured with
#            -DTOPOTUNE_BUILD_SMPI=ON
#   SMPIRUN  (default: smpirun); PYTHON (default: python3)
# Folding maps every rank's buffers page by page: above 128 ranks SimGrid
# needs vm.max_map_count of 1048576 or more (Debian's default is 65530); the
# script says so and stops when it is lower. On 2 cores the default runs take
# about 25 minutes without native and linear. Exit status: 0 when every run
# succeeded, 1 when one failed or ran out of time, 2 on a usage error.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=script_lib.sh
source "$root/bench/script_lib.sh"

args="$*"
shapes="two-leaf-16x16,three-level-512,uneven-mixed" algorithms="" collective=alltoall sizes=64KiB divisor=1
crosstraffic=on limit=0 out="" warmup=1 phase_trace=0 computation=free network=fluid overhead=""
parse_options value:--shapes=shapes value:--algorithms=algorithms value:--collective=collective value:--size=sizes \
  value:--sizes=sizes value:--message-overhead=overhead \
  value:--slots-divisor=divisor value:--crosstraffic=crosstraffic value:--time-limit=limit value:--out=out \
  value:--warmup=warmup flag:--phase-trace=phase_trace value:--computation=computation value:--network=network \
  -- "$@"
case $collective in
  alltoall) : "${algorithms:=capacity_scheduled,capacity_lockstep,host_direct,pairwise,tree_scheduled,native,linear}" ;;
  allgather) : "${algorithms:=node_aware_ring,ring,native}" ;;
  *) die_usage "--collective takes alltoall or allgather, not '$collective'" ;;
esac
[[ $divisor =~ ^[1-9][0-9]*$ ]] || die_usage "--slots-divisor takes a positive number, not '$divisor'"
for algorithm in ${algorithms//,/ }; do
  [[ $algorithm != *:* || $algorithm =~ ^native:[a-z0-9_]+$ ]] ||
    die_usage "only native takes a selector (native:ompi, native:mpich), not '$algorithm'"
done
[[ $warmup =~ ^[0-9]+$ ]] || die_usage "--warmup takes a number of calls, not '$warmup'"
[[ $limit =~ ^[0-9]+$ ]] || die_usage "--time-limit takes a number of seconds, not '$limit'"
[[ $computation == free || $computation == simulated ]] ||
  die_usage "--computation takes free or simulated, not '$computation'"
[[ $crosstraffic == on || $crosstraffic == off ]] || die_usage "--crosstraffic takes on or off, not '$crosstraffic'"
[[ $network == fluid || $network == ns-3 ]] || die_usage "--network takes fluid or ns-3, not '$network'"
number='[0-9]+(\.[0-9]*)?([eE]-?[0-9]+)?'
[[ -z $overhead || $overhead =~ ^$number,$number$ ]] ||
  die_usage "--message-overhead takes SEND_S,RECV_S in seconds (2.5e-6,1.5e-6), not '$overhead'"

# The shapes' topology files.
topologies=()
IFS=, read -r -a shape_list <<<"$shapes"
for shape in "${shape_list[@]}"; do
  file=""
  for candidate in "$shape" "$root/bench/topologies/$shape.yaml" "$root/deploy/examples/$shape.yaml"; do
    [[ -f $candidate ]] && file=$(cd "$(dirname "$candidate")" && pwd)/$(basename "$candidate") && break
  done
  [[ -n $file ]] || die_usage "no shape '$shape' (neither a file nor in bench/topologies or deploy/examples)"
  topologies+=("$file")
done

build=${BUILD:-$root/build}
[[ $build == /* ]] || build=$PWD/$build
bench=$build/bench_kernels/smpi/topotune-bench-smpi
topotune=$build/daemon/cli/topotune
smpirun=${SMPIRUN:-smpirun}
python=${PYTHON:-python3}
for binary in "$bench" "$topotune"; do
  [[ -x $binary ]] && continue
  echo "smpi_scale.sh: missing $binary; build it (SimGrid from deploy/install-deps.sh) with:" >&2
  echo "  cmake -S $root -B $build -G Ninja -DTOPOTUNE_BUILD_SMPI=ON && cmake --build $build" >&2
  exit 2
done
for tool in "$smpirun" "$python"; do
  command -v "$tool" >/dev/null || { echo "smpi_scale.sh: '$tool' not found (deploy/install-deps.sh installs it)" >&2; exit 2; }
done

out=${out:-$root/bench/results/smpi-scale-$(date +%Y-%m-%d-%H%M%S)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
tables=$out/tables.txt runs=$out/runs.txt
: >"$tables"
: >"$runs"
# maxmin/precision 1e-4: at SimGrid's default (1e-5), and at 1e-6 and 1e-9,
# the solver aborted an all-at-once exchange of 128 ranks on three-level-512
# ("Cannot saturate more a constraint that has no active element"); at 1e-4
# and 1e-3 that run's five sizes came out identical.
# The exported hosts compute at 1 Gflop/s (topotune topology export's
# default --host-speed); smpi/host-speed says this machine does too.
if [[ $computation == free ]]; then
  compute_cfg=(--cfg=smpi/simulate-computation:no)
else
  compute_cfg=(--cfg=smpi/simulate-computation:yes --cfg=smpi/host-speed:1Gf)
fi
smpi_cfg=(--cfg=maxmin/precision:1e-4 "${compute_cfg[@]}" --cfg=smpi/lat-factor:0:1 --cfg=smpi/bw-factor:0:1
  --log=root.thres:error)
export_flags=()
if [[ $network == fluid ]]; then
  smpi_cfg+=("--cfg=network/crosstraffic:$([[ $crosstraffic == on ]] && echo 1 || echo 0)")
  network_text="plain link model, crosstraffic $crosstraffic"
else
  # A fixed seed, so that a rerun simulates the same packets. SimGrid 3.32's
  # ns-3 binding aborts a flow larger than the TCP send buffer ("total_bytes
  # ... is not sent_bytes"; ns-3's default buffer is 128 KiB, and a host pair's
  # message carries many blocks), so the buffer is made larger than any message.
  smpi_cfg+=(--cfg=network/model:ns-3 --cfg=ns3/seed:1)
  export NS_ATTRIBUTE_DEFAULT=ns3::TcpSocket::SndBufSize=1073741824
  export_flags=(--ns3)
  network_text="ns-3 packet-level network (TCP)"
fi
# Per-message CPU time (bench/message_overhead.c measures it on a real MPI):
# each MPI_Isend and MPI_Send keeps its rank busy SEND_S, each receive
# RECV_S as it completes, whatever the size (the network model adds the bytes).
# SMPI's default barrier is linear, and under such costs its root leaves
# one send time per rank after the first rank does: the barrier before every
# timed call would start the ranks that far apart (0.62 ms at 128 ranks and
# 5 us), so the runs take the dissemination barrier (ompi_bruck), whose
# ranks leave together.
if [[ -n $overhead ]]; then
  send_s=${overhead%,*} recv_s=${overhead#*,}
  smpi_cfg+=("--cfg=smpi/ois:0:$send_s:0" "--cfg=smpi/os:0:$send_s:0" "--cfg=smpi/or:0:$recv_s:0"
    --cfg=smpi/barrier:ompi_bruck)
  network_text+=", $send_s s per message sent and $recv_s s per message received"
fi
# The trace's own clock reads cost no simulated time.
((phase_trace)) && smpi_cfg+=(--cfg=smpi/wtime:0)
{
  echo "date: $(date -Iseconds)"
  echo "command: bench/smpi_scale.sh $args"
  echo "commit: $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)"
  echo "machine: $(uname -n), $(nproc) cores"
  echo "build: $build"
  echo "collective: $collective, sizes $sizes, algorithms $algorithms, slots divisor $divisor"
  echo "smpirun: ${smpi_cfg[*]}; topotune-bench-smpi --iterations 1 --warmup $warmup --fold-buffers"
  "$smpirun" -version 2>/dev/null | head -1
} >"$out/meta.txt" 2>/dev/null || true

say() { printf '%s\n' "$*" | tee -a "$tables"; }
IFS=, read -r -a size_list <<<"$sizes"
num_sizes=${#size_list[@]}
failures=0
start=$SECONDS
for topology in "${topologies[@]}"; do
  name=$(basename "$topology" .yaml)
  ((divisor == 1)) || name+="-div$divisor"
  dir=$out/$name
  mkdir -p "$dir"
  # The shape, with fewer ranks per host when asked.
  "$python" - "$topology" "$divisor" "$dir/$name.yaml" <<'EOF'
import math, re, sys
text, divisor = open(sys.argv[1]).read(), int(sys.argv[2])
scaled = re.sub(r"slots: *(\d+)", lambda m: f"slots: {math.ceil(int(m.group(1)) / divisor)}", text)
open(sys.argv[3], "w").write(scaled)
EOF
  if ! "$topotune" topology export "${export_flags[@]}" --simgrid "$dir/$name.xml" --hostfile "$dir/$name.hosts" "$dir/$name.yaml" \
    >"$dir/export.log" 2>&1; then
    echo "smpi_scale.sh: exporting $topology failed:" >&2
    cat "$dir/export.log" >&2
    failures=$((failures + 1))
    continue
  fi
  np=$(wc -l <"$dir/$name.hosts")
  if [[ $network == ns-3 ]] && ((np > 128)); then
    die_usage "$name has $np ranks; ns-3 simulates every packet and takes at most 128 here (use --slots-divisor)"
  fi
  map_count=$(cat /proc/sys/vm/max_map_count)
  if ((np > 128 && map_count < 1048576)); then
    echo "smpi_scale.sh: vm.max_map_count is $map_count; folded buffers for $np ranks need 1048576. As root:" >&2
    echo "  sysctl -w vm.max_map_count=1048576    (and back with: sysctl -w vm.max_map_count=$map_count)" >&2
    exit 2
  fi
  # The model of the collective's default schedule, at each size, of the
  # schedule the kernels run (built once for every size: --as-served).
  models=()
  for size in ${sizes//,/ }; do
    models+=("$("$topotune" schedule --as-served --topology "$dir/$name.yaml" --collective "$collective" --msize "$size" \
      2>/dev/null | grep '^model' || echo "model ($size): not available")")
  done
  # Each topotune algorithm's own model, where it has a schedule: the
  # fraction of the bound per size, and whether a phase overruns a link.
  for algorithm in ${algorithms//,/ }; do
    [[ $algorithm == native || $algorithm == native:* ]] && continue
    line="modelled fraction of the bound, $algorithm:" overrun=""
    for size in ${sizes//,/ }; do
      model=$("$topotune" schedule --as-served --topology "$dir/$name.yaml" --collective "$collective" --algorithm "$algorithm" \
        --msize "$size" 2>/dev/null | grep '^model' || true)
      fraction=$(sed -n 's/.*fraction of the bound \([0-9.]*\).*/\1/p' <<<"$model")
      line+=" $size ${fraction:-n/a}"
      [[ $model == *"phases overrun"* || $model == *"phase overrun"* ]] && overrun=" (overruns links, all at once)"
    done
    models+=("$line$overrun")
  done
  samples=()  # The JSON Lines of the runs that succeeded.
  for algorithm in ${algorithms//,/ }; do
    # native:SELECTOR: SMPI's own collective under that selector.
    kernel=${algorithm%%:*} selector=${algorithm#*:} file=${algorithm//:/-}
    selection=() label=()
    if [[ $algorithm == *:* ]]; then
      selection=("--cfg=smpi/coll-selector:$selector") label=(--label-native "smpi:$selector")
    fi
    printf 'smpi_scale.sh: [%5ds] %s, %d ranks, %s ...' "$((SECONDS - start))" "$name" "$np" "$algorithm" >&2
    t0=$SECONDS status=0
    # Under ns-3 each size runs in a simulation of its own: SimGrid's binding
    # gives every flow a port of its own and wraps after 65,535 of them.
    groups=("$sizes")
    [[ $network == ns-3 ]] && IFS=, read -r -a groups <<<"$sizes"
    : >"$dir/$file.jsonl"
    : >"$dir/$file.log"
    traces=()
    for group in "${groups[@]}"; do
      command=("$smpirun" -platform "$dir/$name.xml" -hostfile "$dir/$name.hosts" -np "$np" "${smpi_cfg[@]}"
        "${selection[@]}" "$bench" --topology "$dir/$name.yaml" --collective "$collective" --algorithms "$kernel"
        "${label[@]}" --sizes "$group"
        --iterations 1 --warmup "$warmup" --progress never --fold-buffers)
      if ((phase_trace)); then
        mkdir -p "$dir/trace"
        trace=$dir/trace/$file.jsonl
        ((${#groups[@]} == 1)) || trace=$dir/trace/$file-$group.jsonl
        command+=(--phase-trace "$trace") traces+=("$trace")
      fi
      { printf '%q ' "${command[@]}" && echo; } >>"$dir/$file.log"
      # smpirun may leave temporary files in the current directory.
      if ((limit > 0)); then
        (cd "$dir" && timeout "$limit" "${command[@]}") >>"$dir/$file.jsonl" 2>>"$dir/$file.log" || status=$?
      else
        (cd "$dir" && "${command[@]}") >>"$dir/$file.jsonl" 2>>"$dir/$file.log" || status=$?
      fi
      [[ $status -eq 0 ]] || break
    done
    wall=$((SECONDS - t0))
    if ((phase_trace)) && ((${#traces[@]} > 0)); then
      "$python" "$root/bench/phase_report.py" "${traces[@]}" >"$dir/trace/$file.txt" 2>&1 || true
    fi
    printf ' %ds\n' "$wall" >&2
    # A simulation can end with status 0 before its last size (SimGrid
    # reports a deadlock and stops): such a run is incomplete.
    lines=$(grep -c . "$dir/$file.jsonl" || true)
    if [[ $status -eq 124 ]]; then
      echo "$name $algorithm ranks=$np status=timeout wall=${wall}s (over --time-limit $limit)" >>"$runs"
      failures=$((failures + 1))
    elif [[ $status -eq 0 && $lines -ne $num_sizes ]]; then
      echo "$name $algorithm ranks=$np status=incomplete wall=${wall}s ($lines of $num_sizes sizes)" >>"$runs"
      echo "smpi_scale.sh: $name $algorithm ended after $lines of $num_sizes sizes; last lines of $dir/$file.log:" >&2
      grep -v '^  ->' "$dir/$file.log" | tail -n 5 >&2
      samples+=("$dir/$file.jsonl")  # The sizes it finished.
      failures=$((failures + 1))
    else
      echo "$name $algorithm ranks=$np status=$status wall=${wall}s" >>"$runs"
      [[ $status -eq 0 ]] && samples+=("$dir/$file.jsonl")
      if [[ $status -ne 0 ]]; then
        echo "smpi_scale.sh: $name $algorithm failed (exit status $status); last lines of $dir/$file.log:" >&2
        tail -n 20 "$dir/$file.log" >&2
        failures=$((failures + 1))
      fi
    fi
  done
  say "== SimGrid $name ($np ranks), $collective, $sizes blocks, $network_text, computation $computation"
  for model in "${models[@]}"; do
    if [[ $model == "model ("* ]]; then say "   topotune schedule's $model"; else say "   $model"; fi
  done
  cat "${samples[@]}" /dev/null >"$dir/all.jsonl"
  if [[ -s $dir/all.jsonl ]]; then
    "$python" "$root/bench/report.py" --bound --rows label "$dir/all.jsonl" | tee -a "$tables"
  else
    say "   (no samples)"
  fi
  grep "^$name " "$runs" | grep -v "status=0 " | sed 's/^/   not in the table: /' | tee -a "$tables" || true
  say ""
done

echo "smpi_scale.sh: $((SECONDS - start)) s; tables.txt, runs.txt and the raw samples in $out" >&2
if [[ $failures -gt 0 ]]; then
  echo "smpi_scale.sh: $failures run(s) failed or ran out of time (runs.txt)" >&2
  exit 1
fi
