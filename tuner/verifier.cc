#include "tuner/verifier.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string_view>
#include <unordered_map>

namespace topotune {
namespace {

// c[i] = max(c[i], s[i]) for i < n: the join of two vector clocks, the
// verifier's innermost loop (a synchronisation joins a whole clock), four
// lanes at a time with GCC/Clang vector extensions (SSE2 has no 32-bit max,
// so a compare and a select).
void JoinMax(int32_t* c, const int32_t* s, int n) {
  using V = int32_t __attribute__((vector_size(16)));
  constexpr int kLanes = sizeof(V) / sizeof(int32_t);
  int i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    V a, b;
    std::memcpy(&a, c + i, sizeof a);
    std::memcpy(&b, s + i, sizeof b);
    const V keep = a > b;
    a = (a & keep) | (b & ~keep);
    std::memcpy(c + i, &a, sizeof a);
  }
  for (; i < n; ++i) c[i] = std::max(c[i], s[i]);
}

// Happens-before by vector clocks, swept in phase order. Rank x has a point
// at phase t when it sends or receives then (only when it sends, under
// Schedule::receives_up_front: its receives are posted before the first
// phase and not waited for in between), or a synchronisation leaves or
// reaches it there. clock[x][y] is the latest phase of rank y whose end
// happens before x's current position: program order (a rank finishes phase
// t, its send and, unless receives_up_front, its receive, before starting a
// later one) and synchronisations (a, p, c, q): a's clock at the end of p
// joins c's before c starts q. Snapshots are kept only while a
// synchronisation is in flight.
class Clocks {
 public:
  Clocks(const Schedule& s, int n)
      : n_(n), receiver_orders_(!s.receives_up_front), clock_(static_cast<size_t>(n) * n, -1) {
    const int phases = s.num_phases();
    into_.resize(phases);
    from_.resize(phases);
    for (const Sync& y : s.syncs) {
      into_[y.before_phase].push_back(y);
      from_[y.after_phase].push_back(y);
    }
  }

  // Before the messages of phase q are checked: joins in-flight snapshots.
  void StartPhase(int q) {
    for (const Sync& y : into_[q]) {
      auto it = snapshots_.find(Key(y.from_rank, y.after_phase));
      int32_t* c = Row(y.to_rank);
      JoinMax(c, it->second.clock.data(), n_);
      if (--it->second.refs == 0) snapshots_.erase(it);
    }
  }
  // After phase q: every rank with a point at q has finished it.
  void EndPhase(int q, const std::vector<int>& ranks_at_q) {
    for (int x : ranks_at_q) Row(x)[x] = q;
    for (const Sync& y : from_[q]) {
      Row(y.from_rank)[y.from_rank] = q;
      auto [it, fresh] = snapshots_.try_emplace(Key(y.from_rank, q));
      if (fresh) it->second.clock.assign(Row(y.from_rank), Row(y.from_rank) + n_);
      ++it->second.refs;
    }
  }
  // Does the end of phase p of rank a (sender) or, unless receives are
  // posted up front, of rank b (receiver) happen before c starts its current
  // phase?
  bool Ordered(int a, int b, int p, int c) const {
    const int32_t* row = &clock_[static_cast<size_t>(c) * n_];
    return a == c || row[a] >= p || (receiver_orders_ && (b == c || row[b] >= p));
  }
  // Whether a rank that only receives in a phase has a point there.
  bool receiver_orders() const { return receiver_orders_; }

 private:
  struct Snapshot {
    std::vector<int32_t> clock;
    int refs = 0;
  };
  static uint64_t Key(int r, int p) { return (static_cast<uint64_t>(r) << 32) | static_cast<uint32_t>(p); }
  int32_t* Row(int x) { return &clock_[static_cast<size_t>(x) * n_]; }

  int n_;
  bool receiver_orders_;
  std::vector<int32_t> clock_;
  std::vector<std::vector<Sync>> into_, from_;
  std::unordered_map<uint64_t, Snapshot> snapshots_;
};

std::string EdgeName(const RankTree& tree, int directed) {
  const auto& e = tree.edge(directed / 2);
  int from = directed % 2 == 0 ? e.a : e.b;
  int to = directed % 2 == 0 ? e.b : e.a;
  return fmt::format("{}->{}", tree.node(from).name, tree.node(to).name);
}

// Host-combined schedules (Schedule::host_combined): completeness through
// combining and capacity per directed edge; see verifier.h.
VerifyReport VerifyHostCombined(const Schedule& s, const RankTree& tree, const VerifyOptions& opt) {
  VerifyReport rep;
  rep.num_phases = s.num_phases();
  rep.num_messages = s.num_messages();
  rep.ordering_checked = false;
  auto error = [&](std::string msg) {
    if (rep.errors.size() < opt.max_errors) rep.errors.push_back(std::move(msg));
  };
  const int n = tree.num_ranks();
  if (s.num_ranks != n) {
    error(fmt::format("schedule has {} ranks but the tree has {}", s.num_ranks, n));
    ++rep.pattern_errors;
    return rep;
  }
  // Hosts by name, and their rank counts.
  std::unordered_map<std::string_view, int> host_index;
  std::vector<std::string_view> host_name;
  std::vector<int> host_of(n);
  std::vector<int64_t> ranks_on;
  for (int r = 0; r < n; ++r) {
    auto [it, fresh] = host_index.try_emplace(tree.rank_host_name(r), static_cast<int>(host_name.size()));
    if (fresh) {
      host_name.push_back(tree.rank_host_name(r));
      ranks_on.push_back(0);
    }
    host_of[r] = it->second;
    ++ranks_on[it->second];
  }
  const uint64_t hosts = host_name.size();
  std::unordered_map<uint64_t, int64_t> carried;  // Blocks per ordered host pair.
  // Allgather: each host's stream of blocks (origin ranks), what it holds, and
  // per host pair how far the sender's stream has been read (schedule.h).
  const bool allgather = s.collective == "allgather";
  std::vector<std::vector<int32_t>> stream(allgather ? hosts : 0);
  std::vector<std::vector<char>> holds(allgather ? hosts : 0);
  std::unordered_map<uint64_t, size_t> cursor;
  std::vector<std::pair<int, std::vector<int32_t>>> arriving;  // (host, blocks) of this phase.
  std::vector<size_t> at_start;
  if (allgather) {
    for (uint64_t h = 0; h < hosts; ++h) holds[h].assign(n, 0);
    for (int r = 0; r < n; ++r) {
      stream[host_of[r]].push_back(r);
      holds[host_of[r]][r] = 1;
    }
  }
  // Reads the next `count` blocks of h's stream for g (skipping g's own),
  // within what h had when the phase began.
  auto carry = [&](int p, const Message& m, int h, int g) {
    size_t& at = cursor[static_cast<uint64_t>(h) * hosts + g];
    std::vector<int32_t> blocks;
    while (static_cast<int64_t>(blocks.size()) < m.blocks && at < at_start[h]) {
      const int32_t b = stream[h][at++];
      if (host_of[b] != g) blocks.push_back(b);
    }
    if (static_cast<int64_t>(blocks.size()) < m.blocks) {
      error(
          fmt::format("phase {}: message {}->{} carries {} blocks, but host {} had only {} more for host {} when "
                      "the phase began",
                      p, m.src, m.dst, m.blocks, host_name[h], blocks.size(), host_name[g]));
      ++rep.pattern_errors;
    }
    arriving.emplace_back(g, std::move(blocks));
  };
  const size_t ndir = 2 * static_cast<size_t>(tree.num_edges());
  std::vector<double> demand(ndir, 0);
  std::vector<int> in_phase(ndir, 0), touched, path;
  std::vector<int64_t> total(ndir, 0);
  for (int p = 0; p < s.num_phases(); ++p) {
    touched.clear();
    if (allgather) {
      at_start.resize(hosts);
      for (uint64_t h = 0; h < hosts; ++h) at_start[h] = stream[h].size();
    }
    for (const Message& m : s.phase(p)) {
      if (m.src < 0 || m.src >= n || m.dst < 0 || m.dst >= n) {
        error(fmt::format("phase {}: message {}->{} names a rank outside 0..{}", p, m.src, m.dst, n - 1));
        ++rep.pattern_errors;
        continue;
      }
      const int h = host_of[m.src], g = host_of[m.dst];
      if (h == g) {
        error(
            fmt::format("phase {}: message {}->{} stays on host {}; blocks inside a host are exchanged in shared "
                        "memory, not in the phases",
                        p, m.src, m.dst, host_name[h]));
        ++rep.pattern_errors;
        continue;
      }
      if (m.blocks < 1) {
        error(fmt::format("phase {}: message {}->{} carries {} blocks", p, m.src, m.dst, m.blocks));
        ++rep.pattern_errors;
        continue;
      }
      carried[static_cast<uint64_t>(h) * hosts + g] += m.blocks;
      if (allgather) carry(p, m, h, g);
      path.clear();
      tree.Path(m.src, m.dst, &path);
      double d = std::numeric_limits<double>::infinity();
      for (int de : path)
        if (!tree.edge(de / 2).intra_host) d = std::min(d, tree.edge(de / 2).flow_bps);
      for (int de : path) {
        if (tree.edge(de / 2).intra_host) continue;
        if (in_phase[de] == 0) touched.push_back(de);
        ++in_phase[de];
        ++total[de];
        demand[de] += d;
      }
    }
    for (int de : touched) {
      rep.max_phase_link_load = std::max(rep.max_phase_link_load, in_phase[de]);
      const double speed = tree.edge(de / 2).speed_bps;
      if (demand[de] > speed * (1 + 1e-9)) {
        ++rep.contention_count;
        error(fmt::format("phase {}: edge {} is overrun: {} messages ask {:.4g} bit/s of its {:.4g}", p,
                          EdgeName(tree, de), in_phase[de], demand[de], speed));
      }
      in_phase[de] = 0;
      demand[de] = 0;
    }
    for (auto& [g, blocks] : arriving) {
      for (int32_t b : blocks) {
        if (holds[g][b]) {
          error(fmt::format("phase {}: host {} receives the block of rank {} again", p, host_name[g], b));
          ++rep.pattern_errors;
          continue;
        }
        holds[g][b] = 1;
        stream[g].push_back(b);
      }
    }
    arriving.clear();
  }
  if (allgather) {
    for (uint64_t h = 0; h < hosts; ++h) {
      if (static_cast<int>(stream[h].size()) == n) continue;
      const auto missing = std::find(holds[h].begin(), holds[h].end(), 0) - holds[h].begin();
      error(fmt::format("host {} ends with {} of the {} blocks (missing the block of rank {})", host_name[h],
                        stream[h].size(), n, missing));
      ++rep.pattern_errors;
    }
    for (int64_t t : total) rep.max_link_load = std::max(rep.max_link_load, t);
    return rep;
  }
  for (uint64_t h = 0; h < hosts; ++h) {
    for (uint64_t g = 0; g < hosts; ++g) {
      if (h == g) continue;
      auto it = carried.find(h * hosts + g);
      const int64_t got = it == carried.end() ? 0 : it->second;
      const int64_t want = ranks_on[h] * ranks_on[g];
      if (got != want) {
        error(fmt::format("host pair {} -> {}: the messages carry {} blocks, expected {} ({} x {} ranks)", host_name[h],
                          host_name[g], got, want, ranks_on[h], ranks_on[g]));
        ++rep.pattern_errors;
      }
    }
  }
  for (int64_t t : total) rep.max_link_load = std::max(rep.max_link_load, t);
  return rep;
}

}  // namespace

std::string VerifyReport::Summary() const {
  return fmt::format(
      "phases {}, messages {}, max link load {}, max per-phase link load {}, contention {}, unordered {}, "
      "pattern errors {}, sync errors {}: {}",
      num_phases, num_messages, max_link_load, max_phase_link_load, contention_count, unordered_pairs, pattern_errors,
      sync_errors, ok() ? "ok" : "FAILED");
}

VerifyReport Verify(const Schedule& s, const RankTree& tree, const VerifyOptions& opt) {
  if (s.host_combined) return VerifyHostCombined(s, tree, opt);
  VerifyReport rep;
  const int n = tree.num_ranks();
  rep.num_phases = s.num_phases();
  rep.num_messages = s.num_messages();
  auto error = [&](std::string msg) {
    if (rep.errors.size() < opt.max_errors) rep.errors.push_back(std::move(msg));
  };
  if (s.num_ranks != n) {
    error(fmt::format("schedule has {} ranks but the tree has {}", s.num_ranks, n));
    ++rep.pattern_errors;
    return rep;
  }

  // Pattern.
  std::vector<uint8_t> seen(static_cast<size_t>(n) * n, 0);
  bool ranks_ok = true;
  for (int p = 0; p < s.num_phases(); ++p) {
    for (const Message& m : s.phase(p)) {
      if (m.src < 0 || m.src >= n || m.dst < 0 || m.dst >= n) {
        error(fmt::format("phase {}: message {}->{} names a rank outside 0..{}", p, m.src, m.dst, n - 1));
        ++rep.pattern_errors;
        ranks_ok = false;
        continue;
      }
      if (m.src == m.dst) {
        error(fmt::format("phase {}: message {}->{} sends to itself", p, m.src, m.dst));
        ++rep.pattern_errors;
        continue;
      }
      if (m.blocks != 1) {
        error(fmt::format("phase {}: message {}->{} carries {} blocks in a schedule that is not host-combined", p,
                          m.src, m.dst, m.blocks));
        ++rep.pattern_errors;
      }
      uint8_t& c = seen[static_cast<size_t>(m.src) * n + m.dst];
      if (c == 1) {
        error(fmt::format("phase {}: message {}->{} appears more than once", p, m.src, m.dst));
        ++rep.pattern_errors;
      }
      if (c < 2) ++c;
    }
  }
  if (!ranks_ok) return rep;
  auto expect_once = [&](int src, int dst) {
    uint8_t& c = seen[static_cast<size_t>(src) * n + dst];
    if (c == 0) {
      error(fmt::format("message {}->{} is missing", src, dst));
      ++rep.pattern_errors;
    }
    c = 3;  // Mark as expected.
  };
  if (opt.all_pairs) {
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b)
        if (a != b) expect_once(a, b);
  } else {
    for (const Message& m : opt.expected) {
      if (m.src >= 0 && m.src < n && m.dst >= 0 && m.dst < n && m.src != m.dst) expect_once(m.src, m.dst);
    }
  }
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b)
      if (seen[static_cast<size_t>(a) * n + b] == 1 || seen[static_cast<size_t>(a) * n + b] == 2) {
        error(fmt::format("message {}->{} is not part of the pattern", a, b));
        ++rep.pattern_errors;
      }

  // Synchronisations.
  for (const Sync& y : s.syncs) {
    if (y.from_rank < 0 || y.from_rank >= n || y.to_rank < 0 || y.to_rank >= n || y.after_phase < 0 ||
        y.before_phase >= s.num_phases() || y.after_phase >= y.before_phase) {
      error(fmt::format("sync [{},{},{},{}] is malformed (ranks 0..{}, after_phase < before_phase < {})", y.from_rank,
                        y.after_phase, y.to_rank, y.before_phase, n - 1, s.num_phases()));
      ++rep.sync_errors;
    }
  }

  // Contention within phases and ordering across phases, per directed edge.
  struct Use {
    int phase = -1;
    Message msg;
  };
  const size_t ndir = 2 * static_cast<size_t>(tree.num_edges());
  std::vector<Use> last(ndir);
  std::vector<int64_t> total(ndir, 0);
  std::vector<int> in_phase(ndir, 0);
  std::vector<int> path;
  const bool ordering = opt.check_ordering && !s.barrier_between_phases && rep.sync_errors == 0;
  Clocks clocks(s, ordering ? n : 0);
  std::vector<int> ranks_at;
  std::vector<int> mark(n, -1);
  for (int p = 0; p < s.num_phases(); ++p) {
    if (ordering) clocks.StartPhase(p);
    ranks_at.clear();
    for (const Message& m : s.phase(p)) {
      for (int x : {m.src, m.dst}) {
        if (mark[x] != p && (x == m.src || clocks.receiver_orders())) {
          mark[x] = p;
          ranks_at.push_back(x);
        }
      }
      if (m.src == m.dst) continue;
      path.clear();
      tree.Path(m.src, m.dst, &path);
      for (int de : path) {
        ++total[de];
        Use& u = last[de];
        if (u.phase == p) {
          ++in_phase[de];
          ++rep.contention_count;
          error(fmt::format("phase {}: messages {}->{} and {}->{} both use edge {}", p, u.msg.src, u.msg.dst, m.src,
                            m.dst, EdgeName(tree, de)));
        } else {
          in_phase[de] = 1;
          if (ordering && u.phase >= 0 && !clocks.Ordered(u.msg.src, u.msg.dst, u.phase, m.src)) {
            ++rep.unordered_pairs;
            error(
                fmt::format("messages {}->{} (phase {}) and {}->{} (phase {}) share edge {} but nothing orders "
                            "them (no program order or synchronisation chain)",
                            u.msg.src, u.msg.dst, u.phase, m.src, m.dst, p, EdgeName(tree, de)));
          }
        }
        rep.max_phase_link_load = std::max(rep.max_phase_link_load, in_phase[de]);
        u = Use{p, m};
      }
    }
    if (ordering) clocks.EndPhase(p, ranks_at);
  }
  for (int64_t t : total) rep.max_link_load = std::max(rep.max_link_load, t);
  return rep;
}

}  // namespace topotune
