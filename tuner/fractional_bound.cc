#include "tuner/fractional_bound.h"

#include <glpk.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

namespace topotune {
namespace {

constexpr int kMaxRounds = 300;     // Greedy pricing rounds,
constexpr double kRoundWork = 3e5;  // and at most this many rounds x host pairs.
constexpr int kMaxExact = 4;        // Exact pricings.
constexpr int kExactMillis = 2000;  // Time limit of one exact pricing.
constexpr double kUnit = 1e-6;      // Times in the program are in microseconds.
constexpr double kEps = 1e-7;

struct Pair {
  double need = 0;    // T_p in kUnit.
  double demand = 0;  // Bits/s.
  int most = 1;       // Messages of the pair that fit in one phase.
  std::vector<int> path;
};

using Column = std::vector<std::pair<int, int>>;  // (pair, messages), by pair.

using LpPtr = std::unique_ptr<glp_prob, decltype(&glp_delete_prob)>;

// How GreedyPricing orders the pairs: by dual value, by dual value per
// unit of the tightest link's speed it takes, or per unit of all its links'.
enum class Greed { kValue, kPerTightest, kPerPath };

// A configuration by the duals, greedily: pairs in the order `greed` gives
// (then the larger demand), each with as many messages as still fit.
Column GreedyPricing(const std::vector<Pair>& pairs, const std::vector<double>& dual, const std::vector<double>& speed,
                     Greed greed, std::vector<std::pair<double, int>>* order, std::vector<double>* load) {
  order->clear();
  for (int p = 0; p < static_cast<int>(pairs.size()); ++p) {
    if (dual[p] <= kEps) continue;
    double use = 1;
    if (greed != Greed::kValue) {
      use = 0;
      for (int de : pairs[p].path)
        use = greed == Greed::kPerTightest ? std::max(use, pairs[p].demand / speed[de])
                                           : use + pairs[p].demand / speed[de];
    }
    order->emplace_back(dual[p] / std::max(use, 1e-12), p);
  }
  std::sort(order->begin(), order->end(), [&](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first > b.first;
    if (pairs[a.second].demand != pairs[b.second].demand) return pairs[a.second].demand > pairs[b.second].demand;
    return a.second < b.second;
  });
  std::fill(load->begin(), load->end(), 0.0);
  Column c;
  for (const auto& [key, p] : *order) {
    const Pair& pr = pairs[p];
    int k = pr.most;
    for (int de : pr.path) {
      const double room = speed[de] * (1 + 1e-9) - (*load)[de];
      k = std::min(k, static_cast<int>(std::floor(room / pr.demand)));
    }
    if (k <= 0) continue;
    for (int de : pr.path) (*load)[de] += k * pr.demand;
    c.emplace_back(p, k);
  }
  std::sort(c.begin(), c.end());
  return c;
}

// The most valuable configuration exactly (an integer program); `value` is
// its dual value, and `optimal` whether the solver proved it.
Column ExactPricing(const std::vector<Pair>& pairs, const std::vector<double>& dual, const std::vector<double>& speed,
                    double* value, bool* optimal) {
  LpPtr mip(glp_create_prob(), &glp_delete_prob);
  glp_set_obj_dir(mip.get(), GLP_MAX);
  std::vector<int> var;  // Pair of each variable.
  std::vector<std::vector<std::pair<int, double>>> rows(speed.size());
  for (int p = 0; p < static_cast<int>(pairs.size()); ++p) {
    if (dual[p] <= kEps) continue;
    const int j = glp_add_cols(mip.get(), 1);
    var.push_back(p);
    glp_set_col_kind(mip.get(), j, GLP_IV);
    glp_set_col_bnds(mip.get(), j, GLP_DB, 0.0, pairs[p].most);
    glp_set_obj_coef(mip.get(), j, dual[p]);
    for (int de : pairs[p].path) rows[de].emplace_back(j, pairs[p].demand / speed[de]);
  }
  *value = 0;
  *optimal = true;
  if (var.empty()) return {};
  std::vector<int> ind;
  std::vector<double> val;
  for (const auto& row : rows) {
    if (row.size() < 2) continue;  // One pair alone always fits (most <= speed / demand).
    const int r = glp_add_rows(mip.get(), 1);
    glp_set_row_bnds(mip.get(), r, GLP_UP, 0.0, 1 + 1e-9);
    ind.assign(1, 0);
    val.assign(1, 0.0);
    for (const auto& [j, a] : row) {
      ind.push_back(j);
      val.push_back(a);
    }
    glp_set_mat_row(mip.get(), r, static_cast<int>(row.size()), ind.data(), val.data());
  }
  glp_iocp parm;
  glp_init_iocp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.presolve = GLP_ON;
  parm.tm_lim = kExactMillis;
  const int rc = glp_intopt(mip.get(), &parm);
  *optimal = rc == 0 && glp_mip_status(mip.get()) == GLP_OPT;
  Column c;
  if (glp_mip_status(mip.get()) != GLP_OPT && glp_mip_status(mip.get()) != GLP_FEAS) return c;
  *value = glp_mip_obj_val(mip.get());
  for (int j = 1; j <= static_cast<int>(var.size()); ++j) {
    const auto k = static_cast<int>(std::lround(glp_mip_col_val(mip.get(), j)));
    if (k > 0) c.emplace_back(var[j - 1], k);
  }
  return c;
}

}  // namespace

StatusOr<FractionalBound> FractionalTransferBound(const RankTree& tree, const ModelOptions& options,
                                                  const CoverOptions& cover) {
  if (Status st = CheckModelParameters("fractional bound", options.msize_bytes, options.alpha_s); !st.ok()) return st;
  FractionalBound out;
  std::map<int, std::vector<int>> ranks_of;  // Host node -> ranks.
  for (int r = 0; r < tree.num_ranks(); ++r) ranks_of[tree.host_node(r)].push_back(r);
  if (static_cast<int>(ranks_of.size()) > cover.max_hosts) return out;
  std::vector<const std::vector<int>*> hosts;
  for (const auto& [node, ranks] : ranks_of) hosts.push_back(&ranks);
  std::vector<double> speed(2 * static_cast<size_t>(tree.num_edges()));
  for (int e = 0; e < tree.num_edges(); ++e) speed[2 * e] = speed[2 * e + 1] = tree.edge(e).speed_bps;

  std::vector<Pair> pairs;
  const size_t H = hosts.size();
  std::vector<int> pair_index(H * H, -1);  // h x H + g -> index in `pairs`.
  std::vector<int> path;
  for (size_t hi = 0; hi < H; ++hi)
    for (size_t gi = 0; gi < H; ++gi) {
      if (hi == gi) continue;
      const auto *h = hosts[hi], *g = hosts[gi];
      pair_index[hi * H + gi] = static_cast<int>(pairs.size());
      Pair p;
      p.demand = MessageDemand(tree, h->front(), g->front());
      const double blocks = static_cast<double>(h->size()) * static_cast<double>(g->size());
      p.need = blocks * options.msize_bytes * 8 / p.demand / kUnit;
      path.clear();
      tree.Path(h->front(), g->front(), &path);
      double most = blocks;
      for (int de : path) {
        if (tree.edge(de / 2).intra_host) continue;
        if (!(speed[de] > 0) || !std::isfinite(speed[de]))
          return Status::InvalidArgument("fractional bound: a network link without a positive finite speed");
        p.path.push_back(de);
        most = std::min(most, std::floor(speed[de] * (1 + 1e-9) / p.demand));
      }
      p.most = static_cast<int>(std::max(1.0, most));
      pairs.push_back(std::move(p));
    }
  const int P = static_cast<int>(pairs.size());
  if (P == 0) {
    out.proven = out.optimal = true;
    return out;
  }

  LpPtr lp(glp_create_prob(), &glp_delete_prob);
  glp_set_obj_dir(lp.get(), GLP_MIN);
  glp_add_rows(lp.get(), P);
  for (int p = 0; p < P; ++p) glp_set_row_bnds(lp.get(), p + 1, GLP_LO, pairs[p].need, 0.0);
  std::set<Column> seen;
  std::vector<int> ind;
  std::vector<double> val;
  auto add_column = [&](const Column& c) {
    if (c.empty() || !seen.insert(c).second) return false;
    const int j = glp_add_cols(lp.get(), 1);
    glp_set_col_bnds(lp.get(), j, GLP_LO, 0.0, 0.0);
    glp_set_obj_coef(lp.get(), j, 1.0);
    ind.assign(1, 0);
    val.assign(1, 0.0);
    for (const auto& [p, k] : c) {
      ind.push_back(p + 1);
      val.push_back(k);
    }
    glp_set_mat_col(lp.get(), j, static_cast<int>(c.size()), ind.data(), val.data());
    ++out.columns;
    return true;
  };
  // Start: the seed's phases that are configurations, then greedy ones over
  // the pairs not yet in one, longest first.
  const Schedule* seed = cover.seed;
  if (seed != nullptr && seed->num_ranks == tree.num_ranks()) {
    std::map<int, int> host_index;  // Host node -> index in `hosts`.
    for (const auto& [node, ranks] : ranks_of) host_index.emplace(node, static_cast<int>(host_index.size()));
    std::map<int, int> count;
    std::vector<double> used(speed.size());
    for (int ph = 0; ph < seed->num_phases(); ++ph) {
      count.clear();
      for (const Message& m : seed->phase(ph)) {
        if (m.src < 0 || m.dst < 0 || m.src >= tree.num_ranks() || m.dst >= tree.num_ranks()) continue;
        const int h = host_index.at(tree.host_node(m.src)), g = host_index.at(tree.host_node(m.dst));
        if (h != g) ++count[pair_index[static_cast<size_t>(h) * H + g]];
      }
      std::fill(used.begin(), used.end(), 0.0);
      bool fits = true;
      for (const auto& [p, k] : count) {
        fits = fits && k <= pairs[p].most;
        for (int de : pairs[p].path) fits = fits && (used[de] += k * pairs[p].demand) <= speed[de] * (1 + 1e-9);
      }
      if (fits) add_column(Column(count.begin(), count.end()));
    }
  }
  // Greedy configurations over the pairs not yet in one, longest first.
  std::vector<double> dual(P), load(speed.size());
  std::vector<std::pair<double, int>> order;
  {
    std::vector<double> left(P);
    for (int p = 0; p < P; ++p) left[p] = pairs[p].need;
    for (const Column& c : seen)
      for (const auto& [p, k] : c) left[p] = 0;
    while (std::any_of(left.begin(), left.end(), [](double x) { return x > 0; })) {
      const Column c = GreedyPricing(pairs, left, speed, Greed::kValue, &order, &load);
      for (const auto& [p, k] : c) left[p] = 0;
      add_column(c);
    }
  }
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  auto solve = [&] { return glp_simplex(lp.get(), &parm) == 0 && glp_get_status(lp.get()) == GLP_OPT; };
  if (!solve()) return out;
  const int max_rounds = std::min<int>(kMaxRounds, static_cast<int>(kRoundWork / P) + 1);
  auto value = [&](const Column& c) {
    double v = 0;
    for (const auto& [p, k] : c) v += k * dual[p];
    return v;
  };
  // Greedy pricing while it finds columns (and rounds are left), else an
  // exact one; the duals are always the last solve's.
  for (int round = 0;;) {
    for (int p = 0; p < P; ++p) dual[p] = std::max(0.0, glp_get_row_dual(lp.get(), p + 1));
    if (round < max_rounds) {
      ++round;
      bool added = false;
      for (Greed greed : {Greed::kValue, Greed::kPerTightest, Greed::kPerPath}) {
        const Column c = GreedyPricing(pairs, dual, speed, greed, &order, &load);
        if (value(c) > 1 + 1e-6) added = add_column(c) || added;
      }
      if (added) {
        if (!solve()) return out;
        continue;
      }
    }
    if (out.exact_pricings == kMaxExact) break;
    ++out.exact_pricings;
    double best = 0;
    bool optimal = false;
    const Column exact = ExactPricing(pairs, dual, speed, &best, &optimal);
    // Farley: pi / max(1, M) is dual feasible, and sum T_p pi_p is the
    // optimum over the columns so far.
    if (optimal) {
      const double lower = glp_get_obj_val(lp.get()) / std::max(1.0, best) * kUnit;
      if (!out.proven || lower > out.transfer_s) out.transfer_s = lower;
      out.proven = true;
      out.optimal = best <= 1 + 1e-6;
    }
    if (best <= 1 + 1e-6 || !add_column(exact) || !solve()) break;
  }

  return out;
}

}  // namespace topotune
