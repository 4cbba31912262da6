#!/usr/bin/env bash
# Open MPI reads the rules files of tuner/ompi_rules.h: one case per ctest test.
#
# Usage: ompi_rules_test.sh CASE GEN PROBE WORK_DIR MPIRUN... NP_FLAG
#   CASE      classic1 | classic2 | json | export1
#   GEN       ompi_rules_gen (writes the file and the expected algorithms)
#   PROBE     coll_probe (runs the calls, prints the algorithm Open MPI ran)
#   WORK_DIR  scratch directory (recreated)
#   MPIRUN... the launcher with its flags, ending with its -np flag
# Environment: OMPI_INFO (default ompi_info), to tell the Open MPI version;
# for export1 also TOPOTUNE and TOPOTUNED (the binaries) and TOPOLOGY (a
# topology file).
#
# export1 is classic1 with the file made the way users make it: the test
# tables are stored as decisions in a topotuned database (ompi_rules_gen
# seed), a real topotuned serves them, and `topotune export --format 1 -o
# FILE --server ...` fetches the file, printing a note for each table range
# Open MPI cannot run (topotune's own algorithms) and "wrote FILE".
#
# classic1/classic2: the probe runs once without rules (Open MPI's fixed
# decision: the baseline) and once with
#   --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename FILE
#   --mca coll_base_verbose 100 (and coll_tuned_verbose 100 where it exists, Open MPI 6)
# Each call must run the table's algorithm, or the baseline's where the
# table leaves the decision to Open MPI; at least one call must differ from
# the baseline (else the test could not tell that the file was read);
# coll/tuned must be selected; nothing may complain about the file. An Open
# MPI that predates format 2 (before 4.1.8 and 5.0.7) must instead ignore a
# format 2 file whole: every call runs the baseline's algorithm.
set -euo pipefail

case_name=$1 gen=$2 probe=$3 work=$4
shift 4
mpirun=("$@")
np=4
ompi_info=${OMPI_INFO:-ompi_info}
rm -rf "$work" && mkdir -p "$work"

# shellcheck source=../testlib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../testlib.sh"

case $case_name in
  classic1 | export1) format=1 rules=$work/rules.txt ;;
  classic2) format=2 rules=$work/rules.txt ;;
  json) format=3 rules=$work/rules.json ;;
  *)
    echo "unknown case '$case_name'" >&2
    exit 2
    ;;
esac

if [[ $case_name == export1 ]]; then
  # A note for tree_scheduled, which Open MPI cannot run.
  export_rules_via_topotuned '.*tree_scheduled' --format 1
else
  run "$gen" write "$format" "$rules" "$work/expect.txt"
  [[ $status -eq 0 ]] || fail "ompi_rules_gen write exited $status"
  cat "$work/stdout"
fi

if [[ $case_name == json ]]; then
  # Open MPI 4.1 and 5.0 read the classic formats only; 6.0 tries JSON first.
  echo "Open MPI $("$ompi_info" --version | sed -n 's/^Open MPI v//p') cannot load format 3;" \
    "checking it against Open MPI 6's reader and lookup instead"
  run "$gen" check-json "$rules" "$work/expect.txt"
  cat "$work/stdout"
  [[ $status -eq 0 ]] || fail "ompi_rules_gen check-json exited $status"
  exit 0
fi

version=$("$ompi_info" --version | sed -n 's/^Open MPI v\([0-9][0-9.]*\).*/\1/p' | head -n 1)
IFS=. read -r major minor release _ <<<"$version.0.0"
[[ -n $major ]] || fail "cannot tell the Open MPI version from $ompi_info --version"
reads_v2=no
if ((major >= 6 || (major == 5 && (minor > 0 || release >= 7)) || (major == 4 && (minor > 1 || (minor == 1 && release >= 8))))); then
  reads_v2=yes
fi
extra=()
if "$ompi_info" --parsable --param coll tuned --level 9 | grep -q ':param:coll_tuned_verbose:'; then
  extra=(--mca coll_tuned_verbose 100)
fi

mapfile -t calls < <(awk '{ print $1 ":" $2 ":" $3 }' "$work/expect.txt")
result_lines() { grep -E '^(alltoall|alltoallv|allgather) [0-9]+ [0-9]+ [A-Za-z_]+$' "$1" || true; }

run "${mpirun[@]}" "$np" "$probe" "${calls[@]}"
[[ $status -eq 77 ]] && { cat "$work/stderr"; exit 77; }
[[ $status -eq 0 ]] || fail "the probe without rules exited $status"
result_lines "$work/stdout" >"$work/baseline.txt"

run "${mpirun[@]}" "$np" --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename "$rules" \
  --mca coll_base_verbose 100 "${extra[@]}" "$probe" "${calls[@]}"
[[ $status -eq 0 ]] || fail "the probe with $rules exited $status"
result_lines "$work/stdout" >"$work/ruled.txt"
cat "$work/stdout" "$work/stderr" >"$work/log.txt"

# coll/tuned took the communicators (else the file could not matter).
grep -qE 'coll:base:comm_select: selecting +tuned, priority +[0-9]+, Enabled' "$work/log.txt" ||
  fail "coll_base_verbose does not show coll/tuned selected"
# Complaints of coll/tuned's readers, 4.1 to 6.0 (the release builds of 4.1
# and 5.0 print none of them, but a debug build or Open MPI 6 would).
if grep -iE 'bad configure file|Ignoring user supplied|Fix errors|Could not read|Switching back|Failed to load|errors reading the rules|is not valid|Maximum outstanding requests|warning|error' \
  "$work/log.txt" >"$work/complaints.txt"; then
  fail "Open MPI complained: $(head -n 3 "$work/complaints.txt")"
fi

ignored=no
[[ $case_name == classic2 && $reads_v2 == no ]] && ignored=yes
differs=0 problems=0
echo "call: table / fixed decision / ran with the file"
while read -r collective comm block expected; do
  key="$collective $comm $block"
  base=$(awk -v k="$key" '$1 " " $2 " " $3 == k { print $4 }' "$work/baseline.txt")
  got=$(awk -v k="$key" '$1 " " $2 " " $3 == k { print $4 }' "$work/ruled.txt")
  [[ -n $base && $base != none ]] || fail "$key: the probe saw no algorithm function without rules"
  want=$expected
  [[ $expected == native ]] && want=$base
  [[ $expected != native && $expected != "$base" ]] && differs=$((differs + 1))
  [[ $ignored == yes ]] && want=$base
  echo "$key: $expected / $base / $got"
  if [[ $got != "$want" ]]; then
    echo "  MISMATCH: expected $want" >&2
    problems=$((problems + 1))
  fi
done <"$work/expect.txt"
((differs > 0)) || fail "every table choice equals the fixed decision: the test cannot tell that the file was read"
((problems == 0)) || fail "$problems calls ran another algorithm than expected"
if [[ $ignored == yes ]]; then
  echo "Open MPI $version predates format 2 (4.1.8 and 5.0.7 read it): it ignored the file without a message and" \
    "kept its fixed decision, as expected"
else
  echo "Open MPI $version ran the file's algorithm on every call ($differs differ from its fixed decision)"
fi
