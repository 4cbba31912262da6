#include "bench_kernels/alltoall/combining.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <tuple>

namespace topotune::kernels::alltoall_detail {
namespace {

// A block on the move: the peer it goes to (or comes from) and its id.
struct Move {
  int peer;
  BlockId id;
  const char* data;  // Sender side only.
};

bool ByPeerThenBlock(const Move& a, const Move& b) {
  return std::tie(a.peer, a.id.src, a.id.dst) < std::tie(b.peer, b.id.src, b.id.dst);
}

// Calls fn(peer, first, count) for each run of equal peers in sorted moves.
template <typename Fn>
int ForEachPeer(const std::vector<Move>& moves, Fn fn) {
  for (size_t i = 0; i < moves.size();) {
    size_t j = i;
    while (j < moves.size() && moves[j].peer == moves[i].peer) ++j;
    if (int rc = fn(moves[i].peer, i, j - i); rc != MPI_SUCCESS) return rc;
    i = j;
  }
  return MPI_SUCCESS;
}

}  // namespace

KernelStatus RunCombining(const CombiningRoute& route, AlltoallBuffers* b) {
  const int n = b->size();
  const int me = b->rank();
  const size_t bytes = static_cast<size_t>(b->block_bytes());
  if (route.num_ranks() != n) return KernelStatus::MpiError(MPI_ERR_INTERN);

  struct Held {
    BlockId id;
    const char* data;
  };
  std::vector<Held> held;
  held.reserve(n);
  for (int d = 0; d < n; ++d) held.push_back({{me, d}, b->send_block(d)});

  std::vector<char> arena, next_arena, packed;
  std::vector<Held> keep;
  std::vector<Move> out, in;
  std::vector<BlockId> arrivals;
  std::vector<MPI_Request> reqs;
  for (int t = 1; t <= route.num_phases(); ++t) {
    keep.clear();
    out.clear();
    for (const Held& h : held) {
      const int to = route.Holder(t, h.id.src, h.id.dst);
      if (to == me)
        keep.push_back(h);
      else
        out.push_back({to, h.id, h.data});
    }
    std::sort(out.begin(), out.end(), ByPeerThenBlock);
    arrivals.clear();
    route.Arrivals(t, me, &arrivals);
    in.clear();
    for (const BlockId& a : arrivals) {
      if (route.Holder(t, a.src, a.dst) != me) continue;
      const int from = route.Holder(t - 1, a.src, a.dst);
      if (from != me) in.push_back({from, a, nullptr});
    }
    std::sort(in.begin(), in.end(), ByPeerThenBlock);

    // After this phase the rank holds the blocks it kept, then the ones it
    // received, in one arena; the blocks it sends leave packed per peer.
    next_arena.resize((keep.size() + in.size()) * bytes);
    for (size_t i = 0; i < keep.size(); ++i) std::memcpy(next_arena.data() + i * bytes, keep[i].data, bytes);
    packed.resize(out.size() * bytes);
    for (size_t i = 0; i < out.size(); ++i) std::memcpy(packed.data() + i * bytes, out[i].data, bytes);
    char* incoming = next_arena.data() + keep.size() * bytes;
    const MPI_Comm comm = b->comm();
    int rc = ForEachPeer(in, [&](int peer, size_t first, size_t count) {
      return PostRecv(incoming + first * bytes, static_cast<int64_t>(count * bytes), peer, kDataTag, comm, &reqs);
    });
    if (rc == MPI_SUCCESS)
      rc = ForEachPeer(out, [&](int peer, size_t first, size_t count) {
        return PostSend(packed.data() + first * bytes, static_cast<int64_t>(count * bytes), peer, kDataTag, comm,
                        &reqs);
      });
    if (rc == MPI_SUCCESS) rc = WaitAll(&reqs);
    if (rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);

    held.clear();
    for (size_t i = 0; i < keep.size(); ++i) held.push_back({keep[i].id, next_arena.data() + i * bytes});
    for (size_t i = 0; i < in.size(); ++i) held.push_back({in[i].id, incoming + i * bytes});
    std::swap(arena, next_arena);
  }

  // Every block for this rank, and nothing else, must have arrived.
  std::vector<char> seen(n, 0);
  for (const Held& h : held) {
    if (h.id.dst != me || seen[h.id.src]) return KernelStatus::MpiError(MPI_ERR_INTERN);
    seen[h.id.src] = 1;
    std::memcpy(b->recv_block(h.id.src), h.data, bytes);
  }
  if (held.size() != static_cast<size_t>(n)) return KernelStatus::MpiError(MPI_ERR_INTERN);
  return KernelStatus::Done();
}

std::string CheckRoute(const CombiningRoute& route, RouteStats* stats) {
  const int n = route.num_ranks();
  const int phases = route.num_phases();
  auto by_block = [](const BlockId& a, const BlockId& b) { return std::tie(a.src, a.dst) < std::tie(b.src, b.dst); };
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) {
      if (route.Holder(0, s, d) != s) return fmt::format("block {}->{} does not start at {}", s, d, s);
      if (route.Holder(phases, s, d) != d) return fmt::format("block {}->{} does not end at {}", s, d, d);
    }
  }
  std::vector<int64_t> messages(n, 0), blocks(n, 0);
  std::vector<std::vector<BlockId>> expected(n);
  std::vector<std::pair<int, int>> pairs;
  std::vector<BlockId> got;
  for (int t = 1; t <= phases; ++t) {
    for (auto& e : expected) e.clear();
    pairs.clear();
    for (int s = 0; s < n; ++s) {
      for (int d = 0; d < n; ++d) {
        const int from = route.Holder(t - 1, s, d), to = route.Holder(t, s, d);
        if (to < 0 || to >= n) return fmt::format("phase {}: block {}->{} goes to rank {}", t, s, d, to);
        if (from == to) continue;
        expected[to].push_back({s, d});
        pairs.push_back({from, to});
        ++blocks[from];
      }
    }
    std::sort(pairs.begin(), pairs.end());
    pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
    for (const auto& p : pairs) ++messages[p.first];
    for (int g = 0; g < n; ++g) {
      got.clear();
      route.Arrivals(t, g, &got);
      std::sort(got.begin(), got.end(), by_block);
      if (std::adjacent_find(got.begin(), got.end()) != got.end())
        return fmt::format("phase {}: the arrivals of rank {} list a block twice", t, g);
      std::erase_if(got, [&](const BlockId& a) {
        return route.Holder(t, a.src, a.dst) != g || route.Holder(t - 1, a.src, a.dst) == g;
      });
      std::sort(expected[g].begin(), expected[g].end(), by_block);
      if (got != expected[g])
        return fmt::format("phase {}: rank {} expects {} blocks but {} move to it", t, g, got.size(),
                           expected[g].size());
    }
  }
  if (stats) {
    stats->max_messages_per_rank = n ? *std::max_element(messages.begin(), messages.end()) : 0;
    stats->max_blocks_per_rank = n ? *std::max_element(blocks.begin(), blocks.end()) : 0;
  }
  return {};
}

}  // namespace topotune::kernels::alltoall_detail
