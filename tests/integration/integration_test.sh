#!/usr/bin/env bash
# The ways a site loads topotune into its jobs, with real jobs: one case per
# ctest test (label integration).
#
# Usage: integration_test.sh CASE WORK_DIR NP_FLAG MPIRUN...
#   CASE      see below
#   WORK_DIR  scratch directory (recreated); a failing case's files stay
#   NP_FLAG   the launcher's process-count flag (-np)
#   MPIRUN... the launcher with its flags (TOPOTUNE_MPIEXEC_FLAGS)
# Environment (CMakeLists.txt sets it): PROLOG (topotune-task-prolog.sh),
# WRAPPER (topotune-mpirun), EXPORT_RULES (topotune-export-rules), SNIPPET
# (openmpi-mca-params.conf.snippet), SHIM (libtopotune-mpi.so), TOPOTUNED,
# TOPOTUNE (the CLI), COLL_CHECK (tests/shim's plain MPI program); for
# rules_only also GEN (ompi_rules_gen), PROBE (coll_probe), RULES_TOPOLOGY.
#
# Every job is coll_check on 4 ranks of this host against a real topotuned
# on loopback whose topology names this host (hostname -s). A job "used
# topotune" when rank 0's stats file (TOPOTUNE_STATS_FILE) says its plan came
# (status ok, a plan id) and the daemon's database holds the job's report
# (ReportJob at MPI_Finalize) under the expected job id with that plan id.
#
# Cases:
#   wrapper      topotune-mpirun: the site file's library and server reach
#                every rank (-x), also in MPMD (two app contexts); the job's
#                own LD_PRELOAD is kept after the library and the library is
#                never added twice; --topotune-off, TOPOTUNE_DISABLE=1, a
#                missing library and a configured mca_base_env_list run
#                plain mpirun (no stats file, exit 0); --help.
#   mca_params   snippet A (mca_base_env_list) in a parameter file named by
#                OMPI_MCA_mca_param_files, plain mpirun: the job used
#                topotune; mpirun -x with it is refused (the caveat the
#                snippet states).
#   task_prolog  the TaskProlog run as slurmstepd runs it (the job's
#                environment, SLURM_ variables), its "export" lines applied
#                to the task's environment, then the job: it used topotune,
#                its job id SLURM_JOB_ID; the job's TOPOTUNE_SERVER wins over
#                the site's; LD_PRELOAD kept, no duplicate; the user's and
#                the site's opt-out and a missing library print nothing and
#                exit 0; non-MPI programs run unchanged with the library;
#                without TOPOTUNE_LIBRARY, lib/ of the prolog's prefix as a
#                plain path, also through a symbolic link to the prolog.
#   slurm        a real single-node Slurm on loopback (munged, slurmctld,
#                slurmd with TaskProlog=PROLOG, temporary state): srun -n 2
#                env shows the prolog's variables; srun --mpi=pmix -n 4
#                coll_check used topotune under the Slurm job id; srun
#                --export=ALL,LD_PRELOAD=...,TOPOTUNE_SERVER=... does the
#                same with the prolog switched off by the site file. Needs
#                root and slurm-wlm (else exit 77).
#   rules_only   topotune-export-rules fetches the rules file from a
#                topotuned holding decisions (ompi_rules_gen seed), mode 0644
#                under the unit's umask 0077 (every job's user reads it), a
#                second run leaves it alone, a failed export keeps it;
#                snippet B (which reads the file the unit writes) in a
#                parameter file makes coll/tuned run, call for call, what
#                --mca coll_tuned_dynamic_rules_filename runs (which
#                ompi_rules_export1 checks against the tables), and not the
#                fixed decisions.
# A && B || fail: fail when either check fails (SC2015); single quotes: for the ranks' shell (SC2016).
# shellcheck disable=SC2015,SC2016
set -euo pipefail

case_name=$1 work=$2 np_flag=$3
shift 3
mpirun=("$@")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rm -rf "$work" && mkdir -p "$work"
# shellcheck source=../testlib.sh
source "$here/../testlib.sh"

host=$(hostname -s)
pids=()
stop_all() {
  local i pid
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    pid=${pids[i]}
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}
trap stop_all EXIT

# wait_until SECONDS WHAT PID COMMAND...: retries COMMAND every 0.1 s while
# PID lives.
wait_until() {
  local limit=$1 what=$2 pid=$3 i
  shift 3
  for ((i = 0; i < limit * 10; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || fail "$what exited"
    sleep 0.1
  done
  fail "$what not ready within $limit s"
}

# start_daemon TOPOLOGY: topotuned on a free loopback port; sets server, db.
start_daemon() {
  mkdir -p "$work/daemon"
  printf 'log_level: info\n' >"$work/daemon/topotuned.yaml" # Not /etc/topotune's.
  "$TOPOTUNED" --config "$work/daemon/topotuned.yaml" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
    --database "$work/daemon/db.sqlite" --topology-file "$1" --port-file "$work/daemon/ports" \
    >"$work/topotuned.log" 2>&1 &
  pids+=($!)
  wait_until 30 topotuned $! test -s "$work/daemon/ports"
  server=127.0.0.1:$(sed -n 's/^grpc=//p' "$work/daemon/ports")
  db=$work/daemon/db.sqlite
}

# A topology with this host (4 slots) and another on one switch.
host_topology() {
  cat >"$work/topology.yaml" <<EOF
switches:
  - name: s0
hosts:
  - {name: $host, slots: 4}
  - {name: other-$host, slots: 4}
links:
  - [$host, s0, 1Gbps]
  - [other-$host, s0, 1Gbps]
EOF
  start_daemon "$work/topology.yaml"
}

# site_file [LINES...]: the site file $work/job.env naming the library and
# the server, then LINES.
site_file() {
  printf '%s\n' "# test site" "TOPOTUNE_LIBRARY=$SHIM" "TOPOTUNE_SERVER=$server" "$@" >"$work/job.env"
  export TOPOTUNE_JOB_ENV=$work/job.env
}

# used_topotune NAME JOB_ID: the stats file $work/NAME.stats.json shows a
# plan from the daemon, and the daemon stored JOB_ID's report with that plan.
used_topotune() {
  local stats=$work/$1.stats.json plan payload
  [[ -s $stats ]] || fail "$1: no stats file: the library did not run"
  plan=$(python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["plan"]; print(p["plan_id"] if p["status"]=="ok" and p["plan_id"] else "none: " + p["reason"])' "$stats")
  [[ $plan != none:* && -n $plan ]] || fail "$1: no plan from topotuned ($plan)"
  payload=$(sqlite3 -cmd '.timeout 5000' "$db" "SELECT payload FROM job_reports WHERE job_id = '$2'")
  [[ -n $payload ]] || fail "$1: topotuned holds no report of job $2"
  python3 -c 'import json,sys; assert json.loads(sys.argv[1])["plan_id"] == sys.argv[2], sys.argv[1]' "$payload" "$plan" ||
    fail "$1: the report of job $2 is not for plan $plan"
  echo "$1: plan $plan from $server, job $2 reported"
}

# job NAME LAUNCHER...: LAUNCHER... coll_check with a stats file; must exit 0.
job() {
  local name=$1
  shift
  run env TOPOTUNE_STATS_FILE="$work/$name.stats.json" "$@" "$COLL_CHECK"
  [[ $status -eq 0 ]] || fail "$name: exit status $status"
  grep -q 'all data correct' "$work/stdout" || fail "$name: coll_check did not report correct data"
}

# The variables the ranks see: LAUNCHER... sh -c 'echo ...' on every rank.
rank_env() {
  run "$@" sh -c 'echo "rank-env LD_PRELOAD=${LD_PRELOAD:-} TOPOTUNE_SERVER=${TOPOTUNE_SERVER:-}"'
  [[ $status -eq 0 ]] || fail "rank_env: exit status $status"
  grep '^rank-env' "$work/stdout" | sort -u
}

case $case_name in
  wrapper)
    export TOPOTUNE_MPIRUN=${mpirun[0]}
    flags=("${mpirun[@]:1}")
    run "$WRAPPER" --help
    [[ $status -eq 0 ]] && grep -q -- --topotune-off "$work/stdout" || fail "--help does not describe --topotune-off"
    host_topology
    site_file
    job wrapper env TOPOTUNE_JOB_ID=wrapper-1 "$WRAPPER" "${flags[@]}" "$np_flag" 4
    used_topotune wrapper wrapper-1
    # MPMD: the second app context gets the variables too (mpirun's -x is per
    # context; a job where only some ranks load the library would hang).
    run "$WRAPPER" "${flags[@]}" "$np_flag" 1 true : "$np_flag" 1 sh -c 'echo "ctx2 ${LD_PRELOAD:-} ${TOPOTUNE_SERVER:-}"'
    grep -qx "ctx2 $SHIM $server" "$work/stdout" || fail "the second app context lacks the variables: $(cat "$work/stdout")"
    job mpmd env TOPOTUNE_JOB_ID=wrapper-2 "$WRAPPER" "${flags[@]}" "$np_flag" 2 "$COLL_CHECK" : "$np_flag" 2
    used_topotune mpmd wrapper-2
    # The job's LD_PRELOAD stays after the library; the library once.
    other=$(ldd "$COLL_CHECK" | awk '/libz\.so/ { print $3 }' | head -n 1)
    [[ -n $other ]] || other=$(ldd /bin/sh | awk '/libc\.so/ { print $3 }')
    got=$(LD_PRELOAD=$other rank_env "$WRAPPER" "${flags[@]}" "$np_flag" 2)
    [[ $got == "rank-env LD_PRELOAD=$SHIM:$other TOPOTUNE_SERVER=$server" ]] || fail "LD_PRELOAD=$other: ranks saw '$got'"
    got=$(LD_PRELOAD="$other:$SHIM" rank_env "$WRAPPER" "${flags[@]}" "$np_flag" 2)
    [[ $got == "rank-env LD_PRELOAD=$other:$SHIM TOPOTUNE_SERVER=$server" ]] || fail "library already preloaded: ranks saw '$got'"
    # Plain mpirun: nothing added, the job still runs.
    for how in off disable missing env_list; do
      args=("$WRAPPER") vars=(TOPOTUNE_JOB_ID="plain-$how")
      case $how in
        off) args+=(--topotune-off) ;;
        disable) vars+=(TOPOTUNE_DISABLE=1) ;;
        missing) vars+=(TOPOTUNE_JOB_ENV="$work/missing.env") && printf 'TOPOTUNE_LIBRARY=%s\n' "$work/none.so" >"$work/missing.env" ;;
        env_list) printf 'mca_base_env_list = TOPOTUNE_LOG=info\n' >"$work/env_list.conf" &&
          vars+=(OMPI_MCA_mca_param_files="$work/env_list.conf") ;;
      esac
      job "plain_$how" env "${vars[@]}" "${args[@]}" "${flags[@]}" "$np_flag" 4
      [[ ! -e $work/plain_$how.stats.json ]] || fail "$how: the library ran"
      case $how in
        missing) grep -q "the library $work/none.so is missing" "$work/stderr" || fail "missing: no warning" ;;
        env_list) grep -q "env_list.conf sets mca_base_env_list" "$work/stderr" || fail "env_list: no note" ;;
        *) [[ ! -s $work/stderr ]] || fail "$how: stderr: $(cat "$work/stderr")" ;;
      esac
    done
    ;;

  mca_params)
    host_topology
    # Snippet A with this site's library and server.
    sed -n '/^mca_base_env_list/p' "$SNIPPET" |
      sed "s#/usr/local/lib/libtopotune-mpi.so#$SHIM#; s#head:50051#$server#" >"$work/mca-params.conf"
    grep -q "LD_PRELOAD=$SHIM;TOPOTUNE_SERVER=$server" "$work/mca-params.conf" || fail "snippet A: $(cat "$work/mca-params.conf")"
    export OMPI_MCA_mca_param_files=$work/mca-params.conf
    job mca_params env -u LD_PRELOAD -u TOPOTUNE_SERVER TOPOTUNE_JOB_ID=mca-1 "${mpirun[@]}" "$np_flag" 4
    used_topotune mca_params mca-1
    run "${mpirun[@]}" -x TOPOTUNE_LOG=info "$np_flag" 2 true
    [[ $status -ne 0 ]] && grep -q 'both the "-x" method' "$work/stderr" ||
      fail "mpirun -x with mca_base_env_list in a parameter file: status $status, expected Open MPI's refusal"
    ;;

  task_prolog)
    run "$PROLOG" --help
    [[ $status -eq 0 ]] && grep -q TOPOTUNE_LIBRARY "$work/stdout" || fail "--help does not describe TOPOTUNE_LIBRARY"
    host_topology
    site_file "TOPOTUNE_LOG='info'" "" "OTHER=1" "not a setting"
    slurm_env=(SLURM_JOB_ID=7301 SLURM_STEP_ID=0 SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_NODEID=0 SLURMD_NODENAME="$host")
    # prolog [VAR=VALUE...]: runs the prolog as slurmstepd does; its stdout in $work/stdout.
    prolog() { run env "${slurm_env[@]}" "$@" "$PROLOG"; }
    prolog
    [[ $status -eq 0 ]] || fail "prolog: exit status $status"
    printf 'export LD_PRELOAD=%s\nexport TOPOTUNE_SERVER=%s\nexport TOPOTUNE_LOG=info\n' "$SHIM" "$server" >"$work/expected"
    diff "$work/expected" "$work/stdout" >"$work/diff" || fail "prolog printed other lines: $(cat "$work/diff")"
    grep -q 'job.env:6: OTHER is not a TOPOTUNE_ setting' "$work/stderr" && grep -q 'job.env:7: not NAME=value' "$work/stderr" ||
      fail "the site file's bad lines were not reported"
    # The task's environment as slurmstepd builds it (the value is the rest of the line).
    task_env=()
    while IFS= read -r line; do
      line=${line#export }
      task_env+=("$line")
    done <"$work/stdout"
    job task_prolog env "${slurm_env[@]}" "${task_env[@]}" "${mpirun[@]}" "$np_flag" 4
    used_topotune task_prolog 7301
    grep -q 'topotune: .*plan' "$work/stderr" || fail "TOPOTUNE_LOG=info from the site file: rank 0 did not log its plan"
    # Not an MPI program: unchanged with the library preloaded.
    run env "${task_env[@]}" sh -c 'printf "%s\n" ok; /bin/true'
    [[ $status -eq 0 && $(cat "$work/stdout") == ok && ! -s $work/stderr ]] || fail "a non-MPI program under the library: status $status"
    # The job's own server wins; LD_PRELOAD kept after the library, never twice.
    prolog TOPOTUNE_SERVER=elsewhere:1 LD_PRELOAD=/lib/a.so
    [[ $(cat "$work/stdout") == "export LD_PRELOAD=$SHIM:/lib/a.so"$'\n'"export TOPOTUNE_LOG=info" ]] ||
      fail "with the job's TOPOTUNE_SERVER and LD_PRELOAD: $(cat "$work/stdout")"
    prolog LD_PRELOAD="/lib/a.so $SHIM"
    ! grep -q LD_PRELOAD "$work/stdout" || fail "the library was added twice: $(cat "$work/stdout")"
    # Opt-outs and a missing library: nothing printed, exit 0.
    printf 'TOPOTUNE_DISABLE=1\nTOPOTUNE_SERVER=%s\n' "$server" >"$work/off.env"
    printf 'TOPOTUNE_LIBRARY=%s\n' "$work/none.so" >"$work/missing.env"
    for how in "TOPOTUNE_DISABLE=1" "TOPOTUNE_JOB_ENV=$work/off.env" "TOPOTUNE_JOB_ENV=$work/missing.env"; do
      prolog "$how"
      [[ $status -eq 0 && ! -s $work/stdout ]] || fail "$how: status $status, printed: $(cat "$work/stdout")"
    done
    grep -q "the library $work/none.so is missing on" "$work/stderr" || fail "missing library: no warning"
    prolog TOPOTUNE_JOB_ENV="$work/none.env"
    [[ $status -eq 0 ]] && grep -q "cannot read the site file" "$work/stderr" || fail "unreadable site file: no warning"
    # No TOPOTUNE_LIBRARY: lib/ of the prolog's prefix, as a plain path (no
    # "..": jobs see /usr/lib/libtopotune-mpi.so), also when slurm.conf names
    # the prolog through a symbolic link.
    prefix=$(cd -P "$work" && pwd)/prefix
    mkdir -p "$prefix/share/topotune/slurm" "$prefix/lib" "$work/etc-slurm"
    cp "$PROLOG" "$prefix/share/topotune/slurm/"
    ln -sf "$SHIM" "$prefix/lib/libtopotune-mpi.so"
    ln -sf "$prefix/share/topotune/slurm/topotune-task-prolog.sh" "$work/etc-slurm/prolog.sh"
    printf 'TOPOTUNE_SERVER=%s\n' "$server" >"$work/default.env"
    for script in "$prefix/share/topotune/slurm/topotune-task-prolog.sh" "$work/etc-slurm/prolog.sh"; do
      run env -u LD_PRELOAD -u TOPOTUNE_SERVER TOPOTUNE_JOB_ENV="$work/default.env" "$script"
      [[ $status -eq 0 && $(head -1 "$work/stdout") == "export LD_PRELOAD=$prefix/lib/libtopotune-mpi.so" ]] ||
        fail "$script without TOPOTUNE_LIBRARY: status $status, printed: $(cat "$work/stdout")"
    done
    # TOPOTUNE_MPI=mpich (the job's, or the site file's): the MPICH library
    # beside the Open MPI one, or TOPOTUNE_LIBRARY_MPICH; never exported.
    script=$prefix/share/topotune/slurm/topotune-task-prolog.sh
    touch "$prefix/lib/libtopotune-mpich.so"
    mkdir -p "$work/x" && touch "$work/x/libtopotune-mpich.so"
    run env -u LD_PRELOAD TOPOTUNE_MPI=mpich TOPOTUNE_JOB_ENV="$work/default.env" "$script"
    [[ $status -eq 0 && $(head -1 "$work/stdout") == "export LD_PRELOAD=$prefix/lib/libtopotune-mpich.so" ]] ||
      fail "TOPOTUNE_MPI=mpich: status $status, printed: $(cat "$work/stdout")"
    printf 'TOPOTUNE_MPI=mpich\nTOPOTUNE_LIBRARY_MPICH=%s\n' "$work/x/libtopotune-mpich.so" >"$work/mpich.env"
    run env -u LD_PRELOAD -u TOPOTUNE_MPI TOPOTUNE_JOB_ENV="$work/mpich.env" "$script"
    [[ $status -eq 0 && $(cat "$work/stdout") == *"export LD_PRELOAD=$work/x/libtopotune-mpich.so"* ]] ||
      fail "TOPOTUNE_LIBRARY_MPICH from the site file: the prolog printed: $(cat "$work/stdout")"
    ! grep -q "TOPOTUNE_LIBRARY_MPICH" "$work/stdout" || fail "TOPOTUNE_LIBRARY_MPICH was exported to the job"
    ;;

  slurm)
    for tool in munged slurmctld slurmd srun sinfo; do
      command -v "$tool" >/dev/null || PATH=$PATH:/usr/sbin command -v "$tool" >/dev/null ||
        { echo "SKIP: $tool not installed (slurm-wlm, munge)"; exit 77; }
    done
    [[ $(id -u) -eq 0 ]] || { echo "SKIP: a Slurm cluster needs root"; exit 77; }
    PATH=$PATH:/usr/sbin
    host_topology
    site_file
    s=$work/slurm
    mkdir -p "$s/state" "$s/spool" "$s/munge"
    chmod 0711 "$s/munge"
    head -c 1024 /dev/urandom >"$s/munge/munge.key"
    chmod 0400 "$s/munge/munge.key"
    munged --foreground --force --key-file="$s/munge/munge.key" --socket="$s/munge/munge.sock" \
      --pid-file="$s/munge/munged.pid" --seed-file="$s/munge/seed" --log-file="$s/munged.log" &
    pids+=($!)
    wait_until 10 munged $! test -S "$s/munge/munge.sock"
    free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
    cat >"$s/slurm.conf" <<EOF
ClusterName=topotune-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/munge
AuthInfo=socket=$s/munge/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$s/state
SlurmdSpoolDir=$s/spool
SlurmctldPidFile=$s/slurmctld.pid
SlurmdPidFile=$s/slurmd.pid
SlurmctldLogFile=$s/slurmctld.log
SlurmdLogFile=$s/slurmd.log
PlugStackConfig=$s/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
SlurmdParameters=config_overrides
FirstJobId=4100
TaskProlog=$PROLOG
NodeName=$host NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=10 State=UP
EOF
    : >"$s/plugstack.conf"
    export SLURM_CONF=$s/slurm.conf
    slurmctld -D -i -f "$SLURM_CONF" >"$s/slurmctld.out" 2>&1 &
    pids+=($!)
    ctld=$!
    slurmd -D -f "$SLURM_CONF" -N "$host" >"$s/slurmd.out" 2>&1 &
    pids+=($!)
    wait_until 30 slurmctld "$ctld" sh -c 'sinfo -h -o %t | grep -qx idle'
    run timeout 60 srun -n 2 env
    [[ $status -eq 0 ]] || fail "srun -n 2 env: exit status $status"
    for var in "LD_PRELOAD=$SHIM" "TOPOTUNE_SERVER=$server" SLURM_JOB_ID=4100; do
      [[ $(grep -cx "$var" "$work/stdout") -eq 2 ]] || fail "srun -n 2 env: not 2 tasks with $var"
    done
    export OMPI_MCA_btl=self,vader
    job slurm_prolog timeout 90 srun --mpi=pmix -n 4
    used_topotune slurm_prolog 4101 # FirstJobId + 1: the job id is SLURM_JOB_ID.
    # One job without the prolog's help (the site file switches it off).
    printf 'TOPOTUNE_DISABLE=1\n' >"$work/job.env"
    job slurm_export timeout 90 srun --mpi=pmix -n 4 \
      --export="ALL,LD_PRELOAD=$SHIM,TOPOTUNE_SERVER=$server,TOPOTUNE_JOB_ID=export-1"
    used_topotune slurm_export export-1
    ;;

  rules_only)
    mkdir -p "$work/daemon"
    run "$GEN" seed "$work/daemon/db.sqlite" "$RULES_TOPOLOGY" "$work/expect.txt"
    [[ $status -eq 0 ]] || fail "ompi_rules_gen seed: exit status $status"
    start_daemon "$RULES_TOPOLOGY"
    rules=$work/rules/ompi-rules.txt
    mkdir -p "$work/rules"
    # With the umask of topotune-export-rules.service.
    refresh() { run sh -c 'umask 0077 && exec "$@"' sh env TOPOTUNE="$TOPOTUNE" "$EXPORT_RULES" "$rules" -- --server "$1"; }
    refresh "$server"
    [[ $status -eq 0 && -s $rules ]] && grep -qx "topotune-export-rules: wrote $rules" "$work/stdout" ||
      fail "topotune-export-rules: status $status"
    [[ $(stat -c %a "$rules") == 644 ]] || fail "the rules file is mode $(stat -c %a "$rules"), not 644: other users' jobs cannot read it"
    cp "$rules" "$work/rules.first"
    touch -d '2000-01-01' "$rules"
    refresh "$server"
    [[ $status -eq 0 ]] && grep -q 'is current' "$work/stdout" && [[ $(stat -c %Y "$rules") -eq 946684800 ]] ||
      fail "a second export of the same decisions rewrote the file"
    stop_all
    pids=()
    refresh 127.0.0.1:1
    [[ $status -eq 69 ]] && cmp -s "$rules" "$work/rules.first" || fail "unreachable daemon: status $status, or the file changed"
    [[ $(find "$work/rules" -type f | wc -l) -eq 1 ]] || fail "temporary files left in $work/rules"
    # Snippet B with this file, in a parameter file.
    sed -n '/^coll_tuned_/p' "$SNIPPET" | sed "s#/var/lib/topotune-rules/ompi-rules.txt#$rules#" >"$work/mca-params.conf"
    [[ $(grep -c . "$work/mca-params.conf") -eq 2 ]] && grep -qxF "coll_tuned_dynamic_rules_filename = $rules" "$work/mca-params.conf" ||
      fail "snippet B does not read /var/lib/topotune-rules/ompi-rules.txt: $(cat "$work/mca-params.conf")"
    mapfile -t calls < <(awk '{ print $1 ":" $2 ":" $3 }' "$work/expect.txt")
    probe() {
      run "$@" "$PROBE" "${calls[@]}"
      [[ $status -eq 77 ]] && { cat "$work/stderr"; exit 77; }
      [[ $status -eq 0 ]] || fail "coll_probe: exit status $status"
      grep -E '^(alltoall|alltoallv|allgather) ' "$work/stdout"
    }
    probe "${mpirun[@]}" "$np_flag" 4 >"$work/fixed.txt"
    probe "${mpirun[@]}" --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename "$rules" \
      "$np_flag" 4 >"$work/mca.txt"
    probe env OMPI_MCA_mca_param_files="$work/mca-params.conf" "${mpirun[@]}" "$np_flag" 4 >"$work/file.txt"
    [[ -s $work/file.txt ]] || fail "coll_probe printed no calls"
    diff "$work/mca.txt" "$work/file.txt" >"$work/diff" || fail "the parameter file and --mca ran different algorithms: $(cat "$work/diff")"
    ! cmp -s "$work/fixed.txt" "$work/file.txt" || fail "the parameter file changed nothing: Open MPI did not read the rules"
    echo "$(wc -l <"$work/file.txt") calls ran the rules file's algorithms through the parameter file"
    ;;

  *)
    echo "unknown case '$case_name'" >&2
    exit 2
    ;;
esac
echo "PASS [$case_name]"
