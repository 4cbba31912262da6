#!/usr/bin/env bash
# MPICH reads the selection files of tuner/mpich_csel.h: one case per ctest
# test.
#
# Usage: mpich_rules_test.sh CASE GEN CHECK WORK_DIR LIBMPICH MPIEXEC...
#   CASE      load | canary | bogus | export
#   GEN       mpich_rules_gen (writes the files and the expected results)
#   CHECK     coll_check, built against MPICH (runs the calls, prints what
#             data came back)
#   WORK_DIR  scratch directory (recreated)
#   LIBMPICH  the libmpich.so coll_check runs with; the files start from the
#             selection tree built into it
#   MPIEXEC...  MPICH's launcher (mpiexec.mpich) and its flags, ending with
#             its -n flag
# Environment, for export: TOPOTUNE and TOPOTUNED (the binaries) and
# TOPOLOGY (a topology file). MPICH_MISSING=1 makes every case skip (77).
#
#   load    the file of the test tables (mpich_rules_gen write) under
#           MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE: exit 0, every call's
#           data correct, and no "unknown key", "unrecognized key" or failed
#           assertion on stderr.
#   canary  the same file with the leaf of one alltoall range, [512, 4096)
#           bytes per block on 4 ranks, replaced by
#           MPIR_Alltoall_intra_pairwise_sendrecv_replace, which exchanges
#           the receive buffer in place and ignores the send buffer: calls in
#           the range must return the in-place result of the receive
#           buffers' first contents, and 511 and 4096 bytes (the sizes either
#           side), the range on 3 ranks (another table) and every other call
#           must be correct. Without the file every call is correct. So
#           MPICH evaluated the exported keys, boundaries included.
#   bogus   a file naming MPIR_Alltoall_intra_bogus: MPI_Init must fail with
#           "unrecognized key" on stderr, before any call (so MPICH did read
#           the file named by the variable).
#   export  load with the file made the way users make it: the tables stored
#           as decisions in a topotuned database (mpich_rules_gen seed), a
#           real topotuned, and `topotune export --format mpich-csel
#           --mpich-library LIBMPICH -o FILE`, which must print a note for
#           tree_scheduled (only libtopotune-mpich.so runs it) and "wrote
#           FILE".
set -euo pipefail

case_name=$1 gen=$2 check=$3 work=$4 libmpich=$5
shift 5
mpiexec=("$@")
np=4
rm -rf "$work" && mkdir -p "$work"

# shellcheck source=../testlib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../testlib.sh"

if [[ ${MPICH_MISSING:-0} == 1 ]]; then
  echo "MPICH (pkg-config mpich, mpiexec.mpich) is not installed: skipping"
  exit 77
fi
case $case_name in
  load | canary | bogus | export) ;;
  *)
    echo "unknown case '$case_name'" >&2
    exit 2
    ;;
esac

# MPICH reads its settings from the environment: none from the caller's.
while read -r var; do unset "$var"; done < <(compgen -e | grep -E '^MPIR_CVAR_|^MPICH_' || true)

rules=$work/rules.json
mapfile -t calls < <("$gen" calls)
result_lines() { grep -E '^(alltoall|alltoall_inplace|alltoallv|allgather) [0-9]+ [0-9]+ [a-z]+$' "$1" || true; }

# Runs coll_check on $np ranks, with the selection file $1 (none when empty).
run_check() {
  local file=$1
  if [[ -n $file ]]; then
    run "${mpiexec[@]}" "$np" -genv MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE "$file" "$check" "${calls[@]}"
  else
    run "${mpiexec[@]}" "$np" "$check" "${calls[@]}"
  fi
}

# The results of the last run against the expectations in $1.
compare() {
  local expect=$1 problems=0
  result_lines "$work/stdout" >"$work/results.txt"
  echo "call: expected / got"
  while read -r collective comm block want; do
    got=$(awk -v c="$collective" -v n="$comm" -v b="$block" '$1 == c && $2 == n && $3 == b { print $4 }' \
      "$work/results.txt")
    echo "$collective $comm $block: $want / ${got:-nothing}"
    if [[ $got != "$want" ]]; then
      echo "  MISMATCH" >&2
      problems=$((problems + 1))
    fi
  done <"$expect"
  ((problems == 0)) || fail "$problems calls returned other data than expected"
}

# MPICH's complaints about a selection file, and its failed assertions.
no_complaints() {
  if grep -iE 'unknown key|unrecognized key|Assertion failed|unexpected (NULL|non-NULL)' "$work/stderr" \
    >"$work/complaints.txt"; then
    fail "MPICH complained: $(head -n 3 "$work/complaints.txt")"
  fi
}

if [[ $case_name == export ]]; then
  # A note for tree_scheduled, which MPICH cannot run.
  export_rules_via_topotuned '.*tree_scheduled is a topotune algorithm; only libtopotune-mpich\.so runs it' \
    --format mpich-csel --mpich-library "$libmpich"
else
  run "$gen" write "$libmpich" "$rules" "$work/expect.txt"
  [[ $status -eq 0 ]] || fail "mpich_rules_gen write exited $status"
  cat "$work/stdout"
fi

case $case_name in
  load | export)
    run_check "$rules"
    [[ $status -eq 0 ]] || fail "coll_check with $rules exited $status"
    no_complaints
    compare "$work/expect.txt"
    echo "MPICH loaded $rules and every call's data was correct"
    ;;
  canary)
    run_check ""
    [[ $status -eq 0 ]] || fail "coll_check without a file exited $status"
    compare "$work/expect.txt"
    run "$gen" canary "$rules" "$work/canary.json" "$work/expect-canary.txt"
    [[ $status -eq 0 ]] || fail "mpich_rules_gen canary exited $status"
    run_check "$work/canary.json"
    [[ $status -eq 0 ]] || fail "coll_check with the canary file exited $status"
    no_complaints
    compare "$work/expect-canary.txt"
    grep -q ' inplace$' "$work/expect-canary.txt" || fail "the canary expects no in-place call"
    echo "MPICH ran the canary's leaf exactly on [512, 4096) bytes per block on 4 ranks"
    ;;
  bogus)
    run "$gen" bogus "$rules" "$work/bogus.json"
    [[ $status -eq 0 ]] || fail "mpich_rules_gen bogus exited $status"
    run_check "$work/bogus.json"
    [[ $status -ne 0 ]] || fail "coll_check with an unknown algorithm in the file exited 0"
    grep -q 'unrecognized key algorithm=MPIR_Alltoall_intra_bogus' "$work/stderr" ||
      fail "MPICH did not say 'unrecognized key algorithm=MPIR_Alltoall_intra_bogus'"
    [[ -z $(result_lines "$work/stdout") ]] || fail "coll_check ran calls although MPI_Init should have failed"
    echo "MPICH refused the file in MPI_Init (exit $status): unrecognized key algorithm=MPIR_Alltoall_intra_bogus"
    ;;
esac
