// Correctness of every alltoallv kernel, byte for byte, on the standard case
// matrix (alltoallv_check.h), on MPI_COMM_WORLD (half the cases through a
// private duplicate, as the driver sets up), on the halves of a split
// communicator, and on an intercommunicator (must fall back). Built by hand,
// from the repository root, with B the build directory:
//   mpicxx -std=c++20 -I. bench_kernels/alltoallv/alltoallv_check_test.cc
//     bench_kernels/alltoallv/alltoallv_check.cc B/bench_kernels/libtopotune_kernels.a
//     B/tuner/libtopotune_tuner.a -lfmt -lyaml-cpp -o alltoallv_check_test
//   mpirun -np N ./alltoallv_check_test [kernel-name ...]
// Exits 0 when every check passes; prints each failure with its case.
#include "bench_kernels/alltoallv/alltoallv_check.h"

#include <mpi.h>

#include <cstdio>
#include <set>
#include <string>

#include "bench_kernels/alltoallv/kernels.h"

using namespace topotune::kernels;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int n = 0, me = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  std::set<std::string> only(argv + 1, argv + argc);

  KernelContext with_private;
  MPI_Comm_dup(MPI_COMM_WORLD, &with_private.private_comm);
  MPI_Comm half = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half);

  int checks = 0, failures = 0;
  auto report = [&](const KernelInfo& k, const std::string& where, const check::AlltoallvCase& c,
                    const check::CheckResult& r, bool expect_fallback) {
    ++checks;
    std::string problem;
    if (!r.ok)
      problem = r.error.empty() ? "failed on another rank" : r.error;
    else if (r.fell_back != expect_fallback)
      problem = expect_fallback ? "did not fall back" : "fell back";
    if (problem.empty()) return;
    ++failures;
    std::printf("FAIL alltoallv/%s N=%d %s %s rank %d: %s\n", std::string(k.name).c_str(), n, where.c_str(),
                check::Describe(c).c_str(), me, problem.c_str());
    std::fflush(stdout);
  };

  for (const KernelInfo& k : AlltoallvKernels()) {
    if (!only.empty() && !only.count(std::string(k.name))) continue;
    for (const check::AlltoallvCase& c : check::DefaultAlltoallvCases(k)) {
      const KernelContext& ctx = c.seed % 2 ? with_private : KernelContext{};
      check::CheckResult r = check::CheckAlltoallv(k, c, MPI_COMM_WORLD, ctx);
      report(k, c.seed % 2 ? "world+private" : "world", c, r, check::ExpectAlltoallvFallback(k, c, n));
    }
    int half_n = 0;
    MPI_Comm_size(half, &half_n);
    for (check::Pattern p : {check::Pattern::kRandom, check::Pattern::kSkewed}) {
      check::AlltoallvCase c{p, 13, check::TypeCase::kMixed, false, 99, check::PlanMode::kMatching};
      report(k, "split", c, check::CheckAlltoallv(k, c, half), check::ExpectAlltoallvFallback(k, c, half_n));
    }
    if (n >= 2) {
      ++checks;
      std::string e = check::CheckAlltoallvIntercomm(k, MPI_COMM_WORLD);
      if (!e.empty()) {
        ++failures;
        std::printf("FAIL alltoallv/%s N=%d intercomm rank %d: %s\n", std::string(k.name).c_str(), n, me, e.c_str());
      }
    }
  }

  int total_failures = 0;
  MPI_Allreduce(&failures, &total_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0)
    std::printf("alltoallv N=%d: %d checks per rank, %d failures over all ranks\n", n, checks, total_failures);
  MPI_Comm_free(&half);
  MPI_Comm_free(&with_private.private_comm);
  MPI_Finalize();
  return total_failures == 0 ? 0 : 1;
}
