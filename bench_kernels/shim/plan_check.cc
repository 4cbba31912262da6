#include "bench_kernels/shim/plan_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "proto/names.h"
#include "tuner/kernel_catalog.h"
#include "tuner/scheduled_kernels.h"

namespace topotune::shim {

namespace {

// Rank programs and allgather host programs are checked by running them
// together, which takes the pair matrix: only up to 4096 ranks, 16 Mi pairs
// (the daemon's step limit sends allgather programs of at most about 2048
// ranks). Alltoall host programs are checked by their structure, at any size.
constexpr int64_t kMaxSimulatedRanks = 4096;

std::string Where(v1::Collective c) { return std::string(v1::CollectiveName(c)); }

// Whether the kernels of `k` take a compiled schedule or a ring order from
// the plan (alltoallv kernels build their plans in the job).
bool NeedsPrograms(const kernels::KernelInfo& k) {
  return FindScheduledKernel(kernels::CollectiveName(k.collective), k.name) != nullptr;
}
// The same rule by which topotuned sends a ring order (kernel_catalog.h).
bool NeedsRing(const kernels::KernelInfo& k) { return NeedsRingOrder(kernels::CollectiveName(k.collective), k.name); }

Status CheckRank(int32_t r, int nprocs, int self, std::string_view what) {
  if (r < 0 || r >= nprocs)
    return Status::InvalidArgument(fmt::format("{} rank {}, not a rank of {}", what, r, nprocs));
  if (r == self) return Status::InvalidArgument(fmt::format("{} rank {}, the rank itself", what, r));
  return Status::Ok();
}

}  // namespace

bool ToKernelCollective(v1::Collective c, kernels::Collective* out) {
  return kernels::ParseCollective(v1::CollectiveName(c), out);
}

bool ToPatternClass(v1::AlltoallvPattern p, kernels::PatternClass* out) {
  switch (p) {
    case v1::ALLTOALLV_PATTERN_UNIFORM:
      *out = kernels::PatternClass::kUniform;
      return true;
    case v1::ALLTOALLV_PATTERN_SKEWED:
      *out = kernels::PatternClass::kSkewed;
      return true;
    case v1::ALLTOALLV_PATTERN_SPARSE:
      *out = kernels::PatternClass::kSparse;
      return true;
    default:
      return false;
  }
}

StatusOr<std::vector<TableRow>> CheckTable(kernels::Collective collective, const v1::DecisionTable& table) {
  if (table.ranges_size() == 0) return Status::InvalidArgument("the decision table is empty");
  std::vector<TableRow> rows;
  for (int i = 0; i < table.ranges_size(); ++i) {
    const v1::DecisionRange& r = table.ranges(i);
    const int64_t expected_min = i == 0 ? 0 : table.ranges(i - 1).max_msize();
    if (r.min_msize() != expected_min)
      return Status::InvalidArgument(
          fmt::format("range {} starts at {} bytes, not at {}", i, r.min_msize(), expected_min));
    const bool last = i + 1 == table.ranges_size();
    if (last != (r.max_msize() == 0))
      return Status::InvalidArgument(
          last ? fmt::format("the last range ends at {} bytes instead of having no end", r.max_msize())
               : fmt::format("range {} has no end but is not the last", i));
    if (!last && r.max_msize() <= r.min_msize())
      return Status::InvalidArgument(
          fmt::format("range {} is empty ({} to {} bytes)", i, r.min_msize(), r.max_msize()));
    const kernels::KernelInfo* k = kernels::FindKernel(collective, r.algorithm());
    if (k == nullptr)
      return Status::InvalidArgument(fmt::format("range {} names algorithm '{}', which this library does not have ({})",
                                                 i, r.algorithm().substr(0, 64), kernels::ValidKernels(collective)));
    rows.push_back({r.min_msize(), k});
  }
  return rows;
}

StatusOr<RankProgram> ProgramFromProto(const v1::RankProgram& wire, int nprocs) {
  RankProgram out;
  out.rank = wire.rank();
  if (out.rank < 0 || out.rank >= nprocs)
    return Status::InvalidArgument(fmt::format("a program of rank {}, not a rank of {}", out.rank, nprocs));
  const std::string who = fmt::format("rank {}'s program", out.rank);
  int32_t last_phase = -1;
  for (const v1::RankStep& s : wire.steps()) {
    if (s.phase() <= last_phase)
      return Status::InvalidArgument(fmt::format("{}: phase {} after phase {}", who, s.phase(), last_phase));
    last_phase = s.phase();
    RankStep step;
    step.phase = s.phase();
    if (s.has_send_to()) {
      if (auto st = CheckRank(s.send_to(), nprocs, out.rank, who + " sends to"); !st.ok()) return st;
      step.send_to = s.send_to();
    }
    if (s.has_recv_from()) {
      if (auto st = CheckRank(s.recv_from(), nprocs, out.rank, who + " receives from"); !st.ok()) return st;
      step.recv_from = s.recv_from();
    }
    for (int32_t w : s.wait_for())
      if (auto st = CheckRank(w, nprocs, out.rank, who + " waits for"); !st.ok()) return st;
    for (int32_t n : s.notify())
      if (auto st = CheckRank(n, nprocs, out.rank, who + " notifies"); !st.ok()) return st;
    step.wait_for.assign(s.wait_for().begin(), s.wait_for().end());
    step.notify.assign(s.notify().begin(), s.notify().end());
    out.steps.push_back(std::move(step));
  }
  return out;
}

StatusOr<HostProgram> HostProgramFromProto(const v1::RankProgram& wire,
                                           const google::protobuf::RepeatedField<int32_t>& host_of_rank,
                                           bool allgather) {
  HostProgram layout;
  if (Status st = SetHostLayout({host_of_rank.begin(), host_of_rank.end()}, &layout); !st.ok()) return st;
  auto out = HostTransfersFromProto(wire, layout, allgather);
  if (!out.ok()) return out;
  out->host_of_rank = std::move(layout.host_of_rank);
  out->local_index = std::move(layout.local_index);
  out->first_rank_of_host = std::move(layout.first_rank_of_host);
  return out;
}

StatusOr<HostProgram> HostTransfersFromProto(const v1::RankProgram& wire, const HostProgram& layout, bool allgather) {
  HostProgram out;
  out.allgather = allgather;
  out.rank = wire.rank();
  const int n = static_cast<int>(layout.host_of_rank.size());
  if (out.rank < 0 || out.rank >= n)
    return Status::InvalidArgument(fmt::format("a host program of rank {}, not a rank of {}", out.rank, n));
  const std::string who = fmt::format("rank {}'s host program", out.rank);
  const int host = layout.host_of_rank[out.rank];
  const int64_t limit = allgather ? n : static_cast<int64_t>(layout.host_size(host)) * n;
  for (const auto& [list, into] : {std::pair{&wire.sends(), &out.sends}, std::pair{&wire.recvs(), &out.recvs}}) {
    int32_t last_phase = 0;
    for (const v1::HostTransfer& t : *list) {
      if (t.peer() < 0 || t.peer() >= n || layout.host_of_rank[t.peer()] == host)
        return Status::InvalidArgument(
            fmt::format("{}: a message with rank {}, not a rank of another host", who, t.peer()));
      if (t.phase() < last_phase)
        return Status::InvalidArgument(fmt::format("{}: phase {} after phase {}", who, t.phase(), last_phase));
      if (t.blocks() < 1 || t.offset() < 0 || t.blocks() > limit || t.offset() > limit - t.blocks())
        return Status::InvalidArgument(fmt::format("{}: blocks {} to {} are outside its host's {}", who, t.offset(),
                                                   t.offset() + t.blocks() - 1, limit));
      last_phase = t.phase();
      into->push_back({t.phase(), t.peer(), t.offset(), t.blocks()});
    }
  }
  if (allgather) {
    if (wire.stream_origin_size() != n)
      return Status::InvalidArgument(
          fmt::format("{}: a stream of {} blocks for {} ranks", who, wire.stream_origin_size(), n));
    for (int32_t o : wire.stream_origin())
      if (o < 0 || o >= n) return Status::InvalidArgument(fmt::format("{}: a stream block of rank {}", who, o));
    out.stream_origin.assign(wire.stream_origin().begin(), wire.stream_origin().end());
  }
  return out;
}

Status CheckPrograms(std::span<const RankProgram> programs) {
  const int64_t n = static_cast<int64_t>(programs.size());
  if (n > kMaxSimulatedRanks)
    return Status::InvalidArgument(fmt::format("programs of {} ranks; at most {} are checked", n, kMaxSimulatedRanks));
  for (int64_t r = 0; r < n; ++r)
    if (programs[r].rank != r)
      return Status::InvalidArgument(fmt::format("program {} is rank {}'s", r, programs[r].rank));
  // Every ordered pair of distinct ranks exchanges one block.
  std::vector<bool> sent(static_cast<size_t>(n * n));
  for (const RankProgram& p : programs)
    for (const RankStep& s : p.steps)
      if (s.send_to >= 0) {
        auto bit = sent[static_cast<size_t>(p.rank * n + s.send_to)];
        if (bit) return Status::InvalidArgument(fmt::format("rank {} sends to rank {} twice", p.rank, s.send_to));
        bit = true;
      }
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = 0; b < n; ++b)
      if (a != b && !sent[static_cast<size_t>(a * n + b)])
        return Status::InvalidArgument(fmt::format("rank {} never sends its block to rank {}", a, b));
  // And receives it exactly once (receives are posted up front, so a wrong
  // one would not stall anything: it would take another rank's block).
  std::vector<bool> received(static_cast<size_t>(n * n));
  for (const RankProgram& p : programs)
    for (const RankStep& s : p.steps)
      if (s.recv_from >= 0) {
        auto bit = received[static_cast<size_t>(s.recv_from * n + p.rank)];
        if (bit)
          return Status::InvalidArgument(fmt::format("rank {} receives from rank {} twice", p.rank, s.recv_from));
        bit = true;
      }
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = 0; b < n; ++b)
      if (a != b && !received[static_cast<size_t>(a * n + b)])
        return Status::InvalidArgument(fmt::format("rank {} never receives rank {}'s block", b, a));

  // Run them together (see the header comment). Every receive is posted
  // before the first step, so a send completes as soon as it is posted; a
  // rank stops only at a step whose notices have not all arrived.
  std::vector<size_t> at(static_cast<size_t>(n), 0);
  std::unordered_map<int64_t, int64_t> notices;  // a * n + c: notices from a that c has not consumed.
  auto advance = [&](int64_t r) {
    bool moved = false;
    size_t& step = at[static_cast<size_t>(r)];
    const std::vector<RankStep>& steps = programs[r].steps;
    for (; step < steps.size(); ++step, moved = true) {
      const RankStep& s = steps[step];
      std::unordered_map<int64_t, int64_t> need;
      for (int32_t w : s.wait_for) ++need[w];
      for (const auto& [w, k] : need)
        if (notices[w * n + r] < k) return moved;
      for (const auto& [w, k] : need) notices[w * n + r] -= k;
      for (int32_t x : s.notify) ++notices[r * n + x];
    }
    return moved;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t r = 0; r < n; ++r) progress |= advance(r);
  }
  for (int64_t r = 0; r < n; ++r) {
    const size_t step = at[static_cast<size_t>(r)];
    if (step < programs[r].steps.size()) {
      const RankStep& s = programs[r].steps[step];
      return Status::InvalidArgument(
          fmt::format("the programs deadlock: rank {} never completes phase {} (waiting for "
                      "notices from {})",
                      r, s.phase, fmt::join(s.wait_for, ", ")));
    }
  }
  for (const auto& [pair, k] : notices)
    if (k != 0)
      return Status::InvalidArgument(
          fmt::format("rank {} sends {} notice(s) to rank {} that it never waits for", pair / n, k, pair % n));
  return Status::Ok();
}

Status CheckRing(const v1::RingOrder& ring, int nprocs) {
  if (ring.order_size() != nprocs || ring.switch_of_rank_size() != nprocs)
    return Status::InvalidArgument(fmt::format("the ring order has {} ranks and {} switch indexes, not {}",
                                               ring.order_size(), ring.switch_of_rank_size(), nprocs));
  std::vector<bool> seen(static_cast<size_t>(nprocs));
  for (int32_t r : ring.order()) {
    if (r < 0 || r >= nprocs || seen[static_cast<size_t>(r)])
      return Status::InvalidArgument(fmt::format("the ring order is not a permutation of the {} ranks (rank {} is {})",
                                                 nprocs, r, r < 0 || r >= nprocs ? "out of range" : "there twice"));
    seen[static_cast<size_t>(r)] = true;
  }
  for (int32_t s : ring.switch_of_rank())
    if (s < 0) return Status::InvalidArgument(fmt::format("the ring gives a switch index of {}", s));
  return Status::Ok();
}

Status CheckPlan(const v1::GetPlanResponse& plan, int nprocs, std::span<const v1::Collective> collectives) {
  if (plan.nprocs() != nprocs)
    return Status::InvalidArgument(
        fmt::format("the plan is for {} ranks but the communicator has {}", plan.nprocs(), nprocs));
  if (plan.plans_size() != static_cast<int>(collectives.size()))
    return Status::InvalidArgument(
        fmt::format("the plan has {} collectives, {} were asked for", plan.plans_size(), collectives.size()));
  for (int i = 0; i < plan.plans_size(); ++i) {
    const v1::CollectivePlan& p = plan.plans(i);
    kernels::Collective kc;
    if (p.collective() != collectives[static_cast<size_t>(i)] || !ToKernelCollective(p.collective(), &kc))
      return Status::InvalidArgument(fmt::format("plan {} is for collective {}, {} was asked for", i,
                                                 static_cast<int>(p.collective()), Where(collectives[i])));
    auto rows = CheckTable(kc, p.table());
    if (!rows.ok()) return Status::InvalidArgument(Where(p.collective()) + ": " + rows.status().message());
    // Alltoallv's tables per pattern class: skewed and sparse, each once.
    std::vector<TableRow> all_rows = *rows;
    std::vector<bool> seen(kernels::kPatternClassCount);
    for (const v1::PatternTable& t : p.pattern_tables()) {
      kernels::PatternClass k;
      if (kc != kernels::Collective::kAlltoallv || !ToPatternClass(t.pattern(), &k) ||
          k == kernels::PatternClass::kUniform || seen[static_cast<size_t>(k)])
        return Status::InvalidArgument(
            fmt::format("{}: a pattern table of pattern {}, not a skewed or sparse alltoallv table listed once",
                        Where(p.collective()), static_cast<int>(t.pattern())));
      seen[static_cast<size_t>(k)] = true;
      auto class_rows = CheckTable(kc, t.table());
      if (!class_rows.ok())
        return Status::InvalidArgument(fmt::format("{} ({} pattern): {}", Where(p.collective()),
                                                   kernels::PatternClassName(k), class_rows.status().message()));
      all_rows.insert(all_rows.end(), class_rows->begin(), class_rows->end());
    }
    // Every schedule sent: its programs whole and sound, or left out with a
    // reason (the shim moves each rank's program to that rank).
    for (const v1::CompiledSchedule& schedule : p.schedules()) {
      const std::string where = fmt::format("{}: {}", Where(p.collective()), schedule.algorithm().substr(0, 64));
      if (schedule.num_ranks() != nprocs)
        return Status::InvalidArgument(
            fmt::format("{}: the schedule is for {} ranks, not {}", where, schedule.num_ranks(), nprocs));
      if (schedule.programs_size() == 0 && !schedule.omitted_reason().empty()) continue;
      if (schedule.programs_size() != nprocs)
        return Status::InvalidArgument(
            fmt::format("{}: the schedule has {} programs for {} ranks", where, schedule.programs_size(), nprocs));
      const kernels::KernelInfo* kernel = kernels::FindKernel(kc, schedule.algorithm());
      if (kernel != nullptr && kernels::RunsHostProgram(*kernel)) {
        if (schedule.host_of_rank_size() != nprocs)
          return Status::InvalidArgument(fmt::format("{}: host programs with {} hosts listed for {} ranks", where,
                                                     schedule.host_of_rank_size(), nprocs));
        // Allgather programs are simulated, alltoall ones checked by their
        // structure (no limit on ranks: O(messages log messages)).
        const bool allgather = kc == kernels::Collective::kAllgather;
        if (allgather && nprocs > kMaxSimulatedRanks)
          return Status::InvalidArgument(fmt::format("{}: allgather programs of {} ranks; at most {} are checked",
                                                     where, nprocs, kMaxSimulatedRanks));
        HostProgram layout;
        if (Status st = SetHostLayout({schedule.host_of_rank().begin(), schedule.host_of_rank().end()}, &layout);
            !st.ok())
          return Status::InvalidArgument(fmt::format("{}: {}", where, st.message()));
        std::vector<HostProgram> hosts;
        hosts.reserve(static_cast<size_t>(nprocs));
        for (int r = 0; r < nprocs; ++r) {
          auto program = HostTransfersFromProto(schedule.programs(r), layout, allgather);
          if (!program.ok()) return Status::InvalidArgument(fmt::format("{}: {}", where, program.status().message()));
          if (program->rank != r)
            return Status::InvalidArgument(fmt::format("{}: program {} is rank {}'s", where, r, program->rank));
          hosts.push_back(std::move(program).value());
        }
        layout.allgather = allgather;
        if (std::string wrong =
                allgather ? SimulateHostPrograms(layout, hosts) : CheckAlltoallHostPrograms(layout, hosts);
            !wrong.empty())
          return Status::InvalidArgument(fmt::format("{}: {}", where, wrong));
        continue;
      }
      std::vector<RankProgram> programs;
      programs.reserve(static_cast<size_t>(nprocs));
      for (const v1::RankProgram& wire : schedule.programs()) {
        auto program = ProgramFromProto(wire, nprocs);
        if (!program.ok()) return Status::InvalidArgument(fmt::format("{}: {}", where, program.status().message()));
        programs.push_back(std::move(program).value());
      }
      if (auto st = CheckPrograms(programs); !st.ok())
        return Status::InvalidArgument(fmt::format("{}: {}", where, st.message()));
    }
    // What the table's kernels need.
    for (const TableRow& row : all_rows) {
      if (NeedsRing(*row.kernel)) {
        if (!p.has_ring())
          return Status::InvalidArgument(fmt::format("{}: the table names {} but the plan has no ring order",
                                                     Where(p.collective()), row.kernel->name));
        if (auto st = CheckRing(p.ring(), nprocs); !st.ok())
          return Status::InvalidArgument(Where(p.collective()) + ": " + st.message());
      }
      if (NeedsPrograms(*row.kernel) &&
          std::none_of(p.schedules().begin(), p.schedules().end(),
                       [&](const v1::CompiledSchedule& s) { return s.algorithm() == row.kernel->name; }))
        return Status::InvalidArgument(fmt::format("{}: the table names {} but the plan has no schedule of it",
                                                   Where(p.collective()), row.kernel->name));
    }
  }
  return Status::Ok();
}

}  // namespace topotune::shim
