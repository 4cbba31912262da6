#include "bench_kernels/alltoallv/alltoallv_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "bench_kernels/alltoallv/plan.h"

namespace topotune::kernels::check {
namespace {

std::string_view PlanModeName(PlanMode m) {
  switch (m) {
    case PlanMode::kAsGiven:
      return "as_given";
    case PlanMode::kMatching:
      return "matching";
    case PlanMode::kStale:
      return "stale";
    case PlanMode::kNone:
      return "none";
  }
  return "?";
}

}  // namespace

std::string_view PatternName(Pattern p) {
  switch (p) {
    case Pattern::kUniform:
      return "uniform";
    case Pattern::kRandom:
      return "random";
    case Pattern::kSkewed:
      return "skewed";
  }
  return "?";
}

std::string Describe(const AlltoallvCase& c) {
  return fmt::format("{}/{}u/{}/{}/seed={}/plan={}", PatternName(c.pattern), c.max_units, TypeCaseName(c.type),
                     c.in_place ? "in_place" : "separate", c.seed, PlanModeName(c.plan));
}

std::vector<std::vector<int>> AlltoallvUnits(const AlltoallvCase& c, int n) {
  std::mt19937_64 rng(c.seed * 1000003u + static_cast<uint64_t>(n));
  std::vector<std::vector<int>> u(n, std::vector<int>(n, 0));
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) {
      switch (c.pattern) {
        case Pattern::kUniform:
          u[s][d] = c.max_units;
          break;
        case Pattern::kRandom: {
          uint64_t zero = rng() % 3, value = rng() % (static_cast<uint64_t>(c.max_units) + 1);
          u[s][d] = zero == 0 ? 0 : static_cast<int>(value);
          break;
        }
        case Pattern::kSkewed:
          u[s][d] = (s == 0 || d == n - 1) ? c.max_units : ((s + 2 * d) % 3 == 0 ? 0 : std::min(1, c.max_units));
          break;
      }
    }
  }
  if (c.in_place)
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < s; ++d) u[s][d] = u[d][s];
  return u;
}

CheckResult CheckAlltoallv(const KernelInfo& kernel, const AlltoallvCase& c, MPI_Comm comm, const KernelContext& ctx) {
  CheckResult result;
  int n = 0, me = 0;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &me);
  CaseTypes types(c.type, me);
  const TypeShape& S = types.send();
  const TypeShape& R = types.recv();
  const auto units = AlltoallvUnits(c, n);
  const size_t unit_bytes = static_cast<size_t>(UnitBytes(c.type));

  // Counts in elements; blocks in reverse order (send) or rotated order
  // (receive), with gaps of one and two elements around them.
  std::vector<int> scounts(n), sdispls(n), rcounts(n), rdispls(n);
  int spos = 1, rpos = 2;
  for (int d = n - 1; d >= 0; --d) {
    scounts[d] = units[me][d] * S.per_unit;
    sdispls[d] = spos;
    spos += scounts[d] + 1;
  }
  for (int i = 0; i < n; ++i) {
    int s = (me + 1 + i) % n;
    rcounts[s] = units[s][me] * R.per_unit;
    rdispls[s] = rpos;
    rpos += rcounts[s] + 2;
  }
  constexpr size_t kGuard = 64;
  std::vector<char> sendbuf(static_cast<size_t>(spos) * S.extent + kGuard, static_cast<char>(kSentinel));
  std::vector<char> recvbuf(static_cast<size_t>(rpos) * R.extent + kGuard, static_cast<char>(kSentinel));
  std::vector<char> want(recvbuf.size(), static_cast<char>(kSentinel));
  for (int d = 0; d < n; ++d) {
    const size_t bytes = static_cast<size_t>(units[me][d]) * unit_bytes;
    if (c.in_place)
      FillPayload(recvbuf.data() + rdispls[d] * R.extent, R, c.seed, me, d, bytes);
    else
      FillPayload(sendbuf.data() + sdispls[d] * S.extent, S, c.seed, me, d, bytes);
  }
  for (int s = 0; s < n; ++s)
    FillPayload(want.data() + rdispls[s] * R.extent, R, c.seed, s, me, static_cast<size_t>(units[s][me]) * unit_bytes);
  const std::vector<char> send_before = sendbuf;

  AlltoallvArgs a{c.in_place ? MPI_IN_PLACE : sendbuf.data(),
                  scounts.data(),
                  sdispls.data(),
                  S.type,
                  recvbuf.data(),
                  rcounts.data(),
                  rdispls.data(),
                  R.type,
                  comm};

  KernelContext kctx = ctx;
  AlltoallvPlan plan;
  if (kernel.needs_context && c.plan != PlanMode::kAsGiven) {
    kctx.alltoallv_plan = nullptr;
    const bool greedy = kernel.name.starts_with("greedy");
    if (c.plan == PlanMode::kMatching || c.plan == PlanMode::kStale) {
      std::vector<int> shape_counts(n);
      for (int d = 0; d < n; ++d) shape_counts[d] = units[me][d] * S.per_unit;
      if (c.plan == PlanMode::kStale && me == n - 1) shape_counts[0] += S.per_unit;
      AlltoallvArgs shape = a;
      shape.sendbuf = sendbuf.data();
      shape.sendcounts = shape_counts.data();
      shape.sendtype = S.type;
      int rc = BuildAlltoallvPlan(shape, greedy, &plan);
      if (rc != MPI_SUCCESS)
        result.error = fmt::format("BuildAlltoallvPlan failed: MPI error {}", rc);
      else
        kctx.alltoallv_plan = &plan;
    }
  }

  if (result.error.empty()) {
    KernelStatus st = kernel.alltoallv(a, kctx);
    int rc = MPI_SUCCESS;
    if (st.fallback()) {
      result.fell_back = true;
      rc = PMPI_Alltoallv(a.sendbuf, a.sendcounts, a.sdispls, a.sendtype, a.recvbuf, a.recvcounts, a.rdispls,
                          a.recvtype, a.comm);
    } else if (!st.done()) {
      rc = st.mpi_error();
    }
    if (rc != MPI_SUCCESS) result.error = fmt::format("MPI error {}", rc);
  }
  if (result.error.empty()) result.error = FirstDifference(recvbuf, want, "recvbuf");
  if (result.error.empty()) result.error = FirstDifference(sendbuf, send_before, "sendbuf (must not change)");
  result.ok = result.error.empty();
  Agree(comm, &result);
  return result;
}

std::vector<AlltoallvCase> DefaultAlltoallvCases(const KernelInfo& kernel) {
  std::vector<AlltoallvCase> cases;
  uint64_t seed = 1;
  for (Pattern p : {Pattern::kUniform, Pattern::kRandom, Pattern::kSkewed})
    for (int units : {0, 1, 13, 1031, 9001})
      for (TypeCase t : kAllTypeCases)
        for (bool in_place : {false, true}) {
          // The largest size with every type would only repeat the others
          // at 8x the cost.
          if (units == 9001 && t != TypeCase::kByte && t != TypeCase::kMixed) continue;
          cases.push_back({p, units, t, in_place, seed++, PlanMode::kMatching});
        }
  if (kernel.needs_context) {
    for (PlanMode m : {PlanMode::kStale, PlanMode::kNone})
      for (TypeCase t : {TypeCase::kByte, TypeCase::kMixed})
        for (bool in_place : {false, true}) cases.push_back({Pattern::kRandom, 13, t, in_place, seed++, m});
  }
  return cases;
}

bool ExpectAlltoallvFallback(const KernelInfo& kernel, const AlltoallvCase& c, int n) {
  if (!kernel.needs_context) return false;
  return c.plan == PlanMode::kNone || (c.plan == PlanMode::kStale && n >= 2);
}

std::string CheckAlltoallvIntercomm(const KernelInfo& kernel, MPI_Comm comm) {
  int n = 0, me = 0;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &me);
  const int half = n / 2;
  const int color = me < half ? 0 : 1;
  MPI_Comm local = MPI_COMM_NULL, inter = MPI_COMM_NULL;
  MPI_Comm_split(comm, color, me, &local);
  MPI_Intercomm_create(local, 0, comm, color == 0 ? half : 0, 77, &inter);
  int remote = 0;
  MPI_Comm_remote_size(inter, &remote);
  std::vector<int> counts(remote, 1), displs(remote);
  for (int i = 0; i < remote; ++i) displs[i] = i;
  std::vector<char> sendbuf(remote, 'x'), recvbuf(remote, 0);
  AlltoallvArgs a{sendbuf.data(), counts.data(), displs.data(), MPI_BYTE, recvbuf.data(),
                  counts.data(),  displs.data(), MPI_BYTE,      inter};
  KernelStatus st = kernel.alltoallv(a, KernelContext{});
  std::string error;
  if (kernel.name == "native") {
    if (!st.done())
      error = "native did not complete on an intercommunicator";
    else if (std::count(recvbuf.begin(), recvbuf.end(), 'x') != remote)
      error = "native: wrong data";
  } else if (!st.fallback()) {
    error = "did not fall back on an intercommunicator";
  }
  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);
  return error;
}

}  // namespace topotune::kernels::check
