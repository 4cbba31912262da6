#include "tuner/capacity_scheduled.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tuner/bounds.h"
#include "tuner/capacity_model.h"
#include "tuner/tree_scheduled.h"

namespace topotune {
namespace {

constexpr double kUnlimited = std::numeric_limits<double>::infinity();
constexpr double kTol = 1e-9;
constexpr int kMaxHosts = 8192;
constexpr int kMaxPairOrderHosts = 128;
constexpr double kClassRatio = 4;  // Pair times within one size class.
constexpr int kMaxClasses = 4;

// The k-th of `parts` shares of `total` blocks, as equal as can be (the
// first total % parts shares one block larger).
constexpr int64_t ShareOf(int64_t total, int64_t parts, int64_t k) {
  return total / parts + (k < total % parts ? 1 : 0);
}
constexpr double kPairOrderBudget = 4e6;  // Host pairs x phases.

uint64_t PairKey(int32_t from, int32_t to) { return static_cast<uint64_t>(from) << 32 | static_cast<uint32_t>(to); }

// Hosts and the switch-level paths between their attachment nodes. Hosts are
// numbered so that the hosts of one group (same attachment node) are
// consecutive.
struct HostView {
  int num_hosts = 0;
  std::vector<std::vector<int32_t>> ranks;   // Per host, increasing.
  std::vector<int> up, down;                 // Directed host-link ids, -1 at the root.
  std::vector<double> up_speed, down_speed;  // One flow's bytes/s on the host link (infinite without a link).
  std::vector<int> group;                    // Group of each host.
  int num_groups = 0;
  std::vector<int> group_begin;  // Hosts of group s: [group_begin[s], group_begin[s+1]).
  // Group pair (s, t) -> directed edges of NodePath(node_s, node_t) in
  // path_edges[path_begin[s*L+t] .. path_begin[s*L+t+1]) and its slowest speed.
  std::vector<int64_t> path_begin;
  std::vector<int> path_edges;
  std::vector<double> path_min;
  std::vector<double> speed;       // Bytes/s per directed edge id: what the link carries.
  std::vector<double> flow;        // Bytes/s one message gets on it (a LAG member's speed).
  double min_demand = kUnlimited;  // Smallest demand of any host pair.

  double Demand(int h, int g) const {
    return std::min({up_speed[h], down_speed[g], path_min[static_cast<size_t>(group[h]) * num_groups + group[g]]});
  }
  // Calls f(directed edge) for each link of the switch path of group pair
  // gp = s x num_groups + t.
  template <class F>
  void ForGroupPath(size_t gp, F&& f) const {
    for (int64_t i = path_begin[gp]; i < path_begin[gp + 1]; ++i) f(path_edges[i]);
  }
  // Calls f(directed edge) for each network link of host pair (h, g): its
  // host links, then its group pair's switch path.
  template <class F>
  void ForPath(int h, int g, F&& f) const {
    if (up[h] >= 0) f(up[h]);
    if (down[g] >= 0) f(down[g]);
    ForGroupPath(static_cast<size_t>(group[h]) * num_groups + group[g], f);
  }
  // Calls f(g) for each receiver g whose bit is set in host h's row of
  // `bits` (|hosts| / 64 words per host).
  template <class F>
  void ForReceivers(const std::vector<uint64_t>& bits, int h, F&& f) const {
    const int words = (num_hosts + 63) / 64;
    const uint64_t* hb = &bits[static_cast<size_t>(h) * words];
    for (int w = 0; w < words; ++w)
      for (uint64_t x = hb[w]; x; x &= x - 1) f(w * 64 + std::countr_zero(x));
  }
};

StatusOr<HostView> BuildHostView(const RankTree& tree) {
  HostView v;
  std::unordered_map<int, int> host_of_node;
  std::vector<int> host_node;
  std::vector<std::vector<int32_t>> ranks;
  for (int r = 0; r < tree.num_ranks(); ++r) {
    const int hn = tree.host_node(r);
    auto [it, fresh] = host_of_node.try_emplace(hn, static_cast<int>(host_node.size()));
    if (fresh) {
      host_node.push_back(hn);
      ranks.emplace_back();
    }
    ranks[it->second].push_back(r);
  }
  const int H = static_cast<int>(host_node.size());
  if (H > kMaxHosts)
    return Status::InvalidArgument(fmt::format(
        "capacity_scheduled: {} hosts; at most {} are supported (per-pair state grows as hosts^2)", H, kMaxHosts));
  v.speed.resize(2 * static_cast<size_t>(tree.num_edges()));
  v.flow.resize(v.speed.size());
  for (int e = 0; e < tree.num_edges(); ++e) {
    const auto& ed = tree.edge(e);
    v.speed[2 * e] = v.speed[2 * e + 1] = ed.intra_host ? kUnlimited : ed.speed_bps / 8.0;
    v.flow[2 * e] = v.flow[2 * e + 1] = ed.intra_host ? kUnlimited : ed.flow_bps / 8.0;
  }
  // Group = the node a host hangs from (its parent), or the host itself at the
  // root.
  std::vector<int> gnode_of(H);
  std::vector<int> group_nodes;
  std::unordered_map<int, int> group_of_node;
  for (int h = 0; h < H; ++h) {
    int p = tree.parent(host_node[h]);
    int gn = p >= 0 ? p : host_node[h];
    auto [it, fresh] = group_of_node.try_emplace(gn, static_cast<int>(group_nodes.size()));
    if (fresh) group_nodes.push_back(gn);
    gnode_of[h] = it->second;
  }
  const int L = static_cast<int>(group_nodes.size());
  // Renumber hosts by group (stable: first rank order within a group).
  std::vector<int> order(H);
  for (int h = 0; h < H; ++h) order[h] = h;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return gnode_of[a] < gnode_of[b]; });
  v.num_hosts = H;
  v.num_groups = L;
  v.ranks.resize(H);
  v.up.assign(H, -1);
  v.down.assign(H, -1);
  v.up_speed.assign(H, kUnlimited);
  v.down_speed.assign(H, kUnlimited);
  v.group.resize(H);
  v.group_begin.assign(L + 1, 0);
  for (int i = 0; i < H; ++i) {
    int h = order[i];
    v.ranks[i] = std::move(ranks[h]);
    v.group[i] = gnode_of[h];
    ++v.group_begin[gnode_of[h] + 1];
    int node = host_node[h];
    int pe = tree.parent_edge(node);
    if (pe >= 0) {
      bool a_is_node = tree.edge(pe).a == node;
      v.up[i] = RankTree::Directed(pe, a_is_node);
      v.down[i] = RankTree::Directed(pe, !a_is_node);
      v.up_speed[i] = v.down_speed[i] = v.flow[2 * pe];
      if (!(tree.edge(pe).speed_bps > 0) || !std::isfinite(tree.edge(pe).speed_bps))
        return Status::InvalidArgument(
            fmt::format("capacity_scheduled: link {} - {} has speed {} bit/s; a positive finite speed is required",
                        tree.node(tree.edge(pe).a).name, tree.node(tree.edge(pe).b).name, tree.edge(pe).speed_bps));
    }
  }
  for (int s = 0; s < L; ++s) v.group_begin[s + 1] += v.group_begin[s];
  v.path_begin.assign(static_cast<size_t>(L) * L + 1, 0);
  v.path_min.assign(static_cast<size_t>(L) * L, kUnlimited);
  std::vector<int> tmp;
  for (int s = 0; s < L; ++s) {
    for (int t = 0; t < L; ++t) {
      tmp.clear();
      if (s != t) tree.NodePath(group_nodes[s], group_nodes[t], &tmp);
      double mn = kUnlimited;
      for (int de : tmp) {
        const auto& ed = tree.edge(de / 2);
        if (!ed.intra_host && (!(ed.speed_bps > 0) || !std::isfinite(ed.speed_bps)))
          return Status::InvalidArgument(
              fmt::format("capacity_scheduled: link {} - {} has speed {} bit/s; a positive finite speed is required",
                          tree.node(ed.a).name, tree.node(ed.b).name, ed.speed_bps));
        mn = std::min(mn, v.flow[de]);
        v.path_edges.push_back(de);
      }
      v.path_min[static_cast<size_t>(s) * L + t] = mn;
      v.path_begin[static_cast<size_t>(s) * L + t + 1] = static_cast<int64_t>(v.path_edges.size());
    }
  }
  // Smallest demand of any pair: a link with less room than that can take no
  // further message in this phase.
  for (int s = 0; s < L; ++s) {
    double up_min = kUnlimited;
    for (int h = v.group_begin[s]; h < v.group_begin[s + 1]; ++h) up_min = std::min(up_min, v.up_speed[h]);
    for (int t = 0; t < L; ++t) {
      double down_min = kUnlimited;
      for (int g = v.group_begin[t]; g < v.group_begin[t + 1]; ++g) down_min = std::min(down_min, v.down_speed[g]);
      bool any_pair = s != t || v.group_begin[s + 1] - v.group_begin[s] >= 2;
      if (any_pair)
        v.min_demand = std::min(v.min_demand, std::min({up_min, down_min, v.path_min[static_cast<size_t>(s) * L + t]}));
    }
  }
  return v;
}

// How each phase is filled (see the header, step 3-4).
enum class Order {
  kGroup,  // Switch-to-switch paths by criticality, then senders and receivers.
  kPair,   // Every host pair by the most critical link it crosses.
  // As kPair, ties broken by the summed criticality of the pair's links, so
  // that two critical host links are served together (as a perfect matching
  // of an open shop would).
  kPairBothEnds,
};
constexpr Order kOrders[] = {Order::kGroup, Order::kPair, Order::kPairBothEnds};

struct Packed {
  Schedule schedule;
  double seconds = kUnlimited;
};

// A host pair the pair order may place, with the keys it sorts by.
struct Candidate {
  double key;   // The most critical link the pair crosses.
  double key2;  // With both_ends: its links' summed criticality; else 0.
  double demand;
  int64_t rot;  // Rotates ties with the phase.
  int h, g;
};

// Every remaining host pair (the set bits of `bits`) by the most critical
// link it crosses (its host links and the switch path), then (both_ends) the
// summed criticality of its links, the larger demand, and the rotation.
// crit(directed edge) is that link's remaining need, in any unit; keys are
// rounded to 1 / key_scale of that unit, so that near-ties rotate too.
template <class Crit>
void SortCandidates(const HostView& v, const std::vector<uint64_t>& bits, Crit&& crit, double key_scale, int64_t ph,
                    bool both_ends, std::vector<Candidate>* out) {
  const int H = v.num_hosts;
  out->clear();
  for (int h = 0; h < H; ++h)
    v.ForReceivers(bits, h, [&](int g) {
      double k = 0, sum = 0;
      v.ForPath(h, g, [&](int de) {
        k = std::max(k, crit(de));
        sum += crit(de);
      });
      out->push_back({std::round(k * key_scale), both_ends ? std::round(sum * key_scale) : 0, v.Demand(h, g),
                      ((g - h + H) % H + ph) % H * H + (h + ph) % H, h, g});
    });
  std::sort(out->begin(), out->end(), [](const Candidate& a, const Candidate& b) {
    if (a.key != b.key) return a.key > b.key;
    if (a.key2 != b.key2) return a.key2 > b.key2;
    if (a.demand != b.demand) return a.demand > b.demand;
    return a.rot < b.rot;
  });
}

// One phase's host pairs in the pair order with both ends: greedy in
// candidate order on a tentative load, then augmenting swaps (the length-3
// augmenting paths of bipartite matching): a pair (h, g) that does not fit
// takes the place of a chosen (h2, g) when h2 can move to another receiver
// g3, one more message in the phase.
class PhaseChooser {
 public:
  explicit PhaseChooser(const HostView& v) : v_(v), load_(v.speed.size(), 0.0) {}

  // The chosen pairs; `bits` marks each host's receivers still to serve.
  // Without `augment`, the greedy pass alone.
  const std::vector<std::pair<int, int>>& Choose(const std::vector<Candidate>& candidates,
                                                 const std::vector<uint64_t>& bits, bool augment = true) {
    for (const auto& [h, g] : chosen_) v_.ForPath(h, g, [&](int de) { load_[de] = 0; });
    chosen_.clear();
    is_chosen_.clear();
    for (const Candidate& c : candidates)
      if (Fits(c.h, c.g)) Take(c.h, c.g, 1);
    if (!augment) return chosen_;
    for (const Candidate& c : candidates) {
      if (is_chosen_.contains(PairKey(c.h, c.g)) || !Fits(c.h, c.g, /*skip_down=*/true)) continue;
      if (Fits(c.h, c.g)) {
        Take(c.h, c.g, 1);
        continue;
      }
      holders_.clear();  // A copy: TrySwap reorders chosen_.
      for (const auto& [h2, g2] : chosen_)
        if (g2 == c.g) holders_.push_back(h2);
      for (int h2 : holders_)
        if (TrySwap(c.h, c.g, h2, bits)) break;
    }
    return chosen_;
  }

  // Per directed edge, the summed demands of the chosen pairs.
  const std::vector<double>& load() const { return load_; }

  // Whether one more flow of (h, g) at its demand fits on every link of its
  // path loaded with `load` (optionally not counting g's host link).
  bool FitsOn(const std::vector<double>& load, int h, int g, bool skip_down = false) const {
    const double d = v_.Demand(h, g);
    bool ok = true;
    v_.ForPath(h, g, [&](int de) {
      if (!(skip_down && de == v_.down[g])) ok = ok && load[de] + d <= v_.speed[de] * (1 + kTol);
    });
    return ok;
  }

 private:
  // Whether (h, g) fits beside the chosen pairs.
  bool Fits(int h, int g, bool skip_down = false) const { return FitsOn(load_, h, g, skip_down); }
  // Adds (sign 1) or removes (-1) (h, g).
  void Take(int h, int g, int sign) {
    const double d = sign * v_.Demand(h, g);
    v_.ForPath(h, g, [&](int de) { load_[de] += d; });
    if (sign > 0) {
      chosen_.emplace_back(h, g);
      is_chosen_.insert(PairKey(h, g));
    } else {
      chosen_.erase(std::find(chosen_.begin(), chosen_.end(), std::pair<int, int>(h, g)));
      is_chosen_.erase(PairKey(h, g));
    }
  }
  // Whether (h, g) took the place of the chosen (h2, g), h2 moving to
  // another receiver; the tentative phase is unchanged when not.
  bool TrySwap(int h, int g, int h2, const std::vector<uint64_t>& bits) {
    Take(h2, g, -1);
    if (Fits(h, g)) {
      Take(h, g, 1);
      int g3 = -1;
      v_.ForReceivers(bits, h2, [&](int y) {
        if (g3 < 0 && y != g && !is_chosen_.contains(PairKey(h2, y)) && Fits(h2, y)) g3 = y;
      });
      if (g3 >= 0) {
        Take(h2, g3, 1);
        return true;
      }
      Take(h, g, -1);
    }
    Take(h2, g, 1);
    return false;
  }

  const HostView& v_;
  std::vector<double> load_;
  std::vector<std::pair<int, int>> chosen_;
  std::unordered_set<uint64_t> is_chosen_;
  std::vector<int> holders_;
};

// Greedy capacity-respecting phases for chunk length tau (see the header).
// Returns nullopt when a lower bound shows it cannot beat `best_seconds`.
StatusOr<std::optional<Packed>> Pack(const HostView& v, const CapacityScheduleOptions& opt, double tau, Order order,
                                     double bound_seconds, double best_seconds, const Cancel& cancel,
                                     const std::vector<uint8_t>* only = nullptr) {
  const int H = v.num_hosts;
  const int L = v.num_groups;
  const size_t HH = static_cast<size_t>(H) * H;
  const int words = (H + 63) / 64;
  const double msize = opt.msize_bytes;

  auto pair_blocks = [&](int h, int g) {
    return static_cast<int64_t>(v.ranks[h].size()) * static_cast<int64_t>(v.ranks[g].size());
  };
  auto pair_messages = [&](int64_t w, double d) {
    double x = static_cast<double>(w) * msize / (d * tau);
    double n = std::ceil(x * (1 - kTol));
    return static_cast<int32_t>(std::clamp<double>(n, 1.0, static_cast<double>(w)));
  };

  std::vector<int32_t> rem(HH, 0), total(HH, 0);
  std::vector<uint64_t> bits(static_cast<size_t>(H) * words, 0);
  std::vector<double> need(v.speed.size(), 0.0);  // Remaining demand per directed edge.
  std::vector<int64_t> gp_left(static_cast<size_t>(L) * L, 0);
  int64_t left = 0;
  for (int h = 0; h < H; ++h) {
    for (int g = 0; g < H; ++g) {
      if (g == h || (only && !(*only)[static_cast<size_t>(h) * H + g])) continue;
      int64_t w = pair_blocks(h, g);
      if (w > INT32_MAX) return Status::InvalidArgument("capacity_scheduled: too many blocks between two hosts");
      double d = v.Demand(h, g);
      int32_t n = pair_messages(w, d);
      size_t idx = static_cast<size_t>(h) * H + g;
      rem[idx] = total[idx] = n;
      bits[static_cast<size_t>(h) * words + g / 64] |= uint64_t{1} << (g % 64);
      const double dem = d * n;
      v.ForPath(h, g, [&](int de) { need[de] += dem; });
      gp_left[static_cast<size_t>(v.group[h]) * L + v.group[g]] += n;
      left += n;
    }
  }
  // Lower bound on this tau's time: the busiest link's phases, each paying
  // alpha, on top of the physical bound.
  double min_phases = 0;
  for (size_t de = 0; de < need.size(); ++de)
    if (std::isfinite(v.speed[de])) min_phases = std::max(min_phases, std::ceil(need[de] / v.speed[de] * (1 - kTol)));
  if (bound_seconds + min_phases * opt.alpha_s >= best_seconds) return std::optional<Packed>();
  // The pair order costs O(pairs log pairs) per phase.
  const bool pair_order = order != Order::kGroup;
  if (pair_order && static_cast<double>(HH) * min_phases > kPairOrderBudget) return std::optional<Packed>();

  Packed out;
  Schedule& s = out.schedule;
  s.Reserve(left, static_cast<int>(std::min<double>(min_phases * 1.2 + 16, 1e7)));
  std::vector<double> used(v.speed.size(), 0.0), bytes(v.speed.size(), 0.0);
  std::vector<int> touched;
  double longest_message = 0;  // Seconds of the current phase's longest message alone.
  std::vector<uint64_t> recv_free(words);
  std::vector<char> send_free(H);
  std::vector<int> senders(H);  // Per group, sorted by host-link criticality.
  std::vector<double> key(H);
  std::vector<int> gps;
  std::vector<double> gp_key(static_cast<size_t>(L) * L, 0.0), group_up(L), group_down(L);
  for (size_t gp = 0; gp < gp_left.size(); ++gp)
    if (gp_left[gp] > 0) gps.push_back(static_cast<int>(gp));
  const double room_floor = v.min_demand * (1 - kTol);
  auto has_room = [&](int de, double d) { return de < 0 || used[de] + d <= v.speed[de] * (1 + kTol); };
  auto crit = [&](int de) { return de < 0 ? 0.0 : need[de] / v.speed[de]; };
  auto touch = [&](int de, double d, double b) {
    if (used[de] == 0 && bytes[de] == 0) touched.push_back(de);
    used[de] += d;
    bytes[de] += b;
    need[de] -= d;
  };

  // Places the next message of host pair (h, g) in the current phase.
  auto place = [&](int h, int g) {
    const size_t gp = static_cast<size_t>(v.group[h]) * L + v.group[g];
    const size_t idx = static_cast<size_t>(h) * H + g;
    const int32_t n = total[idx], k = n - rem[idx];
    const int64_t w = pair_blocks(h, g);
    const int32_t blocks = static_cast<int32_t>(ShareOf(w, n, k));
    const double d = v.Demand(h, g), b = static_cast<double>(blocks) * msize;
    longest_message = std::max(longest_message, b / d);
    s.Add(Message{v.ranks[h][0], v.ranks[g][0], blocks});  // Ranks: AssignRanks.
    v.ForPath(h, g, [&](int de) { touch(de, d, b); });
    if (--rem[idx] == 0) bits[static_cast<size_t>(h) * words + g / 64] &= ~(uint64_t{1} << (g % 64));
    --gp_left[gp];
    --left;
    if (v.up[h] >= 0 && v.speed[v.up[h]] - used[v.up[h]] < room_floor) send_free[h] = 0;
    if (v.down[g] >= 0 && v.speed[v.down[g]] - used[v.down[g]] < room_floor)
      recv_free[g / 64] &= ~(uint64_t{1} << (g % 64));
  };
  // Whether (h, g)'s next message fits beside this phase's placed messages.
  auto fits = [&](int h, int g) {
    const double d = v.Demand(h, g);
    bool ok = true;
    v.ForPath(h, g, [&](int de) { ok = ok && used[de] + d <= v.speed[de] * (1 + kTol); });
    return ok;
  };
  std::vector<Candidate> candidates;
  PhaseChooser chooser(v);
  auto place_by_pair = [&](int64_t ph) {
    SortCandidates(v, bits, crit, /*key_scale=*/1e6, ph, order == Order::kPairBothEnds, &candidates);  // Phases.
    if (order != Order::kPairBothEnds) {
      for (const Candidate& c : candidates)
        if (send_free[c.h] && (recv_free[c.g / 64] >> (c.g % 64) & 1) && fits(c.h, c.g)) place(c.h, c.g);
      return;
    }
    for (const auto& [h, g] : chooser.Choose(candidates, bits))
      if (fits(h, g)) place(h, g);  // Always true but for rounding: then it waits a phase.
  };

  // Group order (scales to thousands of hosts): switch-to-switch paths by
  // criticality, then senders and receivers within them.
  auto place_by_group = [&](int64_t ph) {
    // Senders of each group by decreasing host-link criticality, ties rotated.
    for (int h = 0; h < H; ++h) {
      senders[h] = h;
      key[h] = crit(v.up[h]);
    }
    for (int g = 0; g < L; ++g) {
      const int b = v.group_begin[g], e = v.group_begin[g + 1], size = e - b;
      group_up[g] = group_down[g] = 0;
      for (int h = b; h < e; ++h) {
        group_up[g] = std::max(group_up[g], key[h]);
        group_down[g] = std::max(group_down[g], crit(v.down[h]));
      }
      const int64_t off = ph % std::max(size, 1);
      std::sort(senders.begin() + b, senders.begin() + e, [&](int x, int y) {
        if (key[x] != key[y]) return key[x] > key[y];
        return (x - b - off + size) % size < (y - b - off + size) % size;
      });
    }
    // Group pairs by the most critical link their messages may cross: the
    // switch path, or the most critical host link among the senders or
    // receivers (so that host-bound jobs interleave local and remote pairs).
    // Keys are rounded so that near-ties rotate with the phase.
    std::erase_if(gps, [&](int gp) { return gp_left[gp] == 0; });
    for (int gp : gps) {
      double k = std::max(group_up[gp / L], group_down[gp % L]);
      v.ForGroupPath(gp, [&](int de) { k = std::max(k, crit(de)); });
      gp_key[gp] = std::round(k * 1e6);
    }
    const int64_t ngp = static_cast<int64_t>(gps.size());
    const int64_t goff = ngp > 0 ? ph % ngp : 0;
    std::vector<int> gorder(gps.size());
    for (int64_t i = 0; i < ngp; ++i) gorder[i] = gps[(i + goff) % ngp];
    std::stable_sort(gorder.begin(), gorder.end(), [&](int a, int b) { return gp_key[a] > gp_key[b]; });

    for (int gp : gorder) {
      if (gp_left[gp] == 0) continue;
      const int S = gp / L, T = gp % L;
      auto path_room = [&](double d) {
        bool ok = true;
        v.ForGroupPath(gp, [&](int de) { ok = ok && has_room(de, d); });
        return ok;
      };
      if (!path_room(room_floor)) continue;
      const int tb = v.group_begin[T], te = v.group_begin[T + 1], tsize = te - tb;
      const int64_t toff = ph % std::max(tsize, 1);
      for (int i = v.group_begin[S]; i < v.group_begin[S + 1]; ++i) {
        const int h = senders[i];
        if (!send_free[h]) continue;
        const uint64_t* hb = &bits[static_cast<size_t>(h) * words];
        int best = -1;
        double best_key = -1;
        int64_t best_rot = 0;
        for (int w = tb / 64; w <= (te - 1) / 64; ++w) {
          uint64_t x = hb[w] & recv_free[w];
          if (w == tb / 64) x &= ~uint64_t{0} << (tb % 64);
          if (w == (te - 1) / 64 && (te % 64) != 0) x &= ~(~uint64_t{0} << (te % 64));
          while (x) {
            const int g = w * 64 + std::countr_zero(x);
            x &= x - 1;
            const double d = v.Demand(h, g);
            if (!has_room(v.up[h], d) || !has_room(v.down[g], d) || !path_room(d)) continue;
            const double k = crit(v.down[g]);
            const int64_t rot = (g - tb - toff + tsize) % tsize;
            if (best < 0 || k > best_key || (k == best_key && rot < best_rot)) {
              best = g;
              best_key = k;
              best_rot = rot;
            }
          }
        }
        if (best < 0) continue;
        place(h, best);
        if (!path_room(room_floor) || gp_left[gp] == 0) break;
      }
    }
  };

  double seconds = 0;
  int64_t phase = 0;
  const int64_t max_phases = left + 1;
  // Work of a phase (Cancel::Poll): the pair order sorts every host pair, the
  // group order visits every host and switch pair.
  const int64_t phase_work =
      pair_order ? static_cast<int64_t>(HH) : H + static_cast<int64_t>(L) * L + static_cast<int64_t>(H) * L;
  while (left > 0) {
    if (phase >= max_phases) return Status::Internal("capacity_scheduled: no progress while filling phases");
    if (cancel.Poll(phase_work)) return Cancel::Stopped("capacity_scheduled");
    s.AddPhase();
    std::fill(recv_free.begin(), recv_free.end(), ~uint64_t{0});
    std::fill(send_free.begin(), send_free.end(), 1);
    if (pair_order) {
      place_by_pair(phase);
    } else {
      place_by_group(phase);
    }
    // A phase lasts as long as its busiest link needs, or its longest message
    // alone (slower than its links' speeds on a LAG: one flow, one member).
    double t = longest_message;
    longest_message = 0;
    for (int de : touched) {
      t = std::max(t, bytes[de] / v.speed[de]);
      used[de] = bytes[de] = 0;
    }
    touched.clear();
    seconds += t + opt.alpha_s;
    if (seconds >= best_seconds) return std::optional<Packed>();  // Cannot win: stop early.
    ++phase;
    if (phase > INT32_MAX - 1) return Status::InvalidArgument("capacity_scheduled: too many phases");
  }
  out.seconds = seconds;
  return std::optional<Packed>(std::move(out));
}

// Open-shop phases, no fixed chunk length (header, step 5): each phase takes
// host pairs as the pair order with both ends does, with each link's
// remaining bytes as its criticality; the phase then lasts one of the chosen
// pairs' remaining times (at least alpha), the one that lowers the most
// critical link's remaining time fastest per phase second, latency
// included; each chosen pair carries the whole blocks its demand moves in
// that time.
StatusOr<std::optional<Packed>> PackOpenShop(const HostView& v, const CapacityScheduleOptions& opt, double best_seconds,
                                             const Cancel& cancel) {
  const int H = v.num_hosts;
  const size_t HH = static_cast<size_t>(H) * H;
  const int words = (H + 63) / 64;
  const double msize = opt.msize_bytes;
  std::vector<int64_t> rem(HH, 0);  // Blocks left per host pair.
  std::vector<uint64_t> bits(static_cast<size_t>(H) * words, 0);
  std::vector<double> need(v.speed.size(), 0.0);  // Bytes left per directed edge.
  int64_t pairs_left = 0;
  for (int h = 0; h < H; ++h)
    for (int g = 0; g < H; ++g) {
      if (g == h) continue;
      const int64_t w = static_cast<int64_t>(v.ranks[h].size()) * static_cast<int64_t>(v.ranks[g].size());
      rem[static_cast<size_t>(h) * H + g] = w;
      bits[static_cast<size_t>(h) * words + g / 64] |= uint64_t{1} << (g % 64);
      v.ForPath(h, g, [&](int de) { need[de] += static_cast<double>(w) * msize; });
      ++pairs_left;
    }
  auto crit = [&](int de) { return std::isfinite(v.speed[de]) ? need[de] / v.speed[de] : 0.0; };
  std::vector<Candidate> candidates;
  PhaseChooser chooser(v);
  // Blocks of host pair (h, g) in a phase of `len` seconds, in k messages.
  auto blocks_in = [&](int h, int g, int k, double len) {
    return std::clamp<int64_t>(std::llround(k * v.Demand(h, g) * len / msize), 1, rem[static_cast<size_t>(h) * H + g]);
  };
  // Messages of each chosen pair: one, and more while its path has room for
  // another at its demand (a LAG takes one flow per member).
  std::vector<int> copies;
  std::vector<double> room_load;
  auto add_copies = [&](const std::vector<std::pair<int, int>>& chosen) {
    room_load = chooser.load();
    copies.assign(chosen.size(), 1);
    for (size_t i = 0; i < chosen.size(); ++i) {
      const auto [h, g] = chosen[i];
      const double d = v.Demand(h, g);
      while (copies[i] < rem[static_cast<size_t>(h) * H + g] && chooser.FitsOn(room_load, h, g)) {
        v.ForPath(h, g, [&](int de) { room_load[de] += d; });
        ++copies[i];
      }
    }
  };
  std::vector<double> lens, after(v.speed.size()), bytes(v.speed.size());
  // A phase of `len`: its duration (the busiest link or the longest message,
  // without alpha), and the most critical link's remaining time after it.
  auto try_length = [&](const std::vector<std::pair<int, int>>& chosen, double len) {
    after = need;
    std::fill(bytes.begin(), bytes.end(), 0.0);
    double t = 0, worst = 0;
    for (size_t i = 0; i < chosen.size(); ++i) {
      const auto [h, g] = chosen[i];
      const int64_t n = blocks_in(h, g, copies[i], len);
      const double b = static_cast<double>(n) * msize;
      t = std::max(t, static_cast<double>((n + copies[i] - 1) / copies[i]) * msize / v.Demand(h, g));
      v.ForPath(h, g, [&](int de) {
        after[de] -= b;
        bytes[de] += b;
      });
    }
    for (size_t de = 0; de < after.size(); ++de) {
      if (!std::isfinite(v.speed[de])) continue;
      t = std::max(t, bytes[de] / v.speed[de]);
      worst = std::max(worst, after[de] / v.speed[de]);
    }
    return std::pair(t, worst);
  };

  Packed out;
  Schedule& s = out.schedule;
  double seconds = 0, work = 0;
  for (int64_t phase = 0; pairs_left > 0; ++phase) {
    SortCandidates(v, bits, crit, /*key_scale=*/1e9, phase, /*both_ends=*/true, &candidates);  // Seconds.
    if (cancel.Poll(static_cast<int64_t>(candidates.size()) + 1)) return Cancel::Stopped("capacity_scheduled");
    work += static_cast<double>(candidates.size());
    if (work > kPairOrderBudget) return std::optional<Packed>();
    // Without the augmenting swaps: with them, 42 of the capacity sweep's
    // first 600 trees ended below 0.9 of the bound without a stated reason,
    // against 35 without (trying both gained one tree for 15 % more time).
    const auto& chosen = chooser.Choose(candidates, bits, /*augment=*/false);
    if (chosen.empty()) return Status::Internal("capacity_scheduled: no host pair fits an empty phase");
    double now = 0;
    for (size_t de = 0; de < need.size(); ++de) now = std::max(now, crit(static_cast<int>(de)));
    add_copies(chosen);
    lens.clear();
    for (size_t i = 0; i < chosen.size(); ++i) {
      const auto [h, g] = chosen[i];
      lens.push_back(std::max(opt.alpha_s, static_cast<double>(rem[static_cast<size_t>(h) * H + g]) * msize /
                                               (copies[i] * v.Demand(h, g))));
    }
    std::sort(lens.begin(), lens.end());
    lens.erase(std::unique(lens.begin(), lens.end()), lens.end());
    double len = lens[0], t = 0, best_rate = -1;
    for (double l : lens) {
      const auto [lt, worst] = try_length(chosen, l);
      if (const double rate = (now - worst) / (lt + opt.alpha_s); rate > best_rate * (1 + kTol)) {
        best_rate = rate;
        len = l;
        t = lt;
      }
    }
    s.AddPhase();
    for (size_t i = 0; i < chosen.size(); ++i) {
      const auto [h, g] = chosen[i];
      const int64_t blocks = blocks_in(h, g, copies[i], len);
      const size_t idx = static_cast<size_t>(h) * H + g;
      const int64_t k = std::min<int64_t>(copies[i], blocks);  // Messages, their blocks differing by one at most.
      for (int64_t m = 0; m < k; ++m)
        s.Add(Message{v.ranks[h][0], v.ranks[g][0], static_cast<int32_t>(ShareOf(blocks, k, m))});
      v.ForPath(h, g, [&](int de) { need[de] -= static_cast<double>(blocks) * msize; });
      if ((rem[idx] -= blocks) == 0) {
        bits[static_cast<size_t>(h) * words + g / 64] &= ~(uint64_t{1} << (g % 64));
        --pairs_left;
      }
    }
    seconds += t + opt.alpha_s;
    if (seconds >= best_seconds) return std::optional<Packed>();  // Cannot win: stop early.
    if (phase > INT32_MAX - 1) return Status::InvalidArgument("capacity_scheduled: too many phases");
  }
  out.seconds = seconds;
  return std::optional<Packed>(std::move(out));
}

// The carrying ranks of host-pair messages (the packers name each host's
// first rank): senders and receivers rotate through each host's ranks, in
// message order. With one_way_rank_pairs a rank pair never carries messages
// both ways in one phase when another pair exists: both directions of one
// connection ran at half the link rate each on Open MPI's TCP transport
// (bench/cluster.sh, calibration-pair).
StatusOr<Schedule> AssignRanks(const HostView& v, int num_ranks, bool one_way_rank_pairs, const Schedule& in,
                               const Cancel& cancel) {
  std::vector<int> host_of(num_ranks, -1);
  for (int h = 0; h < v.num_hosts; ++h)
    for (int32_t r : v.ranks[h]) host_of[r] = h;
  std::vector<int32_t> out_ctr(v.num_hosts, 0), in_ctr(v.num_hosts, 0);
  std::unordered_set<uint64_t> phase_pairs;  // The phase's (sender, receiver) rank pairs.
  Schedule s;
  s.Reserve(in.num_messages(), in.num_phases());
  for (int p = 0; p < in.num_phases(); ++p) {
    if (cancel.Poll(static_cast<int64_t>(in.phase(p).size()) + 1)) return Cancel::Stopped("capacity_scheduled");
    s.AddPhase();
    phase_pairs.clear();
    for (const Message& m : in.phase(p)) {
      const int h = host_of[m.src], g = host_of[m.dst];
      const auto& hr = v.ranks[h];
      const auto& gr = v.ranks[g];
      const auto rh = static_cast<int32_t>(hr.size()), rg = static_cast<int32_t>(gr.size());
      int32_t si = 0, ri = 0;  // Steps past the rotation's next sender and receiver.
      // A rank pair that already carries a message of this host pair in the
      // phase (the open shop puts several on a LAG), or the reverse.
      auto taken = [&] {
        const int32_t f = hr[(out_ctr[h] + si) % rh], t = gr[(in_ctr[g] + ri) % rg];
        return phase_pairs.contains(PairKey(f, t)) || (one_way_rank_pairs && phase_pairs.contains(PairKey(t, f)));
      };
      while (taken() && si < rh) {
        if (++ri == rg) ri = 0, ++si;
      }
      if (si == rh) si = ri = 0;  // Every pair of these hosts' ranks is taken: one rank each.
      const int32_t from = hr[(out_ctr[h] + si) % rh], to = gr[(in_ctr[g] + ri) % rg];
      out_ctr[h] += si + 1;
      in_ctr[g] += ri + 1;
      phase_pairs.insert(PairKey(from, to));
      s.Add(Message{from, to, m.blocks});
    }
  }
  return s;
}

}  // namespace

StatusOr<Schedule> CapacityScheduled(const RankTree& tree, const CapacityScheduleOptions& options,
                                     const Cancel& cancel) {
  if (Status st = CheckModelParameters("capacity_scheduled", options.msize_bytes, options.alpha_s); !st.ok()) return st;
  auto finish = [&](Schedule s) {
    s.collective = "alltoall";
    s.algorithm = options.one_way_rank_pairs ? "capacity_lockstep" : "capacity_scheduled";
    s.num_ranks = tree.num_ranks();
    s.host_combined = true;
    s.syncs.clear();
    s.syncs_before_reduction = 0;
    s.barrier_between_phases = false;
    s.bottleneck_load = BottleneckLoad(tree);
    return s;
  };

  auto view = BuildHostView(tree);
  if (!view.ok()) return view.status();
  const HostView& v = *view;
  if (v.num_hosts < 2) return finish(Schedule{});  // Nothing crosses the network.

  const double bound = AlltoallBound(tree, options.msize_bytes).seconds;

  // Candidate chunk lengths from the pair times W x msize / d.
  const int H = v.num_hosts;
  auto pair_time = [&](int h, int g) {
    return static_cast<double>(v.ranks[h].size() * v.ranks[g].size()) * options.msize_bytes / v.Demand(h, g);
  };
  std::vector<double> times;
  times.reserve(static_cast<size_t>(H) * (H - 1));
  for (int h = 0; h < H; ++h)
    for (int g = 0; g < H; ++g)
      if (g != h) times.push_back(pair_time(h, g));
  const auto [shortest_it, longest_it] = std::minmax_element(times.begin(), times.end());
  const double shortest = *shortest_it, longest = *longest_it;
  auto mid = times.begin() + static_cast<int64_t>(times.size() / 2);
  std::nth_element(times.begin(), mid, times.end());
  const double median = *mid;
  times = {};
  // Shorter chunks only help when pair times differ (they let short pairs
  // share phases with pieces of long ones); with equal pair times they only
  // add phases, and so latency.
  std::vector<double> taus{longest};
  if (shortest < longest * (1 - kTol))
    for (double t : {median, longest / 2, longest / 4, longest / 8, longest / 16})
      if (std::none_of(taus.begin(), taus.end(), [&](double x) { return std::abs(x - t) <= kTol * x; }))
        taus.push_back(t);

  std::optional<Packed> best;
  // The pair order sorts every remaining host pair in every phase: kept to
  // jobs of at most kMaxPairOrderHosts hosts.
  for (Order order : kOrders) {
    if (order != Order::kGroup && v.num_hosts > kMaxPairOrderHosts) break;
    for (double tau : taus) {
      auto r = Pack(v, options, tau, order, bound, best ? best->seconds : kUnlimited, cancel);
      if (!r.ok()) return r.status();
      if (r->has_value() && (!best || (*r)->seconds < best->seconds)) best = std::move(**r);
    }
  }

  // Open-shop phases (no fixed chunk length), as the pair order, for jobs of
  // at most kMaxPairOrderHosts hosts.
  if (H <= kMaxPairOrderHosts) {
    auto r = PackOpenShop(v, options, best ? best->seconds : kUnlimited, cancel);
    if (!r.ok()) return r.status();
    if (r->has_value() && (!best || (*r)->seconds < best->seconds)) best = std::move(**r);
  }

  // Size classes: when pair times differ by more than kClassRatio, a short
  // pair holds a long phase's capacity for a fraction of it. Pairs whose
  // times lie within kClassRatio of each other form a class; each class gets
  // phases of its own (the same search), and the classes run one after the
  // other, longest first.
  if (shortest * kClassRatio < longest && best) {
    const size_t HH = static_cast<size_t>(H) * H;
    std::vector<uint8_t> cls(HH, 0);
    int classes = 0;
    for (int h = 0; h < H; ++h)
      for (int g = 0; g < H; ++g)
        if (g != h) {
          const int c = std::min<int>(
              kMaxClasses - 1,
              static_cast<int>(std::floor(std::log(longest / pair_time(h, g)) / std::log(kClassRatio) * (1 - kTol))));
          cls[static_cast<size_t>(h) * H + g] = static_cast<uint8_t>(c);
          classes = std::max(classes, c + 1);
        }
    Packed joined;
    joined.seconds = 0;
    std::vector<uint8_t> only(HH);
    for (int c = 0; c < classes && joined.seconds < best->seconds; ++c) {
      double class_longest = 0;
      for (int h = 0; h < H; ++h)
        for (int g = 0; g < H; ++g) {
          const size_t idx = static_cast<size_t>(h) * H + g;
          only[idx] = g != h && cls[idx] == c;
          if (only[idx]) class_longest = std::max(class_longest, pair_time(h, g));
        }
      if (class_longest == 0) continue;
      std::optional<Packed> part;
      for (Order order : kOrders) {
        if (order != Order::kGroup && H > kMaxPairOrderHosts) break;
        for (double tau : {class_longest, class_longest / 2, class_longest / 4}) {
          auto r = Pack(v, options, tau, order, 0, part ? part->seconds : kUnlimited, cancel, &only);
          if (!r.ok()) return r.status();
          if (r->has_value() && (!part || (*r)->seconds < part->seconds)) part = std::move(**r);
        }
      }
      if (!part) return Status::Internal("capacity_scheduled: no schedule for a size class");
      for (int p = 0; p < part->schedule.num_phases(); ++p) {
        if (cancel.Poll(static_cast<int64_t>(part->schedule.phase(p).size()) + 1))
          return Cancel::Stopped("capacity_scheduled");
        joined.schedule.AddPhase();
        for (const Message& m : part->schedule.phase(p)) joined.schedule.Add(m);
      }
      joined.seconds += part->seconds;
    }
    if (joined.seconds < best->seconds) best = std::move(joined);
  }

  // The seed's shapes: Faraj-Yuan is optimal there (one message per link per
  // phase); keep it unless packing is strictly faster.
  bool one_rank_per_host = v.num_hosts == tree.num_ranks();
  if (one_rank_per_host) {
    auto fy = TreeScheduledPhases(tree, cancel);
    if (fy.status().code() == Status::Code::kCancelled) return fy.status();
    if (fy.ok()) {
      const double fy_seconds =
          ModelSchedule(*fy, tree, {.msize_bytes = options.msize_bytes, .alpha_s = options.alpha_s}).modelled_s;
      if (!best || !(best->seconds < fy_seconds * (1 - kTol))) return finish(std::move(*fy));
    }
  }
  if (!best) return Status::Internal("capacity_scheduled: no schedule produced");
  auto assigned = AssignRanks(v, tree.num_ranks(), options.one_way_rank_pairs, best->schedule, cancel);
  if (!assigned.ok()) return assigned.status();
  return finish(std::move(*assigned));
}

StatusOr<Schedule> CapacityLockstepFrom(const Schedule& scheduled, const RankTree& tree) {
  if (scheduled.algorithm != "capacity_scheduled" || scheduled.num_ranks != tree.num_ranks())
    return Status::InvalidArgument(fmt::format(
        "capacity_lockstep: derived from a capacity_scheduled schedule of {} ranks, not a {} schedule of {}",
        tree.num_ranks(), scheduled.algorithm, scheduled.num_ranks));
  auto view = BuildHostView(tree);
  if (!view.ok()) return view.status();
  auto assigned = AssignRanks(*view, tree.num_ranks(), /*one_way_rank_pairs=*/true, scheduled, Cancel());
  if (!assigned.ok()) return assigned.status();
  Schedule& s = *assigned;
  s.collective = scheduled.collective;
  s.algorithm = "capacity_lockstep";
  s.num_ranks = scheduled.num_ranks;
  s.host_combined = scheduled.host_combined;
  s.bottleneck_load = scheduled.bottleneck_load;
  return assigned;
}

}  // namespace topotune
