#include "bench_kernels/driver/context.h"

#include <fmt/format.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "bench_kernels/alltoallv/plan.h"
#include "bench_kernels/host_segments.h"
#include "tuner/allgather_orders.h"
#include "tuner/host_program.h"
#include "tuner/rank_program.h"
#include "tuner/schedule_registry.h"
#include "tuner/topology_io.h"
#include "tuner/tree_scheduled.h"

namespace topotune::bench {

StatusOr<JobTree> PlaceRanks(Topology topo, const PlacementSpec& spec, int comm_size) {
  const std::string source = topo.source();
  StatusOr<Placement> placement = Status::Internal("no placement");
  std::string from;
  if (!spec.rank_hosts.empty()) {
    placement = PlacementFromRankHosts(topo, spec.rank_hosts);
    from = "--rank-hosts";
  } else if (!spec.hosts.empty()) {
    placement = PlacementFromHostList(topo, spec.hosts);
    from = "--hosts";
  } else {
    placement = DefaultPlacement(topo);
    from = fmt::format("the slots of every host in {}", source);
  }
  if (!placement.ok()) return Status::InvalidArgument(fmt::format("{}: {}", from, placement.status().message()));
  if (placement->num_ranks() != comm_size) {
    return Status::InvalidArgument(fmt::format(
        "the placement from {} has {} ranks but the communicator has {}; run with -np {}, or place exactly {} "
        "ranks with --hosts HOST[:R],... or --rank-hosts HOST,...",
        from, placement->num_ranks(), comm_size, placement->num_ranks(), comm_size));
  }
  auto tree = RankTree::Build(topo, *placement);
  if (!tree.ok()) return Status::InvalidArgument(fmt::format("{}: {}", source, tree.status().message()));
  return JobTree{std::move(topo), std::move(placement).value(), std::move(tree).value()};
}

StatusOr<std::string> ReadAndBroadcast(const std::string& path, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string text;   // On rank 0: the contents, or the error message.
  long long len = 0;  // >= 0: length of the contents; < 0: -(length of the error message).
  if (rank == 0) {
    bool read_ok = false;
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      text = fmt::format("cannot read topology file '{}': {}", path, std::strerror(errno));
    } else {
      std::ostringstream buf;
      buf << in.rdbuf();
      text = buf.str();
      read_ok = !in.bad();
      if (!read_ok) text = fmt::format("cannot read topology file '{}': read error", path);
    }
    if (text.size() > static_cast<size_t>(INT_MAX)) {
      text = fmt::format("topology file '{}' is too large", path);
      read_ok = false;
    }
    len = read_ok ? static_cast<long long>(text.size()) : -static_cast<long long>(text.size());
  }
  MPI_Bcast(&len, 1, MPI_LONG_LONG, 0, comm);
  const bool ok = len >= 0;
  text.resize(static_cast<size_t>(ok ? len : -len));
  if (!text.empty()) MPI_Bcast(text.data(), static_cast<int>(text.size()), MPI_CHAR, 0, comm);
  if (!ok) return Status::IoError(text);
  return text;
}

ContextHolder::~ContextHolder() {
  segments_.reset();
  if (ctx_.private_comm != MPI_COMM_NULL) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) PMPI_Comm_free(&ctx_.private_comm);
  }
}

int ContextHolder::DupComm(MPI_Comm comm) {
  if (ctx_.private_comm != MPI_COMM_NULL) PMPI_Comm_free(&ctx_.private_comm);
  return PMPI_Comm_dup(comm, &ctx_.private_comm);
}

void ContextHolder::SetProgram(RankProgram program) {
  program_ = std::make_unique<RankProgram>(std::move(program));
  ctx_.tree_program = program_.get();
}

void ContextHolder::SetRing(std::vector<int> order, std::vector<int> switch_of_rank) {
  ring_order_ = std::make_unique<std::vector<int>>(std::move(order));
  switch_of_rank_ = std::make_unique<std::vector<int>>(std::move(switch_of_rank));
  ctx_.ring_order = ring_order_.get();
  ctx_.switch_of_rank = switch_of_rank_.get();
}

void ContextHolder::SetHostProgram(std::string_view kernel, HostProgram program) {
  host_programs_.insert_or_assign(std::string(kernel), std::move(program));
  ctx_.host_programs = &host_programs_;
  if (!segments_) {
    segments_ = std::make_unique<kernels::HostSegments>();
    if (fold_segments_) segments_->Fold();
  }
  segments_->ProgramsChanged();
  ctx_.host_segments = segments_.get();
}

Status ContextHolder::AddHostPrograms(const RankTree& tree, kernels::Collective collective, int rank) {
  const std::vector<int32_t> host_of_rank = HostIndexOfRanks(tree);
  std::vector<const ScheduleAlgorithm*> algs;  // Per host-program kernel of `collective`, in kernel order.
  std::set<std::string_view> bases;            // The schedules another one derives from.
  for (const kernels::KernelInfo& k : kernels::Kernels()) {
    if (k.collective != collective || !kernels::RunsHostProgram(k)) continue;
    const ScheduleAlgorithm* alg = FindScheduleAlgorithm(kernels::CollectiveName(collective), k.name);
    if (alg == nullptr) return Status::Internal(fmt::format("{}: no schedule of that name", k.name));
    algs.push_back(alg);
    if (alg->derive) bases.insert(alg->derived_from);
  }
  std::map<std::string_view, Schedule> built;  // Only those in `bases`.
  for (const ScheduleAlgorithm* alg : algs) {
    const std::string_view name = alg->name;
    const auto base = alg->derive ? built.find(alg->derived_from) : built.end();
    auto schedule = base != built.end() ? alg->derive(base->second, tree) : alg->make(tree);
    if (!schedule.ok()) return Status::Internal(fmt::format("{}: {}", name, schedule.status().message()));
    auto hosts = CompileHostProgram(*schedule, host_of_rank, rank);
    if (!hosts.ok()) return Status::Internal(fmt::format("{} program: {}", name, hosts.status().message()));
    SetHostProgram(name, std::move(hosts).value());
    if (bases.contains(name)) built.emplace(name, std::move(schedule).value());
  }
  return Status::Ok();
}

Status ContextHolder::AddTopology(const RankTree& tree, kernels::Collective collective, int rank) {
  switch (collective) {
    case kernels::Collective::kAlltoall: {
      // One rank has no phases to schedule; kernels handle that case alone.
      if (tree.num_ranks() < 2) return Status::Ok();
      auto schedule = TreeScheduled(tree);
      if (!schedule.ok()) return Status::Internal("tree_scheduled: " + schedule.status().message());
      auto program = CompileRankProgram(*schedule, rank);
      if (!program.ok()) return Status::Internal("tree_scheduled program: " + program.status().message());
      SetProgram(std::move(program).value());
      return AddHostPrograms(tree, collective, rank);
    }
    case kernels::Collective::kAllgather: {
      std::vector<int> order = SwitchOrderedRing(tree);
      std::vector<int> switch_of_rank = SwitchOfRank(tree, order);
      SetRing(std::move(order), std::move(switch_of_rank));
      if (tree.num_ranks() < 2) return Status::Ok();
      return AddHostPrograms(tree, collective, rank);
    }
    case kernels::Collective::kAlltoallv:
      return Status::Ok();  // The plan depends on the sizes: SetAlltoallvPlan.
  }
  return Status::Ok();
}

int ContextHolder::SetAlltoallvPlan(const kernels::AlltoallvArgs& shape, bool greedy) {
  auto plan = std::make_unique<kernels::AlltoallvPlan>();
  int rc = kernels::BuildAlltoallvPlan(shape, greedy, plan.get());
  if (rc != MPI_SUCCESS) return rc;
  plan_ = std::move(plan);
  ctx_.alltoallv_plan = plan_.get();
  return MPI_SUCCESS;
}

int ContextHolder::SetAlltoallvPlanFor(const kernels::AlltoallvArgs& shape, std::string_view kernel_name) {
  int rc = SetAlltoallvPlan(shape, /*greedy=*/true);
  // Every rank holds the same plan, so every rank takes the same branch.
  if (rc == MPI_SUCCESS && !kernel_name.starts_with(plan_->phased.schedule.algorithm)) {
    auto other = std::make_unique<kernels::AlltoallvPlan>();
    rc = kernels::BuildAlltoallvPlan(shape, /*greedy=*/false, other.get());
    if (rc == MPI_SUCCESS && kernel_name.starts_with(other->phased.schedule.algorithm)) {
      plan_ = std::move(other);
      ctx_.alltoallv_plan = plan_.get();
    }
  }
  return rc;
}

void ContextHolder::ClearAlltoallvPlan() {
  ctx_.alltoallv_plan = nullptr;
  plan_.reset();
}

}  // namespace topotune::bench
