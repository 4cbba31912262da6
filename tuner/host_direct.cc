#include "tuner/host_direct.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "tuner/bounds.h"

namespace topotune {

StatusOr<Schedule> HostDirect(const RankTree& tree) {
  Schedule s;
  s.collective = "alltoall";
  s.algorithm = "host_direct";
  s.num_ranks = tree.num_ranks();
  s.host_combined = true;
  s.bottleneck_load = BottleneckLoad(tree);
  // Hosts by their lowest rank, each host's ranks increasing.
  std::unordered_map<int, int> host_of_node;
  std::vector<std::vector<int32_t>> ranks;
  for (int r = 0; r < tree.num_ranks(); ++r) {
    auto [it, fresh] = host_of_node.try_emplace(tree.host_node(r), static_cast<int>(ranks.size()));
    if (fresh) ranks.emplace_back();
    ranks[it->second].push_back(r);
  }
  const int hosts = static_cast<int>(ranks.size());
  if (hosts < 2) return s;  // Nothing crosses the network.
  std::vector<int64_t> sent(hosts, 0), received(hosts, 0);
  s.AddPhase();
  for (int d = 1; d < hosts; ++d) {
    for (int h = 0; h < hosts; ++h) {
      const int g = (h + d) % hosts;
      const auto rh = static_cast<int64_t>(ranks[h].size()), rg = static_cast<int64_t>(ranks[g].size());
      const int64_t blocks = rh * rg;
      const int64_t k = std::min({(rh + hosts - 2) / (hosts - 1), rg, blocks});
      for (int64_t i = 0; i < k; ++i) {
        const int64_t share = blocks / k + (i < blocks % k ? 1 : 0);
        s.Add(Message{ranks[h][sent[h]++ % rh], ranks[g][received[g]++ % rg], static_cast<int32_t>(share)});
      }
    }
  }
  return s;
}

}  // namespace topotune
