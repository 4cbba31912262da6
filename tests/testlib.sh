# Sourced by the shell tests (tests/mpi, tests/smpi, tests/testbed): helpers
# they share.

# Runs a command, recording its exit status in $status and its streams in
# $work/stdout and $work/stderr (the caller sets $work).
run() {
  set +e
  "$@" >"$work/stdout" 2>"$work/stderr"
  status=$?
  set -e
}
