# Sourced by the shell tests (tests/mpi, tests/smpi, tests/ompi_rules,
# tests/mpich_rules, tests/testbed, ...): helpers they share. The caller sets
# $case_name and $work.

# Runs a command, recording its exit status in $status and its streams in
# $work/stdout and $work/stderr (the caller sets $work).
run() {
  set +e
  "$@" >"$work/stdout" 2>"$work/stderr"
  status=$?
  set -e
}

# Fails the case: prints why, then the last 6000 bytes of every file in $work
# (the commands' outputs and logs), and exits 1.
fail() {
  echo "FAIL [$case_name]: $*" >&2
  local f
  for f in "$work"/*; do
    [[ -f $f ]] && { echo "--- $f" >&2; tail -c 6000 "$f" >&2; }
  done
  exit 1
}

# Starts $TOPOTUNED on a free loopback port with the database in $work/db
# (not in $work itself, whose files fail() prints) and the topology file
# $TOPOLOGY; sets $topotuned_pid and $server. Pair it with stop_topotuned
# (e.g. `trap stop_topotuned EXIT`).
start_topotuned() {
  mkdir -p "$work/db"
  : >"$work/topotuned.yaml" # Defaults, not /etc/topotune/topotuned.yaml.
  "$TOPOTUNED" --config "$work/topotuned.yaml" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
    --database "$work/db/topotune.db" --topology-file "$TOPOLOGY" --port-file "$work/db/ports" \
    >"$work/topotuned.log" 2>&1 &
  topotuned_pid=$!
  local i
  for ((i = 0; i < 200; i++)); do
    [[ -s $work/db/ports ]] && break
    kill -0 "$topotuned_pid" 2>/dev/null || fail "topotuned exited before serving"
    sleep 0.1
  done
  server=127.0.0.1:$(sed -n 's/^grpc=//p' "$work/db/ports")
  [[ $server != 127.0.0.1: ]] || fail "topotuned did not write its port in 20 s"
}

# Stops the topotuned of start_topotuned, if it runs.
stop_topotuned() {
  [[ -n ${topotuned_pid:-} ]] || return 0
  kill "$topotuned_pid" 2>/dev/null || true
  wait "$topotuned_pid" 2>/dev/null || true
  topotuned_pid=
}

# The export cases of the rules tests (tests/ompi_rules, tests/mpich_rules):
# stores the test tables as decisions with `$gen seed` (expectations in
# $work/expect.txt), starts topotuned and runs `$TOPOTUNE export ARGS... -o
# $rules --server ...`, which must exit 0, write $rules and nothing on
# stdout, print a note matching the extended regex NOTE and end with "wrote
# $rules"; then stops topotuned, which must stop gracefully.
# Usage: export_rules_via_topotuned NOTE ARGS...
export_rules_via_topotuned() {
  local note=$1
  shift
  trap stop_topotuned EXIT
  mkdir -p "$work/db"
  run "$gen" seed "$work/db/topotune.db" "$TOPOLOGY" "$work/expect.txt"
  [[ $status -eq 0 ]] || fail "$(basename "$gen") seed exited $status"
  cat "$work/stdout"
  start_topotuned
  run "$TOPOTUNE" export "$@" -o "$rules" --server "$server"
  cp "$work/stderr" "$work/export.stderr"
  cat "$work/export.stderr"
  [[ $status -eq 0 ]] || fail "topotune export exited $status"
  [[ -s $rules ]] || fail "topotune export wrote no $rules"
  [[ ! -s $work/stdout ]] || fail "topotune export -o printed the rules on stdout too"
  [[ $(tail -n 1 "$work/export.stderr") == "wrote $rules" ]] || fail "topotune export did not say 'wrote $rules' last"
  grep -qE "^note: $note" "$work/export.stderr" || fail "topotune export gave no note matching '$note'"
  stop_topotuned
  grep -q 'shutting down' "$work/topotuned.log" || fail "topotuned did not stop gracefully"
}
