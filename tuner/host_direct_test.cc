// host_direct on random clusters: every host pair's blocks exactly once, in
// one phase, in the message counts the header promises, with every rank of
// a host carrying about as many messages; its host programs deliver every
// block (in-memory simulation and the structural check).
#include "tuner/host_direct.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "tuner/host_program.h"
#include "tuner/test_trees.h"
#include "tuner/verifier.h"

namespace topotune {
namespace {

void ExpectHostDirect(const RankTree& tree, const std::string& what) {
  auto s = HostDirect(tree);
  ASSERT_TRUE(s.ok()) << what << ": " << s.status().ToString();
  EXPECT_TRUE(s->host_combined);
  EXPECT_TRUE(s->syncs.empty());
  const std::vector<int32_t> host = HostIndexOfRanks(tree);
  const int hosts = host.empty() ? 0 : *std::max_element(host.begin(), host.end()) + 1;
  if (hosts < 2) {
    EXPECT_EQ(s->num_phases(), 0) << what;
    return;
  }
  ASSERT_EQ(s->num_phases(), 1) << what;
  std::vector<int64_t> ranks_on(hosts, 0);
  for (int32_t h : host) ++ranks_on[h];
  // Messages per host pair: ceil(r_H / (hosts - 1)), at most r_G.
  std::map<std::pair<int, int>, int64_t> messages;
  std::vector<int64_t> sent(tree.num_ranks(), 0), received(tree.num_ranks(), 0);
  for (const Message& m : s->phase(0)) {
    ++messages[{host[m.src], host[m.dst]}];
    ++sent[m.src];
    ++received[m.dst];
  }
  for (int h = 0; h < hosts; ++h)
    for (int g = 0; g < hosts; ++g) {
      if (h == g) continue;
      const int64_t want = std::min((ranks_on[h] + hosts - 2) / (hosts - 1), ranks_on[g]);
      EXPECT_EQ((messages[{h, g}]), want) << what << ": host pair " << h << " -> " << g;
    }
  // Rotation: a host's ranks send (and receive) within one message of each other.
  std::vector<int64_t> lo_s(hosts, INT64_MAX), hi_s(hosts, 0), lo_r(hosts, INT64_MAX), hi_r(hosts, 0);
  for (int r = 0; r < tree.num_ranks(); ++r) {
    lo_s[host[r]] = std::min(lo_s[host[r]], sent[r]);
    hi_s[host[r]] = std::max(hi_s[host[r]], sent[r]);
    lo_r[host[r]] = std::min(lo_r[host[r]], received[r]);
    hi_r[host[r]] = std::max(hi_r[host[r]], received[r]);
  }
  for (int h = 0; h < hosts; ++h) {
    EXPECT_LE(hi_s[h] - lo_s[h], 1) << what << ": host " << h << " senders";
    EXPECT_LE(hi_r[h] - lo_r[h], 1) << what << ": host " << h << " receivers";
  }
  // The verifier's pattern check (capacity is overrun on purpose).
  const VerifyReport report = Verify(*s, tree);
  EXPECT_EQ(report.pattern_errors, 0) << what << ": " << (report.errors.empty() ? "" : report.errors[0]);
  // The kernel's programs.
  std::vector<HostProgram> programs;
  for (int r = 0; r < tree.num_ranks(); ++r) {
    auto p = CompileHostProgram(*s, host, r);
    ASSERT_TRUE(p.ok()) << what << " rank " << r << ": " << p.status().ToString();
    programs.push_back(std::move(p).value());
  }
  EXPECT_EQ(SimulateHostPrograms(programs[0], programs), "") << what;
  EXPECT_EQ(CheckAlltoallHostPrograms(programs[0], programs), "") << what;
}

TEST(HostDirect, RandomClustersCarryEveryBlockOnceInOnePhase) {
  const testing::RandomClusters covered = testing::ForRandomClusters(60, 200, ExpectHostDirect);
  int two_hosts = 0;
  // Few hosts with many ranks, where a host pair takes several messages.
  for (int hosts : {1, 2, 3}) {
    std::vector<testing::HostSpec> specs;
    std::vector<testing::LinkSpec> links;
    for (int h = 0; h < hosts; ++h) {
      specs.push_back({"h" + std::to_string(h), 5 + 3 * h});
      links.push_back({specs.back().name, "s0", 1e10});
    }
    Topology t = testing::BuildTopology({"s0"}, specs, links);
    auto tree = RankTree::Build(t, DefaultPlacement(t));
    ASSERT_TRUE(tree.ok());
    ExpectHostDirect(*tree, std::to_string(hosts) + " hosts of 5, 8, 11 ranks");
    two_hosts += hosts == 2;
  }
  EXPECT_EQ(covered.checked, 60);
  EXPECT_GE(covered.multi_rank, 15);
  EXPECT_EQ(two_hosts, 1);
}

}  // namespace
}  // namespace topotune
