#!/usr/bin/env bash
# Tests of the topotune-bench program, one case per ctest test.
#
# Usage: bench_test.sh CASE BENCH TOPOLOGY WORK_DIR ALGORITHMS MPIRUN... NP_FLAG
#   CASE        help | unknown_algorithm | bad_size | placement_mismatch |
#               verify_alltoall | verify_alltoallv | verify_allgather |
#               interleave_alltoallv | race_alltoall
#   BENCH       the topotune-bench executable
#   TOPOLOGY    deploy/examples/two-switch-4x4.yaml (hosts h0..h3 on s0, h4..h7 on s1)
#   WORK_DIR    scratch directory for outputs (recreated)
#   ALGORITHMS  the collective's registered algorithms, comma-separated
#               (verify_* cases: the output must have exactly these, and
#               "mpi", the public MPI function that --via-mpi times first)
#   MPIRUN...   the launcher with its flags, ending with its -np flag
# Environment: PYTHON (default python3) checks the JSON Lines.
set -euo pipefail

case_name=$1 bench=$2 topology=$3 work=$4 algorithms=$5
shift 5
mpirun=("$@")
python=${PYTHON:-python3}
rm -rf "$work" && mkdir -p "$work"

# shellcheck source=../testlib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../testlib.sh"

expect_status() { [[ $status -eq $1 ]] || fail "exit status $status, expected $1"; }
expect_in() { grep -qF -- "$2" "$work/$1" || fail "$1 lacks '$2'"; }

case $case_name in
  help)
    run "$bench" --help
    expect_status 0
    for text in EXAMPLES "EXIT STATUS" "bytes_per_s" "bytes_per_call / mean_s" "N x (N-1) x msize" \
      coll_tuned_alltoall_algorithm "--label-native" "--verify" "--time-budget" ALGORITHMS; do
      expect_in stdout "$text"
    done
    ;;
  unknown_algorithm)
    run "$bench" --collective alltoall --algorithms native,no_such_algorithm
    expect_status 2
    expect_in stderr "unknown alltoall algorithm 'no_such_algorithm'"
    expect_in stderr "valid algorithms for alltoall: native"
    run "$bench" --collective no_such_collective
    expect_status 2
    expect_in stderr "valid collectives: alltoall, alltoallv, allgather"
    ;;
  bad_size)
    run "$bench" --sizes 1,12XB
    expect_status 2
    expect_in stderr "--sizes: '12XB' is not a size"
    run "$bench" --min-size 1MiB --max-size 1KiB
    expect_status 2
    expect_in stderr "larger than --max-size"
    run "$bench" --collective alltoall --pattern skewed
    expect_status 2
    expect_in stderr "--pattern applies to --collective alltoallv only"
    # Folded buffers exist only under SimGrid SMPI (topotune-bench-smpi).
    run "$bench" --fold-buffers
    expect_status 2
    expect_in stderr "--fold-buffers is for topotune-bench-smpi"
    ;;
  placement_mismatch)
    # The file has 8 hosts of one slot each; 3 ranks do not fit that.
    run "${mpirun[@]}" 3 "$bench" --algorithms native --sizes 1 --topology "$topology"
    expect_status 2
    expect_in stderr "has 8 ranks but the communicator has 3"
    run "${mpirun[@]}" 2 "$bench" --algorithms native --sizes 1 --topology "$topology" --hosts h0,nowhere
    expect_status 2
    expect_in stderr "nowhere"
    ;;
  verify_*)
    collective=${case_name#verify_}
    extra=()
    [[ $collective == alltoallv ]] && extra=(--pattern random --seed 3)
    # Four ranks, two per switch; sizes include 0, 1 and a non-multiple of 8.
    run "${mpirun[@]}" 4 "$bench" --collective "$collective" --verify --sizes 0,1,1000,65537 \
      --warmup 1 --iterations 3 --topology "$topology" --hosts h0,h1,h4,h5 --label-native ompi:default \
      --via-mpi mpi:public --times --out "$work/out.jsonl" "${extra[@]}"
    expect_status 0
    # Without a topology, context kernels fall back; data must still verify.
    run "${mpirun[@]}" 4 "$bench" --collective "$collective" --verify --sizes 100 --warmup 0 --iterations 2 \
      --via-mpi mpi:public --out "$work/no-topology.jsonl" "${extra[@]}"
    expect_status 0
    "$python" - "$work/out.jsonl" "$work/no-topology.jsonl" "$collective" "$algorithms" <<'EOF' ||
import json, sys
path, path_nt, collective, algorithms = sys.argv[1:5]
# --via-mpi adds algorithm "mpi" (the public MPI function), first at every size.
algorithms = ["mpi"] + algorithms.split(",")
sizes = [0, 1, 1000, 65537]
def load(p):
    with open(p) as f:
        return [json.loads(line) for line in f if line.strip()]
lines = load(path)
want = {(a, s) for a in algorithms for s in sizes}
got = [(o["algorithm"], o["msize"]) for o in lines]
assert len(got) == len(want) == len(set(got)) and set(got) == want, f"lines for {sorted(got)}, expected {sorted(want)}"
for i in range(0, len(got), len(algorithms)):
    assert got[i][0] == "mpi", f"line {i}: the public MPI function is not first at its size: {got[i]}"
keys = ["collective", "algorithm", "label", "nprocs", "ranks_per_node", "msize", "iterations", "min_s", "median_s",
        "p95_s", "max_s", "bytes_per_call", "bytes_per_s", "bound_s", "fraction_of_bound", "verified", "verify_errors",
        "fallbacks", "times_s"]
for o in lines:
    where = f"{o.get('algorithm')} at {o.get('msize')}"
    missing = [k for k in keys if k not in o]
    assert not missing, f"{where}: missing keys {missing}"
    assert "tcp_timeouts" not in o and "tcp_retrans_segs" not in o, f"{where}: TCP counters without --tcp-counters"
    assert o["collective"] == collective and o["nprocs"] == 4 and o["ranks_per_node"] == 1, where
    labels = {"native": "ompi:default", "mpi": "mpi:public"}
    assert o["label"] == labels.get(o["algorithm"], o["algorithm"]), where
    assert o["verified"] is True and o["verify_errors"] == 0, f"{where}: not verified"
    assert o["iterations"] == 3 and len(o["times_s"]) == 3, where
    assert 0 <= o["min_s"] <= o["median_s"] <= o["p95_s"] <= o["max_s"], f"{where}: statistics out of order"
    assert o["max_s"] == max(o["times_s"]) and o["min_s"] == min(o["times_s"]), where
    assert 0 <= o["fallbacks"] <= (0 if o["algorithm"] == "mpi" else 3), where
    if collective == "alltoallv":
        assert o["pattern"] == "random", where
    else:
        assert o["bytes_per_call"] == 4 * 3 * o["msize"], f"{where}: bytes_per_call"
    if o["msize"] > 0 and o["bytes_per_call"] > 0:
        assert o["bytes_per_s"] > 0 and o["bound_s"] > 0 and o["fraction_of_bound"] > 0, f"{where}: rates"
        assert abs(o["bytes_per_s"] * o["mean_s"] - o["bytes_per_call"]) <= 1e-6 * o["bytes_per_call"], where
        assert abs(o["fraction_of_bound"] * o["mean_s"] - o["bound_s"]) <= 1e-9 + 1e-6 * o["bound_s"], where
for o in load(path_nt):
    assert o["verified"] is True and o["bound_s"] is None and o["fraction_of_bound"] is None, o
assert len(load(path_nt)) == len(algorithms), "no-topology run: one line per algorithm"
print(f"{len(lines)} lines checked")
EOF
      fail "the JSON Lines output does not check out"
    ;;
  interleave_*)
    collective=${case_name#interleave_}
    # Rounds in random order, the A/A copy of native, adaptive sampling
    # bounded by --max-rounds, TCP counters per algorithm; every call's data
    # checked (alltoallv: with the library's agreement before every kernel
    # but native, as tuning has).
    extra=()
    [[ $collective == alltoallv ]] && extra=(--alltoallv-agreement)
    run "${mpirun[@]}" 4 "$bench" --collective "$collective" --verify --sizes 1000,65537 --warmup 1 \
      --interleave --iterations 3 --size-budget 30 --max-rounds 5 --order-seed 42 --aa-control "${extra[@]}" \
      --topology "$topology" --hosts h0,h1,h4,h5 --times --tcp-counters --out "$work/out.jsonl"
    expect_status 0
    run "$bench" --time-budget 1 --interleave
    expect_status 2
    if [[ $collective == alltoallv ]]; then
      # A seeded pattern over 3 size matrices, round r on matrix r mod 3,
      # every call's data checked against its own matrix.
      run "${mpirun[@]}" 4 "$bench" --collective alltoallv --verify --sizes 4096 --warmup 1 --interleave \
        --iterations 4 --pattern skewed --matrices 3 --alltoallv-agreement --topology "$topology" \
        --hosts h0,h1,h4,h5 --times --out "$work/matrices.jsonl"
      expect_status 0
      "$python" - "$work/matrices.jsonl" <<'EOF' || fail "the 3-matrix output does not check out"
import json, sys
lines = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
assert lines, "no lines"
for o in lines:
    assert o["matrices"] == 3 and o["iterations"] == 4 and o["verified"] is True, o["label"]
    assert o["verify_errors"] == 0 and o["bound_s"] > 0, o["label"]
print(f"{len(lines)} lines over 3 matrices checked")
EOF
    fi
    "$python" - "$work/out.jsonl" "$algorithms" <<'EOF' ||
import json, sys
path, algorithms = sys.argv[1:3]
names = algorithms.split(",") + ["native:aa"]
lines = [json.loads(line) for line in open(path) if line.strip()]
for size in (1000, 65537):
    at = [o for o in lines if o["msize"] == size]
    assert sorted(o["label"] for o in at) == sorted(names), f"{size}: labels {[o['label'] for o in at]}"
    rounds = {o["iterations"] for o in at}
    # Every round times every algorithm once: one count per size, 3 to 5.
    assert len(rounds) == 1 and 3 <= rounds.pop() <= 5, f"{size}: iterations {[o['iterations'] for o in at]}"
    for o in at:
        where = f"{o['label']} at {size}"
        assert o["order_seed"] == 42, where
        assert o["verified"] is True and o["verify_errors"] == 0, f"{where}: not verified"
        assert abs(o["mean_s"] - sum(o["times_s"]) / len(o["times_s"])) <= 1e-12 + 1e-9 * o["mean_s"], where
        assert o["algorithm"] == ("native" if o["label"] == "native:aa" else o["label"]), where
        # --tcp-counters: this machine's counters, summed over the placement's four hosts.
        for key in ("tcp_timeouts", "tcp_retrans_segs"):
            assert isinstance(o.get(key), int) and o[key] >= 0, f"{where}: {key} {o.get(key)}"
print(f"{len(lines)} lines checked")
EOF
      fail "the interleaved JSON Lines output does not check out"
    ;;
  race_*)
    collective=${case_name#race_}
    # Racing at the checkpoints (3, 4, 6, 9, ... rounds): whoever leaves,
    # every rank leaves it at the same round (a rank that went on alone
    # would hang the job), and every call's data is checked.
    run "${mpirun[@]}" 4 "$bench" --collective "$collective" --verify --sizes 4096,262144 --warmup 1 \
      --interleave --iterations 3 --size-budget 20 --max-rounds 30 --race --order-seed 7 --aa-control \
      --topology "$topology" --hosts h0,h1,h4,h5 --times --out "$work/race.jsonl"
    expect_status 0
    # A candidate time limit no call can meet: every candidate leaves at its
    # first warm-up call, before its rounds; native and its A/A copy go on.
    run "${mpirun[@]}" 4 "$bench" --collective "$collective" --verify --sizes 4096 --warmup 2 \
      --interleave --iterations 3 --aa-control --candidate-limit 1e-9 \
      --topology "$topology" --hosts h0,h1,h4,h5 --times --out "$work/limit.jsonl"
    expect_status 0
    "$python" - "$work/race.jsonl" "$work/limit.jsonl" "$algorithms" <<'EOF' ||
import json, sys
race, limit, algorithms = sys.argv[1:4]
names = sorted(algorithms.split(",") + ["native:aa"])
def load(path):
    return [json.loads(line) for line in open(path) if line.strip()]
lines = load(race)
for size in (4096, 262144):
    at = {o["label"]: o for o in lines if o["msize"] == size}
    assert sorted(at) == names, f"{size}: labels {sorted(at)}"
    rounds = at["native"]["iterations"]
    assert rounds >= 3 and at["native:aa"]["iterations"] == rounds, f"{size}: native {rounds} rounds"
    assert len({o["size_seconds"] for o in at.values()}) == 1 and at["native"]["size_seconds"] > 0, size
    for label, o in at.items():
        where = f"{label} at {size}"
        assert o["verified"] is True and o["verify_errors"] == 0, f"{where}: not verified"
        assert len(o["times_s"]) == o["iterations"], where
        if "dropped" in o:
            assert label not in ("native", "native:aa"), f"{where}: the reference left"
            assert o["dropped"].startswith(("cannot beat native", "slower than ")), f"{where}: {o['dropped']}"
            assert 3 <= o["iterations"] <= rounds, f"{where}: {o['iterations']} of {rounds} rounds"
        else:
            assert o["iterations"] == rounds, f"{where}: {o['iterations']} of {rounds} rounds"
for o in load(limit):
    where = o["label"]
    if o["algorithm"] == "native":
        assert "dropped" not in o and o["iterations"] == 3, where
    else:
        assert o["iterations"] == 0 and o["times_s"] == [], where
        assert "over the candidate time limit" in o["dropped"], f"{where}: {o.get('dropped')}"
print(f"{len(lines)} racing lines checked")
EOF
      fail "the racing JSON Lines output does not check out"
    ;;
  *)
    echo "bench_test.sh: unknown case '$case_name'" >&2
    exit 2
    ;;
esac
echo "PASS [$case_name]"
