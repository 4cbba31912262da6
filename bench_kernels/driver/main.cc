// topotune-bench: times MPI collective kernels over message sizes. All of it
// lives in the topotune::bench_driver library (bench_kernels/driver/cli.h).
#include "bench_kernels/driver/cli.h"

int main(int argc, char** argv) { return topotune::bench::Main(argc, argv); }
