#!/usr/bin/env bash
# Tests of libtopotune-mpi.so under real mpirun, one case per ctest test.
#
# Usage: shim_test.sh CASE WORK_DIR NP_FLAG MPIRUN...
#   CASE      see below
#   WORK_DIR  scratch directory (recreated); the outputs of a failing case
#             stay there
#   NP_FLAG   the launcher's process-count flag (-np)
#   MPIRUN... the launcher with its flags (TOPOTUNE_MPIEXEC_FLAGS)
# Environment (CMakeLists.txt sets it): MPI_FLAVOR (ompi: Open MPI's mpirun;
# mpich: MPICH's hydra mpiexec, whose rank tags are rewritten into
# --tag-output's), COLL_CHECK, NATIVE_DIR, TOPOLOGY, PYTHON;
# FCOLL_CHECK_MPIF_H, FCOLL_CHECK_MPI and FCOLL_CHECK_MPI_F08 (fcoll_check.F90
# per Fortran binding, when built); with the shim: SHIM (libtopotune-mpi.so
# or libtopotune-mpich.so), TOPOTUNED, FAULT_SERVER (plans_fault_server);
# same_results_<collective>: ALGORITHMS (the collective's registered
# algorithms, comma-separated) and CONTEXT_KERNELS (collective:name of the
# kernels that need a context); fortran_<binding>: KERNELS (collective:name
# of every registered kernel) and CONTEXT_KERNELS.
#
# Every job is coll_check (or fcoll_check) on 4 ranks, started as two app contexts of 2
# ranks that the shim takes for hosts h0 and h1 (TOPOTUNE_HOSTNAME; on
# different switches of TOPOLOGY), with the shim in LD_PRELOAD of the ranks
# only, a stats file (TOPOTUNE_STATS_FILE) and stderr tagged by rank
# (--tag-output). Each must exit 0 and write receive buffers byte-identical
# (cmp) to the native run's. Daemons and servers started here are stopped by
# PID when the case ends.
#
# Cases:
#   native                coll_check without the shim, 1 round and 2 rounds
#                         into NATIVE_DIR (the fixture of the other cases);
#                         round 1 of both byte-identical; --help, usage error;
#                         coll_check --comms derived into NATIVE_DIR/derived;
#                         fcoll_check of each binding into
#                         NATIVE_DIR/f_<binding>, byte-identical to each
#                         other.
#   same_results_<coll>   a real topotuned; each algorithm of ALGORITHMS
#                         forced with TOPOTUNE_FORCE_<COLL>; the stats show
#                         it ran (shim_check.py forced): every call for
#                         kernels that need no context, at least the
#                         MPI_COMM_WORLD calls for those that do.
#   same_results_tuned    decision tables for 4 ranks, 2 per node, written
#                         into the daemon's database (decisions), alltoallv's
#                         per pattern class; calls run their size's (and
#                         class's) algorithm; then TOPOTUNE_DISABLE=1:
#                         native only, no GetPlan or ReportJob reach the
#                         daemon.
#   alltoallv_backoff     alltoallv tables that run native below 1 MiB in
#                         every class: on each communicator, the first two
#                         calls agree on class and size before they run, the
#                         others run native at once, one in 2, 3, 5, 9, then
#                         17 agreeing in the background (shim_check.py
#                         backoff).
#   fault_daemon_down     TOPOTUNE_SERVER is a closed port: no plan (reason
#                         names the address); context-free kernels forced
#                         still run; forced tree_scheduled and
#                         switch_ordered_ring fall back on every call;
#                         TOPOTUNE_LOG=off is silent; a "%r" stats file is
#                         written by every rank.
#   fault_mixed_force     the ranks of h1 force other algorithms than rank 0:
#                         rank 0's run everywhere, with the right data.
#   fault_bad_settings    unusable TOPOTUNE_FORCE_ALLTOALL, _TIMEOUT_MS, _LOG
#                         and _REPORT: each reported once, by rank 0.
#   fault_slow            plans_fault_server --mode slow --delay-ms 30000
#                         with TOPOTUNE_TIMEOUT_MS=300: no plan, the reason
#                         says the deadline passed, and MPI_Init took under
#                         half the answer's delay (the stats file's
#                         init_seconds): it waited for the timeout, not for
#                         the answer, however loaded the machine.
#   fault_<mode>          plans_fault_server --mode MODE (gap,
#                         unknown_algorithm, wrong_nprocs, bad_program,
#                         bad_program_count, bad_ring, bad_subplan, garbage):
#                         no plan, or fallbacks, with a reason that names
#                         the fault.
#   fault_throw           a real topotuned, pairwise, linear and ring forced,
#                         TOPOTUNE_TEST_THROW=2: every second blocking call
#                         on each communicator throws std::bad_alloc in the
#                         library's per-call bookkeeping, on every rank
#                         alike: same data, exit 0, those calls ran the MPI
#                         library's collective and the others the forced
#                         kernels, the stats file counts each throw
#                         (shim_check.py internal_errors) and every rank
#                         says it once; then fcoll_check (mpif.h) alike, for
#                         the Fortran entry points, when built.
#   fault_unknown_host    a real topotuned, ranks on hosts the topology lacks:
#                         no plan, the reason names them.
#   fault_daemon_dies     a real topotuned, tree_scheduled and link_scheduled
#                         forced, 2 rounds; the daemon is SIGKILLed between
#                         them (coll_check --pause-file): round 2's new
#                         communicators get no plan, ReportJob fails.
#   fault_daemon_hangs    the same with SIGSTOP: the daemon accepts
#                         connections but never answers; rank 0 may wait for
#                         it (TOPOTUNE_TIMEOUT_MS) once, not once per
#                         communicator it is in.
#   derived               a real topotuned; coll_check --comms derived (the
#                         communicators of MPI_Comm_dup_with_info,
#                         MPI_Comm_idup, MPI_Cart_create, MPI_Comm_split_type,
#                         MPI_Comm_create_group and
#                         MPI_Dist_graph_create_adjacent of a split share the
#                         split's plan) with tree_scheduled and
#                         switch_ordered_ring forced: the job asks for 5 plans
#                         (MPI_COMM_WORLD, the two halves of the split, the
#                         two rows of MPI_Cart_sub), not one per communicator.
#   nonblocking           a real topotuned; coll_check --nonblocking: every
#                         call passed to the MPI library and counted in the
#                         stats file's "nonblocking" (shim_check.py
#                         nonblocking), the reason logged once at info.
#   fortran_<binding>     a real topotuned; fcoll_check of the binding (mpif_h,
#                         mpi, mpi_f08) with every registered kernel forced,
#                         one of each collective per job (forced_together):
#                         same data as native, the stats show each kernel
#                         ran, the nonblocking calls were counted, 5 plans
#                         asked for per job (as in derived); the job with
#                         alltoall pairwise leaves its report in the daemon's
#                         database.
#   same_results_all      (the MPICH suite's form of same_results_<coll>)
#                         coll_check with every registered kernel forced, one
#                         of each collective per job.
#   fortran_manglings     the library exports exactly the C and Fortran names
#                         of what it intercepts (nm -D); fmangle_check (C
#                         calling mpi_x, mpi_x_, mpi_x__, MPI_X and
#                         mpi_x_f08_) with pairwise, ring and linear forced:
#                         same data as without the library, every call
#                         counted under the forced kernel.
#   other_library         OTHER_SHIM, the library built for the other MPI
#                         (libtopotune-mpich.so under Open MPI and the
#                         reverse): rank 0 says once that the program is not
#                         served, and what to load instead. An MPICH C program
#                         with libtopotune-mpi.so then runs untouched (same
#                         data, exit 0); where the calls cannot reach the
#                         program's MPI untouched (an MPICH Fortran program,
#                         whose C calls the process would bind to Open MPI;
#                         an Open MPI program with libtopotune-mpich.so) the
#                         job stops with exit status 1 before MPI starts.
#   fortran_faults        fcoll_check (mpif.h) with the daemon down (context
#                         kernels forced fall back) and with a garbage plan.
#   adapt                 a real topotuned with nothing tuned, eight rounds: the data equal the
#                         native run's; every rank's stats file shows the same
#                         buckets explored with the same calls, exploring
#                         calls, states and choices; at most half of a
#                         bucket's calls explored, and some bucket explored;
#                         the settled buckets are kept (table learned, not
#                         samples), and a second job runs each learned
#                         bucket's kernel without exploring it. Adaptation
#                         is on by default; a site's adaptation.enabled:
#                         false turns it off unless TOPOTUNE_ADAPT=1, and
#                         TOPOTUNE_ADAPT=0 turns it off.
#   report_forced         a real topotuned; jobs forcing pairwise and
#                         tree_scheduled each leave one row in job_reports
#                         (their plan id and calls; the second's job id from
#                         SLURM_JOB_ID), their demand (the world's alltoall
#                         FORCED in the 4 x 2 cell on 2 hosts) and a /metrics
#                         series with source "job"; TOPOTUNE_REPORT=0 leaves
#                         none.
# In every shim job, stderr must hold each "topotune:" line at most once per
# rank, and the plan's and fallbacks' reasons (shim_check.py log).
set -euo pipefail

case_name=$1 work=$2 np_flag=$3
shift 3
mpirun=("$@")
python=${PYTHON:-python3}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rm -rf "$work" && mkdir -p "$work"

# shellcheck source=../testlib.sh
source "$here/../testlib.sh"

check() { "$python" "$here/shim_check.py" "$@" >>"$work/checks.log" 2>&1 || fail "shim_check.py $1: $(tail -n 1 "$work/checks.log")"; }

# Processes started here, stopped by PID when the case ends.
pids=()
stop_pid() {
  local pid=$1 _
  kill -CONT "$pid" 2>/dev/null || return 0  # fault_daemon_hangs stops the daemon.
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
stop_all() {
  local pid
  for pid in "${pids[@]}"; do stop_pid "$pid"; done
}
trap stop_all EXIT

# wait_for_file FILE PID WHAT: waits up to 30 s for FILE (with content,
# unless empty_ok=1) while PID lives.
wait_for_file() {
  local _
  for _ in $(seq 300); do
    [[ -s $1 || (${empty_ok:-0} -eq 1 && -e $1) ]] && return 0
    kill -0 "$2" 2>/dev/null || fail "$3 exited before writing $1"
    sleep 0.1
  done
  fail "$3 did not write $1 within 30 s"
}

# start_daemon NAME: a real topotuned serving TOPOLOGY, its database in
# $work/NAME/db.sqlite and its log in $work/NAME.log. Sets daemon_pid, port
# (gRPC), metrics_port, db.
start_daemon() {
  local dir=$work/$1
  mkdir -p "$dir"
  printf 'log_level: info\n%s' "${2:-}" >"$dir/topotuned.yaml"  # Not /etc/topotune's.
  "$TOPOTUNED" --config "$dir/topotuned.yaml" --listen 127.0.0.1:0 --port-file "$dir/ports" \
    --database "$dir/db.sqlite" --topology-file "$TOPOLOGY" --metrics-listen 127.0.0.1:0 >"$work/$1.log" 2>&1 &
  daemon_pid=$!
  pids+=("$daemon_pid")
  wait_for_file "$dir/ports" "$daemon_pid" topotuned
  port=$(sed -n 's/^grpc=//p' "$dir/ports")
  metrics_port=$(sed -n 's/^metrics=//p' "$dir/ports")
  db=$dir/db.sqlite
  [[ -n $port && -n $metrics_port ]] || fail "topotuned's port file: $(cat "$dir/ports")"
}

# seed_decisions FILE: writes the decision tables of FILE (JSON: collective,
# or "alltoallv:CLASS", to [[min, max or null, algorithm], ...]) into the
# daemon's database for 4 ranks, 2 per node, on its topology version: the
# job finds them as DECISION_SOURCE_TUNED. "alltoallv" is the uniform class.
seed_decisions() {
  local version
  version=$(sql 'SELECT max(version) FROM topologies')
  [[ $version -ge 1 ]] || fail "no topology in the daemon's database"
  "$python" - "$1" "$version" >"$work/seed.sql" <<'EOF'
import json, sys
tables, version = json.load(open(sys.argv[1])), int(sys.argv[2])
print("BEGIN;")
for key, table in tables.items():
    rows = [{"min_msize": lo, "max_msize": hi, "algorithm": alg} for lo, hi, alg in table]
    text = json.dumps(rows).replace("'", "''")
    coll, _, pattern = key.partition(":")
    pattern = pattern or ("uniform" if coll == "alltoallv" else "")
    print(f"INSERT INTO decisions (topology_version, collective, nprocs, ranks_per_node, pattern, table_json, "
          f"choices_json, created_at) VALUES ({version}, '{coll}', 4, 2, '{pattern}', '{text}', '[]', 0);")
print("COMMIT;")
EOF
  sql "$(cat "$work/seed.sql")" || fail "cannot seed the decisions"
}

# start_fault_server MODE [ARGS...]: plans_fault_server; sets port.
start_fault_server() {
  local mode=$1
  shift
  "$FAULT_SERVER" --listen 127.0.0.1:0 --port-file "$work/fault-ports" --mode "$mode" "$@" \
    >"$work/fault_server.log" 2>&1 &
  pids+=("$!")
  wait_for_file "$work/fault-ports" "$!" plans_fault_server
  port=$(sed -n 's/^grpc=//p' "$work/fault-ports")
}

# A TCP port of 127.0.0.1 that nobody listens on.
closed_port() {
  "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Rank tags on the jobs' output: Open MPI's --tag-output ("[1,R]<stderr>:");
# hydra's -prepend-rank ("[R] ") is rewritten into that form (retag).
tag_flag=--tag-output
[[ ${MPI_FLAVOR:-ompi} == mpich ]] && tag_flag=-prepend-rank
retag() {
  [[ $tag_flag == -prepend-rank ]] || return 0
  local f
  for f in stdout stderr; do
    [[ -e $work/$f ]] && sed -i -E "s/^\[([0-9]+)\] /[1,\1]<$f>:/" "$work/$f"
  done
  return 0
}

hosts=(h0 h1)
cc_args=()
h1_vars=()  # Variables for the ranks of the second host only (after the others).

# job NAME [VAR=VALUE...]: coll_check on 4 ranks (hosts ${hosts[0]} x 2,
# ${hosts[1]} x 2) with the shim and the variables in the ranks'
# environment; receive buffers in $work/NAME.out/, the stats file
# $work/NAME.stats.json, streams in $work/stdout and $work/stderr.
job_command() {
  local name=$1
  shift
  local out=$work/$name.out
  rm -rf "$out" && mkdir -p "$out"
  local vars=(LD_PRELOAD="$SHIM" TOPOTUNE_STATS_FILE="$work/$name.stats.json" TOPOTUNE_JOB_ID="shim-$case_name-$name"
    "$@")
  local prog=${program:-$COLL_CHECK}
  job_cmd=("${mpirun[@]}" "$tag_flag"
    "$np_flag" 2 env TOPOTUNE_HOSTNAME="${hosts[0]}" "${vars[@]}" "$prog" --out "$out" "${cc_args[@]}" :
    "$np_flag" 2 env TOPOTUNE_HOSTNAME="${hosts[1]}" "${vars[@]}" "${h1_vars[@]}" "$prog" --out "$out"
    "${cc_args[@]}")
}
job() {
  archive
  job_command "$@"
  local t0=$SECONDS
  echo "job $1: ${*:2}" >>"$work/checks.log"
  run "${job_cmd[@]}"
  retag
  echo "job $1: exit status $status after $((SECONDS - t0)) s" >>"$work/checks.log"
}

# passed NAME [REFERENCE]: the job exited 0, its buffers equal REFERENCE's
# (default $NATIVE_DIR/r1) byte for byte, its stats file exists (unless
# no_stats=1) and its stderr passes the log check. Its buffers are then
# deleted; sets stats and summary (the files of its checks).
passed() {
  local name=$1 ref=${2:-$NATIVE_DIR/r1} f
  last_job=$name
  [[ $status -eq 0 ]] || fail "$name: exit status $status, expected 0"
  for f in "$ref"/rank*.bin; do
    cmp "$f" "$work/$name.out/$(basename "$f")" >"$work/cmp.txt" 2>&1 ||
      fail "$name: $(basename "$f") differs from the native run's: $(cat "$work/cmp.txt")"
  done
  if [[ ${no_stats:-0} -eq 0 ]]; then
    [[ -s $work/$name.stats.json ]] || fail "$name: no stats file $work/$name.stats.json"
    check log "$work/stderr" 4 "$work/$name.stats.json"
  fi
  cp "$work/$name.out/summary.json" "$work/$name.summary.json"
  rm -rf "$work/$name.out"
  stats=$work/$name.stats.json summary=$work/$name.summary.json
}

# archive: moves the last job's files to $work/passed/ once its checks are
# done, so that fail shows only the files of the job at fault.
archive() {
  [[ -n ${last_job:-} ]] || return 0
  mkdir -p "$work/passed"
  local f
  for f in "$work/stdout" "$work/stderr"; do
    if [[ -e $f ]]; then mv "$f" "$work/passed/$last_job.${f##*/}"; fi
  done
  for f in "$work/$last_job".*; do
    if [[ -e $f ]]; then mv "$f" "$work/passed/"; fi
  done
  last_job=
}

# sql QUERY: runs QUERY on the daemon's database (read-only but for seeding).
sql() { sqlite3 -cmd '.timeout 5000' "$db" "$1"; }

# get_plans: the GetPlan calls the daemon of start_daemon has answered.
get_plans() { "$python" "$here/shim_check.py" rpc_count "http://127.0.0.1:$metrics_port/metrics" GetPlan; }

# plans_asked NAME BEFORE: the job asked for 5 plans since BEFORE (see derived).
plans_asked() {
  local asked=$(($(get_plans) - $2))
  [[ $asked -eq 5 ]] || fail "$1: the job asked for $asked plans, expected 5 (MPI_COMM_WORLD, two halves of a split, two rows of a cart_sub; the other communicators share a plan)"
}

# forced_together REFERENCE FORTRAN: jobs that force the k-th registered
# algorithm (KERNELS, collective:name) of every collective at once, for k =
# 1, 2, ... until every algorithm ran: same data as REFERENCE, each kernel
# ran (shim_check.py forced); with FORTRAN=1 also the nonblocking calls
# counted, 5 plans asked for per job (as in derived), and the job with
# alltoall pairwise leaves its report in the daemon's database.
forced_together() {
  local reference=$1 fortran=$2 k c name entry
  local -A algs=()
  local -a per
  IFS=, read -r -a per <<<"${KERNELS:?}"
  for entry in "${per[@]}"; do algs[${entry%%:*}]+="${entry#*:} "; done
  for ((k = 1; ; k++)); do
    local vars=() forced=() before
    for c in alltoall alltoallv allgather; do
      read -r -a per <<<"${algs[$c]:-}"
      ((k <= ${#per[@]})) || continue
      vars+=("TOPOTUNE_FORCE_${c^^}=${per[k - 1]}")
      forced+=("$c:${per[k - 1]}")
    done
    ((${#forced[@]})) || break
    name=forced-$k
    before=$(get_plans)
    job "$name" TOPOTUNE_SERVER="127.0.0.1:$port" "${vars[@]}"
    passed "$name" "$reference"
    check plan "$stats" ok
    for entry in "${forced[@]}"; do
      local context=0
      [[ ,${CONTEXT_KERNELS:-}, == *,$entry,* ]] && context=1
      check forced "$stats" "$summary" "${entry%%:*}" "${entry#*:}" "$context" 1
    done
    ((fortran)) || continue
    check nonblocking "$stats" "$summary"
    plans_asked "$name" "$before"
    if [[ " ${forced[*]} " == *" alltoall:pairwise "* ]]; then
      local job_id=shim-$case_name-$name
      [[ $(sql "SELECT count(*) FROM job_reports WHERE job_id = '$job_id'") -eq 1 ]] ||
        fail "$name: no report of job $job_id in the daemon's database"
      sql "SELECT payload FROM job_reports WHERE job_id = '$job_id'" >"$work/report.json"
      check report "$work/report.json" "$stats" "$job_id" pairwise
    fi
  done
}

# The Fortran program of binding $1 (fcoll_check.F90 as built for it).
fortran_program() {
  local var=FCOLL_CHECK_${1^^}
  [[ -n ${!var:-} ]] || fail "no fcoll_check for the Fortran binding '$1' (\$var is not set)"
  echo "${!var}"
}

case $case_name in
  native)
    run "$COLL_CHECK" --help
    [[ $status -eq 0 ]] || fail "coll_check --help: exit status $status"
    grep -q -- --pause-file "$work/stdout" || fail "coll_check --help does not describe --pause-file"
    run "$COLL_CHECK" --rounds zero
    [[ $status -eq 2 ]] || fail "coll_check --rounds zero: status $status, expected 2"
    rm -rf "$NATIVE_DIR" && mkdir -p "$NATIVE_DIR/r1" "$NATIVE_DIR/r2"
    run "${mpirun[@]}" "$np_flag" 4 "$COLL_CHECK" --out "$NATIVE_DIR/r1"
    [[ $status -eq 0 ]] || fail "native run: exit status $status"
    run "${mpirun[@]}" "$np_flag" 4 "$COLL_CHECK" --out "$NATIVE_DIR/r2" --rounds 2
    [[ $status -eq 0 ]] || fail "native run of 2 rounds: exit status $status"
    for r in 0 1 2 3; do
      one=$NATIVE_DIR/r1/rank$r.bin two=$NATIVE_DIR/r2/rank$r.bin
      [[ -s $one && $(stat -c %s "$two") -gt $(stat -c %s "$one") ]] || fail "rank $r: outputs missing or short"
      cmp -n "$(stat -c %s "$one")" "$one" "$two" >"$work/cmp.txt" 2>&1 ||
        fail "rank $r: round 1 differs between two native runs: $(cat "$work/cmp.txt")"
    done
    "$python" -c 'import json, sys; s = json.load(open(sys.argv[1])); assert s["nprocs"] == 4 and s["calls"]["alltoall"]["world"] > 0, s' \
      "$NATIVE_DIR/r1/summary.json" || fail "summary.json"
    mkdir -p "$NATIVE_DIR/derived"
    run "${mpirun[@]}" "$np_flag" 4 "$COLL_CHECK" --out "$NATIVE_DIR/derived" --comms derived
    [[ $status -eq 0 ]] || fail "native run of --comms derived: exit status $status"
    first=
    for binding in mpif_h mpi mpi_f08; do
      var=FCOLL_CHECK_${binding^^}
      [[ -n ${!var:-} ]] || continue
      mkdir -p "$NATIVE_DIR/f_$binding"
      run "${!var}" --help
      [[ $status -eq 0 ]] && grep -q -- --out "$work/stdout" || fail "fcoll_check ($binding) --help: status $status"
      run "${mpirun[@]}" "$np_flag" 4 "${!var}" --out "$NATIVE_DIR/f_$binding"
      [[ $status -eq 0 ]] || fail "native run of fcoll_check ($binding): exit status $status"
      if [[ -n $first ]]; then
        for r in 0 1 2 3; do
          cmp "$NATIVE_DIR/f_$first/rank$r.bin" "$NATIVE_DIR/f_$binding/rank$r.bin" >"$work/cmp.txt" 2>&1 ||
            fail "fcoll_check: $binding's rank $r output differs from $first's: $(cat "$work/cmp.txt")"
        done
      fi
      first=$binding
    done
    ;;

  adapt)
    # Nothing is tuned: every alltoall, allgather and alltoallv bucket
    # explores. Each rank writes its own stats file, whose findings must
    # agree.
    start_daemon daemon
    mkdir -p "$work/native8"
    run "${mpirun[@]}" "$np_flag" 4 "$COLL_CHECK" --out "$work/native8" --rounds 8
    [[ $status -eq 0 ]] || fail "native run of 8 rounds: exit status $status"
    cc_args=(--rounds 8)
    # Adaptation is on by default.
    job adapt_r0 TOPOTUNE_SERVER="127.0.0.1:$port" TOPOTUNE_STATS_FILE="$work/adapt_r%r.stats.json"
    passed adapt_r0 "$work/native8"
    check plan "$stats" ok
    check adapt "$work/adapt_r%r.stats.json" 4
    # What it settled is kept apart from sweep samples, and the next job of
    # the layout starts from it: those buckets run the learned kernel,
    # unexplored.
    sql "SELECT collective, pattern, size_bucket, choice FROM learned WHERE settled = 1 AND nprocs = 4 ORDER BY rowid" \
      >"$work/learned.txt"
    [[ -s $work/learned.txt ]] || fail "the job settled no bucket of 4 ranks, or topotuned kept none"
    [[ $(sql 'SELECT count(*) FROM samples') -eq 0 ]] || fail "production findings went into the sweep samples"
    job learned_r0 TOPOTUNE_SERVER="127.0.0.1:$port" TOPOTUNE_STATS_FILE="$work/learned_r%r.stats.json"
    passed learned_r0 "$work/native8"
    check learned "$work/learned.txt" "$work/learned_r0.stats.json"
    # A site that turns adaptation off: no bucket adapts, unless the job
    # asks (TOPOTUNE_ADAPT=1, rank 0's); TOPOTUNE_ADAPT=0 turns it off.
    on_port=$port
    start_daemon site_off $'adaptation:\n  enabled: false\n'
    job site_off TOPOTUNE_SERVER="127.0.0.1:$port"
    passed site_off "$work/native8"
    check adapted "$stats" 0
    job site_off_asked TOPOTUNE_SERVER="127.0.0.1:$port" TOPOTUNE_ADAPT=1
    passed site_off_asked "$work/native8"
    check adapted "$stats" 1
    job env_off TOPOTUNE_SERVER="127.0.0.1:$on_port" TOPOTUNE_ADAPT=0
    passed env_off "$work/native8"
    check adapted "$stats" 0
    ;;

  derived)
    start_daemon daemon
    cc_args=(--comms derived)
    before=$(get_plans)
    job derived TOPOTUNE_SERVER="127.0.0.1:$port" TOPOTUNE_FORCE_ALLTOALL=tree_scheduled \
      TOPOTUNE_FORCE_ALLGATHER=switch_ordered_ring
    passed derived "$NATIVE_DIR/derived"
    check plan "$stats" ok
    check forced "$stats" "$summary" alltoall tree_scheduled 1 1
    check forced "$stats" "$summary" allgather switch_ordered_ring 1 1
    plans_asked derived "$before"
    ;;

  nonblocking)
    start_daemon daemon
    cc_args=(--nonblocking)
    job nonblocking TOPOTUNE_SERVER="127.0.0.1:$port" TOPOTUNE_LOG=info TOPOTUNE_FORCE_ALLTOALL=pairwise
    passed nonblocking
    check plan "$stats" ok
    check nonblocking "$stats" "$summary"
    for c in Ialltoall Ialltoallv Iallgather; do
      [[ $(grep -c "^\[1,0\]<stderr>:topotune: MPI_$c: the MPI library's own" "$work/stderr") -eq 1 ]] ||
        fail "nonblocking: rank 0 did not say once at info why MPI_$c is not tuned"
    done
    ;;

  fortran_manglings)
    names=(init init_thread finalize alltoall alltoallv allgather ialltoall ialltoallv iallgather comm_dup
      comm_dup_with_info comm_idup comm_split comm_split_type comm_create comm_create_group cart_create cart_sub
      dist_graph_create_adjacent comm_free comm_disconnect)
    for name in "${names[@]}"; do
      printf '%s\n' "MPI_${name^}" "mpi_$name" "mpi_${name}_" "mpi_${name}__" "MPI_${name^^}" "mpi_${name}_f08_"
    done | sort >"$work/exports.want"
    nm -D --defined-only "$SHIM" | awk '{print $3}' | sort >"$work/exports.got"
    diff "$work/exports.want" "$work/exports.got" >"$work/exports.diff" ||
      fail "the library's exported names differ from what it intercepts: $(head -c 600 "$work/exports.diff")"
    program=$FMANGLE_CHECK
    mkdir -p "$work/reference"
    run "${mpirun[@]}" "$np_flag" 4 "$program" --out "$work/reference"
    [[ $status -eq 0 ]] || fail "fmangle_check without the library: exit status $status"
    start_daemon daemon
    job manglings TOPOTUNE_SERVER="127.0.0.1:$port" TOPOTUNE_FORCE_ALLTOALL=pairwise TOPOTUNE_FORCE_ALLGATHER=ring \
      TOPOTUNE_FORCE_ALLTOALLV=linear
    passed manglings "$work/reference"
    check plan "$stats" ok
    check forced "$stats" "$summary" alltoall pairwise 0 1
    check forced "$stats" "$summary" allgather ring 0 1
    check forced "$stats" "$summary" alltoallv linear 0 1
    check nonblocking "$stats" "$summary"
    ;;

  other_library)
    said() {
      grep -q "^\[1,0\]<stderr>:topotune: not served: this program runs .*Load libtopotune-$1\.so instead" "$work/stderr" ||
        fail "$2: rank 0 did not say that the program is not served and to load libtopotune-$1.so"
      [[ $(grep -c "topotune: not served" "$work/stderr") -eq 1 ]] || fail "$2: 'not served' said more than once"
    }
    if [[ $MPI_FLAVOR == mpich ]]; then
      job c_program LD_PRELOAD="$OTHER_SHIM"
      no_stats=1 passed c_program
      said mpich c_program
      program=$(fortran_program mpi)
      job fortran_program LD_PRELOAD="$OTHER_SHIM"
      [[ $status -ne 0 ]] || fail "fortran_program: exit status 0; expected the job to stop"
      said mpich fortran_program
    else
      job c_program LD_PRELOAD="$OTHER_SHIM"
      [[ $status -ne 0 ]] || fail "c_program: exit status 0; expected the job to stop"
      said mpi c_program
    fi
    ;;

  fortran_faults)
    program=$(fortran_program mpif_h)
    port=$(closed_port)
    job down TOPOTUNE_SERVER="127.0.0.1:$port" TOPOTUNE_FORCE_ALLTOALL=tree_scheduled TOPOTUNE_FORCE_ALLTOALLV=linear
    passed down "$NATIVE_DIR/f_mpif_h"
    check plan "$stats" none "unreachable|connect|unavailable|127\.0\.0\.1:$port"
    check forced "$stats" "$summary" alltoall tree_scheduled 1 0
    check forced "$stats" "$summary" alltoallv linear 0 0
    check nonblocking "$stats" "$summary"
    start_fault_server garbage
    job garbage TOPOTUNE_SERVER="127.0.0.1:$port"
    passed garbage "$NATIVE_DIR/f_mpif_h"
    check fault "$stats" "not a topotune\.v1\.GetPlanResponse|pars|decod|malformed|deserial"
    ;;

  fortran_*)
    binding=${case_name#fortran_}
    program=$(fortran_program "$binding")
    start_daemon daemon
    forced_together "$NATIVE_DIR/f_$binding" 1
    ;;

  same_results_all)
    start_daemon daemon
    forced_together "$NATIVE_DIR/r1" 0
    ;;

  same_results_*)
    collective=${case_name#same_results_}
    start_daemon daemon
    if [[ $collective == tuned ]]; then
      # Tables for 4 ranks, 2 per node, on the daemon's topology version:
      # the job finds them as DECISION_SOURCE_TUNED. Ranges end where the
      # next begins; null: no end.
      cat >"$work/tables.json" <<'EOF'
{"alltoall": [[0, 16, "bruck"], [16, 1024, "pairwise"], [1024, 16384, "tree_scheduled"], [16384, null, "ring"]],
 "alltoallv": [[0, 64, "linear"], [64, 4096, "greedy_phased"], [4096, null, "a2a_phased"]],
 "alltoallv:skewed": [[0, null, "a2a_phased_l3"]],
 "alltoallv:sparse": [[0, null, "greedy_phased_l3"]],
 "allgather": [[0, 16, "recursive_doubling"], [16, 4096, "switch_ordered_ring"], [4096, null, "link_scheduled"]]}
EOF
      seed_decisions "$work/tables.json"
      # Adaptation off: every call follows its table (the sub-communicators'
      # nearest tables would explore; the adapt case covers that).
      job tuned TOPOTUNE_SERVER="127.0.0.1:$port" TOPOTUNE_ADAPT=0
      passed tuned
      check plan "$stats" ok
      check tuned "$stats" "$summary" "$work/tables.json"
      metrics=http://127.0.0.1:$metrics_port/metrics
      plans_before=$("$python" "$here/shim_check.py" rpc_count "$metrics" GetPlan)
      reports_before=$(sql 'SELECT count(*) FROM job_reports')
      [[ $plans_before -ge 1 && $reports_before -eq 1 ]] ||
        fail "tuned: the daemon counts $plans_before GetPlan calls and $reports_before reports, expected 1 or more and 1"
      job disabled TOPOTUNE_SERVER="127.0.0.1:$port" TOPOTUNE_DISABLE=1 TOPOTUNE_FORCE_ALLTOALL=pairwise
      # Pure pass-through may write no stats file; one it writes shows native only.
      [[ ! -e $work/disabled.stats.json ]] || check native_only "$work/disabled.stats.json"
      no_stats=1 passed disabled
      ! grep -q '<stderr>:topotune:' "$work/stderr" ||
        fail "disabled: TOPOTUNE_DISABLE=1 printed topotune: lines: $(grep topotune: "$work/stderr" | head -3)"
      plans_after=$("$python" "$here/shim_check.py" rpc_count "$metrics" GetPlan)
      [[ $plans_after -eq $plans_before ]] || fail "disabled: the job asked the daemon for a plan"
      [[ $(sql 'SELECT count(*) FROM job_reports') -eq $reports_before ]] || fail "disabled: the job sent a report"
    else
      upper=${collective^^}
      IFS=, read -r -a algorithms <<<"${ALGORITHMS:?}"
      for alg in "${algorithms[@]}"; do
        context=0
        [[ ,${CONTEXT_KERNELS:-}, == *,$collective:$alg,* ]] && context=1
        job "$alg" TOPOTUNE_SERVER="127.0.0.1:$port" "TOPOTUNE_FORCE_$upper=$alg"
        passed "$alg"
        check plan "$stats" ok
        check forced "$stats" "$summary" "$collective" "$alg" "$context" 1
      done
    fi
    ;;

  alltoallv_backoff)
    # Every class native below 1 MiB (coll_check's calls are all smaller):
    # after two agreed calls that run native, the next calls run native at
    # once, some agreeing in the background, on every communicator alike.
    start_daemon daemon
    cat >"$work/tables.json" <<'EOF'
{"alltoallv": [[0, 1048576, "native"], [1048576, null, "linear"]],
 "alltoallv:skewed": [[0, 1048576, "native"], [1048576, null, "a2a_phased"]],
 "alltoallv:sparse": [[0, null, "native"]]}
EOF
    seed_decisions "$work/tables.json"
    # Adaptation off: the calls follow the tables alone (sub-communicators'
    # nearest tables would explore).
    job backoff TOPOTUNE_SERVER="127.0.0.1:$port" TOPOTUNE_ADAPT=0
    passed backoff
    check plan "$stats" ok
    check backoff "$stats" "$summary"
    ;;

  fault_daemon_down)
    port=$(closed_port)
    down="unreachable|connect|unavailable|127\.0\.0\.1:$port"
    job plain TOPOTUNE_SERVER="127.0.0.1:$port"
    passed plain
    check plan "$stats" none "$down"
    # Kernels that need no context run without a daemon ...
    job context_free TOPOTUNE_SERVER="127.0.0.1:$port" TOPOTUNE_FORCE_ALLTOALL=pairwise TOPOTUNE_FORCE_ALLTOALLV=linear \
      TOPOTUNE_FORCE_ALLGATHER=ring
    passed context_free
    check plan "$stats" none "$down"
    check forced "$stats" "$summary" alltoall pairwise 0 0
    check forced "$stats" "$summary" alltoallv linear 0 0
    check forced "$stats" "$summary" allgather ring 0 0
    # ... the others fall back, with data intact.
    job context TOPOTUNE_SERVER="127.0.0.1:$port" TOPOTUNE_FORCE_ALLTOALL=tree_scheduled \
      TOPOTUNE_FORCE_ALLGATHER=switch_ordered_ring
    passed context
    check plan "$stats" none "$down"
    check forced "$stats" "$summary" alltoall tree_scheduled 1 0
    check forced "$stats" "$summary" allgather switch_ordered_ring 1 0
    # TOPOTUNE_LOG=off: silent; "%r": every rank writes its own stats file.
    job quiet TOPOTUNE_SERVER="127.0.0.1:$port" TOPOTUNE_LOG=off TOPOTUNE_STATS_FILE="$work/quiet.%r.json"
    no_stats=1 passed quiet
    ! grep -q '<stderr>:topotune:' "$work/stderr" ||
      fail "quiet: TOPOTUNE_LOG=off printed $(grep -c '<stderr>:topotune:' "$work/stderr") topotune: lines"
    [[ ! -e $work/quiet.stats.json ]] || fail "quiet: the stats file has no %r replaced"
    for r in 0 1 2 3; do
      [[ -s $work/quiet.$r.json ]] || fail "quiet: rank $r wrote no $work/quiet.$r.json"
      check plan "$work/quiet.$r.json" none "$down"
    done
    ;;

  fault_mixed_force)
    # Ranks that force other algorithms than rank 0: rank 0's apply
    # everywhere, so that the ranks of a call never run different kernels.
    start_daemon daemon
    h1_vars=(TOPOTUNE_FORCE_ALLTOALL=bruck TOPOTUNE_FORCE_ALLTOALLV=a2a_phased TOPOTUNE_FORCE_ALLGATHER=ring)
    job mixed TOPOTUNE_SERVER="127.0.0.1:$port" TOPOTUNE_FORCE_ALLTOALL=pairwise TOPOTUNE_FORCE_ALLGATHER=recursive_doubling
    passed mixed
    check forced "$stats" "$summary" alltoall pairwise 0 1
    check forced "$stats" "$summary" allgather recursive_doubling 0 1
    ;;

  fault_bad_settings)
    # Settings the shim cannot use: each reported once, on rank 0, and the
    # default applies; the job runs as if they were not there.
    start_daemon daemon
    job bad TOPOTUNE_SERVER="127.0.0.1:$port" TOPOTUNE_FORCE_ALLTOALL=bogus_kernel_xyz TOPOTUNE_TIMEOUT_MS=soon \
      TOPOTUNE_LOG=loud TOPOTUNE_REPORT=maybe
    passed bad
    check plan "$stats" ok
    for value in bogus_kernel_xyz TOPOTUNE_TIMEOUT_MS TOPOTUNE_LOG TOPOTUNE_REPORT; do
      grep "<stderr>:topotune:.*$value" "$work/stderr" >"$work/grep.txt" || fail "bad: $value is not reported"
      [[ $(wc -l <"$work/grep.txt") -eq 1 && $(cat "$work/grep.txt") == "[1,0]<stderr>:"* ]] ||
        fail "bad: $value should be reported once, by rank 0: $(cat "$work/grep.txt")"
    done
    "$python" -c 'import json, sys; f = json.load(open(sys.argv[1])).get("forced", {}); assert "alltoall" not in f, f' \
      "$stats" || fail "bad: an unknown algorithm is forced"
    ;;

  fault_slow)
    run "$FAULT_SERVER" --help
    [[ $status -eq 0 ]] || fail "plans_fault_server --help: exit status $status"
    grep -q -- --delay-ms "$work/stdout" || fail "plans_fault_server --help does not describe --delay-ms"
    run "$FAULT_SERVER" --mode no_such_mode
    [[ $status -eq 2 ]] || fail "plans_fault_server --mode no_such_mode: exit status $status, expected 2"
    # The server wakes from its delay when it is stopped, so the long delay
    # costs nothing once the job is done.
    start_fault_server slow --delay-ms 30000
    job slow TOPOTUNE_SERVER="127.0.0.1:$port" TOPOTUNE_TIMEOUT_MS=300
    passed slow
    check plan "$stats" none "deadline|time.?out|timed out|did not answer"
    # MPI_Init waited for the timeout, not for the answer 30 s later.
    check init "$stats" 15
    grep -q "GetPlan from" "$work/fault_server.log" || fail "the job never asked plans_fault_server"
    ;;

  fault_throw)
    # The library's exception barrier: a throw in the per-call bookkeeping
    # (TOPOTUNE_TEST_THROW, the same calls on every rank) leaves the call to
    # the MPI library, and the job goes on tuned.
    start_daemon daemon
    forced=(TOPOTUNE_FORCE_ALLTOALL=pairwise TOPOTUNE_FORCE_ALLTOALLV=linear TOPOTUNE_FORCE_ALLGATHER=ring)
    said_once() {
      local r
      for r in 0 1 2 3; do
        [[ $(grep -c "^\[1,$r\]<stderr>:topotune: internal error: .*bad_alloc in MPI_" "$work/stderr") -eq 1 ]] ||
          fail "$1: rank $r did not say once that it met an internal error: $(grep -c 'internal error' "$work/stderr") lines"
      done
    }
    job throw TOPOTUNE_SERVER="127.0.0.1:$port" TOPOTUNE_TEST_THROW=2 "${forced[@]}"
    passed throw
    check plan "$stats" ok
    check internal_errors "$stats" "$summary" alltoall:pairwise alltoallv:linear allgather:ring
    said_once throw
    if [[ -n ${FCOLL_CHECK_MPIF_H:-} ]]; then
      program=$FCOLL_CHECK_MPIF_H
      job fortran TOPOTUNE_SERVER="127.0.0.1:$port" TOPOTUNE_TEST_THROW=2 "${forced[@]}"
      passed fortran "$NATIVE_DIR/f_mpif_h"
      check internal_errors "$stats" "$summary" alltoall:pairwise alltoallv:linear allgather:ring
      said_once fortran
    fi
    ;;

  fault_unknown_host)
    start_daemon daemon
    hosts=(nowhere0 nowhere1)
    job unknown TOPOTUNE_SERVER="127.0.0.1:$port"
    passed unknown
    check plan "$stats" none "nowhere[01]"
    ;;

  fault_daemon_dies | fault_daemon_hangs)
    name=${case_name#fault_daemon_}
    signal=KILL
    [[ $name == hangs ]] && signal=STOP
    start_daemon daemon
    cc_args=(--rounds 2 --pause-file "$work/pause")
    job_command "$name" TOPOTUNE_SERVER="127.0.0.1:$port" TOPOTUNE_TIMEOUT_MS=500 \
      TOPOTUNE_FORCE_ALLTOALL=tree_scheduled TOPOTUNE_FORCE_ALLGATHER=link_scheduled
    echo "job $name: TOPOTUNE_TIMEOUT_MS=500, SIG$signal to topotuned after round 1" >>"$work/checks.log"
    t0=$SECONDS
    set +e
    "${job_cmd[@]}" >"$work/stdout" 2>"$work/stderr" &
    job_pid=$!
    set -e
    pids+=("$job_pid")
    empty_ok=1 wait_for_file "$work/pause.ready" "$job_pid" "coll_check (round 1)"
    kill -"$signal" "$daemon_pid"
    [[ $signal == KILL ]] && { wait "$daemon_pid" 2>/dev/null || true; }
    echo "topotuned (pid $daemon_pid) got SIG$signal after round 1" >>"$work/checks.log"
    touch "$work/pause"
    set +e
    wait "$job_pid"
    status=$?
    set -e
    retag
    echo "job $name: exit status $status after $((SECONDS - t0)) s" >>"$work/checks.log"
    passed "$name" "$NATIVE_DIR/r2"
    check plan "$stats" ok
    check forced "$stats" "$summary" alltoall tree_scheduled 1 1
    check forced "$stats" "$summary" allgather link_scheduled 1 1
    # Round 2 makes new communicators, whose plans the shim asks for; a daemon
    # that does not answer must cost rank 0 one timeout, not one per
    # communicator it is in: every member of a communicator learns that its
    # plan timed out (the exchange shares the reason), so none needs to ask
    # again. Rank 0 counts each failed plan of its communicators.
    if [[ $name == hangs ]]; then
      check waits "$stats" 1
    fi
    ;;

  fault_*)
    mode=${case_name#fault_}
    case $mode in
      gap) regex="contig|gap|range|start|ascend|order" ;;
      unknown_algorithm) regex="no_such_kernel_xyz" ;;
      wrong_nprocs) regex="nprocs|ranks|size" ;;
      bad_program) regex="program|out of range|rank" ;;
      bad_program_count) regex="program" ;;
      bad_ring) regex="ring|permutation" ;;
      bad_subplan) regex="no plan for a communicator.*program" ;;
      garbage) regex="not a topotune\.v1\.GetPlanResponse|pars|decod|malformed|deserial" ;;
      *) fail "unknown fault mode '$mode'" ;;
    esac
    start_fault_server "$mode"
    job "$mode" TOPOTUNE_SERVER="127.0.0.1:$port"
    passed "$mode"
    check fault "$stats" "$regex"
    grep -q "GetPlan from" "$work/fault_server.log" || fail "the job never asked plans_fault_server"
    if [[ $mode == bad_subplan ]]; then  # The world's plan held: its alltoall ran pairwise.
      check plan "$stats" ok
      "$python" -c 'import json, sys; s = json.load(open(sys.argv[1])); assert any(e["algorithm"] == "pairwise" for e in s["stats"]), s["stats"][:3]' \
        "$stats" || fail "bad_subplan: no call ran the world plan's pairwise"
    fi
    ;;

  report_forced)
    start_daemon daemon
    metrics=http://127.0.0.1:$metrics_port/metrics
    for alg in pairwise tree_scheduled; do
      job_id=shim-$case_name-$alg id_vars=()
      # Without TOPOTUNE_JOB_ID, the job id is SLURM_JOB_ID.
      [[ $alg == tree_scheduled ]] && job_id=4242 id_vars=(TOPOTUNE_JOB_ID= SLURM_JOB_ID=4242)
      job "$alg" TOPOTUNE_SERVER="127.0.0.1:$port" TOPOTUNE_FORCE_ALLTOALL="$alg" "${id_vars[@]}"
      passed "$alg"
      check plan "$stats" ok
      # ReportJob is answered once stored, before MPI_Finalize returns.
      rows=$(sql "SELECT count(*) FROM job_reports WHERE job_id = '$job_id'")
      [[ $rows -eq 1 ]] || fail "$alg: $rows rows of job_reports for job $job_id, expected 1 (one report per job)"
      sql "SELECT payload FROM job_reports WHERE job_id = '$job_id'" >"$work/$alg.payload.json"
      check report "$work/$alg.payload.json" "$stats" "$job_id" "$alg"
      # The report's demand: the world's forced alltoall calls in the 4 x 2
      # cell, spanning 2 hosts and the switches of their plan's placement.
      demand=$(sql "SELECT sum(d.calls), min(d.hosts), min(d.switches) FROM demand d JOIN job_reports j ON d.report_id = j.id WHERE j.job_id = '$job_id' AND d.collective = 'alltoall' AND d.source = 'forced' AND d.nprocs = 4 AND d.ranks_per_node = 2")
      IFS='|' read -r d_calls d_hosts d_switches <<<"$demand"
      [[ ${d_calls:-0} -gt 0 && $d_hosts == 2 && ${d_switches:-0} -ge 1 ]] ||
        fail "$alg: demand of the world's alltoall is '$demand' (calls|hosts|switches)"
      check metrics "$metrics" "$alg"
    done
    reports_before=$(sql 'SELECT count(*) FROM job_reports')
    calls_before=$("$python" "$here/shim_check.py" rpc_count "$metrics" ReportJob)
    [[ $calls_before -eq 2 ]] || fail "/metrics counts $calls_before ReportJob calls after two jobs"
    job no_report TOPOTUNE_SERVER="127.0.0.1:$port" TOPOTUNE_FORCE_ALLTOALL=pairwise TOPOTUNE_REPORT=0
    passed no_report
    check plan "$stats" ok
    [[ $(sql 'SELECT count(*) FROM job_reports') -eq $reports_before ]] || fail "TOPOTUNE_REPORT=0: a report was stored"
    [[ $("$python" "$here/shim_check.py" rpc_count "$metrics" ReportJob) -eq $calls_before ]] ||
      fail "TOPOTUNE_REPORT=0: ReportJob was called"
    ;;

  *)
    echo "shim_test.sh: unknown case '$case_name'" >&2
    exit 2
    ;;
esac
echo "PASS [$case_name]"
