#include "bench_kernels/shim/runtime.h"

#include <fmt/format.h>
#include <google/protobuf/util/time_util.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <new>
#include <nlohmann/json.hpp>

#include "proto/json.h"
#include "proto/limits.h"
#include "proto/names.h"
#include "tuner/demand.h"

namespace topotune::shim {

namespace {

using kernels::Collective;

constexpr std::array<Collective, 3> kCollectives = {Collective::kAlltoall, Collective::kAlltoallv,
                                                    Collective::kAllgather};
// Bytes per name in the exchanges of host names and forced algorithms.
constexpr int kNameBytes = MPI_MAX_PROCESSOR_NAME;
constexpr int kForceBytes = 80;

size_t Index(Collective c) { return static_cast<size_t>(c); }

// What the library never sees, said once at info when a job starts (the
// README's table of what is served has the whole picture).
constexpr std::string_view kNeverIntercepted =
    "served: MPI_Alltoall, MPI_Alltoallv and MPI_Allgather (tuned), MPI_Ialltoall, MPI_Ialltoallv and "
    "MPI_Iallgather (counted, the MPI library's own); every other collective (MPI_Alltoallw, MPI_Allgatherv, "
    "neighborhood and persistent collectives among them) is the MPI library's own and not counted";

const kernels::KernelInfo* Native(Collective c) {
  static const std::array<const kernels::KernelInfo*, 3> natives = {
      kernels::FindKernel(Collective::kAlltoall, "native"), kernels::FindKernel(Collective::kAlltoallv, "native"),
      kernels::FindKernel(Collective::kAllgather, "native")};
  return natives[Index(c)];
}

bool IsL3(const kernels::KernelInfo* k) { return k->name.ends_with("_l3"); }

// The MPI function of a blocking collective, for the exception barrier.
const char* CallName(Collective c) {
  static constexpr std::array<const char*, 3> kNames = {"MPI_Alltoall", "MPI_Alltoallv", "MPI_Allgather"};
  return kNames[Index(c)];
}

// Alltoall's and allgather's block size (the same on every rank: MPI's
// type-signature rule) and the bytes a call moves between distinct ranks,
// on n ranks.
template <typename Args>
std::pair<int64_t, int64_t> FixedSizes(const Args& a, int64_t n) {
  const bool in_place = a.sendbuf == MPI_IN_PLACE;
  int type_size = 0;
  PMPI_Type_size(in_place ? a.recvtype : a.sendtype, &type_size);
  const int64_t msize = static_cast<int64_t>(in_place ? a.recvcount : a.sendcount) * type_size;
  return {msize, msize * n * (n - 1)};
}

// Fallbacks of the kernels, per thread; the runtime reads total() and last()
// around each call and keeps the counts itself.
kernels::FallbackLog& ThreadLog() {
  thread_local kernels::FallbackLog log = [] {
    kernels::FallbackLog l;
    l.sink = [](const std::string&) {};
    return l;
  }();
  return log;
}

google::protobuf::Timestamp ToTimestamp(std::chrono::system_clock::time_point t) {
  return google::protobuf::util::TimeUtil::NanosecondsToTimestamp(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

std::string DescribeTable(const std::vector<TableRow>& rows) {
  std::string out;
  for (size_t i = 0; i < rows.size(); ++i)
    out += fmt::format("{}{}{}", i ? ", " : "", rows[i].kernel->name,
                       i ? fmt::format(" from {} B", rows[i].min_msize) : std::string());
  return out;
}

// Fills the tables `plan` leaves empty with native (a class without a table
// runs native), replaces every table of a collective with a forced
// algorithm by that algorithm, and sets any_kernel, v_agree and v_any_l3.
void Complete(PlanData* plan, const std::array<std::string, 3>& force) {
  const size_t v = Index(Collective::kAlltoallv);
  for (Collective c : kCollectives) {
    std::vector<std::vector<TableRow>*> tables = {&plan->tables[Index(c)]};
    if (c == Collective::kAlltoallv)
      for (size_t p = 1; p < plan->pattern_tables.size(); ++p) tables.push_back(&plan->pattern_tables[p]);
    std::vector<TableSource*> sources = {&plan->sources[Index(c)]};
    if (c == Collective::kAlltoallv)
      for (size_t p = 1; p < plan->pattern_sources.size(); ++p) sources.push_back(&plan->pattern_sources[p]);
    for (size_t t = 0; t < tables.size(); ++t) {
      std::vector<TableRow>* rows = tables[t];
      if (!force[Index(c)].empty()) {
        *rows = {{0, kernels::FindKernel(c, force[Index(c)])}};
        *sources[t] = {v1::DECISION_SOURCE_FORCED, 0, 0, false, {}, {}};
      }
      if (rows->empty()) {
        *rows = {{0, Native(c)}};
        *sources[t] = {};
      }
      if (c == Collective::kAlltoallv)
        plan->v_explores = plan->v_explores || sources[t]->explore || !sources[t]->noisy_buckets.empty();
      for (const TableRow& row : *rows) {
        plan->any_kernel = plan->any_kernel || row.kernel != Native(c);
        if (c != Collective::kAlltoallv) continue;
        plan->v_any_l3 = plan->v_any_l3 || IsL3(row.kernel);
        plan->v_agree = plan->v_agree || rows->size() > 1 || row.kernel != plan->tables[v][0].kernel;
      }
    }
  }
  plan->v_agree = plan->v_agree || plan->v_any_l3;
}

}  // namespace

void CollectivePeers(MPI_Comm comm, int* n, int* me) {
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) {
    PMPI_Comm_remote_size(comm, n);
    *me = -1;
  } else {
    PMPI_Comm_size(comm, n);
    PMPI_Comm_rank(comm, me);
  }
}

const std::vector<TableRow>& PlanData::AlltoallvTable(kernels::PatternClass p) const {
  return p == kernels::PatternClass::kUniform ? tables[Index(Collective::kAlltoallv)]
                                              : pattern_tables[static_cast<size_t>(p)];
}

const TableSource& PlanData::AlltoallvSource(kernels::PatternClass p) const {
  return p == kernels::PatternClass::kUniform ? sources[Index(Collective::kAlltoallv)]
                                              : pattern_sources[static_cast<size_t>(p)];
}

Runtime::Runtime(ShimConfig config) : config_(std::move(config)), link_(config_) {
  if (LaunchedAsRankZero(&std::getenv)) prepare_ = std::thread([this] { link_.Prepare(); });
}

Runtime::~Runtime() {
  if (prepare_.joinable()) prepare_.join();
}

void Runtime::Start() {
  const auto t0 = std::chrono::steady_clock::now();
  if (prepare_.joinable()) prepare_.join();
  PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
  PMPI_Comm_size(MPI_COMM_WORLD, &world_size_);
  if (world_rank_ == 0)
    for (const std::string& p : config_.problems) Log(LogLevel::kWarn, p);

  // Every rank's host name.
  std::string mine = config_.hostname;
  if (mine.empty()) {
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    PMPI_Get_processor_name(name, &len);
    mine.assign(name, static_cast<size_t>(std::max(0, len)));
  }
  mine.resize(kNameBytes, '\0');
  std::vector<char> all(static_cast<size_t>(world_size_) * kNameBytes);
  PMPI_Allgather(mine.data(), kNameBytes, MPI_CHAR, all.data(), kNameBytes, MPI_CHAR, MPI_COMM_WORLD);
  std::map<std::string, int> per_host;
  for (int r = 0; r < world_size_; ++r) {
    const char* p = all.data() + static_cast<size_t>(r) * kNameBytes;
    hosts_.emplace_back(p, strnlen(p, kNameBytes - 1));
    ranks_per_node_ = std::max(ranks_per_node_, ++per_host[hosts_.back()]);
  }

  // Rank 0's forced algorithms, so that every rank runs the same kernels.
  // With them, rank 0's TOPOTUNE_ADAPT (0 unset, 1 off, 2 on), so that
  // every rank adapts alike.
  std::vector<char> force(kCollectives.size() * kForceBytes + 1);
  if (world_rank_ == 0) {
    for (Collective c : kCollectives)
      std::copy_n(config_.force[Index(c)].begin(), std::min<size_t>(config_.force[Index(c)].size(), kForceBytes - 1),
                  force.begin() + static_cast<std::ptrdiff_t>(Index(c) * kForceBytes));
    force.back() = static_cast<char>(config_.adapt ? 1 + *config_.adapt : 0);
  }
  PMPI_Bcast(force.data(), static_cast<int>(force.size()), MPI_CHAR, 0, MPI_COMM_WORLD);
  config_.adapt = force.back() == 0 ? std::nullopt : std::optional<bool>(force.back() == 2);
  for (Collective c : kCollectives) {
    const char* p = force.data() + Index(c) * kForceBytes;
    std::string name(p, strnlen(p, kForceBytes - 1));
    config_.force[Index(c)] = kernels::FindKernel(c, name) ? name : std::string();
  }

  std::string why;
  world_plan_ = Exchange(MPI_COMM_WORLD, hosts_, 0, &why);
  if (!world_plan_) {
    plan_reason_ = why;
    ask_daemon_ = false;
    Note("no plan: " + why + "; running the MPI library's collectives" +
             (std::any_of(config_.force.begin(), config_.force.end(), [](const std::string& f) { return !f.empty(); })
                  ? " and the forced algorithms"
                  : ""),
         world_rank_ == 0);
    world_plan_ = ForcedOnly();
  }
  auto state = MakeState(MPI_COMM_WORLD, world_plan_);
  world_ = state.get();
  states_[MPI_COMM_WORLD] = std::move(state);
  started_at_ = std::chrono::system_clock::now();
  init_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (world_rank_ == 0 && config_.log >= LogLevel::kInfo) {
    std::string tables;
    for (Collective c : kCollectives)
      tables += fmt::format("; {}: {}", kernels::CollectiveName(c), DescribeTable(world_plan_->tables[Index(c)]));
    for (int p = 1; p < kernels::kPatternClassCount; ++p) {
      const auto k = static_cast<kernels::PatternClass>(p);
      tables += fmt::format("; alltoallv {}: {}", kernels::PatternClassName(k),
                            DescribeTable(world_plan_->AlltoallvTable(k)));
    }
    Log(LogLevel::kInfo,
        fmt::format("{} ranks on {} hosts, plan {} (topology version {}){}; ready in {:.1f} ms", world_size_,
                    per_host.size(), world_plan_->plan_id.empty() ? "none" : world_plan_->plan_id,
                    world_plan_->topology_version, tables, init_seconds_ * 1e3));
    Log(LogLevel::kInfo, std::string(kNeverIntercepted));
  }
}

std::shared_ptr<const PlanData> Runtime::Exchange(MPI_Comm comm, const std::vector<std::string>& rank_hosts,
                                                  int64_t expect_version, std::string* why) {
  int rank = 0, n = 1;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &n);
  // header >= 0: the size of the shared plan that follows; < 0: -(size of
  // the reason that follows) - 1.
  int64_t header = 0;
  std::string blob;
  v1::GetPlanResponse response;  // On rank 0.
  // On rank 0, the programs of every schedule in plan order, moved out of
  // the response so that the tables go out without them.
  std::vector<google::protobuf::RepeatedPtrField<v1::RankProgram>> held;
  if (rank == 0) {
    LinkError error;
    std::string reason;
    if (daemon_timed_out_) {
      // A daemon that let one call time out is not waited for again.
      reason = fmt::format("the daemon at {} did not answer within {} ms before; not asked again", link_.server(),
                           config_.timeout_ms);
    } else if (!link_.GetPlan(config_.job_id, rank_hosts, config_.force, &response, &error)) {
      reason = error.message;
      if (error.timed_out) daemon_timed_out_ = true;
    } else if (Status st = CheckPlan(response, n, kPlanCollectives); !st.ok()) {
      reason = fmt::format("the daemon at {} sent a plan this library cannot use: {}", link_.server(), st.message());
    } else if (expect_version != 0 && response.topology_version() != expect_version) {
      reason = fmt::format(
          "the daemon's plan for a communicator of {} ranks is for topology version {}, the job's "
          "for version {}",
          n, response.topology_version(), expect_version);
    }
    if (reason.empty()) {
      for (v1::CollectivePlan& p : *response.mutable_plans())
        for (v1::CompiledSchedule& s : *p.mutable_schedules()) held.emplace_back().Swap(s.mutable_programs());
      blob = response.SerializeAsString();
      if (blob.size() > static_cast<size_t>(INT_MAX)) reason = "the plan's tables are larger than 2 GiB";
    }
    if (!reason.empty()) blob = reason.substr(0, 4096);
    header = reason.empty() ? static_cast<int64_t>(blob.size()) : -static_cast<int64_t>(blob.size()) - 1;
  }
  // With the header, whether the daemon timed out: then no rank of the
  // communicator asks it again.
  int64_t head[2] = {header, daemon_timed_out_ ? 1 : 0};
  PMPI_Bcast(head, 2, MPI_INT64_T, 0, comm);
  header = head[0];
  if (head[1] != 0) daemon_timed_out_ = true;
  blob.resize(static_cast<size_t>(header >= 0 ? header : -header - 1));
  if (!blob.empty()) PMPI_Bcast(blob.data(), static_cast<int>(blob.size()), MPI_BYTE, 0, comm);
  if (header < 0) {
    *why = blob;
    return nullptr;
  }
  v1::GetPlanResponse shared;
  if (rank == 0)
    shared = std::move(response);
  else
    shared.ParseFromString(blob);

  // The schedules whose programs follow (their indexes in plan order): each
  // rank gets its own program of each, in one bundle.
  std::vector<size_t> with_programs;
  std::vector<std::pair<v1::Collective, const v1::CompiledSchedule*>> sent;  // Those schedules.
  size_t index = 0;
  for (const v1::CollectivePlan& p : shared.plans())
    for (const v1::CompiledSchedule& s : p.schedules()) {
      if (s.omitted_reason().empty()) with_programs.push_back(index), sent.emplace_back(p.collective(), &s);
      ++index;
    }
  v1::CompiledSchedule bundle;
  if (!with_programs.empty()) {
    std::vector<int> counts(rank == 0 ? static_cast<size_t>(n) : 0), displs(counts.size());
    std::string all;
    if (rank == 0) {
      for (int r = 0; r < n; ++r) {
        v1::CompiledSchedule mine;  // Rank r's programs, moved: each goes to one rank only.
        for (size_t k : with_programs) mine.add_programs()->Swap(held[k].Mutable(r));
        displs[static_cast<size_t>(r)] = static_cast<int>(all.size());
        std::string bytes = mine.SerializeAsString();
        counts[static_cast<size_t>(r)] = static_cast<int>(bytes.size());
        all += bytes;
      }
    }
    int count = 0;
    PMPI_Scatter(counts.data(), 1, MPI_INT, &count, 1, MPI_INT, 0, comm);
    std::string mine(static_cast<size_t>(count), '\0');
    PMPI_Scatterv(all.data(), counts.data(), displs.data(), MPI_BYTE, mine.data(), count, MPI_BYTE, 0, comm);
    bundle.ParseFromString(mine);
  }

  auto plan = std::make_shared<PlanData>();
  plan->plan_id = shared.plan_id();
  plan->topology_version = shared.topology_version();
  plan->adaptation_off = shared.adaptation_off();
  auto source_of = [](v1::DecisionSource source, int nprocs, int rpn, const v1::TableAdaptation& a) {
    TableSource t{source, nprocs, rpn, a.explore(), {a.noisy_buckets().begin(), a.noisy_buckets().end()}, {}};
    for (const v1::BucketCalls& e : a.expected_calls()) t.expected_calls[e.size_bucket()] = e.calls_per_job();
    return t;
  };
  for (int i = 0; i < shared.plans_size(); ++i) {
    const v1::CollectivePlan& p = shared.plans(i);
    Collective c;
    if (!ToKernelCollective(p.collective(), &c)) continue;
    auto rows = CheckTable(c, p.table());  // Checked by rank 0: it holds.
    if (rows.ok()) {
      plan->tables[Index(c)] = std::move(rows).value();
      plan->sources[Index(c)] = source_of(p.source(), p.tuned_nprocs(), p.tuned_ranks_per_node(), p.adaptation());
    }
    for (const v1::PatternTable& t : p.pattern_tables()) {
      kernels::PatternClass k;
      auto class_rows = CheckTable(c, t.table());
      if (ToPatternClass(t.pattern(), &k) && k != kernels::PatternClass::kUniform && class_rows.ok()) {
        plan->pattern_tables[static_cast<size_t>(k)] = std::move(class_rows).value();
        plan->pattern_sources[static_cast<size_t>(k)] =
            source_of(t.source(), t.tuned_nprocs(), t.tuned_ranks_per_node(), t.adaptation());
      }
    }
    for (const v1::LearnedChoice& l : p.learned()) {
      const kernels::KernelInfo* k = kernels::FindKernel(c, l.algorithm());
      kernels::PatternClass pc = kernels::PatternClass::kUniform;
      if (c == Collective::kAlltoallv && !ToPatternClass(l.pattern(), &pc)) continue;
      if (k != nullptr && !k->needs_context) plan->learned[Index(c)][{static_cast<int>(pc), l.size_bucket()}] = k;
    }
    if (p.has_ring()) {
      plan->ring_order.assign(p.ring().order().begin(), p.ring().order().end());
      plan->switch_of_rank.assign(p.ring().switch_of_rank().begin(), p.ring().switch_of_rank().end());
    }
  }
  // The programs of the kernels that run from programs: tree_scheduled's
  // steps, and the host programs of capacity_scheduled and node_aware_ring.
  for (size_t k = 0; k < sent.size() && static_cast<int>(k) < bundle.programs_size(); ++k) {
    Collective c;
    if (!ToKernelCollective(sent[k].first, &c)) continue;
    const v1::CompiledSchedule& s = *sent[k].second;
    const kernels::KernelInfo* kernel = kernels::FindKernel(c, s.algorithm());
    if (kernel == nullptr || !kernel->needs_context) continue;
    const v1::RankProgram& wire = bundle.programs(static_cast<int>(k));
    if (kernels::RunsHostProgram(*kernel)) {
      auto program = HostProgramFromProto(wire, s.host_of_rank(), c == Collective::kAllgather);
      if (program.ok() && program->rank == rank)
        plan->host_programs[std::string(kernel->name)] = std::move(program).value();
    } else if (c == Collective::kAlltoall) {
      auto program = ProgramFromProto(wire, n);
      if (program.ok() && program->rank == rank) plan->program = std::move(program).value();
    }
  }
  Complete(plan.get(), config_.force);
  return plan;
}

std::shared_ptr<const PlanData> Runtime::NativeOnly() {
  static const auto native = [] {
    auto plan = std::make_shared<PlanData>();
    Complete(plan.get(), {});
    return plan;
  }();
  return native;
}

std::shared_ptr<const PlanData> Runtime::ForcedOnly() const {
  auto plan = std::make_shared<PlanData>();
  Complete(plan.get(), config_.force);
  return plan;
}

std::unique_ptr<Runtime::CommState> Runtime::MakeState(MPI_Comm comm, std::shared_ptr<const PlanData> plan) {
  auto state = std::make_unique<CommState>();
  PMPI_Comm_rank(comm, &state->rank);
  PMPI_Comm_size(comm, &state->size);
  if (plan->any_kernel || (state->size > 1 && Adapts(*plan))) state->holder.DupComm(comm);
  if (plan->program) state->holder.SetProgram(*plan->program);
  for (const auto& [kernel, program] : plan->host_programs) state->holder.SetHostProgram(kernel, program);
  if (!plan->ring_order.empty()) state->holder.SetRing(plan->ring_order, plan->switch_of_rank);
  state->plan = std::move(plan);
  SetContexts(*state, comm);
  return state;
}

void Runtime::SetContexts(CommState& state, MPI_Comm comm) {
  CallContext base;
  base.plan_id = state.plan->plan_id;
  base.comm_size = state.size;
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (!inter) {
    std::map<std::string_view, int> per_host;
    for (int r : WorldRanks(comm))
      if (r >= 0 && r < static_cast<int>(hosts_.size()))
        base.comm_ranks_per_node = std::max(base.comm_ranks_per_node, ++per_host[hosts_[static_cast<size_t>(r)]]);
    base.comm_hosts = static_cast<int>(per_host.size());
  }
  state.ranks_per_node = base.comm_ranks_per_node;
  auto with = [&](const TableSource& t) {
    CallContext c = base;
    c.source = t.source;
    c.tuned_nprocs = t.tuned_nprocs;
    c.tuned_ranks_per_node = t.tuned_ranks_per_node;
    return c;
  };
  std::lock_guard lock(mu_);
  for (Collective c : kCollectives) state.contexts[Index(c)] = stats_.Intern(with(state.plan->sources[Index(c)]));
  for (int p = 0; p < kernels::kPatternClassCount; ++p)
    state.v_contexts[static_cast<size_t>(p)] =
        stats_.Intern(with(state.plan->AlltoallvSource(static_cast<kernels::PatternClass>(p))));
}

std::vector<int> Runtime::WorldRanks(MPI_Comm comm) const {
  MPI_Group group, world;
  PMPI_Comm_group(comm, &group);
  PMPI_Comm_group(MPI_COMM_WORLD, &world);
  int n = 0;
  PMPI_Group_size(group, &n);
  std::vector<int> ranks(static_cast<size_t>(n)), out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) ranks[static_cast<size_t>(i)] = i;
  PMPI_Group_translate_ranks(group, n, ranks.data(), world, out.data());
  PMPI_Group_free(&group);
  PMPI_Group_free(&world);
  return out;
}

std::unique_ptr<Runtime::CommState> Runtime::Resolve(MPI_Comm comm) {
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) {
    Note("an intercommunicator: its collectives are the MPI library's", world_rank_ == 0);
    auto state = std::make_unique<CommState>();
    state->plan = NativeOnly();
    PMPI_Comm_rank(comm, &state->rank);
    PMPI_Comm_remote_size(comm, &state->size);
    SetContexts(*state, comm);
    return state;
  }
  std::vector<int> ranks = WorldRanks(comm);
  bool world_order = static_cast<int>(ranks.size()) == world_size_;
  for (size_t i = 0; world_order && i < ranks.size(); ++i) world_order = ranks[i] == static_cast<int>(i);
  if (world_order) return MakeState(comm, world_plan_);
  if (ranks.size() < 2 || !ask_daemon_) return MakeState(comm, ForcedOnly());
  std::vector<std::string> rank_hosts;
  for (int r : ranks) rank_hosts.push_back(r >= 0 && r < world_size_ ? hosts_[static_cast<size_t>(r)] : "");
  std::string why;
  auto plan = Exchange(comm, rank_hosts, world_plan_->topology_version, &why);
  if (!plan) {
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    Note("no plan for a communicator of " + std::to_string(ranks.size()) + " ranks: " + why, rank == 0);
    plan = ForcedOnly();
  }
  return MakeState(comm, std::move(plan));
}

Runtime::CommState* Runtime::StateOf(MPI_Comm comm) {
  if (comm == MPI_COMM_WORLD) return world_;
  if (comm == MPI_COMM_NULL) return nullptr;
  std::shared_ptr<const PlanData> later;
  {
    std::lock_guard lock(mu_);
    if (auto it = states_.find(comm); it != states_.end()) return it->second.get();
    if (auto it = pending_.find(comm); it != pending_.end()) {
      later = std::move(it->second);
      pending_.erase(it);
    }
  }
  auto state = later ? MakeState(comm, std::move(later)) : Resolve(comm);
  CommState* p = state.get();
  std::lock_guard lock(mu_);
  states_[comm] = std::move(state);
  return p;
}

void Runtime::Derived(MPI_Comm parent, MPI_Comm child) {
  if (child == MPI_COMM_NULL) return;
  CommState* from = nullptr;
  {
    std::lock_guard lock(mu_);
    states_.erase(child);  // A handle freed behind our back and reused.
    pending_.erase(child);
    if (auto it = states_.find(parent); it != states_.end()) from = it->second.get();
  }
  int inter = 0;
  PMPI_Comm_test_inter(child, &inter);
  if (inter) return;
  MPI_Group a, b;
  PMPI_Comm_group(parent, &a);
  PMPI_Comm_group(child, &b);
  int same = MPI_UNEQUAL;
  PMPI_Group_compare(a, b, &same);
  PMPI_Group_free(&a);
  PMPI_Group_free(&b);
  if (same != MPI_IDENT) return;  // The child resolves at its first collective.
  // Every rank of the parent is in this constructor: the parent's plan is
  // resolved now when it has none yet (it may be freed before the child's
  // first collective), once for all the communicators made like this one.
  if (from == nullptr) from = StateOf(parent);
  auto state = MakeState(child, from->plan);
  std::lock_guard lock(mu_);
  states_[child] = std::move(state);
}

void Runtime::DerivedLater(MPI_Comm parent, MPI_Comm child) {
  if (child == MPI_COMM_NULL) return;
  CommState* from = StateOf(parent);  // Collective over the parent, as Derived.
  std::lock_guard lock(mu_);
  states_.erase(child);
  if (from != nullptr) pending_[child] = from->plan;
}

void Runtime::Forget(MPI_Comm comm) {
  std::unique_ptr<CommState> gone;
  {
    std::lock_guard lock(mu_);
    pending_.erase(comm);
    if (auto it = states_.find(comm); it != states_.end() && comm != MPI_COMM_WORLD) {
      gone = std::move(it->second);
      states_.erase(it);
    }
  }
  if (gone) Retire(*gone);
  // gone's private communicator is freed here, outside the lock.
}

bool Runtime::Adapts(const PlanData& plan) const {
  if (!AdaptOn(plan)) return false;
  for (Collective c : {Collective::kAlltoall, Collective::kAllgather}) {
    const TableSource& s = plan.sources[Index(c)];
    if (s.explore || !s.noisy_buckets.empty()) return true;
  }
  return plan.v_explores;
}

const kernels::KernelInfo* Runtime::Learned(const PlanData& plan, Collective c, kernels::PatternClass p,
                                            int64_t msize) const {
  const auto& learned = plan.learned[Index(c)];
  if (learned.empty() || !AdaptOn(plan)) return nullptr;
  const auto it = learned.find({static_cast<int>(p), SizeBucket(static_cast<double>(msize))});
  return it == learned.end() ? nullptr : it->second;
}

void Runtime::AgreeTime(CommState& state, CommState::Adapted* bucket, int64_t call, double seconds, MPI_Comm comm) {
  state.a_time = seconds;
  state.a_bucket = bucket;
  state.a_call = call;
  PMPI_Iallreduce(MPI_IN_PLACE, &state.a_time, 1, MPI_DOUBLE, MPI_MAX, comm, &state.a_pending);
}

bool Runtime::VRunsNative(const CommState& state, const VOutcome& o) const {
  const PlanData& plan = *state.plan;
  const kernels::KernelInfo* const native = Native(Collective::kAlltoallv);
  if (const kernels::KernelInfo* learned = Learned(plan, Collective::kAlltoallv, o.pattern, o.msize))
    return learned == native;
  if (o.kernel != native) return false;
  const int64_t bucket = SizeBucket(static_cast<double>(o.msize));
  if (!plan.v_explores || !AdaptOn(plan) || o.msize <= 0 || !plan.AlltoallvSource(o.pattern).Explores(bucket))
    return true;
  // A bucket not made yet, or still exploring, is not native for good.
  const auto it = state.adapted.find({static_cast<int>(Collective::kAlltoallv), static_cast<int>(o.pattern), bucket});
  return it != state.adapted.end() && it->second->explorer.state() != Explorer::State::kExploring;
}

void Runtime::FinishAgreement(CommState& state) {
  if (state.a_pending == MPI_REQUEST_NULL) return;
  PMPI_Wait(&state.a_pending, MPI_STATUS_IGNORE);
  state.a_bucket->explorer.Record(state.a_call, state.a_time);
}

Runtime::CommState::Adapted* Runtime::AdaptedBucket(CommState& state, Collective c, kernels::PatternClass p,
                                                    int64_t msize, const kernels::KernelInfo* table_choice) {
  // Calls that move nothing are not worth a choice.
  if (!AdaptOn(*state.plan) || state.size < 2 || msize <= 0 || state.holder.context().private_comm == MPI_COMM_NULL)
    return nullptr;
  const int64_t bucket = SizeBucket(static_cast<double>(msize));
  const TableSource& source =
      c == Collective::kAlltoallv ? state.plan->AlltoallvSource(p) : state.plan->sources[Index(c)];
  if (!source.Explores(bucket)) return nullptr;
  FinishAgreement(state);
  auto& slot = state.adapted[{static_cast<int>(c), static_cast<int>(p), bucket}];
  if (!slot) {
    // Candidates: the table's choice, then the model's next best (tuner/explore.h).
    std::vector<const kernels::KernelInfo*> ks = {Native(c)};
    if (table_choice != Native(c)) ks.push_back(table_choice);
    const std::string alt = ModelAlternative(kernels::CollectiveName(c), msize);
    if (const kernels::KernelInfo* k = kernels::FindKernel(c, alt); k && std::find(ks.begin(), ks.end(), k) == ks.end())
      ks.push_back(k);
    std::vector<std::string> names;
    for (size_t i = 1; i < ks.size(); ++i) names.emplace_back(ks[i]->name);
    ExploreRule rule;
    if (auto it = source.expected_calls.find(bucket); it != source.expected_calls.end())
      rule.expected_calls = it->second;
    slot = std::make_unique<CommState::Adapted>(CommState::Adapted{
        c, p, bucket, Explorer(std::move(names), table_choice != Native(c) ? 1 : 0, rule), std::move(ks), 0});
  }
  return slot.get();
}

void Runtime::Retire(CommState& state) {
  if (state.adapted.empty()) return;
  FinishAgreement(state);
  std::vector<v1::AdaptedBucket> out;
  auto mean = [](const std::vector<double>& v) {
    double sum = 0;
    for (double x : v) sum += x;
    return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
  };
  for (const auto& [key, b] : state.adapted) {
    const Explorer& e = b->explorer;
    v1::AdaptedBucket& a = out.emplace_back();
    a.set_collective(*v1::ParseCollectiveName(kernels::CollectiveName(b->collective)));
    a.set_size_bucket(b->size_bucket);
    if (b->collective == Collective::kAlltoallv)
      a.set_pattern(*v1::ParsePatternName(kernels::PatternClassName(b->pattern)));
    a.set_comm_size(state.size);
    a.set_comm_ranks_per_node(std::max(1, state.ranks_per_node));
    a.set_plan_id(state.plan->plan_id);
    a.set_calls(b->calls);
    a.set_exploring_calls(e.exploring_calls());
    a.set_extra_seconds(e.extra_seconds());
    a.set_settled(e.state() == Explorer::State::kSettled);
    if (a.settled()) a.set_choice(e.name(e.choice()));
    a.set_why(e.why().substr(0, v1::limits::kMaxDroppedBytes));
    for (int i = 1; i < e.size(); ++i) {
      const Explorer::Candidate& k = e.candidates()[static_cast<size_t>(i)];
      v1::ExploredCandidate* c = a.add_candidates();
      c->set_algorithm(e.name(i));
      c->set_pairs(static_cast<int>(k.times.size()));
      c->set_mean_seconds(mean(k.times));
      c->set_native_mean_seconds(mean(k.natives));
      c->set_p(k.p);
      c->set_won(k.won);
      c->set_left(k.left);
      c->set_why(k.why.substr(0, v1::limits::kMaxDroppedBytes));
    }
  }
  std::lock_guard lock(mu_);
  for (v1::AdaptedBucket& a : out) adapted_.push_back(std::move(a));
}

const kernels::KernelInfo* Runtime::Choose(const std::vector<TableRow>& rows, int64_t msize) {
  for (size_t i = rows.size(); i-- > 1;)
    if (msize >= rows[i].min_msize) return rows[i].kernel;
  return rows[0].kernel;
}

void Runtime::Count(Collective c, std::string_view algorithm, int64_t msize, int64_t bytes, double seconds,
                    bool fallback, int context, int pattern) {
  std::lock_guard lock(mu_);
  stats_.Add(c, algorithm, msize, bytes, seconds, fallback, context, pattern);
}

void Runtime::Note(const std::string& reason, bool log_here) {
  bool first = false;
  {
    std::lock_guard lock(mu_);
    first = reasons_[reason]++ == 0;
  }
  if (first && log_here) Log(LogLevel::kWarn, reason);
}

void Runtime::Unserved(const std::string& reason, bool log_here) {
  bool first = false;
  {
    std::lock_guard lock(mu_);
    first = unserved_[reason]++ == 0;
  }
  if (first && log_here) Log(LogLevel::kInfo, reason);
}

void Runtime::Nonblocking(Collective c, MPI_Comm comm, int64_t bytes) {
  {
    std::lock_guard lock(mu_);
    ++nonblocking_[Index(c)].calls;
    nonblocking_[Index(c)].bytes += bytes;
  }
  // Made once, not on every call.
  static const std::array<std::string, 3> kReasons = [] {
    std::array<std::string, 3> r;
    for (Collective k : kCollectives)
      r[Index(k)] = fmt::format(
          "MPI_I{}: the MPI library's own; a tuned schedule would need progress that "
          "topotune cannot make without a helper thread",
          kernels::CollectiveName(k));
    return r;
  }();
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  Unserved(kReasons[Index(c)], rank == 0);
}

void Runtime::InjectFault(CommState& state) const {
  if (config_.test_throw_every > 0 && ++state.calls % config_.test_throw_every == 0) throw std::bad_alloc();
}

void Runtime::InternalError(Runtime* rt, const char* where) noexcept {
  // What escaped: the handler that called this still holds it.
  const char* what = "an exception that is not a std::exception";
  try {
    throw;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  LogLevel level = LogLevel::kWarn;
  if (rt != nullptr) {
    rt->internal_errors_.fetch_add(1, std::memory_order_relaxed);
    if (!rt->first_error_claimed_.exchange(true)) {
      std::snprintf(rt->first_error_.data(), rt->first_error_.size(), "%s in %s", what, where);
      rt->first_error_ready_.store(true, std::memory_order_release);
    }
    level = rt->config_.log;
  } else if (const char* v = std::getenv("TOPOTUNE_LOG"); v != nullptr) {
    // No settings were read (or they are gone with the Runtime): only
    // whether to be quiet, without allocating.
    if (std::string_view(v) == "off") level = LogLevel::kOff;
    if (std::string_view(v) == "error") level = LogLevel::kError;
  }
  static std::atomic<bool> said{false};  // Once per process.
  if (level < LogLevel::kWarn || said.exchange(true)) return;
  if (rt == nullptr) {
    std::fprintf(stderr, "topotune: disabled: %s in %s; the job runs with the MPI library's collectives\n", what,
                 where);
    return;
  }
  std::fprintf(stderr,
               "topotune: %.*s, or the call completed without topotune's bookkeeping (%s in %s); said once per "
               "process, each one counted in the stats file's internal_errors\n",
               static_cast<int>(kInternalErrorReason.size()), kInternalErrorReason.data(), what, where);
}

int Runtime::KernelThrew(Collective c, const kernels::KernelInfo& k, MPI_Comm comm) const noexcept {
  static std::atomic<bool> said{false};
  if (config_.log != LogLevel::kOff && !said.exchange(true)) {
    const std::string_view name = kernels::CollectiveName(c);
    std::fprintf(stderr,
                 "topotune: the %.*s kernel %.*s threw after it may have begun moving data: the call can be neither "
                 "completed nor run again, so MPI_ERR_INTERN is raised on its communicator\n",
                 static_cast<int>(name.size()), name.data(), static_cast<int>(k.name.size()), k.name.data());
  }
  PMPI_Comm_call_errhandler(comm, MPI_ERR_INTERN);
  return MPI_ERR_INTERN;
}

void Runtime::CountRanNative(Collective c, int64_t msize, int64_t bytes, double seconds) noexcept {
  // Best effort, and not through Guarded: this follows an exception already
  // counted and said, and memory may still be short.
  try {
    std::lock_guard lock(mu_);
    ++reasons_[std::string(kInternalErrorReason)];
    stats_.Add(c, "native", msize, bytes, seconds, true);
  } catch (...) {
  }
}

void Runtime::RanNative(const kernels::AlltoallArgs& a, double seconds) noexcept {
  int n = 1, me = 0;
  CollectivePeers(a.comm, &n, &me);
  const auto [msize, bytes] = FixedSizes(a, n);
  CountRanNative(Collective::kAlltoall, msize, bytes, seconds);
}

void Runtime::RanNative(const kernels::AllgatherArgs& a, double seconds) noexcept {
  int n = 1, me = 0;
  CollectivePeers(a.comm, &n, &me);
  const auto [msize, bytes] = FixedSizes(a, n);
  CountRanNative(Collective::kAllgather, msize, bytes, seconds);
}

void Runtime::RanNative(const kernels::AlltoallvArgs& a, double seconds) noexcept {
  // This rank's row only, as calls that skip the agreement are counted.
  int n = 1, me = 0, type_size = 0;
  CollectivePeers(a.comm, &n, &me);
  const bool in_place = a.sendbuf == MPI_IN_PLACE;
  PMPI_Type_size(in_place ? a.recvtype : a.sendtype, &type_size);
  const int* counts = in_place ? a.recvcounts : a.sendcounts;
  int64_t row = 0;
  for (int j = 0; j < n; ++j)
    if (j != me) row += static_cast<int64_t>(counts[j]) * type_size;
  const int64_t others = me < 0 ? n : n - 1;
  CountRanNative(Collective::kAlltoallv, others > 0 ? row / others : 0, row * n, seconds);
}

void Runtime::Log(LogLevel level, const std::string& line) const {
  if (level > config_.log || config_.log == LogLevel::kOff) return;
  std::fprintf(stderr, "topotune: %s\n", line.c_str());
}

// A call of a kernel: native straight to PMPI, others through the registry
// with fallbacks counted.
//
// What an exception means depends on when it comes:
//   * Before this runs (StateOf, the choice of kernel, alltoallv's
//     agreement), nothing of the call has moved: the entry point's barrier
//     (entry.h Blocking) runs the MPI library's collective instead, which
//     is correct when every rank of the call does the same. It does when the
//     fault is the same on every rank, as every decision here is
//     (TOPOTUNE_TEST_THROW too); a fault on some ranks only (memory
//     exhausted on one host) leaves them in another collective than the
//     others, which would have stopped the job before there was a barrier.
//     On a communicator whose plan is resolved, the path to the kernel
//     allocates nothing (alltoall, allgather; alltoallv's *_l3 byte counts
//     aside).
//   * From the kernel, which may have sent or received part of the call
//     already (kernels complete or decline before touching a buffer, but an
//     exception is neither): running the collective again would leave the
//     other ranks waiting in the kernel, or their messages landing in the
//     buffers later; returning success would hand back buffers half
//     written. So the call fails as MPI calls fail: MPI_ERR_INTERN through
//     the communicator's error handler (KernelThrew).
//   * After the collective completed (counting it, its fallback's reason):
//     the call is done and must not run twice; its result is returned and
//     only the statistics miss it.
template <typename Args, typename NativeFn, typename RunFn>
int Runtime::Run(CommState& state, Collective c, const kernels::KernelInfo* k, const Args& a, int64_t msize,
                 int64_t bytes, int context, int pattern, NativeFn native, RunFn run, double* seconds_out) {
  const double t0 = PMPI_Wtime();
  int rc;
  bool fell = false;
  kernels::FallbackLog& log = ThreadLog();
  const int64_t before = log.total();
  if (k == Native(c)) {
    rc = native();
  } else {
    rc = Guarded(
        this, CallName(c), [&] { return KernelThrew(c, *k, a.comm); },
        [&] { return run(*k, a, state.holder.context(), &log); });
    fell = log.total() != before;
  }
  const double seconds = PMPI_Wtime() - t0;
  if (seconds_out != nullptr) *seconds_out = seconds;
  return Guarded(
      this, CallName(c), [rc] { return rc; },
      [&] {
        if (fell) Note("a kernel declined a call, the MPI library's collective ran: " + log.last(), state.rank == 0);
        Count(c, fell ? std::string_view("native") : k->name, msize, bytes, seconds, fell, context, pattern);
        return rc;
      });
}

// Alltoall and allgather: one block size for every peer, the same on every
// rank (MPI's type-signature rule), so every rank chooses the same kernel.
template <typename Args, typename RunFn>
int Runtime::FixedBlock(const Args& a, Collective c,
                        int (*native)(const void*, int, MPI_Datatype, void*, int, MPI_Datatype, MPI_Comm), RunFn run) {
  CommState* state = StateOf(a.comm);
  auto call_native = [&] {
    return native(a.sendbuf, a.sendcount, a.sendtype, a.recvbuf, a.recvcount, a.recvtype, a.comm);
  };
  if (state == nullptr) return call_native();
  InjectFault(*state);
  const auto [msize, bytes] = FixedSizes(a, state->size);
  const kernels::KernelInfo* k = Choose(state->plan->tables[Index(c)], msize);
  // A bucket production jobs learned runs what they learned, unexplored.
  const kernels::KernelInfo* learned = Learned(*state->plan, c, kernels::PatternClass::kUniform, msize);
  if (learned != nullptr) k = learned;
  CommState::Adapted* bucket = learned ? nullptr : AdaptedBucket(*state, c, kernels::PatternClass::kUniform, msize, k);
  if (bucket == nullptr)
    return Run(*state, c, k, a, msize, bytes, state->contexts[Index(c)], CallStats::kNoPattern, call_native, run);
  // Every rank asks its bucket's Explorer, on the same agreed times: the
  // same kernel everywhere. While it explores, the call's time is then agreed in the background.
  const int64_t call = bucket->calls++;
  double seconds = 0;
  const int rc = Run(*state, c, bucket->kernels[static_cast<size_t>(bucket->explorer.Next(call))], a, msize, bytes,
                     state->contexts[Index(c)], CallStats::kNoPattern, call_native, run, &seconds);
  if (bucket->explorer.state() == Explorer::State::kExploring)
    AgreeTime(*state, bucket, call, seconds, state->holder.context().CommFor(a.comm));
  return rc;
}

int Runtime::Alltoall(const kernels::AlltoallArgs& a) {
  return FixedBlock(a, Collective::kAlltoall, PMPI_Alltoall, kernels::RunAlltoall);
}

int Runtime::Allgather(const kernels::AllgatherArgs& a) {
  return FixedBlock(a, Collective::kAllgather, PMPI_Allgather, kernels::RunAllgather);
}

Runtime::CommState::~CommState() {
  if (v_pending != MPI_REQUEST_NULL) PMPI_Wait(&v_pending, MPI_STATUS_IGNORE);
  if (a_pending != MPI_REQUEST_NULL) PMPI_Wait(&a_pending, MPI_STATUS_IGNORE);
}

Runtime::VOutcome Runtime::Outcome(const PlanData& plan, const int64_t* words, int n) {
  const kernels::PatternFeatures all = kernels::PatternFeatures::FromWords(words);
  const int64_t msize = all.bytes / (static_cast<int64_t>(n) * (n - 1));
  const kernels::PatternClass pattern = kernels::Classify(all, n);
  return {pattern, msize, all.bytes, Choose(plan.AlltoallvTable(pattern), msize)};
}

int Runtime::Alltoallv(const kernels::AlltoallvArgs& a) {
  CommState* state = StateOf(a.comm);
  auto native = [&] {
    return PMPI_Alltoallv(a.sendbuf, a.sendcounts, a.sdispls, a.sendtype, a.recvbuf, a.recvcounts, a.rdispls,
                          a.recvtype, a.comm);
  };
  if (state == nullptr) return native();
  InjectFault(*state);
  const bool in_place = a.sendbuf == MPI_IN_PLACE;
  int send_size = 0, recv_size = 0;
  PMPI_Type_size(in_place ? a.recvtype : a.sendtype, &send_size);
  PMPI_Type_size(a.recvtype, &recv_size);
  const int* counts = in_place ? a.recvcounts : a.sendcounts;
  const int n = state->size;
  const PlanData& plan = *state->plan;
  const kernels::PatternFeatures mine =
      kernels::RowFeatures(std::span<const int>(counts, static_cast<size_t>(n)), send_size, state->rank);
  const kernels::KernelInfo* const native_kernel = Native(Collective::kAlltoallv);
  const kernels::KernelInfo* k = plan.tables[Index(Collective::kAlltoallv)][0].kernel;
  int64_t msize = n > 1 ? mine.bytes / (n - 1) : 0, bytes = mine.bytes * n;
  constexpr int kWords = kernels::PatternFeatures::kWords;
  // Adaptation needs every call of an exploring bucket agreed, so that
  // every rank's Explorer counts the same calls.
  const bool adapting = plan.v_explores && AdaptOn(plan);
  const MPI_Comm comm = (plan.v_agree || adapting) && n > 1 ? state->holder.context().CommFor(a.comm) : MPI_COMM_NULL;
  if (comm != MPI_COMM_NULL && state->v_pending != MPI_REQUEST_NULL) {
    // The previous call's deferred agreement: whether this call defers too.
    PMPI_Wait(&state->v_pending, MPI_STATUS_IGNORE);
    const VOutcome last = Outcome(plan, state->v_words.data(), n);
    state->v_backoff.Deferred(VRunsNative(*state, last));
    state->v_pattern = last.pattern;
    state->v_msize = last.msize;
    state->v_bytes = last.bytes;
  }
  std::optional<kernels::PatternClass> pattern;
  CommState::Adapted* bucket = nullptr;  // The bucket the call explores in.
  int64_t call = 0;                      // Its call's number there.
  using Action = AgreementBackoff::Action;
  const Action action = comm != MPI_COMM_NULL ? state->v_backoff.Next() : Action::kAgree;
  if (comm != MPI_COMM_NULL && action != Action::kAgree) {
    // Every rank acts alike on the same calls: they run native, counted at
    // the last agreed size; some agree while it runs.
    if (action == Action::kDefer) {
      mine.ToWords(state->v_words.data());
      state->v_words[kWords] = 0;
      PMPI_Iallreduce(MPI_IN_PLACE, state->v_words.data(), kWords + 1, MPI_INT64_T, MPI_SUM, comm, &state->v_pending);
    }
    k = native_kernel;
    msize = state->v_msize;
    bytes = state->v_bytes;
  } else if (comm != MPI_COMM_NULL) {
    // Agree on the class, the mean block size and whether the sizes changed.
    std::vector<int64_t> send_bytes, recv_bytes;
    if (plan.v_any_l3) {
      for (int i = 0; i < n; ++i) {
        send_bytes.push_back(static_cast<int64_t>(counts[i]) * send_size);
        recv_bytes.push_back(static_cast<int64_t>(a.recvcounts[i]) * recv_size);
      }
    }
    int64_t words[kWords + 1];
    mine.ToWords(words);
    words[kWords] = plan.v_any_l3 && (send_bytes != state->v_send || recv_bytes != state->v_recv);
    PMPI_Allreduce(MPI_IN_PLACE, words, kWords + 1, MPI_INT64_T, MPI_SUM, comm);
    const VOutcome now = Outcome(plan, words, n);
    pattern = state->v_pattern = now.pattern;
    k = now.kernel;
    msize = state->v_msize = now.msize;
    bytes = state->v_bytes = now.bytes;
    state->v_backoff.Agreed(VRunsNative(*state, now));
    // A bucket production jobs learned runs what they learned; one that
    // explores runs what its Explorer says, the same on every rank.
    if (const kernels::KernelInfo* learned = Learned(plan, Collective::kAlltoallv, now.pattern, now.msize))
      k = learned;
    else if (adapting && (bucket = AdaptedBucket(*state, Collective::kAlltoallv, now.pattern, now.msize, k)))
      k = bucket->kernels[static_cast<size_t>(bucket->explorer.Next(call = bucket->calls++))];
    if (IsL3(k) && (words[kWords] > 0 || state->v_kernel != k)) {
      // Every rank takes this branch together: the plan of the new sizes.
      if (state->holder.SetAlltoallvPlanFor(a, k->name) != MPI_SUCCESS) state->holder.ClearAlltoallvPlan();
      state->v_send = std::move(send_bytes);
      state->v_recv = std::move(recv_bytes);
      state->v_kernel = k;
    }
  }
  {
    std::lock_guard lock(mu_);
    ++(pattern                    ? v_classes_[static_cast<size_t>(*pattern)]
       : action == Action::kDefer ? v_deferred_
       : action == Action::kSkip  ? v_skipped_
                                  : v_unclassified_);
  }
  // The class the call is counted under: agreed, else the last agreed
  // (calls that ran native without agreeing), else this rank's own row
  // (a plan that never agrees).
  const kernels::PatternClass counted = pattern                 ? *pattern
                                        : comm != MPI_COMM_NULL ? state->v_pattern
                                                                : kernels::ClassifyRow(mine, n);
  if (bucket == nullptr)
    return Run(*state, Collective::kAlltoallv, k, a, msize, bytes, state->v_contexts[static_cast<size_t>(counted)],
               static_cast<int>(counted), native, kernels::RunAlltoallv);
  double seconds = 0;
  const int rc =
      Run(*state, Collective::kAlltoallv, k, a, msize, bytes, state->v_contexts[static_cast<size_t>(counted)],
          static_cast<int>(counted), native, kernels::RunAlltoallv, &seconds);
  if (bucket->explorer.state() == Explorer::State::kExploring) AgreeTime(*state, bucket, call, seconds, comm);
  return rc;
}

void Runtime::Stop() {
  finished_at_ = std::chrono::system_clock::now();
  std::unordered_map<MPI_Comm, std::unique_ptr<CommState>> states;
  {
    std::lock_guard lock(mu_);
    states.swap(states_);
    pending_.clear();
    world_ = nullptr;
  }
  for (auto& [comm, state] : states) Retire(*state);
  // Private communicators are freed here, while MPI is still initialised.
}

void Runtime::Finish() {
  std::lock_guard lock(mu_);
  if (world_rank_ == 0 && config_.report && !daemon_timed_out_) {
    v1::ReportJobRequest report;
    report.set_job_id(config_.job_id.substr(0, v1::limits::kMaxIdBytes));
    report.set_plan_id(world_plan_->plan_id);
    report.set_nprocs(world_size_);
    report.set_ranks_per_node(ranks_per_node_);
    *report.mutable_started_at() = ToTimestamp(started_at_);
    *report.mutable_finished_at() = ToTimestamp(finished_at_);
    stats_.ToProto(v1::limits::kMaxJobStats, report.mutable_stats());
    for (size_t i = 0; i < adapted_.size() && static_cast<int64_t>(i) < v1::limits::kMaxJobStats; ++i)
      *report.add_adapted() = adapted_[i];
    LinkError error;
    if (!link_.ReportJob(report, &error))
      Log(LogLevel::kInfo, "the job's statistics were not reported: " + error.message);
  }
  if (config_.stats_file.empty()) return;
  std::string path = config_.stats_file;
  const bool per_rank = path.find("%r") != std::string::npos;
  if (!per_rank && world_rank_ != 0) return;
  for (size_t at; (at = path.find("%r")) != std::string::npos;) path.replace(at, 2, std::to_string(world_rank_));
  nlohmann::json j;
  j["rank"] = world_rank_;
  j["nprocs"] = world_size_;
  j["init_seconds"] = init_seconds_;
  j["plan"] = {{"status", plan_reason_.empty() ? "ok" : "none"},
               {"reason", plan_reason_},
               {"plan_id", world_plan_->plan_id},
               {"topology_version", world_plan_->topology_version}};
  j["forced"] = nlohmann::json::object();
  for (Collective c : kCollectives)
    if (!config_.force[Index(c)].empty())
      j["forced"][std::string(kernels::CollectiveName(c))] = config_.force[Index(c)];
  google::protobuf::RepeatedPtrField<v1::CollectiveCallStats> stats;
  stats_.ToProto(INT_MAX, &stats);
  j["stats"] = nlohmann::json::array();
  for (const v1::CollectiveCallStats& s : stats) {
    nlohmann::json e = {{"collective", std::string(v1::CollectiveName(s.collective()))},
                        {"algorithm", s.algorithm()},
                        {"msize", s.msize()},
                        {"calls", s.calls()},
                        {"total_bytes", s.total_bytes()},
                        {"total_seconds", s.total_seconds()},
                        {"fallbacks", s.fallbacks()},
                        {"source", std::string(v1::DecisionSourceName(s.source()))},
                        {"tuned_layout", {s.tuned_nprocs(), s.tuned_ranks_per_node()}},
                        {"comm",
                         {{"size", s.comm_size()},
                          {"ranks_per_node", s.comm_ranks_per_node()},
                          {"hosts", s.comm_hosts()},
                          {"plan_id", s.plan_id()}}}};
    if (s.pattern() != v1::ALLTOALLV_PATTERN_UNSPECIFIED) e["pattern"] = std::string(v1::PatternName(s.pattern()));
    j["stats"].push_back(std::move(e));
  }
  j["alltoallv_classes"] = {{"unclassified", v_unclassified_}, {"deferred", v_deferred_}, {"skipped", v_skipped_}};
  for (int p = 0; p < kernels::kPatternClassCount; ++p)
    j["alltoallv_classes"][std::string(kernels::PatternClassName(static_cast<kernels::PatternClass>(p)))] =
        v_classes_[static_cast<size_t>(p)];
  j["fallbacks"] = nlohmann::json::object();
  for (const auto& [reason, count] : reasons_) j["fallbacks"][reason] = count;
  j["unserved"] = nlohmann::json::object();
  for (const auto& [reason, count] : unserved_) j["unserved"][reason] = count;
  j["internal_errors"] = {
      {"count", internal_errors_.load()},
      {"first", first_error_ready_.load(std::memory_order_acquire) ? std::string(first_error_.data()) : ""}};
  j["adapt"] = nlohmann::json::array();
  for (const v1::AdaptedBucket& a : adapted_) {
    nlohmann::json e = {{"collective", std::string(v1::CollectiveName(a.collective()))},
                        {"pattern", a.collective() == v1::COLLECTIVE_ALLTOALLV ? v1::PatternName(a.pattern()) : ""},
                        {"size_bucket", a.size_bucket()},
                        {"comm_size", a.comm_size()},
                        {"calls", a.calls()},
                        {"settled", a.settled()},
                        {"choice", a.choice()},
                        {"why", a.why()},
                        {"exploring_calls", a.exploring_calls()},
                        {"extra_seconds", a.extra_seconds()},
                        {"candidates", nlohmann::json::array()}};
    for (const v1::ExploredCandidate& c : a.candidates())
      e["candidates"].push_back(nlohmann::json::parse(v1::MessageJson(c)));
    j["adapt"].push_back(std::move(e));
  }
  j["nonblocking"] = nlohmann::json::object();
  for (Collective c : kCollectives)
    j["nonblocking"][std::string(kernels::CollectiveName(c))] = {{"calls", nonblocking_[Index(c)].calls},
                                                                 {"bytes", nonblocking_[Index(c)].bytes}};
  std::ofstream out(path);
  out << j.dump(2) << "\n";
  if (!out) Log(LogLevel::kError, fmt::format("cannot write TOPOTUNE_STATS_FILE '{}'", path));
}

}  // namespace topotune::shim
