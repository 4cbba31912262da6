#include "tuner/bounds.h"

#include <algorithm>

namespace topotune {

int64_t BottleneckLoad(const RankTree& tree) {
  int64_t best = 0;
  for (int e = 0; e < tree.num_edges(); ++e) best = std::max(best, tree.Load(e));
  return best;
}

int BottleneckEdge(const RankTree& tree) {
  int best = -1;
  for (int e = 0; e < tree.num_edges(); ++e) {
    if (best < 0 || tree.Load(e) > tree.Load(best) ||
        (tree.Load(e) == tree.Load(best) && tree.edge(best).intra_host && !tree.edge(e).intra_host))
      best = e;
  }
  return best;
}

namespace {

template <typename BlocksFn>
EdgeBound MaxOverNetworkEdges(const RankTree& tree, double msize_bytes, BlocksFn blocks) {
  EdgeBound b;
  for (int e = 0; e < tree.num_edges(); ++e) {
    const auto& edge = tree.edge(e);
    if (edge.intra_host) continue;
    int64_t load = blocks(e);
    double seconds = static_cast<double>(load) * msize_bytes / (edge.speed_bps / 8.0);
    if (b.edge < 0 || seconds > b.seconds) b = EdgeBound{e, load, seconds};
  }
  return b;
}

}  // namespace

EdgeBound AlltoallBound(const RankTree& tree, double msize_bytes) {
  return MaxOverNetworkEdges(tree, msize_bytes, [&](int e) { return tree.Load(e); });
}

EdgeBound AllgatherBound(const RankTree& tree, double msize_bytes) {
  return MaxOverNetworkEdges(tree, msize_bytes, [&](int e) {
    auto [x, y] = tree.Split(e);
    return std::max(x, y);
  });
}

}  // namespace topotune
