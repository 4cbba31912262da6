#include "tuner/node_aware_ring.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "tuner/allgather_orders.h"
#include "tuner/bounds.h"
#include "tuner/capacity_model.h"

namespace topotune {
namespace {

// The pipelined host ring with chunks of c blocks (see the header).
// ranks[i]: the ranks of the i-th host in ring order.
Schedule PipelinedRing(const std::vector<std::vector<int32_t>>& ranks, int64_t num_ranks, int64_t c) {
  const int H = static_cast<int>(ranks.size());
  std::vector<int64_t> r(H), sent(H, 0), received(H, 0), step(H, 0);
  for (int i = 0; i < H; ++i) r[i] = static_cast<int64_t>(ranks[i].size());
  auto next = [&](int i) { return (i + 1) % H; };
  Schedule s;
  bool more = true;
  for (int64_t phase = 0; more; ++phase) {
    more = false;
    std::fill(step.begin(), step.end(), 0);
    for (int i = 0; i < H; ++i) {
      const int j = next(i);
      // Host i's stream to j: its own blocks, then what it received except
      // j's own blocks, which come last.
      const int64_t total = num_ranks - r[j];
      const int64_t ready = r[i] + std::min(received[i], num_ranks - r[i] - r[j]);
      step[i] = std::min(c, std::min(ready, total) - sent[i]);
    }
    bool opened = false;
    for (int i = 0; i < H; ++i) {
      if (step[i] <= 0) continue;
      const int j = next(i);
      if (!opened) s.AddPhase();
      opened = true;
      s.Add(Message{ranks[i][0], ranks[j][0], static_cast<int32_t>(step[i])});
      sent[i] += step[i];
      received[j] += step[i];
    }
    for (int i = 0; i < H; ++i) more = more || sent[i] < num_ranks - r[next(i)];
  }
  return s;
}

}  // namespace

StatusOr<Schedule> NodeAwareRing(const RankTree& tree, const NodeAwareRingOptions& options, const Cancel& cancel) {
  if (Status st = CheckModelParameters("node_aware_ring", options.msize_bytes, options.alpha_s); !st.ok()) return st;
  // Hosts in ring order: the switch-ordered ring lists a host's ranks together.
  std::vector<std::vector<int32_t>> ranks;
  int last_host = -1;
  for (int rank : SwitchOrderedRing(tree)) {
    const int h = tree.host_node(rank);
    if (h != last_host) ranks.emplace_back();
    ranks.back().push_back(rank);
    last_host = h;
  }
  auto finish = [&](Schedule s) {
    s.collective = "allgather";
    s.algorithm = "node_aware_ring";
    s.num_ranks = tree.num_ranks();
    s.host_combined = true;
    s.bottleneck_load = BottleneckLoad(tree);
    return s;
  };
  if (ranks.size() < 2) return finish(Schedule{});
  for (auto& h : ranks) std::sort(h.begin(), h.end());

  // Chunk sizes to try: the hosts' rank counts (a chunk per host's share),
  // at most eight of them spread over their range.
  std::vector<int64_t> sizes;
  for (const auto& h : ranks) sizes.push_back(static_cast<int64_t>(h.size()));
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  std::vector<int64_t> chunks;
  const size_t k = std::min<size_t>(sizes.size(), 8);
  for (size_t i = 0; i < k; ++i) chunks.push_back(sizes[k == 1 ? 0 : i * (sizes.size() - 1) / (k - 1)]);
  chunks.erase(std::unique(chunks.begin(), chunks.end()), chunks.end());

  const ModelOptions model{.msize_bytes = options.msize_bytes, .alpha_s = options.alpha_s};
  std::optional<Schedule> best;
  double best_s = 0;
  for (int64_t c : chunks) {
    if (cancel.Requested()) return Cancel::Stopped("node_aware_ring");
    Schedule s = finish(PipelinedRing(ranks, tree.num_ranks(), c));
    const double t = ModelSchedule(s, tree, model).modelled_s;
    if (!best || t < best_s) {
      best = std::move(s);
      best_s = t;
    }
  }
  return std::move(*best);
}

}  // namespace topotune
