#include "daemon/topotuned/plans.h"

#include <fmt/format.h>

#include <algorithm>

#include "db/hash.h"
#include "tuner/bounds.h"
#include "tuner/rank_tree.h"
#include "tuner/schedule_registry.h"

namespace topotune::daemon {

uint64_t PlacementHash(const std::vector<std::string>& rank_hosts) {
  std::string joined;
  for (const std::string& host : rank_hosts) (joined += host) += '\n';
  return db::Fnv1a64(joined);
}

size_t CompiledPlan::bytes() const {
  size_t b = sizeof(*this) + collective.size() + algorithm.size();
  for (const RankProgram& p : programs) {
    b += sizeof(p);
    for (const RankStep& s : p.steps) b += sizeof(s) + (s.wait_for.size() + s.notify.size()) * sizeof(int32_t);
  }
  return b;
}

StatusOr<CompiledPlan> CompilePlan(const Topology& topo, const std::vector<std::string>& rank_hosts,
                                   std::string_view collective, std::string_view algorithm) {
  const ScheduleAlgorithm* alg = FindScheduleAlgorithm(collective, algorithm);
  if (!alg)
    return Status::InvalidArgument(
        fmt::format("{} has no scheduled algorithm '{}' (see 'topotune schedule --help')", collective, algorithm));
  auto placement = PlacementFromRankHosts(topo, rank_hosts);
  if (!placement.ok()) return placement.status();
  auto tree = RankTree::Build(topo, *placement);
  if (!tree.ok()) return tree.status();
  auto schedule = alg->make(*tree);
  if (!schedule.ok()) return schedule.status();
  auto programs = CompileRankPrograms(*schedule);
  if (!programs.ok()) return programs.status();
  CompiledPlan plan{std::string(collective), std::string(algorithm), std::move(*programs)};
  for (const RankProgram& p : plan.programs) {
    plan.num_steps += static_cast<int64_t>(p.steps.size());
    for (const RankStep& s : p.steps) {
      plan.num_syncs += static_cast<int64_t>(s.notify.size());
      plan.num_phases = std::max(plan.num_phases, s.phase + 1);
    }
  }
  plan.bottleneck_load = BottleneckLoad(*tree);
  return plan;
}

void PlanToProto(const CompiledPlan& plan, std::span<const int32_t> ranks, int64_t max_steps,
                 v1::CompiledSchedule* out) {
  out->set_algorithm(plan.algorithm);
  out->set_num_ranks(static_cast<int32_t>(plan.programs.size()));
  out->set_num_phases(plan.num_phases);
  out->set_bottleneck_load(plan.bottleneck_load);
  out->set_num_syncs(plan.num_syncs);
  int64_t steps = 0;
  if (ranks.empty()) {
    steps = plan.num_steps;
  } else {
    for (int32_t r : ranks) steps += static_cast<int64_t>(plan.programs[r].steps.size());
  }
  if (steps > max_steps) {
    out->set_omitted_reason(fmt::format("the programs of {} ranks would have {} steps, more than {}",
                                        ranks.empty() ? plan.programs.size() : ranks.size(), steps, max_steps));
    return;
  }
  auto add = [out](const RankProgram& p) {
    v1::RankProgram* rp = out->add_programs();
    rp->set_rank(p.rank);
    rp->mutable_steps()->Reserve(static_cast<int>(p.steps.size()));
    for (const RankStep& s : p.steps) {
      v1::RankStep* st = rp->add_steps();
      st->set_phase(s.phase);
      if (s.send_to >= 0) st->set_send_to(s.send_to);
      if (s.recv_from >= 0) st->set_recv_from(s.recv_from);
      st->mutable_wait_for()->Add(s.wait_for.begin(), s.wait_for.end());
      st->mutable_notify()->Add(s.notify.begin(), s.notify.end());
    }
  };
  if (ranks.empty()) {
    for (const RankProgram& p : plan.programs) add(p);
  } else {
    for (int32_t r : ranks) add(plan.programs[r]);
  }
}

namespace {

constexpr std::string_view kMagic = "TTP2";  // Bump the digit when the layout changes.

void PutVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

// Signed values zig-zag encoded (so -1, "no peer", stays one byte).
void PutSigned(std::string& out, int64_t v) {
  PutVarint(out, (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
}

void PutString(std::string& out, std::string_view s) {
  PutVarint(out, s.size());
  out += s;
}

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= in_.size()) return false;
      auto byte = static_cast<uint8_t>(in_[pos_++]);
      *v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return true;
    }
    return false;
  }
  bool Signed32(int32_t* v) {
    uint64_t u;
    if (!Varint(&u)) return false;
    int64_t s = static_cast<int64_t>(u >> 1) ^ -static_cast<int64_t>(u & 1);
    if (s < INT32_MIN || s > INT32_MAX) return false;
    *v = static_cast<int32_t>(s);
    return true;
  }
  bool String(std::string* s) {
    uint64_t n;
    if (!Varint(&n) || n > in_.size() - pos_) return false;
    s->assign(in_.substr(pos_, n));
    pos_ += n;
    return true;
  }
  // A count that cannot exceed the bytes left (each element takes at least one).
  bool Count(uint64_t* n) { return Varint(n) && *n <= in_.size() - pos_; }
  bool done() const { return pos_ == in_.size(); }

 private:
  std::string_view in_;
  size_t pos_ = 0;
};

}  // namespace

std::string EncodePlan(const CompiledPlan& plan) {
  std::string out(kMagic);
  PutString(out, plan.collective);
  PutString(out, plan.algorithm);
  PutVarint(out, static_cast<uint64_t>(plan.num_phases));
  PutVarint(out, static_cast<uint64_t>(plan.num_syncs));
  PutVarint(out, static_cast<uint64_t>(plan.bottleneck_load));
  PutVarint(out, static_cast<uint64_t>(plan.num_steps));
  PutVarint(out, plan.programs.size());
  for (const RankProgram& p : plan.programs) {
    PutSigned(out, p.rank);
    PutVarint(out, p.steps.size());
    for (const RankStep& s : p.steps) {
      PutSigned(out, s.phase);
      PutSigned(out, s.send_to);
      PutSigned(out, s.recv_from);
      PutVarint(out, s.wait_for.size());
      for (int32_t w : s.wait_for) PutSigned(out, w);
      PutVarint(out, s.notify.size());
      for (int32_t n : s.notify) PutSigned(out, n);
    }
  }
  return out;
}

StatusOr<CompiledPlan> DecodePlan(std::string_view blob) {
  auto bad = [](std::string_view what) { return Status::InvalidArgument(fmt::format("corrupt plan blob: {}", what)); };
  if (!blob.starts_with(kMagic)) return bad(fmt::format("unknown format (no {} header)", kMagic));
  Reader r(blob.substr(kMagic.size()));
  CompiledPlan plan;
  uint64_t nprog = 0, phases = 0, syncs = 0, load = 0, steps = 0;
  if (!r.String(&plan.collective) || !r.String(&plan.algorithm) || !r.Varint(&phases) || !r.Varint(&syncs) ||
      !r.Varint(&load) || !r.Varint(&steps) || !r.Count(&nprog))
    return bad("truncated header");
  if (phases > INT32_MAX || syncs > INT64_MAX || load > INT64_MAX || steps > INT64_MAX)
    return bad("figures out of range");
  plan.num_phases = static_cast<int32_t>(phases);
  plan.num_syncs = static_cast<int64_t>(syncs);
  plan.bottleneck_load = static_cast<int64_t>(load);
  plan.num_steps = static_cast<int64_t>(steps);
  plan.programs.resize(nprog);
  for (RankProgram& p : plan.programs) {
    uint64_t nsteps = 0;
    if (!r.Signed32(&p.rank) || !r.Count(&nsteps)) return bad("truncated program");
    p.steps.resize(nsteps);
    for (RankStep& s : p.steps) {
      uint64_t nw = 0, nn = 0;
      if (!r.Signed32(&s.phase) || !r.Signed32(&s.send_to) || !r.Signed32(&s.recv_from) || !r.Count(&nw))
        return bad("truncated step");
      s.wait_for.resize(nw);
      for (int32_t& w : s.wait_for)
        if (!r.Signed32(&w)) return bad("truncated wait list");
      if (!r.Count(&nn)) return bad("truncated step");
      s.notify.resize(nn);
      for (int32_t& n : s.notify)
        if (!r.Signed32(&n)) return bad("truncated notify list");
    }
  }
  if (!r.done()) return bad("trailing bytes");
  int64_t counted = 0;
  for (size_t i = 0; i < plan.programs.size(); ++i) {
    const RankProgram& p = plan.programs[i];
    if (p.rank != static_cast<int32_t>(i)) return bad(fmt::format("program {} is of rank {}", i, p.rank));
    counted += static_cast<int64_t>(p.steps.size());
    for (const RankStep& s : p.steps) {
      auto in_range = [n = static_cast<int32_t>(nprog)](int32_t k) { return k >= -1 && k < n; };
      bool ok = in_range(s.send_to) && in_range(s.recv_from);
      for (int32_t w : s.wait_for) ok = ok && w >= 0 && in_range(w);
      for (int32_t w : s.notify) ok = ok && w >= 0 && in_range(w);
      if (!ok) return bad(fmt::format("rank {} names a rank out of range", i));
    }
  }
  if (counted != plan.num_steps) return bad("step count mismatch");
  return plan;
}

size_t PlanCache::KeyHash::operator()(const PlanKey& k) const {
  size_t h = std::hash<std::string>()(k.collective) * 31 + std::hash<std::string>()(k.algorithm);
  return h ^ (k.placement_hash + 0x9e3779b97f4a7c15ull + (static_cast<size_t>(k.topology_version) << 6));
}

std::shared_ptr<const CompiledPlan> PlanCache::Get(const PlanKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) {
    ++stats_.misses;
    return nullptr;
  }
  ++stats_.hits;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

void PlanCache::Put(const PlanKey& key, std::shared_ptr<const CompiledPlan> plan) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) {
    stats_.bytes -= it->second->second->bytes();
    lru_.erase(it->second);
    index_.erase(it);
  }
  stats_.bytes += plan->bytes();
  lru_.emplace_front(key, std::move(plan));
  index_[key] = lru_.begin();
  EvictLocked();
}

void PlanCache::InvalidateBefore(int64_t version) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = lru_.begin(); it != lru_.end();) {
    if (it->first.topology_version < version) {
      stats_.bytes -= it->second->bytes();
      index_.erase(it->first);
      it = lru_.erase(it);
    } else {
      ++it;
    }
  }
}

void PlanCache::EvictLocked() {
  while (stats_.bytes > max_bytes_ && !lru_.empty()) {
    stats_.bytes -= lru_.back().second->bytes();
    index_.erase(lru_.back().first);
    lru_.pop_back();
    ++stats_.evictions;
  }
}

PlanCache::Stats PlanCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s = stats_;
  s.entries = lru_.size();
  return s;
}

}  // namespace topotune::daemon
