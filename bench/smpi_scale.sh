#!/usr/bin/env bash
# WIP (issue 19, section 6): one SMPI sample per (shape, algorithm) at 64 KiB on the
# 512-rank shapes, plain link model, no simulated computation, folded buffers.
# Not finished: no --help, no report; see notes/issue19-plan.md.
set -u
cd "${OUT:?set OUT to a results directory holding the shapes}"
bench=${BENCH_SMPI:?path of topotune-bench-smpi}
for alg in ${ALGS:-capacity_scheduled pairwise tree_scheduled native linear}; do
  for t in ${SHAPES:-two-leaf-16x16 three-level-512 uneven-mixed}; do
    [[ -f $t.xml ]] || ${TOPOTUNE:?path of topotune} topology export --simgrid $t.xml --hostfile $t.hosts $t.yaml >/dev/null
    np=$(wc -l < $t.hosts)
    start=$SECONDS
    timeout ${LIMIT:-1800} smpirun -platform $t.xml -hostfile $t.hosts -np $np \
      --cfg=smpi/simulate-computation:no --cfg=smpi/lat-factor:0:1 --cfg=smpi/bw-factor:0:1 \
      --log=smpi_mpi.thresh:error --log=root.thresh:error \
      $bench --topology $t.yaml --collective ${COLL:-alltoall} --algorithms $alg --sizes 64KiB --iterations 1 --warmup 0 \
      --progress never --fold-buffers > run-$t-$alg.jsonl 2> run-$t-$alg.log
    rc=$?
    echo "$t $alg rc=$rc wall=$((SECONDS - start))s" >> runs.txt
    sed "s/^{/{\"shape\":\"$t\",/" run-$t-$alg.jsonl >> results.jsonl
  done
done
