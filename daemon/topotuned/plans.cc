#include "daemon/topotuned/plans.h"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>

#include "proto/host_program_wire.h"
#include "tuner/bounds.h"
#include "tuner/cancel.h"
#include "tuner/host_program.h"
#include "tuner/rank_tree.h"
#include "tuner/schedule_registry.h"

namespace topotune::daemon {

size_t CompiledPlan::bytes() const {
  size_t b =
      sizeof(*this) + collective.size() + algorithm.size() + (steps.size() + host_of_rank.size()) * sizeof(int32_t);
  for (const std::string& p : programs) b += sizeof(p) + p.capacity();
  return b;
}

namespace {

// Work units (tuner/cancel.h) of serializing one step: a few times a message
// placed by a generator.
constexpr int64_t kSerializeWork = 4;

void ToProto(const RankProgram& p, v1::RankProgram* out) {
  out->set_rank(p.rank);
  out->mutable_steps()->Reserve(static_cast<int>(p.steps.size()));
  for (const RankStep& s : p.steps) {
    v1::RankStep* st = out->add_steps();
    st->set_phase(s.phase);
    if (s.send_to >= 0) st->set_send_to(s.send_to);
    if (s.recv_from >= 0) st->set_recv_from(s.recv_from);
    st->mutable_wait_for()->Add(s.wait_for.begin(), s.wait_for.end());
    st->mutable_notify()->Add(s.notify.begin(), s.notify.end());
  }
}

void ToProto(const HostProgram& p, v1::RankProgram* out) { v1::HostProgramToProto(p, out); }

int32_t StepsOf(const v1::RankProgram& p) {
  return p.steps_size() + p.sends_size() + p.recvs_size() + p.stream_origin_size();
}

}  // namespace

PlanEstimate EstimatePlan(std::string_view collective, std::string_view algorithm, int64_t num_ranks,
                          int64_t num_hosts) {
  const int64_t n = num_ranks, h = num_hosts;
  // Bytes of a serialized rank number: a varint.
  const int64_t rank_bytes = n <= 128 ? 1 : n <= 16384 ? 2 : 3;
  PlanEstimate e;
  if (!HostCombinedKernel(collective, algorithm)) {
    // A step holds a send and a receive or one of them: at most 2 (n - 1)
    // steps per rank, each a few varints (phase, peer, wait and notify ranks).
    e.steps = 2 * n * (n - 1);
    e.bytes = e.steps * (8 + 2 * rank_bytes) + n * 64;
  } else if (collective == "allgather") {
    // Each rank's stream of n origins, and its host's ring transfers.
    e.steps = n * n + 4 * n * h;
    e.bytes = n * n * rank_bytes + 4 * n * h * 8 + n * 64;
  } else {
    e.steps = 8 * h * (h - 1);
    e.bytes = n * 64 + e.steps * 16;
  }
  return e;
}

StatusOr<CompiledPlan> CompilePlan(const Topology& topo, const std::vector<std::string>& rank_hosts,
                                   std::string_view collective, std::string_view algorithm,
                                   const std::function<bool()>& stop) {
  const ScheduleAlgorithm* alg = FindScheduleAlgorithm(collective, algorithm);
  if (!alg)
    return Status::InvalidArgument(
        fmt::format("{} has no scheduled algorithm '{}' (see 'topotune schedule --help')", collective, algorithm));
  // Asked between the stages, inside the generator and the program
  // compilers (tuner/cancel.h), and while the programs are serialized.
  const Cancel cancel(stop ? stop : std::function<bool()>());
  const Status stopped = Cancel::Stopped("the plan compile");
  auto placement = PlacementFromRankHosts(topo, rank_hosts);
  if (!placement.ok()) return placement.status();
  auto tree = RankTree::Build(topo, *placement);
  if (!tree.ok()) return tree.status();
  auto schedule = MakeSchedule(*alg, *tree, cancel);
  if (!schedule.ok()) return schedule.status();
  if (cancel.Requested()) return stopped;
  CompiledPlan plan;
  plan.collective = std::string(collective);
  plan.algorithm = std::string(algorithm);
  plan.bottleneck_load = BottleneckLoad(*tree);
  v1::RankProgram wire;
  if (HostCombinedKernel(collective, algorithm)) {
    plan.host_of_rank = HostIndexOfRanks(*tree);
    auto hosts = CompileHostPrograms(*schedule, plan.host_of_rank, cancel);
    if (!hosts.ok()) return hosts.status();
    if (cancel.Requested()) return stopped;
    plan.num_phases = schedule->num_phases();
    for (const HostProgram& p : *hosts) {
      if (cancel.Poll(static_cast<int64_t>(p.sends.size() + p.recvs.size() + p.stream_origin.size()) + 1))
        return stopped;
      wire.Clear();
      ToProto(p, &wire);
      plan.steps.push_back(StepsOf(wire));
      plan.num_steps += plan.steps.back();
      plan.programs.push_back(wire.SerializeAsString());
    }
    return plan;
  }
  auto programs = CompileRankPrograms(*schedule, cancel);
  if (!programs.ok()) return programs.status();
  if (cancel.Requested()) return stopped;
  schedule = Status::Internal("freed");  // Its messages are in the programs now.
  for (RankProgram& p : *programs) {
    if (cancel.Poll(kSerializeWork * static_cast<int64_t>(p.steps.size()) + 1)) return stopped;
    plan.steps.push_back(static_cast<int32_t>(p.steps.size()));
    plan.num_steps += static_cast<int64_t>(p.steps.size());
    for (const RankStep& s : p.steps) {
      plan.num_syncs += static_cast<int64_t>(s.notify.size());
      plan.num_phases = std::max(plan.num_phases, s.phase + 1);
    }
    wire.Clear();
    ToProto(p, &wire);
    plan.programs.push_back(wire.SerializeAsString());
    p.steps = {};  // The structs of a thousand ranks take 130 MB: free them as we go.
  }
  return plan;
}

RankProgram ProgramOf(const CompiledPlan& plan, int rank) {
  v1::RankProgram wire;
  wire.ParseFromString(plan.programs[rank]);
  RankProgram out;
  out.rank = wire.rank();
  for (const v1::RankStep& s : wire.steps()) {
    RankStep step;
    step.phase = s.phase();
    step.send_to = s.has_send_to() ? s.send_to() : -1;
    step.recv_from = s.has_recv_from() ? s.recv_from() : -1;
    step.wait_for.assign(s.wait_for().begin(), s.wait_for().end());
    step.notify.assign(s.notify().begin(), s.notify().end());
    out.steps.push_back(std::move(step));
  }
  return out;
}

void PlanToProto(const CompiledPlan& plan, std::span<const int32_t> ranks, int64_t max_steps,
                 v1::CompiledSchedule* out) {
  out->set_algorithm(plan.algorithm);
  out->set_num_ranks(static_cast<int32_t>(plan.programs.size()));
  out->set_num_phases(plan.num_phases);
  out->set_bottleneck_load(plan.bottleneck_load);
  out->set_num_syncs(plan.num_syncs);
  out->mutable_host_of_rank()->Add(plan.host_of_rank.begin(), plan.host_of_rank.end());
  int64_t steps = 0;
  if (ranks.empty()) {
    steps = plan.num_steps;
  } else {
    for (int32_t r : ranks) steps += plan.steps[r];
  }
  if (steps > max_steps) {
    out->set_omitted_reason(fmt::format("the programs of {} ranks would have {} steps, more than {}",
                                        ranks.empty() ? plan.programs.size() : ranks.size(), steps, max_steps));
    return;
  }
  // Each program was checked when the plan was built or decoded.
  if (ranks.empty()) {
    out->mutable_programs()->Reserve(static_cast<int>(plan.programs.size()));
    for (const std::string& p : plan.programs) out->add_programs()->ParseFromString(p);
  } else {
    for (int32_t r : ranks) out->add_programs()->ParseFromString(plan.programs[r]);
  }
}

namespace {

constexpr std::string_view kMagic = "TTP4";  // Bump the digit when the layout changes.
using google::protobuf::internal::WireFormatLite;

}  // namespace

std::string EncodePlan(const CompiledPlan& plan) {
  v1::CompiledSchedule header;
  header.set_algorithm(plan.algorithm);
  header.set_num_ranks(static_cast<int32_t>(plan.programs.size()));
  header.set_num_phases(plan.num_phases);
  header.set_bottleneck_load(plan.bottleneck_load);
  header.set_num_syncs(plan.num_syncs);
  std::string out(kMagic);
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.WriteVarint32(static_cast<uint32_t>(plan.collective.size()));
    coded.WriteString(plan.collective);
  }
  out += header.SerializeAsString();
  // Repeated field 6 (programs), each element length-delimited: exactly what
  // serializing the programs inside the message would write.
  for (const std::string& p : plan.programs) {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.WriteTag(
        WireFormatLite::MakeTag(v1::CompiledSchedule::kProgramsFieldNumber, WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
    coded.WriteVarint32(static_cast<uint32_t>(p.size()));
    coded.WriteString(p);
  }
  // Field 8 (host_of_rank) last, as serializing the whole message orders it.
  v1::CompiledSchedule hosts;
  hosts.mutable_host_of_rank()->Add(plan.host_of_rank.begin(), plan.host_of_rank.end());
  out += hosts.SerializeAsString();
  return out;
}

StatusOr<CompiledPlan> DecodePlan(std::string_view blob) {
  auto bad = [](std::string_view what) { return Status::InvalidArgument(fmt::format("corrupt plan blob: {}", what)); };
  if (!blob.starts_with(kMagic)) return bad(fmt::format("unknown format (no {} header)", kMagic));
  blob.remove_prefix(kMagic.size());
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(blob.data()),
                                            static_cast<int>(std::min<size_t>(blob.size(), INT32_MAX)));
  in.SetTotalBytesLimit(INT32_MAX);
  CompiledPlan plan;
  uint32_t len = 0;
  if (!in.ReadVarint32(&len) || len > 64 || !in.ReadString(&plan.collective, static_cast<int>(len)))
    return bad("truncated header");
  int64_t num_ranks = -1;
  for (uint32_t tag; (tag = in.ReadTag()) != 0;) {
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    const auto type = WireFormatLite::GetTagWireType(tag);
    uint64_t v = 0;
    if (type == WireFormatLite::WIRETYPE_VARINT && field >= 2 && field <= 5) {
      if (!in.ReadVarint64(&v)) return bad("truncated number");
      if (field == 2) num_ranks = static_cast<int64_t>(v);
      if (field == 3) plan.num_phases = static_cast<int32_t>(v);
      if (field == 4) plan.bottleneck_load = static_cast<int64_t>(v);
      if (field == 5) plan.num_syncs = static_cast<int64_t>(v);
    } else if (type == WireFormatLite::WIRETYPE_LENGTH_DELIMITED && (field == 1 || field == 6)) {
      std::string bytes;
      if (!in.ReadVarint32(&len) || !in.ReadString(&bytes, static_cast<int>(len))) return bad("truncated string");
      if (field == 1) plan.algorithm = std::move(bytes);
      if (field == 6) plan.programs.push_back(std::move(bytes));
    } else if (type == WireFormatLite::WIRETYPE_LENGTH_DELIMITED && field == 8) {
      // host_of_rank, packed.
      if (!in.ReadVarint32(&len)) return bad("truncated host list");
      const auto limit = in.PushLimit(static_cast<int>(len));
      while (in.BytesUntilLimit() > 0) {
        if (!in.ReadVarint64(&v)) return bad("truncated host list");
        plan.host_of_rank.push_back(static_cast<int32_t>(v));
      }
      in.PopLimit(limit);
    } else {
      return bad(fmt::format("unexpected field {} of wire type {}", field, static_cast<int>(type)));
    }
  }
  if (!in.ConsumedEntireMessage() || in.CurrentPosition() != static_cast<int>(blob.size()))
    return bad("trailing bytes");
  if (num_ranks != static_cast<int64_t>(plan.programs.size()))
    return bad(fmt::format("{} programs for {} ranks", plan.programs.size(), num_ranks));
  if (plan.num_phases < 0 || plan.num_syncs < 0 || plan.bottleneck_load < 0) return bad("figures out of range");
  if (!plan.host_of_rank.empty()) {
    HostProgram layout;
    if (plan.host_of_rank.size() != plan.programs.size() || !SetHostLayout(plan.host_of_rank, &layout).ok())
      return bad("a host list that does not number the ranks' hosts");
  }
  // Every program must parse, be its rank's, and name ranks in range.
  const auto n = static_cast<int32_t>(plan.programs.size());
  v1::RankProgram wire;
  for (int32_t r = 0; r < n; ++r) {
    if (!wire.ParseFromString(plan.programs[r])) return bad(fmt::format("program {} does not parse", r));
    if (wire.rank() != r) return bad(fmt::format("program {} is of rank {}", r, wire.rank()));
    for (const v1::RankStep& s : wire.steps()) {
      bool ok = (!s.has_send_to() || (s.send_to() >= 0 && s.send_to() < n)) &&
                (!s.has_recv_from() || (s.recv_from() >= 0 && s.recv_from() < n));
      for (int32_t w : s.wait_for()) ok = ok && w >= 0 && w < n;
      for (int32_t w : s.notify()) ok = ok && w >= 0 && w < n;
      if (!ok) return bad(fmt::format("rank {} names a rank out of range", r));
    }
    for (const auto* list : {&wire.sends(), &wire.recvs()})
      for (const v1::HostTransfer& t : *list)
        if (plan.host_of_rank.empty() || t.peer() < 0 || t.peer() >= n || t.offset() < 0 || t.blocks() < 1)
          return bad(fmt::format("rank {} has a host transfer out of range", r));
    if (wire.stream_origin_size() != 0 && (plan.host_of_rank.empty() || wire.stream_origin_size() != n))
      return bad(fmt::format("rank {} has a stream of {} blocks", r, wire.stream_origin_size()));
    plan.steps.push_back(StepsOf(wire));
    plan.num_steps += plan.steps.back();
  }
  return plan;
}

size_t PlanKeyHash::operator()(const PlanKey& k) const {
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
  while (stats_.bytes > max_bytes_ && lru_.size() > 1) {
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
