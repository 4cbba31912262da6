// alltoall_check: every alltoall kernel of the registry through the
// byte-for-byte check of alltoall_verify.h, at whatever process count it is
// launched with, plus the combining routes, fallbacks, errors,
// intercommunicators and back-to-back calls.
//
// Build (not part of the library; tests/mpi builds the ctest matrix):
//   mpicxx -std=c++20 -O1 -I/work/main bench_kernels/alltoall/alltoall_check.cc
//     build/bench_kernels/libtopotune_kernels.a build/tuner/libtopotune_tuner.a -lfmt -lyaml-cpp
// Run:
//   mpirun --oversubscribe -np N ./alltoall_check [KERNEL...]
// With kernel names, only those kernels run. Exit status 0 when everything
// passed (the same on every rank), 1 otherwise.
#include <fmt/format.h>
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench_kernels/alltoall/alltoall_buffers.h"
#include "bench_kernels/alltoall/alltoall_kernels.h"
#include "bench_kernels/alltoall/alltoall_verify.h"
#include "bench_kernels/alltoall/combining.h"
#include "bench_kernels/kernel.h"
#include "tuner/rank_program.h"
#include "tuner/rank_tree.h"
#include "tuner/test_trees.h"
#include "tuner/tree_scheduled.h"

// The other collectives' tables, in case their files are mid-edit: weak, so
// the library's own definitions win whenever they are linked in.
namespace topotune::kernels {
__attribute__((weak)) std::span<const KernelInfo> AlltoallvKernels() { return {}; }
__attribute__((weak)) std::span<const KernelInfo> AllgatherKernels() { return {}; }
}  // namespace topotune::kernels

namespace topotune::kernels {
namespace {

constexpr int kCounts[] = {0, 1, 3, 7, 8, 13, 1000, 4097};

struct Checker {
  MPI_Comm world = MPI_COMM_WORLD;
  int rank = 0;
  int size = 0;
  int failures = 0;
  int passes = 0;

  // Rank 0 prints; every rank counts.
  void Fail(const std::string& what) {
    ++failures;
    if (rank == 0) std::printf("FAIL %s\n", what.c_str());
  }
  void Expect(bool ok, const std::string& what) {
    if (ok)
      ++passes;
    else
      Fail(what);
  }
  // True on every rank iff `ok` on every rank.
  bool All(bool ok) {
    int mine = ok ? 1 : 0, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, world);
    return all == 1;
  }
};

// ---------------------------------------------------------------------------
// Routes of the combining kernels, for many process counts (no MPI needed).

void CheckRoutes(Checker* c) {
  std::string error;
  if (c->rank == 0) {
    using namespace alltoall_detail;
    for (int n = 1; n <= 130 && error.empty(); ++n) {
      MeshRoute mesh(n);
      GridRoute grid(n);
      HypercubeRoute cube(n);
      for (const CombiningRoute* r :
           {static_cast<const CombiningRoute*>(&mesh), static_cast<const CombiningRoute*>(&grid),
            static_cast<const CombiningRoute*>(&cube)}) {
        if (std::string why = CheckRoute(*r); !why.empty()) {
          error = fmt::format("route for N={} ({}): {}", n,
                              r == &mesh   ? "mesh"
                              : r == &grid ? "grid3d"
                                           : "hypercube",
                              why);
          break;
        }
      }
    }
    // Kalé-Kumar Figure 1: N=14 on a 4x4 mesh, holes 14 and 15. Rank 12 =
    // (3,0) sends to the hole columns through ranks 2 and 3, rank 13 = (3,1)
    // through ranks 6 and 7.
    MeshRoute fig1(14);
    if (error.empty() &&
        (fig1.columns() != 4 || fig1.rows() != 4 || fig1.Holder(1, 12, 10) != 2 || fig1.Holder(1, 12, 11) != 3 ||
         fig1.Holder(1, 13, 10) != 6 || fig1.Holder(1, 13, 7) != 7 || fig1.Holder(1, 12, 5) != 13))
      error = "mesh N=14 does not map the holes as in Kale-Kumar Figure 1";
    // Messages per rank: 2 (C-1) for a full mesh; holes add one or two.
    RouteStats stats;
    CheckRoute(MeshRoute(16), &stats);
    if (error.empty() && stats.max_messages_per_rank != 6) error = "mesh N=16 should send 6 messages per rank";
    CheckRoute(GridRoute(27), &stats);
    if (error.empty() && stats.max_messages_per_rank != 6) error = "grid3d N=27 should send 6 messages per rank";
    CheckRoute(HypercubeRoute(16), &stats);
    if (error.empty() && stats.max_messages_per_rank != 4) error = "hypercube N=16 should send 4 messages per rank";
    // Figure 3: N=9, rank 8 hands its blocks to rank 0 and gets its own back.
    HypercubeRoute fig3(9);
    if (error.empty() && (fig3.num_phases() != 5 || fig3.Holder(1, 8, 5) != 0 || fig3.Holder(4, 3, 8) != 0))
      error = "hypercube N=9 does not route through rank 0 as in Kale-Kumar Figure 3";
  }
  int length = static_cast<int>(error.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, c->world);
  error.resize(length);
  MPI_Bcast(error.data(), length, MPI_CHAR, 0, c->world);
  c->Expect(error.empty(), "combining routes: " + error);
}

// ---------------------------------------------------------------------------
// tree_scheduled contexts, built from topologies in code.

struct TreeCase {
  std::string name;
  std::unique_ptr<RankProgram> program;
};

StatusOr<RankProgram> ProgramFor(const Topology& topo, const Placement& placement, int rank) {
  auto tree = RankTree::Build(topo, placement);
  if (!tree.ok()) return tree.status();
  auto schedule = TreeScheduled(*tree);
  if (!schedule.ok()) return schedule.status();
  return CompileRankProgram(*schedule, rank);
}

// Two switches; hosts with 1 or 2 slots, alternately on s0 and s1, holding
// exactly n ranks.
Topology TwoSwitches(int n) {
  std::vector<testing::HostSpec> hosts;
  std::vector<testing::LinkSpec> links = {{"s0", "s1", 1e9}};
  int placed = 0;
  for (int h = 0; placed < n; ++h) {
    const int slots = std::min(h % 2 == 0 ? 1 : 2, n - placed);
    hosts.push_back({fmt::format("h{}", h), slots});
    links.push_back({hosts.back().name, h % 2 == 0 ? "s0" : "s1", 1e9});
    placed += slots;
  }
  return testing::BuildTopology({"s0", "s1"}, hosts, links);
}

std::vector<TreeCase> TreeCases(Checker* c) {
  std::vector<TreeCase> cases;
  const int n = c->size;
  auto add = [&](std::string name, const Topology& topo, const StatusOr<Placement>& placement) {
    std::string error;
    if (!placement.ok()) {
      error = placement.status().ToString();
    } else {
      auto program = ProgramFor(topo, *placement, c->rank);
      if (program.ok())
        cases.push_back({name, std::make_unique<RankProgram>(std::move(program).value())});
      else
        error = program.status().ToString();
    }
    c->Expect(c->All(error.empty()), fmt::format("tree_scheduled program for {}: {}", name, error));
  };
  Topology single = testing::BuildTopology({}, {{"h0", n}}, {});
  add("single-host", single, DefaultPlacement(single));
  Topology two = TwoSwitches(n);
  add("two-switches", two, DefaultPlacement(two));
  // The same hosts, ranks dealt round-robin: ranks of one host not adjacent.
  std::vector<std::string> rank_hosts;
  std::vector<int> left;
  for (int h : two.hosts()) left.push_back(two.nodes()[h].slots);
  for (size_t h = 0; static_cast<int>(rank_hosts.size()) < n; h = (h + 1) % left.size()) {
    if (left[h] == 0) continue;
    --left[h];
    rank_hosts.push_back(two.nodes()[two.hosts()[h]].name);
  }
  add("two-switches-round-robin", two, PlacementFromRankHosts(two, rank_hosts));
  return cases;
}

// ---------------------------------------------------------------------------
// The matrix: every kernel x datatype x count x in-place.

void CheckMatrix(Checker* c, const KernelInfo& k, const std::vector<TreeCase>& trees, MPI_Comm dup) {
  struct Ctx {
    std::string name;
    KernelContext ctx;
  };
  std::vector<Ctx> contexts;
  if (k.needs_context) {
    for (const TreeCase& t : trees) {
      KernelContext ctx;
      ctx.private_comm = dup;
      ctx.tree_program = t.program.get();
      contexts.push_back({t.name, ctx});
    }
  } else {
    KernelContext with_dup;
    with_dup.private_comm = dup;
    contexts.push_back({"private comm", with_dup});
    contexts.push_back({"call's comm", KernelContext{}});
  }
  int cases = 0, failed = 0;
  uint32_t seed = 1;
  for (const Ctx& ctx : contexts) {
    for (AlltoallCheckType type : kAllAlltoallCheckTypes) {
      for (int count : kCounts) {
        for (bool in_place : {false, true}) {
          // The call's-communicator context is a second pass: a sample is
          // enough there.
          if (ctx.ctx.private_comm == MPI_COMM_NULL && count != 13 && count != 0) continue;
          AlltoallCheckCase cc{type, count, in_place, seed++};
          AlltoallCheckResult r = CheckAlltoall(k, ctx.ctx, c->world, cc);
          ++cases;
          if (!r.ok() || r.fallbacks != 0) {
            ++failed;
            c->Fail(fmt::format("np={} {} [{}]: {}{}", c->size, DescribeAlltoallCase(k, cc), ctx.name,
                                r.first_error.empty() ? "" : r.first_error,
                                r.fallbacks ? fmt::format(" (fell back {} times)", r.fallbacks) : ""));
          }
        }
      }
    }
  }
  if (failed == 0) ++c->passes;
  if (c->rank == 0)
    std::printf("%-15s np=%d: %d/%d cases passed (%zu contexts x 6 types x 8 counts x in-place)\n",
                std::string(k.name).c_str(), c->size, cases - failed, cases, contexts.size());
}

// ---------------------------------------------------------------------------
// Declines and errors.

void CheckTreeFallbacks(Checker* c, const KernelInfo& k, MPI_Comm dup) {
  const int n = c->size;
  std::vector<std::pair<std::string, std::unique_ptr<RankProgram>>> bad;
  bad.push_back({"no program", nullptr});
  {
    // A program compiled for a communicator of n + 1 ranks.
    Topology bigger = testing::BuildTopology({}, {{"h0", n + 1}}, {});
    auto p = ProgramFor(bigger, DefaultPlacement(bigger), c->rank);
    if (p.ok()) bad.push_back({"program for n+1 ranks", std::make_unique<RankProgram>(std::move(p).value())});
  }
  if (n >= 2) {
    // The right size, but another rank's program.
    Topology same = testing::BuildTopology({}, {{"h0", n}}, {});
    auto p = ProgramFor(same, DefaultPlacement(same), (c->rank + 1) % n);
    if (p.ok()) bad.push_back({"another rank's program", std::make_unique<RankProgram>(std::move(p).value())});
  }
  if (n >= 3) {
    // A program whose peers all lie inside the communicator but that covers
    // only ranks 0..n-2 (a schedule for a smaller communicator).
    Topology smaller = testing::BuildTopology({}, {{"h0", n - 1}}, {});
    auto p = ProgramFor(smaller, DefaultPlacement(smaller), std::min(c->rank, n - 2));
    if (p.ok()) {
      auto prog = std::make_unique<RankProgram>(std::move(p).value());
      prog->rank = c->rank;
      bad.push_back({"program for n-1 ranks", std::move(prog)});
    }
  }
  for (const auto& [name, program] : bad) {
    KernelContext ctx;
    ctx.private_comm = dup;
    ctx.tree_program = program.get();
    AlltoallCheckCase cc{AlltoallCheckType::kInt, 7, false, 99};
    AlltoallCheckResult r = CheckAlltoall(k, ctx, c->world, cc);
    c->Expect(r.ok() && r.fallbacks == n,
              fmt::format("np={} tree_scheduled with {}: expected a correct result after every rank fell back, got "
                          "{} fallbacks, {}",
                          n, name, r.fallbacks, r.first_error));
  }
}

void CheckErrors(Checker* c, const KernelInfo& k) {
  if (k.name == "native") return;  // The library's own error handling.
  std::vector<int> send(4 * c->size), recv(4 * c->size);
  KernelContext ctx;
  // Signatures that do not match: 2 ints sent, 3 received.
  AlltoallArgs mismatch{send.data(), 2, MPI_INT, recv.data(), 3, MPI_INT, c->world};
  KernelStatus st = k.alltoall(mismatch, ctx);
  c->Expect(c->All(!st.done() && !st.fallback() && st.mpi_error() == MPI_ERR_TRUNCATE),
            fmt::format("np={} {}: mismatched signatures must return MPI_ERR_TRUNCATE", c->size, k.name));
  AlltoallArgs negative{send.data(), -1, MPI_INT, recv.data(), -1, MPI_INT, c->world};
  st = k.alltoall(negative, ctx);
  c->Expect(c->All(!st.done() && !st.fallback() && st.mpi_error() == MPI_ERR_COUNT),
            fmt::format("np={} {}: a negative count must return MPI_ERR_COUNT", c->size, k.name));
  // The same bytes with different types on the two sides are fine: 1 double
  // sent, 2 ints received (through RunAlltoall, as tree_scheduled declines
  // without a program).
  for (int d = 0; d < c->size; ++d)
    for (int i = 0; i < 8; ++i) reinterpret_cast<uint8_t*>(send.data())[8 * d + i] = AlltoallPattern(9, c->rank, d, i);
  AlltoallArgs same_bytes{send.data(), 1, MPI_DOUBLE, recv.data(), 2, MPI_INT, c->world};
  FallbackLog log;
  log.sink = [](const std::string&) {};
  bool ok = RunAlltoall(k, same_bytes, ctx, &log) == MPI_SUCCESS;
  for (int s = 0; s < c->size; ++s)
    for (int i = 0; i < 8; ++i)
      ok = ok && reinterpret_cast<uint8_t*>(recv.data())[8 * s + i] == AlltoallPattern(9, s, c->rank, i);
  c->Expect(c->All(ok), fmt::format("np={} {}: 1 double against 2 ints must work", c->size, k.name));
}

// Intercommunicators: every kernel but native declines, and RunAlltoall
// still completes the collective through the library.
void CheckIntercomm(Checker* c, const KernelInfo& k) {
  if (c->size < 2) return;
  MPI_Comm local, inter;
  const int color = c->rank % 2;
  MPI_Comm_split(c->world, color, c->rank, &local);
  MPI_Intercomm_create(local, 0, c->world, color == 0 ? 1 : 0, 77, &inter);
  int remote = 0;
  MPI_Comm_remote_size(inter, &remote);
  MPI_Group remote_group, world_group;
  MPI_Comm_remote_group(inter, &remote_group);
  MPI_Comm_group(c->world, &world_group);
  std::vector<int> ranks(remote), world_ranks(remote);
  for (int i = 0; i < remote; ++i) ranks[i] = i;
  MPI_Group_translate_ranks(remote_group, remote, ranks.data(), world_group, world_ranks.data());
  const int bytes = 5;
  std::vector<uint8_t> send(remote * bytes), recv(remote * bytes, 0);
  for (int j = 0; j < remote; ++j)
    for (int i = 0; i < bytes; ++i) send[j * bytes + i] = AlltoallPattern(7, c->rank, world_ranks[j], i);
  AlltoallArgs args{send.data(), bytes, MPI_BYTE, recv.data(), bytes, MPI_BYTE, inter};
  KernelContext ctx;
  bool ok = true;
  if (k.name != "native") {
    KernelStatus st = k.alltoall(args, ctx);
    ok = st.fallback() && st.reason() == "intercommunicator";
  }
  FallbackLog log;
  log.sink = [](const std::string&) {};
  ok = ok && RunAlltoall(k, args, ctx, &log) == MPI_SUCCESS;
  for (int j = 0; j < remote; ++j)
    for (int i = 0; i < bytes; ++i) ok = ok && recv[j * bytes + i] == AlltoallPattern(7, world_ranks[j], c->rank, i);
  c->Expect(c->All(ok), fmt::format("np={} {}: intercommunicator must decline and still complete", c->size, k.name));
  MPI_Group_free(&remote_group);
  MPI_Group_free(&world_group);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);
}

// ---------------------------------------------------------------------------
// Back-to-back calls of every kernel with no synchronisation in between: a
// message of one call must never be taken by another.

void CheckBackToBack(Checker* c, const std::vector<const KernelInfo*>& kernels, const std::vector<TreeCase>& trees,
                     MPI_Comm dup) {
  std::vector<std::unique_ptr<AlltoallCheckData>> calls;
  std::vector<std::string> names;
  KernelContext ctx;
  ctx.private_comm = dup;
  ctx.tree_program = trees.empty() ? nullptr : trees.back().program.get();
  FallbackLog log;
  log.sink = [](const std::string&) {};
  bool ok = true;
  uint32_t seed = 1000;
  for (int round = 0; round < 3; ++round) {
    for (const KernelInfo* k : kernels) {
      const AlltoallCheckType type = kAllAlltoallCheckTypes[seed % 6];
      const int count = kCounts[1 + seed % 6];
      AlltoallCheckCase cc{type, count, round == 1, seed++};
      calls.push_back(std::make_unique<AlltoallCheckData>());
      names.push_back(DescribeAlltoallCase(*k, cc));
      ok = ok && calls.back()->Init(cc, c->world) == MPI_SUCCESS;
      ok = ok && RunAlltoall(*k, calls.back()->args(), ctx, &log) == MPI_SUCCESS;
    }
  }
  std::string first;
  for (size_t i = 0; i < calls.size(); ++i) {
    std::string error;
    if (calls[i]->Verify(&error) != 0 && first.empty()) first = names[i] + ": " + error;
  }
  ok = ok && first.empty() && log.counts().empty();
  if (!ok && first.empty()) first = "a call failed or fell back";
  if (!ok) std::printf("np=%d rank %d: back-to-back calls: %s\n", c->size, c->rank, first.c_str());
  c->Expect(c->All(ok), fmt::format("np={} back-to-back calls of every kernel", c->size));
}

// ---------------------------------------------------------------------------
// The helpers' rarely taken paths: element-chunked packing (buffers above
// 2^31 elements or bytes) and messages split into pieces (above 1 GiB),
// exercised with small limits.

void CheckHelpers(Checker* c) {
  using alltoall_detail::AlltoallBuffers;
  bool ok = true;
  for (AlltoallCheckType type : {AlltoallCheckType::kVector, AlltoallCheckType::kIntToVector}) {
    for (bool in_place : {false, true}) {
      AlltoallCheckCase cc{type, 7, in_place, 4242};
      AlltoallCheckData data;
      ok = ok && data.Init(cc, c->world) == MPI_SUCCESS;
      AlltoallBuffers b;
      ok = ok && b.Init(data.args(), KernelContext{}, /*view_limit=*/3).done();
      if (!ok) break;
      for (int d = 0; d < c->size; ++d)
        for (int64_t i = 0; i < b.block_bytes(); ++i)
          ok = ok && static_cast<uint8_t>(b.send_block(d)[i]) == AlltoallPattern(cc.seed, c->rank, d, i);
      for (int s = 0; s < c->size; ++s)
        for (int64_t i = 0; i < b.block_bytes(); ++i)
          b.recv_block(s)[i] = static_cast<char>(AlltoallPattern(cc.seed, s, c->rank, i));
      ok = ok && b.Finish().done();
      std::string error;
      if (data.Verify(&error) != 0) {
        std::printf("rank %d: chunked views: %s\n", c->rank, error.c_str());
        ok = false;
      }
    }
  }
  c->Expect(c->All(ok), fmt::format("np={} chunked pack/unpack of derived datatypes", c->size));

  // A 1000-byte message in 7-byte pieces around the ring, twice, plus an
  // empty one: FIFO keeps the pieces in order.
  ok = true;
  const int to = (c->rank + 1) % c->size, from = (c->rank - 1 + c->size) % c->size;
  std::vector<char> out(1000), in(2000, 0);
  for (int i = 0; i < 1000; ++i) out[i] = static_cast<char>(AlltoallPattern(5, c->rank, to, i));
  std::vector<MPI_Request> reqs;
  using alltoall_detail::PostRecv;
  using alltoall_detail::PostSend;
  ok = ok && PostRecv(in.data(), 1000, from, kDataTag, c->world, &reqs, 7) == MPI_SUCCESS;
  ok = ok && PostRecv(in.data() + 1000, 0, from, kDataTag, c->world, &reqs, 7) == MPI_SUCCESS;
  ok = ok && PostRecv(in.data() + 1000, 1000, from, kDataTag, c->world, &reqs, 7) == MPI_SUCCESS;
  ok = ok && PostSend(out.data(), 1000, to, kDataTag, c->world, &reqs, 7) == MPI_SUCCESS;
  ok = ok && PostSend(out.data(), 0, to, kDataTag, c->world, &reqs, 7) == MPI_SUCCESS;
  ok = ok && PostSend(out.data(), 1000, to, kDataTag, c->world, &reqs, 7) == MPI_SUCCESS;
  ok = ok && alltoall_detail::WaitAll(&reqs) == MPI_SUCCESS;
  for (int i = 0; i < 2000; ++i) ok = ok && in[i] == static_cast<char>(AlltoallPattern(5, from, c->rank, i % 1000));
  c->Expect(c->All(ok), fmt::format("np={} messages split into pieces", c->size));
}

}  // namespace
}  // namespace topotune::kernels

int main(int argc, char** argv) {
  using namespace topotune::kernels;
  MPI_Init(&argc, &argv);
  Checker c;
  MPI_Comm_rank(c.world, &c.rank);
  MPI_Comm_size(c.world, &c.size);
  std::vector<const KernelInfo*> kernels;
  for (const KernelInfo& k : AlltoallKernels()) {
    bool wanted = argc < 2;
    for (int i = 1; i < argc; ++i) wanted = wanted || k.name == argv[i];
    if (wanted) kernels.push_back(&k);
  }
  MPI_Comm dup;
  MPI_Comm_dup(c.world, &dup);

  CheckRoutes(&c);
  CheckHelpers(&c);
  std::vector<TreeCase> trees = TreeCases(&c);
  for (const KernelInfo* k : kernels) {
    CheckMatrix(&c, *k, trees, dup);
    if (k->needs_context) CheckTreeFallbacks(&c, *k, dup);
    CheckErrors(&c, *k);
    CheckIntercomm(&c, *k);
  }
  CheckBackToBack(&c, kernels, trees, dup);

  int failures = 0;
  MPI_Allreduce(&c.failures, &failures, 1, MPI_INT, MPI_MAX, c.world);
  if (c.rank == 0)
    std::printf("alltoall_check np=%d: %d kernels, %d checks passed, %d failed\n", c.size,
                static_cast<int>(kernels.size()), c.passes, failures);
  MPI_Comm_free(&dup);
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
