#include "bench_kernels/allgather/allgather_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>

#include "tuner/allgather_orders.h"
#include "tuner/rank_tree.h"
#include "tuner/test_trees.h"

namespace topotune::kernels::check {
namespace {

// The switch adjacent to each rank's host, numbered by first appearance in
// ring order; 0 for every rank when the tree has no switch.
std::vector<int> SwitchOfRank(const RankTree& tree, const std::vector<int>& order) {
  std::vector<int> node_of(tree.num_ranks(), -1);
  for (int r = 0; r < tree.num_ranks(); ++r) {
    int node = tree.rank_node(r);
    // A rank leaf of a multi-rank host hangs off its host; a single-rank
    // host is its own leaf.
    for (int e : tree.incident(node))
      if (tree.node(tree.Other(e, node)).kind == RankTree::Kind::kHost) node = tree.Other(e, node);
    for (int e : tree.incident(node)) {
      int v = tree.Other(e, node);
      if (tree.node(v).kind == RankTree::Kind::kSwitch) node_of[r] = v;
    }
  }
  std::map<int, int> number;
  std::vector<int> out(tree.num_ranks(), 0);
  for (int r : order) {
    auto it = number.emplace(node_of[r], static_cast<int>(number.size())).first;
    out[r] = it->second;
  }
  return out;
}

// Builds a layout: switch links, hosts (name, slots, switch) and the host of
// each rank.
RingLayout MakeLayout(std::string name, const std::vector<std::string>& switches,
                      const std::vector<testing::LinkSpec>& switch_links,
                      const std::vector<std::pair<testing::HostSpec, std::string>>& hosts,
                      const std::vector<std::string>& rank_hosts) {
  std::vector<testing::HostSpec> host_specs;
  std::vector<testing::LinkSpec> links = switch_links;
  for (const auto& [h, sw] : hosts) {
    host_specs.push_back(h);
    links.push_back({h.name, sw, 1e9});
  }
  Topology topo = testing::BuildTopology(switches, host_specs, links);
  StatusOr<Placement> placement = PlacementFromRankHosts(topo, rank_hosts);
  if (!placement.ok()) throw std::invalid_argument(placement.status().ToString());
  StatusOr<RankTree> tree = RankTree::Build(topo, *placement);
  if (!tree.ok()) throw std::invalid_argument(tree.status().ToString());
  RingLayout out;
  out.name = std::move(name);
  out.ring_order = SwitchOrderedRing(*tree);
  out.switch_of_rank = SwitchOfRank(*tree, out.ring_order);
  return out;
}

// One single-slot host per rank, rank r on switch switch_of(r).
RingLayout OneHostPerRank(std::string name, int n, const std::vector<std::string>& switches,
                          const std::vector<testing::LinkSpec>& switch_links, auto switch_of) {
  std::vector<std::pair<testing::HostSpec, std::string>> hosts;
  std::vector<std::string> rank_hosts;
  std::vector<bool> used(switches.size(), false);
  for (int r = 0; r < n; ++r) {
    std::string h = fmt::format("h{}", r);
    hosts.push_back({{h, 1}, switches[switch_of(r)]});
    rank_hosts.push_back(h);
    used[switch_of(r)] = true;
  }
  // A leaf switch without hosts is not a valid topology: give it an idle host.
  for (size_t s = 0; s < switches.size(); ++s)
    if (!used[s]) hosts.push_back({{fmt::format("idle{}", s), 1}, switches[s]});
  return MakeLayout(std::move(name), switches, switch_links, hosts, rank_hosts);
}

}  // namespace

std::string Describe(const AllgatherCase& c) {
  return fmt::format("{}u/{}/{}/seed={}", c.units, TypeCaseName(c.type), c.in_place ? "in_place" : "separate", c.seed);
}

std::vector<AllgatherCase> DefaultAllgatherCases() {
  std::vector<AllgatherCase> cases;
  uint64_t seed = 1;
  for (int units : {0, 1, 3, 13, 1031, 9001})
    for (TypeCase t : kAllTypeCases)
      for (bool in_place : {false, true}) cases.push_back({units, t, in_place, seed++});
  return cases;
}

AllgatherCheckResult CheckAllgather(const KernelInfo& kernel, const AllgatherCase& c, MPI_Comm comm,
                                    const KernelContext& ctx) {
  AllgatherCheckResult result;
  int n = 0, me = 0;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &me);
  CaseTypes types(c.type, me);
  const TypeShape& S = types.send();
  const TypeShape& R = types.recv();
  const size_t block_bytes = static_cast<size_t>(c.units) * static_cast<size_t>(UnitBytes(c.type));
  const int sendcount = c.units * S.per_unit, recvcount = c.units * R.per_unit;
  const size_t block_span = static_cast<size_t>(recvcount) * static_cast<size_t>(R.extent);
  constexpr size_t kGuard = 64;

  // The send block starts one element in, so that a kernel reading from the
  // start of the allocation would be caught.
  std::vector<char> sendbuf(static_cast<size_t>(sendcount + 2) * S.extent + kGuard, static_cast<char>(kSentinel));
  std::vector<char> recvbuf(block_span * n + kGuard, static_cast<char>(kSentinel));
  std::vector<char> want(recvbuf.size(), static_cast<char>(kSentinel));
  char* send_start = sendbuf.data() + S.extent;
  if (c.in_place)
    FillPayload(recvbuf.data() + me * block_span, R, c.seed, me, -1, block_bytes);
  else
    FillPayload(send_start, S, c.seed, me, -1, block_bytes);
  for (int r = 0; r < n; ++r) FillPayload(want.data() + r * block_span, R, c.seed, r, -1, block_bytes);
  const std::vector<char> send_before = sendbuf;

  AllgatherArgs a{c.in_place ? MPI_IN_PLACE : send_start, sendcount, S.type, recvbuf.data(), recvcount, R.type, comm};
  KernelStatus st = kernel.allgather(a, ctx);
  int rc = MPI_SUCCESS;
  if (st.fallback()) {
    result.fell_back = true;
    rc = PMPI_Allgather(a.sendbuf, a.sendcount, a.sendtype, a.recvbuf, a.recvcount, a.recvtype, a.comm);
  } else if (!st.done()) {
    rc = st.mpi_error();
  }
  if (rc != MPI_SUCCESS) result.error = fmt::format("MPI error {}", rc);
  if (result.error.empty()) result.error = FirstDifference(recvbuf, want, "recvbuf", block_span);
  if (result.error.empty()) result.error = FirstDifference(sendbuf, send_before, "sendbuf (must not change)", 0);
  result.ok = result.error.empty();
  Agree(comm, &result);
  return result;
}

std::string CheckAllgatherIntercomm(const KernelInfo& kernel, MPI_Comm comm, const KernelContext& ctx) {
  int n = 0, me = 0;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &me);
  const int half = n / 2;
  const int color = me < half ? 0 : 1;
  MPI_Comm local = MPI_COMM_NULL, inter = MPI_COMM_NULL;
  MPI_Comm_split(comm, color, me, &local);
  MPI_Intercomm_create(local, 0, comm, color == 0 ? half : 0, 78, &inter);
  int remote = 0;
  MPI_Comm_remote_size(inter, &remote);
  char mine = static_cast<char>('a' + color);
  std::vector<char> recvbuf(remote, 0);
  AllgatherArgs a{&mine, 1, MPI_BYTE, recvbuf.data(), 1, MPI_BYTE, inter};
  KernelStatus st = kernel.allgather(a, ctx);
  std::string error;
  if (kernel.name == "native") {
    if (!st.done())
      error = "native did not complete on an intercommunicator";
    else if (std::count(recvbuf.begin(), recvbuf.end(), static_cast<char>('a' + 1 - color)) != remote)
      error = "native: wrong data";
  } else if (!st.fallback()) {
    error = "did not fall back on an intercommunicator";
  }
  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);
  return error;
}

std::vector<RingLayout> TestRingLayouts(int n) {
  std::vector<RingLayout> out;
  out.push_back(
      OneHostPerRank("2 switches, ranks interleaved", n, {"s0", "s1"}, {{"s0", "s1"}}, [](int r) { return r % 2; }));
  out.push_back(OneHostPerRank("3 switches in a chain, ranks round-robin", n, {"s0", "s1", "s2"},
                               {{"s0", "s1"}, {"s1", "s2"}}, [](int r) { return r % 3; }));
  out.push_back(OneHostPerRank("hub without hosts, 3 leaf switches", n, {"hub", "a", "b", "c"},
                               {{"hub", "a"}, {"hub", "b"}, {"hub", "c"}}, [](int r) { return 1 + (r * 2) % 3; }));
  // Unbalanced groups. (A switch with one used host and one uplink is
  // contracted away by RankTree, so a lone rank keeps its own switch only in
  // the middle of a chain.)
  out.push_back(OneHostPerRank("lopsided: ranks 1 and N-1 on the second switch", n, {"s0", "s1"}, {{"s0", "s1"}},
                               [n](int r) { return r == 1 || r == n - 1 ? 1 : 0; }));
  out.push_back(OneHostPerRank("chain with one rank on the middle switch", n, {"s0", "s1", "s2"},
                               {{"s0", "s1"}, {"s1", "s2"}},
                               [n](int r) { return r < n / 2 ? 0 : (r == n / 2 ? 1 : 2); }));
  // Two-slot hosts, host j on switch j % 2, rank r on host r % H: a host's
  // two ranks are H apart.
  const int num_hosts = (n + 1) / 2;
  std::vector<std::pair<testing::HostSpec, std::string>> hosts;
  for (int j = 0; j < std::max(num_hosts, 2); ++j) hosts.push_back({{fmt::format("m{}", j), 2}, j % 2 ? "s1" : "s0"});
  std::vector<std::string> rank_hosts;
  for (int r = 0; r < n; ++r) rank_hosts.push_back(fmt::format("m{}", r % num_hosts));
  out.push_back(MakeLayout("2 switches, two-slot hosts, ranks of a host not consecutive", {"s0", "s1"}, {{"s0", "s1"}},
                           hosts, rank_hosts));
  return out;
}

}  // namespace topotune::kernels::check
