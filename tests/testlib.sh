# Sourced by the shell tests (tests/mpi, tests/smpi, tests/ompi_rules,
# tests/testbed): helpers they share. The caller sets $case_name and $work.

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
