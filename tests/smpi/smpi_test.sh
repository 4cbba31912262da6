#!/usr/bin/env bash
# Tests of the kernels under SimGrid's SMPI, one case per ctest test. Every
# platform is written by `topotune topology export --simgrid`, so these also
# test the exporter end to end.
#
# Usage: smpi_test.sh CASE TOPOTUNE PLATFORM_CHECK BENCH_SMPI SMPIRUN SOURCE_DIR WORK_DIR
#   CASE            platform_fig1 | platform_bad_direction | fig1_np6 |
#                   fig1_every_kernel_alltoall | fig1_every_kernel_alltoallv |
#                   fig1_every_kernel_allgather | tree64_np64 | fold_and_trace |
#                   scale_script | ns3 (see below)
#   TOPOTUNE        the topotune CLI
#   PLATFORM_CHECK  tests/smpi/platform_check (loads a platform into SimGrid)
#   BENCH_SMPI      topotune-bench-smpi
#   SMPIRUN         smpirun
#   SOURCE_DIR      the source tree (for deploy/examples/)
#   WORK_DIR        scratch directory (recreated)
# Environment: PYTHON (default python3) checks the JSON Lines.
set -euo pipefail

case_name=$1 topotune=$2 platform_check=$3 bench=$4 smpirun=$5 source_dir=$6 work=$7
python=${PYTHON:-python3}
fig1=$source_dir/deploy/examples/faraj-yuan-fig1.yaml
rm -rf "$work" && mkdir -p "$work"
cd "$work"  # smpirun may leave temporary files in the current directory.

# shellcheck source=../testlib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../testlib.sh"
expect_status() { [[ $status -eq $1 ]] || fail "exit status $status, expected $1"; }

# export TOPOLOGY NAME: NAME.xml and NAME.hosts, checked by SimGrid itself.
export_platform() {
  run "$topotune" topology export --simgrid "$2.xml" --hostfile "$2.hosts" "$1"
  expect_status 0
  run "$platform_check" "$1" "$2.xml"
  expect_status 0
  cat "$work/stdout"
}

# smpi_bench NAME NP [SMPIRUN_ARGS... --] BENCH_ARGS...: runs
# topotune-bench-smpi on NAME.xml and NAME.hosts, JSON Lines into out.jsonl. Computation between MPI calls takes
# no simulated time (smpi/simulate-computation:no), so that the simulated
# times do not depend on how busy this machine is; SMPI's latency and
# bandwidth correction factors stay at their defaults (a calibrated TCP
# cluster).
smpi_bench() {
  local name=$1 np=$2 cfg=()
  shift 2
  if [[ " $* " == *" -- "* ]]; then
    while [[ $1 != -- ]]; do cfg+=("$1") && shift; done
    shift
  fi
  set +e
  "$smpirun" -platform "$name.xml" -hostfile "$name.hosts" -np "$np" --cfg=smpi/simulate-computation:no "${cfg[@]}" \
    --log=xbt_cfg.thres:warning --log=smpi_config.thres:warning "$bench" "$@" >"$work/out.jsonl" 2>"$work/stderr"
  status=$?
  set -e
  expect_status 0
}

# check_lines ALGORITHMS NP SIZES [BOUND_S]: out.jsonl has one verified line
# per (size, algorithm) in that order, without fallbacks, on NP ranks. With
# BOUND_S, every line reports that bound, and its time lies between the
# bound and three times the bound: SMPI's fluid model cannot beat the
# physical limit, and the exported speeds must be the topology's (a unit
# mistake, bits for bytes, is a factor of 8).
check_lines() {
  "$python" - "$work/out.jsonl" "$@" <<'EOF' || fail "bad JSON Lines (see out.jsonl)"
import json, sys
path, algorithms, np, sizes = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]), sys.argv[4].split(",")
bound = float(sys.argv[5]) if len(sys.argv) > 5 else None
lines = [json.loads(l) for l in open(path) if l.strip()]
want = [(int(s), a) for s in sizes for a in algorithms]
got = [(l["msize"], l["algorithm"]) for l in lines]
assert got == want, f"lines for {got}, expected {want}"
for l in lines:
    where = f'{l["algorithm"]} at {l["msize"]} B'
    assert l["nprocs"] == np, f'{where}: nprocs {l["nprocs"]}'
    assert l["verified"] is True and l["verify_errors"] == 0, f'{where}: not verified ({l["verify_errors"]} errors)'
    assert l["fallbacks"] == 0, f'{where}: {l["fallbacks"]} fallbacks'
    assert l["median_s"] > 0 or l["msize"] == 0, f'{where}: median_s {l["median_s"]}'
    if bound is not None:
        assert abs(l["bound_s"] - bound) <= 1e-9 * bound, f'{where}: bound_s {l["bound_s"]}, expected {bound}'
        assert bound <= l["median_s"] <= 3 * bound, f'{where}: median_s {l["median_s"]} not in [bound, 3 x bound]'
    print(f'{where}: median {l["median_s"]:.6f} s, {l.get("fraction_of_bound")} of the bound, verified')
EOF
}

case $case_name in
  platform_fig1)
    # SimGrid loads the exported Figure 1 platform: hosts, SPLITDUPLEX links,
    # and every host-to-host route along the tree with the right halves.
    export_platform "$fig1" fig1
    ;;
  platform_bad_direction)
    # platform_check catches a platform whose reverse route takes the same
    # half of a link as the forward one (traffic in both directions sharing
    # it, as with SHARED links).
    run "$topotune" topology export --simgrid fig1.xml "$fig1"
    expect_status 0
    sed -i 's|dst="n0" symmetrical="NO"><link_ctn id="n0-s0" direction="DOWN"|dst="n0" symmetrical="NO"><link_ctn id="n0-s0" direction="UP"|' fig1.xml
    grep -q 'dst="n0" symmetrical="NO"><link_ctn id="n0-s0" direction="UP"' fig1.xml || fail "sed did not apply"
    run "$platform_check" "$fig1" fig1.xml
    expect_status 1
    grep -qF "route n1 -> n0: n1-s0_UP n0-s0_UP; expected n1-s0_UP n0-s0_DOWN" stderr || fail "mismatch not reported"
    ;;
  fig1_np6)
    # tree_scheduled (9 contention-free phases) and the MPI library's own
    # alltoall on the six hosts of Figure 1, every byte checked. Bound: the
    # s0-s1 link carries 3 x 3 blocks each way: 9 x 64 KiB / 100 Mbit/s.
    export_platform "$fig1" fig1
    smpi_bench fig1 6 --collective alltoall --algorithms tree_scheduled,native --topology "$fig1" --verify \
      --sizes 64KiB --iterations 2
    check_lines tree_scheduled,native 6 65536 0.04718592
    cat "$work/out.jsonl"
    ;;
  ns3)
    # The ns-3 form of the export runs under SimGrid's packet-level model.
    # Two hosts behind one switch, 100 Mbit/s: a 2-rank alltoall sends one
    # 1 MiB flow each way at once, and on full-duplex point-to-point links
    # each reaches nearly the link rate (TCP over 1000-byte segments carries
    # 1000 of every 1042 bytes): between the bound and 1.25 times it. Then
    # Figure 1 (four routers, two-hop and longer paths): tree_scheduled and
    # the MPI library's own alltoall deliver every byte under ns-3 too.
    printf '%s\n' "switches: [{name: sw}]" "hosts: [{name: a}, {name: b}]" "links:" "  - [a, sw, 100Mbps]" \
      "  - [b, sw, 100Mbps]" >pair.yaml
    for name in pair fig1; do
      topology=pair.yaml
      [[ $name == fig1 ]] && topology=$fig1
      run "$topotune" topology export --ns3 --simgrid "$name.xml" --hostfile "$name.hosts" "$topology"
      expect_status 0
      grep -qF "full-duplex ns-3 links" stdout || fail "$name: the summary does not say ns-3"
      if grep -qE 'SPLITDUPLEX|direction=' "$name.xml"; then fail "$name.xml: fluid-form links or routes"; fi
    done
    # SimGrid 3.32's ns-3 binding aborts a flow larger than the TCP send
    # buffer ("total_bytes ... is not sent_bytes"; ns-3's default 128 KiB), so
    # the buffer is made larger than any message, as bench/smpi_scale.sh does.
    export NS_ATTRIBUTE_DEFAULT=ns3::TcpSocket::SndBufSize=1073741824
    smpi_bench pair 2 --cfg=network/model:ns-3 --cfg=ns3/seed:1 -- --collective alltoall --algorithms pairwise \
      --topology pair.yaml --verify --sizes 1MiB --iterations 1
    check_lines pairwise 2 1048576 0.08388608
    "$python" -c 'import json,sys; t=json.loads(open(sys.argv[1]).readline())["median_s"]; assert t <= 1.25 * 0.08388608, t' \
      "$work/out.jsonl" || fail "two opposite flows did not each reach the link rate under ns-3"
    smpi_bench fig1 6 --cfg=network/model:ns-3 --cfg=ns3/seed:1 -- --collective alltoall \
      --algorithms tree_scheduled,native --topology "$fig1" --verify --sizes 64KiB --iterations 1
    check_lines tree_scheduled,native 6 65536 0.04718592
    cat "$work/out.jsonl"
    ;;
  fig1_every_kernel_*)
    # Every registered kernel of the collective (topotune-bench's default)
    # runs under SMPI with its data checked: catches MPI calls SMPI lacks.
    collective=${case_name#fig1_every_kernel_}
    export_platform "$fig1" fig1
    smpi_bench fig1 6 --collective "$collective" --topology "$fig1" --verify --sizes 0,1,1000,64KiB --iterations 1 \
      --warmup 1
    algorithms=$("$python" -c 'import json,sys; print(",".join(dict.fromkeys(json.loads(l)["algorithm"] for l in open(sys.argv[1]))))' "$work/out.jsonl")
    [[ -n $algorithms ]] || fail "no output"
    check_lines "$algorithms" 6 0,1,1000,65536
    ;;
  tree64_np64)
    # 64 hosts under 8 leaf switches of 8, one root: 1 Gbit/s everywhere. A
    # leaf uplink carries 8 x 56 = 448 blocks each way, the bottleneck: the
    # bound is 448 x 64 KiB / 1 Gbit/s. tree_scheduled runs 448 phases.
    "$python" - tree64.yaml <<'EOF'
import sys
lines = ["# 8 leaf switches x 8 hosts under one root, 1 Gbit/s links (tests/smpi/smpi_test.sh).",
         "switches:", "  - name: root"] + [f"  - name: leaf{l}" for l in range(8)]
lines += ["hosts:"] + [f"  - name: n{8 * l + i}" for l in range(8) for i in range(8)]
lines += ["links:"] + [f"  - [leaf{l}, root, 1Gbps]" for l in range(8)]
lines += [f"  - [n{8 * l + i}, leaf{l}, 1Gbps]" for l in range(8) for i in range(8)]
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
EOF
    export_platform tree64.yaml tree64
    [[ $(wc -l <tree64.hosts) -eq 64 ]] || fail "tree64.hosts does not have 64 lines"
    start=$SECONDS
    smpi_bench tree64 64 --collective alltoall --algorithms tree_scheduled,native --topology tree64.yaml --verify \
      --sizes 64KiB --iterations 2
    check_lines tree_scheduled,native 64 65536 0.234881024
    echo "smpirun -np 64: $((SECONDS - start)) s"
    ;;
  fold_and_trace)
    # --fold-buffers (every rank's buffers and the host segments in SMPI's
    # shared memory, for the 512-rank runs of bench/smpi_scale.sh; bruck's
    # scratch too) and --phase-trace change no simulated time: the
    # host-combined kernels and rank-level ones on the three-level example (8 hosts x 2 ranks) time the
    # same folded and traced as with their own buffers, whose bytes --verify
    # checks (the trace's clock reads cost none: smpi/wtime:0). In the trace,
    # every rank of each host-combined kernel's timed call marks its steps in
    # order (enter, copy-in, host barrier, per phase: begin, sends posted,
    # sends done, receives done; exchanged, copy-out, done), phases rising,
    # times never going back, host_direct in one phase at most; the
    # rank-level kernels mark nothing, and bench/phase_report.py reads it.
    # With --verify, --fold-buffers is refused: folded bytes are shared,
    # there is nothing to check.
    three=$source_dir/deploy/examples/three-level.yaml
    export_platform "$three" three
    for run in "alltoall capacity_scheduled,host_direct,pairwise,bruck capacity_scheduled,host_direct" \
      "allgather node_aware_ring,native node_aware_ring"; do
      read -r collective algorithms traced <<<"$run"
      smpi_bench three 16 --cfg=smpi/wtime:0 -- --collective "$collective" --algorithms "$algorithms" \
        --topology "$three" --sizes 64KiB --iterations 2 --verify
      check_lines "$algorithms" 16 65536
      mv "$work/out.jsonl" "$work/own-$collective.jsonl"
      smpi_bench three 16 --cfg=smpi/wtime:0 -- --collective "$collective" --algorithms "$algorithms" \
        --topology "$three" --sizes 64KiB --iterations 2 --fold-buffers --phase-trace "$work/trace-$collective.jsonl"
      "$python" - "$work/own-$collective.jsonl" "$work/out.jsonl" "$work/trace-$collective.jsonl" "$traced" <<'EOF' ||
import collections, json, sys
own, folded, trace = ([json.loads(l) for l in open(p) if l.strip()] for p in sys.argv[1:4])
traced = sys.argv[4].split(",")
assert [l["algorithm"] for l in own] == [l["algorithm"] for l in folded], "different algorithms"
for a, b in zip(own, folded):
    assert b["verified"] is False, f'{b["algorithm"]}: the folded run claims to be verified'
    assert abs(a["median_s"] - b["median_s"]) <= 1e-9 * a["median_s"], \
        f'{a["algorithm"]}: {a["median_s"]} s with its own buffers, {b["median_s"]} s folded and traced'
    print(f'{a["algorithm"]}: {a["median_s"]:.6f} s with its own buffers, and folded and traced')
marks = collections.defaultdict(list)
for m in trace:
    marks[(m["algorithm"], m["call"], m["rank"])].append(m)
assert sorted({a for a, _, _ in marks}) == sorted(traced), f"traced {sorted({a for a, _, _ in marks})}, not {traced}"
steps = ["phase_begin", "sends_posted", "sends_done", "recvs_done"]
for algorithm in traced:
    calls = sorted({c for a, c, _ in marks if a == algorithm})
    assert len(calls) == 2, f"{algorithm}: calls {calls}, expected the two timed ones"
    for call in calls:
        for rank in range(16):
            seq = marks.get((algorithm, call, rank))
            where = f"{algorithm} call {call} rank {rank}"
            assert seq, f"{where}: no marks"
            events = [m["event"] for m in seq]
            assert events[:3] == ["enter", "copied_in", "gathered"], f"{where}: {events}"
            assert events[-3:] == ["exchanged", "copied_out", "done"], f"{where}: {events}"
            middle = seq[3:-3]
            assert len(middle) % 4 == 0, f"{where}: {events}"
            phases = []
            for i in range(0, len(middle), 4):
                group = middle[i:i + 4]
                assert [m["event"] for m in group] == steps, f"{where}: {events}"
                assert len({m["value"] for m in group}) == 1, f"{where}: mixed phases {group}"
                phases.append(group[0]["value"])
            assert phases == sorted(set(phases)), f"{where}: phases {phases}"
            assert algorithm != "host_direct" or phases in ([], [0]), f"{where}: phases {phases}"
            times = [m["t_s"] for m in seq]
            assert times == sorted(times) and times[0] >= 0, f"{where}: times {times}"
    print(f"{algorithm}: every rank's steps in order")
EOF
        fail "$collective: folded times differ or a bad phase trace (see trace-$collective.jsonl)"
      run "$python" "$source_dir/bench/phase_report.py" "$work/trace-$collective.jsonl"
      expect_status 0
      for algorithm in ${traced//,/ }; do
        grep -qF "$algorithm" "$work/stdout" || fail "phase_report.py says nothing of $algorithm"
      done
    done
    set +e
    "$smpirun" -platform three.xml -hostfile three.hosts -np 16 --log=root.thres:critical "$bench" --topology "$three" \
      --fold-buffers --verify >"$work/stdout" 2>"$work/stderr"
    status=$?
    set -e
    expect_status 2
    grep -qF "nothing to --verify" "$work/stderr" || fail "the refusal does not say why"
    ;;
  scale_script)
    # bench/smpi_scale.sh end to end on a small shape (the three-level
    # example, halved to one rank per host by --slots-divisor 2): both runs
    # succeed, the table has both algorithms with their fraction of the
    # bound and the model's line; usage errors (a bad value, a missing value, an unknown option)
    # exit 2.
    script=$source_dir/bench/smpi_scale.sh
    build=$(cd "$(dirname "$topotune")/../.." && pwd)
    run env BUILD="$build" SMPIRUN="$smpirun" "$script" --shapes "$source_dir/deploy/examples/three-level.yaml" \
      --algorithms capacity_scheduled,pairwise --slots-divisor 2 --out "$work/results"
    expect_status 0
    cat "$work/results/tables.txt"
    grep -qF "== SimGrid three-level-div2 (8 ranks), alltoall, 64KiB blocks" results/tables.txt || fail "no title"
    grep -qF "topotune schedule's model (64KiB blocks" results/tables.txt || fail "no model line"
    for algorithm in capacity_scheduled pairwise; do
      grep -qE "^   modelled fraction of the bound, $algorithm: 64KiB [01]\.[0-9]+" results/tables.txt ||
        fail "no modelled fraction for $algorithm"
    done
    want=$("$topotune" schedule --as-served --topology results/three-level-div2/three-level-div2.yaml \
      --algorithm capacity_scheduled --msize 64KiB | sed -n 's/.*fraction of the bound \([0-9.]*\).*/\1/p')
    grep -qF "modelled fraction of the bound, capacity_scheduled: 64KiB $want" results/tables.txt ||
      fail "capacity_scheduled's modelled fraction is not $want, that of the schedule the kernel runs"
    for algorithm in capacity_scheduled pairwise; do
      grep -qE "^ *$algorithm .*\[[01]\.[0-9]+\]" results/tables.txt || fail "no row with a fraction for $algorithm"
      grep -qF "three-level-div2 $algorithm ranks=8 status=0 " results/runs.txt || fail "runs.txt lacks $algorithm"
    done
    [[ $(grep -c "slots: 1}" results/three-level-div2/three-level-div2.yaml) -eq 8 ]] || fail "slots not halved"
    run "$script" --slots-divisor 0
    expect_status 2
    grep -qF -- "--slots-divisor takes a positive number" stderr || fail "no usage error for --slots-divisor 0"
    run "$script" --shapes no-such-shape
    expect_status 2
    grep -qF "no shape 'no-such-shape'" stderr || fail "no usage error for an unknown shape"
    run "$script" --size
    expect_status 2
    grep -qF -- "--size needs a value" stderr || fail "no usage error for --size without a value"
    run "$script" --no-such-option
    expect_status 2
    grep -qF "unknown argument '--no-such-option'" stderr || fail "no usage error for an unknown option"
    # Under ns-3 (--network ns-3), one simulation per size, both in the table.
    run env BUILD="$build" SMPIRUN="$smpirun" "$script" --shapes "$source_dir/deploy/examples/three-level.yaml" \
      --algorithms host_direct --slots-divisor 2 --network ns-3 --sizes 1KiB,64KiB --out "$work/ns3"
    expect_status 0
    grep -qF "three-level-div2 (8 ranks), alltoall, 1KiB,64KiB blocks, ns-3 packet-level network" ns3/tables.txt ||
      fail "no ns-3 title"
    grep -qE "^ *host_direct .*\[[01]\.[0-9]+\].*\[[01]\.[0-9]+\]" ns3/tables.txt || fail "no ns-3 row with both sizes"
    [[ $(grep -c "network/model:ns-3" ns3/three-level-div2/host_direct.log) -eq 2 ]] || fail "not one simulation per size"
    grep -qF "network/model:ns-3" ns3/meta.txt || fail "meta.txt does not say ns-3"
    run "$script" --network ns3
    expect_status 2
    grep -qF -- "--network takes fluid or ns-3" stderr || fail "no usage error for --network ns3"
    run env BUILD="$build" "$script" --network ns-3 --shapes two-leaf-16x16 --algorithms pairwise --out "$work/big"
    expect_status 2
    grep -qF "512 ranks; ns-3 simulates every packet and takes at most 128" stderr || fail "ns-3 at 512 ranks not refused"
    # --message-overhead: every send keeps its rank busy that long, so linear
    # (7 sends per rank here, posted one after the other, the first one's
    # transfer overlapping the next ones) takes at least 6 x 10 us longer
    # than without (69 us here).
    for overhead in none loaded; do
      flags=()
      [[ $overhead == none ]] || flags=(--message-overhead 1e-5,1e-5)
      run env BUILD="$build" SMPIRUN="$smpirun" "$script" --shapes "$source_dir/deploy/examples/three-level.yaml" \
        --algorithms linear --slots-divisor 2 --sizes 1KiB "${flags[@]}" --out "$work/overhead-$overhead"
      expect_status 0
    done
    grep -qF "1e-5 s per message sent and 1e-5 s per message received" overhead-loaded/tables.txt ||
      fail "the table does not say the per-message overhead"
    grep -qF "smpi/barrier:ompi_bruck" overhead-loaded/three-level-div2/linear.log || fail "not the dissemination barrier"
    "$python" - overhead-none/three-level-div2/linear.jsonl overhead-loaded/three-level-div2/linear.jsonl <<'EOF' ||
import json, sys
plain, loaded = (json.loads(open(p).readline())["median_s"] for p in sys.argv[1:3])
assert loaded - plain >= 6 * 1e-5, f"linear: {plain} s, {loaded} s with 10 us per message and side"
print(f"linear at 1 KiB: {plain * 1e6:.1f} us, {loaded * 1e6:.1f} us with 10 us per message and side")
EOF
      fail "the per-message overhead did not cost what it should"
    run "$script" --message-overhead 2e-6
    expect_status 2
    grep -qF -- "--message-overhead takes SEND_S,RECV_S" stderr || fail "no usage error for --message-overhead 2e-6"
    run "$script" --help
    expect_status 0
    grep -qF -- "--slots-divisor D" stdout || fail "--help lacks --slots-divisor"
    ;;
  *)
    fail "unknown case"
    ;;
esac
echo "PASS [$case_name]"
