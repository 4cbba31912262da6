#!/usr/bin/env bash
# Benchmarks every kernel of every collective (alltoall, alltoallv with the
# uniform and the skewed pattern, allgather) with topotune-bench, over message
# sizes 1KiB, 4KiB, 16KiB, 64KiB, 256KiB and 1MiB, in two settings:
#
#   localhost  8 ranks under mpirun on this machine, over shared memory
#              (--oversubscribe --mca btl self,vader), placed on the 8 hosts of
#              deploy/examples/two-switch-4x4.yaml so that the topology-aware
#              kernels get their context. The bound is that of the 100 Mbit/s
#              tree, only nominal here: shared memory is far faster, so
#              bound / median is well above 1.
#   SimGrid    topotune-bench-smpi under smpirun, on the platforms that
#              `topotune topology export --simgrid` writes for
#              deploy/examples/faraj-yuan-fig1.yaml (6 hosts),
#              two-switch-4x4.yaml (8) and uneven-4-switch.yaml (16), one rank
#              per host in file order; times are simulated seconds with SMPI's
#              default latency and bandwidth factors.
#
# After each run it prints a table (bench/report.py): per algorithm and size,
# the median time, (its ratio to native's) and [bound_s / median_s], the
# fraction of the physical lower bound reached. The results directory,
# printed at the end, keeps everything: meta.txt (options, commit, versions),
# tables.txt (the tables), and in localhost/ and smpi-PLATFORM/ the raw
# samples COLLECTIVE[-PATTERN].jsonl, each with a .log (the command line and
# its stderr), and the exported PLATFORM.xml and PLATFORM.hosts.
#
# Usage: bench/kernels.sh [OPTIONS]
#   --quick             a smoke run: sizes 1KiB and 64KiB, few iterations
#   --out DIR           results directory (default: bench/results/DATE-TIME/)
#   --only WHAT         localhost or smpi: run one of the two settings only
#   --sizes LIST        message sizes instead of the default (e.g. 1KiB,64KiB)
#   --iterations N      timed calls per algorithm and size (default: 20 on
#                       localhost, 3 under SMPI, whose times are deterministic;
#                       --quick: 3 and 1)
#   --plain-link-model  under SMPI, no latency/bandwidth correction factors
#                       (--cfg=smpi/lat-factor:0:1 --cfg=smpi/bw-factor:0:1)
#   --verify            check every received byte (outside the timed region)
#   -h, --help          this help
# Environment:
#   BUILD    the build tree (default: build/), configured with
#            -DTOPOTUNE_BUILD_SMPI=ON; missing binaries exit 2 with the
#            cmake command that builds them
#   MPIRUN   the launcher (default: mpirun); SMPIRUN (default: smpirun)
#   PYTHON   (default: python3) runs bench/report.py
# The default run takes about 45 s on 2 cores. Exit status: 0 when every
# run succeeded, 1 when one failed (its stderr tail is printed, the others
# still run), 2 on a usage error or missing binaries.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=script_lib.sh
source "$root/bench/script_lib.sh"

args="$*"
quick=0 out="" only="" sizes="" iterations="" plain=0 verify=0
parse_options flag:--quick=quick value:--out=out value:--only=only value:--sizes=sizes value:--iterations=iterations \
  flag:--plain-link-model=plain flag:--verify=verify -- "$@"
case $only in "" | localhost | smpi) ;; *) die_usage "--only takes localhost or smpi, not '$only'" ;; esac
[[ -z $iterations || $iterations =~ ^[1-9][0-9]*$ ]] || die_usage "--iterations takes a positive number"

# Binaries and launchers.
build=${BUILD:-$root/build}
[[ $build == /* ]] || build=$PWD/$build
bench=$build/bench_kernels/driver/topotune-bench
bench_smpi=$build/bench_kernels/smpi/topotune-bench-smpi
topotune=$build/daemon/cli/topotune
mpirun=${MPIRUN:-mpirun}
smpirun=${SMPIRUN:-smpirun}
python=${PYTHON:-python3}
missing=()
[[ $only == smpi ]] || [[ -x $bench ]] || missing+=("$bench")
if [[ $only != localhost ]]; then
  [[ -x $bench_smpi ]] || missing+=("$bench_smpi")
  [[ -x $topotune ]] || missing+=("$topotune")
fi
if [[ ${#missing[@]} -gt 0 ]]; then
  {
    echo "kernels.sh: missing: ${missing[*]}"
    echo "Build them (topotune-bench-smpi needs SimGrid, see deploy/install-deps.sh) with:"
    echo "  cmake -S $root -B $build -G Ninja -DTOPOTUNE_BUILD_SMPI=ON && cmake --build $build"
    echo "or point BUILD at a build tree configured that way."
  } >&2
  exit 2
fi
for tool in "$python" $([[ $only == smpi ]] || echo "$mpirun") $([[ $only == localhost ]] || echo "$smpirun"); do
  command -v "$tool" >/dev/null || { echo "kernels.sh: '$tool' not found (deploy/install-deps.sh installs it)" >&2; exit 2; }
done

# What to run.
if ((quick)); then
  : "${sizes:=1KiB,64KiB}"
  local_iter=${iterations:-3} local_warmup=1 smpi_iter=${iterations:-1} smpi_warmup=1
else
  : "${sizes:=1KiB,4KiB,16KiB,64KiB,256KiB,1MiB}"
  local_iter=${iterations:-20} local_warmup=3 smpi_iter=${iterations:-3} smpi_warmup=1
fi
runs=("alltoall" "alltoallv uniform" "alltoallv skewed" "allgather")
examples=$root/deploy/examples
local_topology=$examples/two-switch-4x4.yaml
local_np=8
smpi_topologies=("$examples/faraj-yuan-fig1.yaml" "$examples/two-switch-4x4.yaml" "$examples/uneven-4-switch.yaml")
smpi_cfg=(--cfg=smpi/simulate-computation:no --log=xbt_cfg.thres:warning --log=smpi_config.thres:warning)
((plain)) && smpi_cfg+=(--cfg=smpi/lat-factor:0:1 --cfg=smpi/bw-factor:0:1)
extra=()
((verify)) && extra+=(--verify)

out=${out:-$root/bench/results/$(date +%Y-%m-%d-%H%M%S)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
tables=$out/tables.txt
: >"$tables"
{
  echo "date: $(date -Iseconds)"
  echo "command: bench/kernels.sh $args"
  echo "commit: $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)"
  echo "machine: $(uname -n), $(nproc) cores"
  echo "build: $build"
  echo "sizes: $sizes"
  echo "localhost: $local_np ranks, --iterations $local_iter --warmup $local_warmup"
  echo "smpi: --iterations $smpi_iter --warmup $smpi_warmup, ${smpi_cfg[*]}"
  "$mpirun" --version 2>/dev/null | head -1
  "$smpirun" -version 2>/dev/null | head -1
} >"$out/meta.txt" 2>/dev/null || true

failures=0
start=$SECONDS
say() { printf '%s\n' "$*" | tee -a "$tables"; }

# bench_run NAME LOG OUT.jsonl COMMAND...: runs one topotune-bench job; on
# failure prints the tail of its stderr and counts it.
bench_run() {
  local name=$1 log=$2 jsonl=$3 t0=$SECONDS status=0
  shift 3
  printf 'kernels.sh: [%4ds] %s ...' "$((SECONDS - start))" "$name" >&2
  { printf '%q ' "$@" && echo; } >"$log"
  "$@" >"$jsonl" 2>>"$log" || status=$?
  printf ' %ds\n' "$((SECONDS - t0))" >&2
  if [[ $status -ne 0 ]]; then
    echo "kernels.sh: $name failed (exit status $status); last lines of $log:" >&2
    tail -n 20 "$log" >&2
    failures=$((failures + 1))
  fi
  return $status
}

# report TITLE NOTE JSONL: the table of one run.
report() {
  say "== $1"
  say "   $2"
  if [[ -s $3 ]]; then
    "$python" "$root/bench/report.py" --baseline native --bound --rows label "$3" | tee -a "$tables"
  else
    say "   (no samples)"
    say ""
  fi
}

# run_args SPEC: topotune-bench options of one run ("alltoallv skewed").
run_args() {
  local collective=${1%% *} pattern=""
  [[ $1 == *" "* ]] && pattern=${1#* }
  echo "--collective $collective${pattern:+ --pattern $pattern}"
}
run_file() { echo "${1// /-}"; }

if [[ $only != smpi ]]; then
  dir=$out/localhost
  mkdir -p "$dir"
  note="localhost: $local_np ranks on $(nproc) cores over shared memory (btl self,vader), placed on $(basename "$local_topology");"
  note+=" bound_s is that tree's 100 Mbit/s bound, only nominal here"
  for spec in "${runs[@]}"; do
    file=$(run_file "$spec")
    # shellcheck disable=SC2046
    bench_run "localhost $spec" "$dir/$file.log" "$dir/$file.jsonl" \
      "$mpirun" --oversubscribe --allow-run-as-root --mca btl self,vader -np "$local_np" \
      "$bench" $(run_args "$spec") --topology "$local_topology" --sizes "$sizes" \
      --iterations "$local_iter" --warmup "$local_warmup" --progress never "${extra[@]}" || true
    report "localhost, $spec" "$note" "$dir/$file.jsonl"
  done
fi

if [[ $only != localhost ]]; then
  model="SMPI's default latency/bandwidth factors"
  ((plain)) && model="plain link model (no SMPI factors)"
  for topology in "${smpi_topologies[@]}"; do
    name=$(basename "$topology" .yaml)
    dir=$out/smpi-$name
    mkdir -p "$dir"
    if ! "$topotune" topology export --simgrid "$dir/$name.xml" --hostfile "$dir/$name.hosts" "$topology" \
      >"$dir/export.log" 2>&1; then
      echo "kernels.sh: exporting $topology failed:" >&2
      cat "$dir/export.log" >&2
      failures=$((failures + 1))
      continue
    fi
    np=$(wc -l <"$dir/$name.hosts")
    note="SimGrid SMPI on $name ($np ranks, one per host), simulated seconds, $model;"
    note+=" a fluid model: no losses, so contention-free schedules gain little (README, SimGrid SMPI)"
    for spec in "${runs[@]}"; do
      file=$(run_file "$spec")
      # smpirun may leave temporary files in the current directory.
      # shellcheck disable=SC2046
      (cd "$dir" && bench_run "smpi $name $spec" "$dir/$file.log" "$dir/$file.jsonl" \
        "$smpirun" -platform "$dir/$name.xml" -hostfile "$dir/$name.hosts" -np "$np" "${smpi_cfg[@]}" \
        "$bench_smpi" $(run_args "$spec") --topology "$topology" --sizes "$sizes" \
        --iterations "$smpi_iter" --warmup "$smpi_warmup" --progress never "${extra[@]}") || failures=$((failures + 1))
      report "SimGrid $name, $spec" "$note" "$dir/$file.jsonl"
    done
  done
fi

echo "kernels.sh: $((SECONDS - start)) s; raw JSON Lines, logs and tables.txt in $out" >&2
if [[ $failures -gt 0 ]]; then
  echo "kernels.sh: $failures run(s) failed" >&2
  exit 1
fi
