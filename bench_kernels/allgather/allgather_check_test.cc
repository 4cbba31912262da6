// Correctness of every allgather kernel, byte for byte, on the standard case
// matrix (allgather_check.h): on MPI_COMM_WORLD (half the cases through a
// private duplicate, as the driver sets up), on the halves of a split
// communicator, and on an intercommunicator (must fall back). Kernels that
// need a context run on every test layout (TestRingLayouts) and must not
// fall back there; without a context, or with a broken one, they must.
// Built by hand, from the repository root, with B the build directory:
//   mpicxx -std=c++20 -I. bench_kernels/allgather/allgather_check_test.cc
//     bench_kernels/allgather/allgather_check.cc B/bench_kernels/libtopotune_kernels.a
//     B/tuner/libtopotune_tuner.a -lfmt -lyaml-cpp -o allgather_check_test
//   mpirun -np N ./allgather_check_test [kernel-name ...]
// Exits 0 when every check passes; prints each failure with its case.
#include "bench_kernels/allgather/allgather_check.h"

#include <mpi.h>

#include <cstdio>
#include <set>
#include <string>

#include "bench_kernels/allgather/kernels.h"

using namespace topotune::kernels;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int n = 0, me = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  std::set<std::string> only(argv + 1, argv + argc);

  MPI_Comm private_comm = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &private_comm);
  MPI_Comm half = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half);
  int half_n = 0;
  MPI_Comm_size(half, &half_n);

  int checks = 0, failures = 0;
  auto fail = [&](const KernelInfo& k, const std::string& where, const std::string& what) {
    ++failures;
    std::printf("FAIL allgather/%s N=%d %s rank %d: %s\n", std::string(k.name).c_str(), n, where.c_str(), me,
                what.c_str());
    std::fflush(stdout);
  };
  auto run = [&](const KernelInfo& k, const std::string& where, const check::AllgatherCase& c, MPI_Comm comm,
                 const KernelContext& ctx, bool expect_fallback) {
    ++checks;
    check::AllgatherCheckResult r = check::CheckAllgather(k, c, comm, ctx);
    std::string problem;
    if (!r.ok)
      problem = r.error.empty() ? "failed on another rank" : r.error;
    else if (r.fell_back != expect_fallback)
      problem = expect_fallback ? "did not fall back" : "fell back";
    if (!problem.empty()) fail(k, where + " " + check::Describe(c), problem);
  };

  const std::vector<check::RingLayout> layouts = check::TestRingLayouts(n);
  const std::vector<check::RingLayout> half_layouts = check::TestRingLayouts(half_n);
  const std::vector<check::AllgatherCase> cases = check::DefaultAllgatherCases();
  for (const KernelInfo& k : AllgatherKernels()) {
    if (!only.empty() && !only.count(std::string(k.name))) continue;
    if (!k.needs_context) {
      for (const check::AllgatherCase& c : cases) {
        KernelContext ctx;
        if (c.seed % 2) ctx.private_comm = private_comm;
        run(k, c.seed % 2 ? "world+private" : "world", c, MPI_COMM_WORLD, ctx, false);
      }
      run(k, "split", {13, check::TypeCase::kMixed, false, 99}, half, {}, false);
    } else {
      for (const check::RingLayout& l : layouts) {
        for (const check::AllgatherCase& c : cases) {
          KernelContext ctx;
          ctx.ring_order = &l.ring_order;
          ctx.switch_of_rank = &l.switch_of_rank;
          if (c.seed % 2) ctx.private_comm = private_comm;
          run(k, "world [" + l.name + "]", c, MPI_COMM_WORLD, ctx, false);
        }
      }
      for (const check::RingLayout& l : half_layouts) {
        KernelContext ctx;
        ctx.ring_order = &l.ring_order;
        ctx.switch_of_rank = &l.switch_of_rank;
        run(k, "split [" + l.name + "]", {13, check::TypeCase::kMixed, true, 98}, half, ctx, false);
      }
      // Missing or broken context: every rank must decline.
      const check::RingLayout& l = layouts[0];
      std::vector<int> short_order(l.ring_order.begin(), l.ring_order.end() - 1);
      std::vector<int> repeated = l.ring_order;
      repeated[0] = repeated.back();
      std::vector<int> short_switches(l.switch_of_rank.begin(), l.switch_of_rank.end() - 1);
      KernelContext none, no_switches, bad_order, bad_order2, bad_switches;
      no_switches.ring_order = &l.ring_order;
      bad_order.ring_order = &short_order;
      bad_order.switch_of_rank = &l.switch_of_rank;
      bad_order2.ring_order = &repeated;
      bad_order2.switch_of_rank = &l.switch_of_rank;
      bad_switches.ring_order = &l.ring_order;
      bad_switches.switch_of_rank = &short_switches;
      const check::AllgatherCase c{13, check::TypeCase::kByte, false, 97};
      run(k, "no context", c, MPI_COMM_WORLD, none, true);
      run(k, "short ring order", c, MPI_COMM_WORLD, bad_order, true);
      if (n >= 2) run(k, "ring order with a repeat", c, MPI_COMM_WORLD, bad_order2, true);
      run(k, "no switch_of_rank", c, MPI_COMM_WORLD, no_switches, k.name == "link_scheduled");
      run(k, "short switch_of_rank", c, MPI_COMM_WORLD, bad_switches, k.name == "link_scheduled");
    }
    if (n >= 2) {
      ++checks;
      KernelContext ctx;
      ctx.ring_order = &layouts[0].ring_order;
      ctx.switch_of_rank = &layouts[0].switch_of_rank;
      std::string e = check::CheckAllgatherIntercomm(k, MPI_COMM_WORLD, ctx);
      if (!e.empty()) fail(k, "intercomm", e);
    }
  }

  int total_failures = 0;
  MPI_Allreduce(&failures, &total_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0)
    std::printf("allgather N=%d: %d checks per rank, %d failures over all ranks\n", n, checks, total_failures);
  MPI_Comm_free(&half);
  MPI_Comm_free(&private_comm);
  MPI_Finalize();
  return total_failures == 0 ? 0 : 1;
}
