set terminal pngcairo noenhanced size 1800,1680 font 'Sans,10'
set output '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5.png'
set multiplot layout 3,2 title 'four-switch-2-6-3-5: throughput (bytes moved between ranks / median time) against block size; the bound line is bytes / bound_s' font ',12'
set logscale x 2
set grid
set key outside right top vertical font ',8' spacing 0.9
set xlabel 'bytes per block'
set ylabel 'MB/s'
set datafile missing 'NaN'
set xtics ("1KiB" 1024, "4KiB" 4096, "16KiB" 16384, "64KiB" 65536, "256KiB" 262144)
set xrange [682.6666666666666:393216.0]
set yrange [0:57.5079]
set title 'alltoall, 16 ranks'
plot '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoall.dat' using 1:2 with linespoints lw 3 lc rgb 'black' pt 7 ps 0.8 title 'ompi:default', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoall.dat' using 1:3 with linespoints lw 3 lc rgb '#d62728' pt 5 ps 0.8 title 'topotune:tuned', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoall.dat' using 1:4 with linespoints lw 1.2 dt 2 lc rgb '#1f77b4' pt 1 ps 0.6 title 'ompi:linear', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoall.dat' using 1:5 with linespoints lw 1.2 dt 2 lc rgb '#2ca02c' pt 2 ps 0.6 title 'ompi:linear_sync', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoall.dat' using 1:6 with linespoints lw 1.2 dt 2 lc rgb '#9467bd' pt 3 ps 0.6 title 'ompi:modified_bruck', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoall.dat' using 1:7 with linespoints lw 1.2 dt 2 lc rgb '#8c564b' pt 4 ps 0.6 title 'ompi:pairwise', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoall.dat' using 1:8 with linespoints lw 1.2 lc rgb '#e377c2' pt 5 ps 0.6 title 'linear', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoall.dat' using 1:9 with linespoints lw 1.2 lc rgb '#17becf' pt 6 ps 0.6 title 'pairwise', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoall.dat' using 1:10 with linespoints lw 1.2 lc rgb '#bcbd22' pt 7 ps 0.6 title 'ring', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoall.dat' using 1:11 with linespoints lw 1.2 lc rgb '#ff7f0e' pt 8 ps 0.6 title 'bruck', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoall.dat' using 1:12 with linespoints lw 1.2 lc rgb '#7f7f7f' pt 9 ps 0.6 title 'phased_barrier', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoall.dat' using 1:13 with linespoints lw 1.2 lc rgb '#aec7e8' pt 10 ps 0.6 title 'tree_scheduled', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoall.dat' using 1:14 with linespoints lw 1.2 lc rgb '#98df8a' pt 11 ps 0.6 title 'mesh', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoall.dat' using 1:15 with linespoints lw 1.2 lc rgb '#c5b0d5' pt 12 ps 0.6 title 'grid3d', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoall.dat' using 1:16 with linespoints lw 1.2 lc rgb '#c49c94' pt 1 ps 0.6 title 'hypercube', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoall.dat' using 1:17 with lines lw 2 dt 3 lc rgb '#555555' title 'bound'
set xtics ("1KiB" 1024, "4KiB" 4096, "16KiB" 16384, "64KiB" 65536, "256KiB" 262144)
set xrange [682.6666666666666:393216.0]
set yrange [0:56.473]
set title 'alltoallv-uniform, 16 ranks'
plot '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-uniform.dat' using 1:2 with linespoints lw 3 lc rgb 'black' pt 7 ps 0.8 title 'ompi:default', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-uniform.dat' using 1:3 with linespoints lw 3 lc rgb '#d62728' pt 5 ps 0.8 title 'topotune:tuned', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-uniform.dat' using 1:4 with linespoints lw 1.2 dt 2 lc rgb '#1f77b4' pt 1 ps 0.6 title 'ompi:basic_linear', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-uniform.dat' using 1:5 with linespoints lw 1.2 dt 2 lc rgb '#2ca02c' pt 2 ps 0.6 title 'ompi:pairwise', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-uniform.dat' using 1:6 with linespoints lw 1.2 lc rgb '#9467bd' pt 3 ps 0.6 title 'linear', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-uniform.dat' using 1:7 with linespoints lw 1.2 lc rgb '#8c564b' pt 4 ps 0.6 title 'greedy_phased', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-uniform.dat' using 1:8 with linespoints lw 1.2 lc rgb '#e377c2' pt 5 ps 0.6 title 'a2a_phased', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-uniform.dat' using 1:9 with linespoints lw 1.2 lc rgb '#17becf' pt 6 ps 0.6 title 'greedy_phased_l3', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-uniform.dat' using 1:10 with linespoints lw 1.2 lc rgb '#bcbd22' pt 7 ps 0.6 title 'a2a_phased_l3', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-uniform.dat' using 1:11 with lines lw 2 dt 3 lc rgb '#555555' title 'bound'
set xtics ("1KiB" 1024, "4KiB" 4096, "16KiB" 16384, "64KiB" 65536, "256KiB" 262144)
set xrange [682.6666666666666:393216.0]
set yrange [0:58.9865]
set title 'alltoallv-skewed, 16 ranks'
plot '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-skewed.dat' using 1:2 with linespoints lw 3 lc rgb 'black' pt 7 ps 0.8 title 'ompi:default', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-skewed.dat' using 1:3 with linespoints lw 3 lc rgb '#d62728' pt 5 ps 0.8 title 'topotune:tuned', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-skewed.dat' using 1:4 with linespoints lw 1.2 dt 2 lc rgb '#1f77b4' pt 1 ps 0.6 title 'ompi:basic_linear', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-skewed.dat' using 1:5 with linespoints lw 1.2 dt 2 lc rgb '#2ca02c' pt 2 ps 0.6 title 'ompi:pairwise', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-skewed.dat' using 1:6 with linespoints lw 1.2 lc rgb '#9467bd' pt 3 ps 0.6 title 'linear', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-skewed.dat' using 1:7 with linespoints lw 1.2 lc rgb '#8c564b' pt 4 ps 0.6 title 'greedy_phased', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-skewed.dat' using 1:8 with linespoints lw 1.2 lc rgb '#e377c2' pt 5 ps 0.6 title 'a2a_phased', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-skewed.dat' using 1:9 with linespoints lw 1.2 lc rgb '#17becf' pt 6 ps 0.6 title 'greedy_phased_l3', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-skewed.dat' using 1:10 with linespoints lw 1.2 lc rgb '#bcbd22' pt 7 ps 0.6 title 'a2a_phased_l3', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-skewed.dat' using 1:11 with lines lw 2 dt 3 lc rgb '#555555' title 'bound'
set xtics ("1KiB" 1024, "4KiB" 4096, "16KiB" 16384, "64KiB" 65536, "256KiB" 262144)
set xrange [682.6666666666666:393216.0]
set yrange [0:53.2895]
set title 'alltoallv-sparse, 16 ranks'
plot '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-sparse.dat' using 1:2 with linespoints lw 3 lc rgb 'black' pt 7 ps 0.8 title 'ompi:default', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-sparse.dat' using 1:3 with linespoints lw 3 lc rgb '#d62728' pt 5 ps 0.8 title 'topotune:tuned', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-sparse.dat' using 1:4 with linespoints lw 1.2 dt 2 lc rgb '#1f77b4' pt 1 ps 0.6 title 'ompi:basic_linear', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-sparse.dat' using 1:5 with linespoints lw 1.2 dt 2 lc rgb '#2ca02c' pt 2 ps 0.6 title 'ompi:pairwise', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-sparse.dat' using 1:6 with linespoints lw 1.2 lc rgb '#9467bd' pt 3 ps 0.6 title 'linear', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-sparse.dat' using 1:7 with linespoints lw 1.2 lc rgb '#8c564b' pt 4 ps 0.6 title 'greedy_phased', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-sparse.dat' using 1:8 with linespoints lw 1.2 lc rgb '#e377c2' pt 5 ps 0.6 title 'a2a_phased', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-sparse.dat' using 1:9 with linespoints lw 1.2 lc rgb '#17becf' pt 6 ps 0.6 title 'greedy_phased_l3', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-sparse.dat' using 1:10 with linespoints lw 1.2 lc rgb '#bcbd22' pt 7 ps 0.6 title 'a2a_phased_l3', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/alltoallv-sparse.dat' using 1:11 with lines lw 2 dt 3 lc rgb '#555555' title 'bound'
set xtics ("1KiB" 1024, "4KiB" 4096, "16KiB" 16384, "64KiB" 65536, "256KiB" 262144)
set xrange [682.6666666666666:393216.0]
set yrange [0:216]
set title 'allgather, 16 ranks'
plot '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/allgather.dat' using 1:2 with linespoints lw 3 lc rgb 'black' pt 7 ps 0.8 title 'ompi:default', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/allgather.dat' using 1:3 with linespoints lw 3 lc rgb '#d62728' pt 5 ps 0.8 title 'topotune:tuned', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/allgather.dat' using 1:4 with linespoints lw 1.2 dt 2 lc rgb '#1f77b4' pt 1 ps 0.6 title 'ompi:bruck', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/allgather.dat' using 1:5 with linespoints lw 1.2 dt 2 lc rgb '#2ca02c' pt 2 ps 0.6 title 'ompi:linear', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/allgather.dat' using 1:6 with linespoints lw 1.2 dt 2 lc rgb '#9467bd' pt 3 ps 0.6 title 'ompi:neighbor', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/allgather.dat' using 1:7 with linespoints lw 1.2 dt 2 lc rgb '#8c564b' pt 4 ps 0.6 title 'ompi:recursive_doubling', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/allgather.dat' using 1:8 with linespoints lw 1.2 dt 2 lc rgb '#e377c2' pt 5 ps 0.6 title 'ompi:ring', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/allgather.dat' using 1:9 with linespoints lw 1.2 lc rgb '#17becf' pt 6 ps 0.6 title 'ring', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/allgather.dat' using 1:10 with linespoints lw 1.2 lc rgb '#bcbd22' pt 7 ps 0.6 title 'switch_ordered_ring', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/allgather.dat' using 1:11 with linespoints lw 1.2 lc rgb '#ff7f0e' pt 8 ps 0.6 title 'simultaneous_bcast', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/allgather.dat' using 1:12 with linespoints lw 1.2 lc rgb '#7f7f7f' pt 9 ps 0.6 title 'recursive_doubling', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/allgather.dat' using 1:13 with linespoints lw 1.2 lc rgb '#aec7e8' pt 10 ps 0.6 title 'link_scheduled', \
     '/work/main/bench/results/cluster-2026-11-26-f/four-switch-2-6-3-5/plot/allgather.dat' using 1:14 with lines lw 2 dt 3 lc rgb '#555555' title 'bound'
unset multiplot
