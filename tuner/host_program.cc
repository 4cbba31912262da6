#include "tuner/host_program.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace topotune {
namespace {

// The hosts of a job, from the host index of every rank.
struct Hosts {
  std::vector<int32_t> host_of_rank, local_index, first_rank_of_host;
  std::vector<int32_t> ranks;  // Ranks grouped by host, in rank order within a host.
  int num_hosts() const { return static_cast<int>(first_rank_of_host.size()) - 1; }
  int64_t size(int h) const { return first_rank_of_host[h + 1] - first_rank_of_host[h]; }
};

StatusOr<Hosts> MakeHosts(const std::vector<int32_t>& host_of_rank, int num_ranks) {
  if (static_cast<int>(host_of_rank.size()) != num_ranks)
    return Status::InvalidArgument(
        fmt::format("the hosts list {} ranks but the schedule has {}", host_of_rank.size(), num_ranks));
  Hosts h;
  h.host_of_rank = host_of_rank;
  std::vector<int32_t> count;
  for (int r = 0; r < num_ranks; ++r) {
    const int32_t host = host_of_rank[r];
    if (host < 0 || host > static_cast<int32_t>(count.size()))
      return Status::InvalidArgument(
          fmt::format("rank {} is on host index {}; hosts must be numbered 0, 1, ... by their lowest rank", r, host));
    if (host == static_cast<int32_t>(count.size())) count.push_back(0);
    h.local_index.push_back(count[host]++);
  }
  h.first_rank_of_host.assign(count.size() + 1, 0);
  for (size_t i = 0; i < count.size(); ++i) h.first_rank_of_host[i + 1] = h.first_rank_of_host[i] + count[i];
  h.ranks.resize(num_ranks);
  for (int r = 0; r < num_ranks; ++r) h.ranks[h.first_rank_of_host[host_of_rank[r]] + h.local_index[r]] = r;
  return h;
}

// A message with its ranges: blocks [send_offset, +blocks) of the sender's
// host layout and [recv_offset, +blocks) of the receiver's.
using Visit = std::function<void(int32_t phase, const Message&, int64_t send_offset, int64_t recv_offset)>;

// Walks an alltoall schedule's messages in order, assigning each its ranges
// in the send and receive segments (see the header), and checks the block
// contract for every host pair.
Status WalkAlltoall(const Schedule& s, const Hosts& hosts, const Visit& visit, const Cancel& cancel) {
  const int H = hosts.num_hosts();
  if (!s.host_combined)
    for (int h = 0; h < H; ++h)
      if (hosts.size(h) > 1)
        return Status::InvalidArgument(fmt::format(
            "{} is a rank-level schedule but host index {} has {} ranks; only host-combined schedules run with "
            "several ranks per host",
            s.algorithm, h, hosts.size(h)));
  std::vector<int64_t> carried(static_cast<size_t>(H) * H, 0);
  for (int p = 0; p < s.num_phases(); ++p) {
    if (cancel.Poll(static_cast<int64_t>(s.phase(p).size()) + 1)) return Cancel::Stopped("compiling the host programs");
    for (const Message& m : s.phase(p)) {
      if (m.src < 0 || m.src >= s.num_ranks || m.dst < 0 || m.dst >= s.num_ranks)
        return Status::InvalidArgument(
            fmt::format("phase {}: message {}->{} names a rank outside 0..{}", p, m.src, m.dst, s.num_ranks - 1));
      const int a = hosts.host_of_rank[m.src], b = hosts.host_of_rank[m.dst];
      const int64_t blocks = s.host_combined ? m.blocks : 1;
      if (a == b || blocks < 1)
        return Status::InvalidArgument(
            fmt::format("phase {}: message {}->{} of {} blocks is not between two hosts", p, m.src, m.dst, blocks));
      int64_t& done = carried[static_cast<size_t>(a) * H + b];
      const int64_t pair_blocks = hosts.size(a) * hosts.size(b);
      if (done + blocks > pair_blocks)
        return Status::InvalidArgument(
            fmt::format("phase {}: message {}->{} carries blocks {}..{} of host pair ({}, {}), which has {}", p, m.src,
                        m.dst, done, done + blocks - 1, a, b, pair_blocks));
      visit(p, m, hosts.size(a) * hosts.first_rank_of_host[b] + done,
            hosts.size(b) * hosts.first_rank_of_host[a] + done);
      done += blocks;
    }
  }
  for (int a = 0; a < H; ++a)
    for (int b = 0; b < H; ++b)
      if (a != b && carried[static_cast<size_t>(a) * H + b] != hosts.size(a) * hosts.size(b))
        return Status::InvalidArgument(fmt::format("host pair ({}, {}) gets {} of its {} blocks", a, b,
                                                   carried[static_cast<size_t>(a) * H + b],
                                                   hosts.size(a) * hosts.size(b)));
  return Status::Ok();
}

// Walks an allgather schedule, simulating every host's stream (schedule.h's
// allgather rule), and assigns each message its range of the sender's and
// the receiver's stream. streams[h] ends as host h's stream of origin ranks.
Status WalkAllgather(const Schedule& s, const Hosts& hosts, const Visit& visit,
                     std::vector<std::vector<int32_t>>* streams, const Cancel& cancel) {
  const int H = hosts.num_hosts();
  const int N = s.num_ranks;
  streams->assign(H, {});
  std::vector<std::vector<int32_t>> receiver(H);  // Rank that received each position; -1: own block.
  for (int h = 0; h < H; ++h) {
    for (int64_t l = 0; l < hosts.size(h); ++l) {
      (*streams)[h].push_back(hosts.ranks[hosts.first_rank_of_host[h] + l]);
      receiver[h].push_back(-1);
    }
  }
  std::map<std::pair<int, int>, int64_t> cursor;  // Next position of a's stream to consider for b.
  std::vector<int64_t> ready(H);
  for (int p = 0; p < s.num_phases(); ++p) {
    for (int h = 0; h < H; ++h) ready[h] = static_cast<int64_t>((*streams)[h].size());
    for (const Message& m : s.phase(p)) {
      if (cancel.Poll(int64_t{m.blocks} + 1)) return Cancel::Stopped("compiling the host programs");
      if (m.src < 0 || m.src >= N || m.dst < 0 || m.dst >= N)
        return Status::InvalidArgument(
            fmt::format("phase {}: message {}->{} names a rank outside 0..{}", p, m.src, m.dst, N - 1));
      const int a = hosts.host_of_rank[m.src], b = hosts.host_of_rank[m.dst];
      if (a == b || m.blocks < 1)
        return Status::InvalidArgument(
            fmt::format("phase {}: message {}->{} of {} blocks is not between two hosts", p, m.src, m.dst, m.blocks));
      const std::vector<int32_t>& from = (*streams)[a];
      int64_t& c = cursor[{a, b}];
      while (c < ready[a] && hosts.host_of_rank[from[c]] == b) ++c;
      const int64_t begin = c;
      for (int64_t k = 0; k < m.blocks; ++k, ++c) {
        if (c >= ready[a])
          return Status::InvalidArgument(
              fmt::format("phase {}: message {}->{} carries {} blocks but host {} has only {} ready for host {}", p,
                          m.src, m.dst, m.blocks, a, k, b));
        if (hosts.host_of_rank[from[c]] == b)
          return Status::InvalidArgument(
              fmt::format("phase {}: message {}->{} skips a block of its receiving host inside its range; a "
                          "message must be one contiguous range of the sender's stream",
                          p, m.src, m.dst));
        if (receiver[a][c] != -1 && receiver[a][c] != m.src)
          return Status::InvalidArgument(fmt::format(
              "phase {}: rank {} forwards the block of rank {} that rank {} received; a rank may only forward its "
              "host's own blocks and those it received itself",
              p, m.src, from[c], receiver[a][c]));
      }
      const int64_t at = static_cast<int64_t>((*streams)[b].size());
      visit(p, m, begin, at);
      for (int64_t k = begin; k < c; ++k) {
        (*streams)[b].push_back((*streams)[a][k]);
        receiver[b].push_back(m.dst);
      }
    }
  }
  for (int h = 0; h < H; ++h) {
    std::vector<int32_t> sorted = (*streams)[h];
    std::sort(sorted.begin(), sorted.end());
    bool every_block_once = static_cast<int>(sorted.size()) == N;
    for (int i = 0; every_block_once && i < N; ++i) every_block_once = sorted[i] == i;
    if (!every_block_once)
      return Status::InvalidArgument(
          fmt::format("host {} ends with {} blocks, not each of the {} ranks' blocks once", h, sorted.size(), N));
  }
  return Status::Ok();
}

// Compiles the programs of ranks [lo, hi), with the layout when `layout`.
StatusOr<std::vector<HostProgram>> Compile(const Schedule& s, const std::vector<int32_t>& host_of_rank, int lo, int hi,
                                           bool layout, const Cancel& cancel) {
  const bool allgather = s.collective == "allgather";
  if (!allgather && s.collective != "alltoall")
    return Status::InvalidArgument(
        fmt::format("{} {}: only alltoall and allgather schedules compile into host "
                    "programs",
                    s.collective, s.algorithm));
  if (allgather && !s.host_combined)
    return Status::InvalidArgument(
        fmt::format("allgather {} is not host-combined; it has no host streams", s.algorithm));
  auto hosts = MakeHosts(host_of_rank, s.num_ranks);
  if (!hosts.ok()) return hosts.status();
  std::vector<HostProgram> progs(hi - lo);
  auto visit = [&](int32_t phase, const Message& m, int64_t send_offset, int64_t recv_offset) {
    const int64_t blocks = s.host_combined ? m.blocks : 1;
    if (m.src >= lo && m.src < hi) progs[m.src - lo].sends.push_back({phase, m.dst, send_offset, blocks});
    if (m.dst >= lo && m.dst < hi) progs[m.dst - lo].recvs.push_back({phase, m.src, recv_offset, blocks});
  };
  std::vector<std::vector<int32_t>> streams;
  Status st = allgather ? WalkAllgather(s, *hosts, visit, &streams, cancel) : WalkAlltoall(s, *hosts, visit, cancel);
  if (st.code() == Status::Code::kCancelled) return st;
  if (!st.ok()) return Status::InvalidArgument(fmt::format("{} {}: {}", s.collective, s.algorithm, st.message()));
  for (int r = lo; r < hi; ++r) {
    if (cancel.Poll(allgather ? s.num_ranks : 1)) return Cancel::Stopped("compiling the host programs");
    HostProgram& prog = progs[r - lo];
    prog.allgather = allgather;
    prog.rank = r;
    if (layout) {
      prog.host_of_rank = hosts->host_of_rank;
      prog.local_index = hosts->local_index;
      prog.first_rank_of_host = hosts->first_rank_of_host;
    }
    if (allgather) prog.stream_origin = streams[hosts->host_of_rank[r]];
  }
  return progs;
}

}  // namespace

std::vector<int32_t> HostIndexOfRanks(const RankTree& tree) {
  std::map<int, int32_t> index;  // Host node -> host index.
  std::vector<int32_t> out;
  for (int r = 0; r < tree.num_ranks(); ++r)
    out.push_back(index.emplace(tree.host_node(r), static_cast<int32_t>(index.size())).first->second);
  return out;
}

StatusOr<HostProgram> CompileHostProgram(const Schedule& schedule, const std::vector<int32_t>& host_of_rank, int rank) {
  if (rank < 0 || rank >= schedule.num_ranks)
    return Status::InvalidArgument(fmt::format("rank {} is outside 0..{}", rank, schedule.num_ranks - 1));
  auto progs = Compile(schedule, host_of_rank, rank, rank + 1, /*layout=*/true, Cancel());
  if (!progs.ok()) return progs.status();
  return std::move((*progs)[0]);
}

StatusOr<std::vector<HostProgram>> CompileHostPrograms(const Schedule& schedule,
                                                       const std::vector<int32_t>& host_of_rank, const Cancel& cancel) {
  return Compile(schedule, host_of_rank, 0, schedule.num_ranks, /*layout=*/false, cancel);
}

Status SetHostLayout(const std::vector<int32_t>& host_of_rank, HostProgram* program) {
  auto hosts = MakeHosts(host_of_rank, static_cast<int>(host_of_rank.size()));
  if (!hosts.ok()) return hosts.status();
  program->host_of_rank = std::move(hosts->host_of_rank);
  program->local_index = std::move(hosts->local_index);
  program->first_rank_of_host = std::move(hosts->first_rank_of_host);
  return Status::Ok();
}

std::string SimulateHostPrograms(const HostProgram& p0, const std::vector<HostProgram>& programs) {
  const int N = static_cast<int>(programs.size());
  if (N == 0) return {};
  const int H = p0.num_hosts();
  const bool allgather = p0.allgather;
  // A block is (origin, destination); allgather blocks have destination -1.
  using Block = std::pair<int32_t, int32_t>;
  constexpr Block kEmpty{-2, -2};
  std::vector<std::vector<Block>> send_seg(H), recv_seg(H);
  for (int h = 0; h < H; ++h) {
    const size_t blocks = static_cast<size_t>(p0.host_size(h)) * (allgather ? 1 : N);
    send_seg[h].assign(allgather ? N : blocks, kEmpty);
    recv_seg[h].assign(allgather ? 0 : blocks, kEmpty);
  }
  auto host = [&](int r) { return p0.host_of_rank[r]; };
  // Copy in.
  for (int r = 0; r < N; ++r) {
    const int h = host(r);
    const int64_t l = p0.local_index[r];
    if (allgather) {
      send_seg[h][l] = {r, -1};
      continue;
    }
    for (int d = 0; d < N; ++d)
      send_seg[h][p0.host_size(h) * p0.first_rank_of_host[host(d)] + l * p0.host_size(host(d)) + p0.local_index[d]] = {
          r, d};
  }
  // Transfers, phase by phase: a send is matched with the receiver's next
  // receive from that sender (first-in first-out per pair, as in MPI).
  struct Pending {
    int32_t phase, src;
    const HostTransfer* send;
  };
  std::vector<Pending> order;  // Every rank's sends.
  for (int r = 0; r < N; ++r)
    for (const HostTransfer& t : programs[r].sends) order.push_back({t.phase, r, &t});
  std::stable_sort(order.begin(), order.end(), [](const Pending& a, const Pending& b) { return a.phase < b.phase; });
  // Each rank's receives per sender, in posting order.
  std::map<std::pair<int, int>, std::vector<const HostTransfer*>> recvs;
  for (int r = 0; r < N; ++r)
    for (const HostTransfer& t : programs[r].recvs) recvs[{r, t.peer}].push_back(&t);
  std::map<std::pair<int, int>, size_t> next_recv;  // (receiver, sender) -> receives matched so far.
  auto recv_of = [&](int dst, int src, size_t k) -> const HostTransfer* {
    auto it = recvs.find({dst, src});
    return it != recvs.end() && k < it->second.size() ? it->second[k] : nullptr;
  };
  int32_t current = -1;
  std::vector<std::pair<int, std::vector<std::pair<int64_t, Block>>>> writes;
  auto apply = [&] {
    for (auto& [h, list] : writes)
      for (auto& [pos, b] : list) {
        auto& seg = allgather ? send_seg[h] : recv_seg[h];
        if (pos < 0 || pos >= static_cast<int64_t>(seg.size()) || seg[pos] != kEmpty) {
          // Marked by an impossible block so that the final check names it.
          if (pos >= 0 && pos < static_cast<int64_t>(seg.size())) seg[pos] = {-3, -3};
          continue;
        }
        seg[pos] = b;
      }
    writes.clear();
  };
  for (const Pending& pend : order) {
    const int32_t phase = pend.phase;
    if (phase != current) apply(), current = phase;
    const HostTransfer& s = *pend.send;
    const int src = pend.src, dst = s.peer;
    if (dst < 0 || dst >= N) return fmt::format("rank {} sends to rank {} outside 0..{}", src, dst, N - 1);
    const HostTransfer* r = recv_of(dst, src, next_recv[{dst, src}]++);
    if (r == nullptr)
      return fmt::format("rank {} sends to rank {} in phase {}, which posts no receive for it", src, dst, phase);
    if (r->phase != phase || r->blocks != s.blocks)
      return fmt::format("rank {} sends {} blocks to rank {} in phase {}; rank {} expects {} in phase {}", src,
                         s.blocks, dst, phase, dst, r->blocks, r->phase);
    const auto& from = send_seg[host(src)];
    std::vector<std::pair<int64_t, Block>> list;
    for (int64_t k = 0; k < s.blocks; ++k) {
      const int64_t at = s.offset + k;
      if (at < 0 || at >= static_cast<int64_t>(from.size()) || from[at] == kEmpty)
        return fmt::format("rank {} sends block {} of its host in phase {}, which it does not hold", src, at, phase);
      list.push_back({r->offset + k, from[at]});
    }
    writes.push_back({host(dst), std::move(list)});
  }
  apply();
  for (const auto& [pair, list] : recvs)
    if (next_recv[pair] != list.size())
      return fmt::format("rank {} posts {} receives from rank {} but gets {} messages", pair.first, list.size(),
                         pair.second, next_recv[pair]);
  // Copy out: what each rank reads must be the block addressed to it.
  for (int r = 0; r < N; ++r) {
    const int h = host(r);
    const int64_t l = p0.local_index[r];
    if (allgather) {
      const auto& origin = programs[r].stream_origin;
      if (static_cast<int>(origin.size()) != N)
        return fmt::format("rank {}'s stream lists {} origins, not {}", r, origin.size(), N);
      for (int k = 0; k < N; ++k)
        if (send_seg[h][k] != Block{origin[k], -1})
          return fmt::format("rank {} reads the block of rank {} at stream position {}, which holds rank {}'s", r,
                             origin[k], k, send_seg[h][k].first);
      continue;
    }
    for (int o = 0; o < N; ++o) {
      const int g = host(o);
      // Section g of the segment, origin-major (the same offset in the send
      // segment's own section for blocks from this host).
      const int64_t at = p0.host_size(h) * p0.first_rank_of_host[g] + p0.local_index[o] * p0.host_size(h) + l;
      const Block got = (g == h ? send_seg : recv_seg)[h][at];
      if (got != Block{o, r})
        return fmt::format("rank {} reads its block from rank {} at block {} of host {}, which holds {}->{}", r, o, at,
                           h, got.first, got.second);
    }
  }
  return {};
}

std::string CheckAlltoallHostPrograms(const HostProgram& p0, const std::vector<HostProgram>& programs) {
  const int N = static_cast<int>(programs.size());
  if (N == 0) return {};
  if (p0.allgather) return "not alltoall host programs";
  if (static_cast<int>(p0.host_of_rank.size()) != N || static_cast<int>(p0.local_index.size()) != N)
    return fmt::format("a layout of {} ranks for {} programs", p0.host_of_rank.size(), N);
  auto host = [&](int r) { return p0.host_of_rank[r]; };
  // A message as its sender and its receiver see it: the rank pair, its
  // place among that pair's messages in list order (MPI matches a pair's
  // messages first in, first out), the phase, and its blocks as a range of
  // the host pair's section (the same order in the send and the receive
  // segment, host_program.h).
  struct Seen {
    int32_t src, dst, nth, phase;
    int64_t rel, blocks;
    auto key() const { return std::tie(src, dst, nth); }
  };
  std::vector<Seen> sends, recvs;
  std::unordered_map<int32_t, int32_t> nth;  // Per peer of the rank at hand.
  for (int r = 0; r < N; ++r) {
    const int h = host(r);
    for (const auto& [list, out, sending] :
         {std::tuple{&programs[r].sends, &sends, true}, std::tuple{&programs[r].recvs, &recvs, false}}) {
      nth.clear();
      for (const HostTransfer& t : *list) {
        if (t.peer < 0 || t.peer >= N || host(t.peer) == h)
          return fmt::format("rank {} {} rank {}, not a rank of another host", r,
                             sending ? "sends to" : "receives from", t.peer);
        const int g = host(t.peer);
        // The section of the other host g in h's send or receive segment.
        const int64_t size = static_cast<int64_t>(p0.host_size(h)) * p0.host_size(g);
        const int64_t start = int64_t{p0.host_size(h)} * p0.first_rank_of_host[g];
        const int64_t rel = t.offset - start;
        if (t.blocks < 1 || rel < 0 || rel + t.blocks > size)
          return fmt::format("rank {} {} blocks {} to {} of its host, outside the {} blocks of host {}'s section", r,
                             sending ? "sends" : "receives into", t.offset, t.offset + t.blocks - 1, size, g);
        out->push_back({sending ? r : t.peer, sending ? t.peer : r, nth[t.peer]++, t.phase, rel, t.blocks});
      }
    }
  }
  auto by_key = [](const Seen& a, const Seen& b) { return a.key() < b.key(); };
  std::sort(sends.begin(), sends.end(), by_key);
  std::sort(recvs.begin(), recvs.end(), by_key);
  for (size_t i = 0, j = 0; i < sends.size() || j < recvs.size(); ++i, ++j) {
    const Seen* s = i < sends.size() ? &sends[i] : nullptr;
    const Seen* v = j < recvs.size() ? &recvs[j] : nullptr;
    if (v == nullptr || (s != nullptr && s->key() < v->key()))
      return fmt::format("rank {} sends to rank {} in phase {}, which posts no receive for it", s->src, s->dst,
                         s->phase);
    if (s == nullptr || v->key() < s->key())
      return fmt::format("rank {} posts a receive from rank {} in phase {} that no message fills", v->dst, v->src,
                         v->phase);
    if (s->phase != v->phase || s->blocks != v->blocks || s->rel != v->rel)
      return fmt::format(
          "rank {} sends {} blocks from block {} of their section to rank {} in phase {}; rank {} expects {} at block "
          "{} in phase {}",
          s->src, s->blocks, s->rel, s->dst, s->phase, s->dst, v->blocks, v->rel, v->phase);
  }
  // Every host pair's section sent whole, each block once.
  std::sort(sends.begin(), sends.end(), [&](const Seen& a, const Seen& b) {
    return std::tuple{host(a.src), host(a.dst), a.rel} < std::tuple{host(b.src), host(b.dst), b.rel};
  });
  const int H = p0.num_hosts();
  size_t i = 0;
  for (int h = 0; h < H; ++h)
    for (int g = 0; g < H; ++g) {
      if (g == h) continue;
      int64_t covered = 0;
      for (; i < sends.size() && host(sends[i].src) == h && host(sends[i].dst) == g; ++i) {
        if (sends[i].rel != covered)
          return fmt::format(
              "host {} sends host {} blocks {} to {} of their section {}", h, g, sends[i].rel,
              sends[i].rel + sends[i].blocks - 1,
              sends[i].rel < covered ? "twice" : fmt::format("but never blocks {} to {}", covered, sends[i].rel - 1));
        covered += sends[i].blocks;
      }
      const int64_t size = static_cast<int64_t>(p0.host_size(h)) * p0.host_size(g);
      if (covered != size)
        return fmt::format("host {} sends host {} {} of the {} blocks of their section", h, g, covered, size);
    }
  return {};
}

}  // namespace topotune
