// PlanCompiler (plan_compiler.h): GetPlan's plans from the cache, the store
// or a compile, with compiles shared per plan key, limited and abandoned.
#include "daemon/topotuned/plan_compiler.h"

#include <fmt/format.h>
#include <malloc.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <fstream>
#include <utility>

#include "daemon/topotuned/core.h"  // ToGrpc

namespace topotune::daemon {

namespace {

// CPU time of the calling thread.
double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

grpc::Status CallGone(const CallContext& call) { return call.gone ? call.gone() : grpc::Status::OK; }

// A compile whose plan holds more than this leaves a lot in malloc's arenas:
// it is followed by malloc_trim and logged at info level.
constexpr size_t kLargeCompileBytes = 16u << 20;

}  // namespace

int64_t ResidentBytes() {
  std::ifstream in("/proc/self/statm");
  int64_t size = 0, resident = 0;
  in >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

// One plan being loaded or compiled, shared by every caller of its key.
struct PlanCompiler::Flight {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  bool abandoned = false;  // Stopped because every caller was gone: a late follower asks again.
  grpc::Status status;
  std::shared_ptr<const CompiledPlan> plan;
  std::atomic<int> waiting{1};  // Callers still waiting, the leader included.
};

PlanCompiler::PlanCompiler(const Config& config, db::Store& store, Metrics* metrics)
    : config_(config), store_(store), metrics_(metrics), cache_(static_cast<size_t>(config.plan_cache_bytes)) {}

void PlanCompiler::DropBefore(int64_t version) {
  cache_.InvalidateBefore(version);
  auto dropped = store_.DeletePlansBefore(version);
  if (!dropped.ok()) spdlog::warn("dropping plans of older topologies: {}", dropped.status().message());
}

PlanCache::Stats PlanCompiler::cache_stats() const { return cache_.stats(); }

std::optional<std::string> PlanCompiler::Refusal(std::string_view collective, std::string_view algorithm,
                                                 int64_t num_ranks, int64_t num_hosts) {
  const PlanEstimate cost = EstimatePlan(collective, algorithm, num_ranks, num_hosts);
  if (cost.bytes > config_.plan_compile_max_bytes) {
    metrics_->PlanCompiled("refused");
    return fmt::format(
        "the {} {} plan of {} ranks on {} hosts would hold about {} MB ({} steps), more than "
        "plan_compile_max_size ({} MB) in topotuned's configuration allows to compile",
        collective, algorithm, num_ranks, num_hosts, cost.bytes >> 20, cost.steps,
        config_.plan_compile_max_bytes >> 20);
  }
  return std::nullopt;
}

grpc::Status PlanCompiler::PlanFor(const db::StoredTopology& topo, const RankHosts& rank_hosts, uint64_t placement_hash,
                                   const std::string& collective, const std::string& algorithm, const CallContext& call,
                                   std::shared_ptr<const CompiledPlan>* out) {
  PlanKey key{topo.version, placement_hash, collective, algorithm};
  if ((*out = cache_.Get(key))) {
    metrics_->PlanCacheLookup(true);
    return grpc::Status::OK;
  }
  for (;;) {
    std::shared_ptr<Flight> flight;
    bool leader = false;
    {
      std::lock_guard lock(flights_mu_);
      if ((*out = cache_.Get(key))) {  // Put while this request looked.
        metrics_->PlanCacheLookup(true);
        return grpc::Status::OK;
      }
      auto [it, inserted] = flights_.try_emplace(key, nullptr);
      if (inserted)
        it->second = std::make_shared<Flight>();
      else
        ++it->second->waiting;
      flight = it->second;
      leader = inserted;
    }
    if (leader) {
      grpc::Status st = LoadOrCompile(topo, rank_hosts, key, call, flight.get(), out);
      {
        std::lock_guard lock(flights_mu_);
        flights_.erase(key);
      }
      {
        std::lock_guard lock(flight->mu);
        flight->done = true;
        flight->abandoned = flight->waiting.load() <= 0;
        flight->status = st;
        flight->plan = *out;
      }
      flight->cv.notify_all();
      return st;
    }
    // A follower: wait for the leader's result while the client waits.
    std::unique_lock lock(flight->mu);
    while (!flight->done) {
      if (grpc::Status gone = CallGone(call); !gone.ok()) {
        --flight->waiting;
        return gone;
      }
      flight->cv.wait_for(lock, std::chrono::milliseconds(20));
    }
    if (flight->abandoned) continue;  // Joined as the last caller left: start again.
    *out = flight->plan;
    if (flight->status.ok()) metrics_->PlanCacheLookup(true);
    return flight->status;
  }
}

grpc::Status PlanCompiler::LoadOrCompile(const db::StoredTopology& topo, const RankHosts& rank_hosts,
                                         const PlanKey& key, const CallContext& call, Flight* flight,
                                         std::shared_ptr<const CompiledPlan>* out) {
  const std::string& collective = key.collective;
  const std::string& algorithm = key.algorithm;
  // Whether everyone waiting for this plan is gone; the leader's own call
  // counts once, when it first sees it gone.
  bool leader_gone = false;
  grpc::Status why_gone;
  auto all_gone = [&] {
    if (!leader_gone) {
      why_gone = CallGone(call);
      if (!why_gone.ok()) {
        leader_gone = true;
        --flight->waiting;
      }
    }
    return flight->waiting.load() <= 0;
  };
  db::PlanKey dbkey{topo.version, fmt::format("{:016x}", key.placement_hash), collective, algorithm};
  auto blob = store_.GetPlan(dbkey);
  if (blob.ok() && blob->has_value()) {
    auto decoded = DecodePlan(**blob);
    if (decoded.ok() && decoded->programs.size() == static_cast<size_t>(rank_hosts.size())) {
      *out = std::make_shared<const CompiledPlan>(std::move(*decoded));
      cache_.Put(key, *out);
      metrics_->PlanCacheLookup(true);
      return grpc::Status::OK;
    }
    spdlog::warn("stored plan {} {} of topology {} is unreadable; compiling it again", collective, algorithm,
                 topo.version);
  }
  metrics_->PlanCacheLookup(false);
  {
    // A compile slot, while anyone still waits.
    std::unique_lock lock(flights_mu_);
    while (compiles_running_ >= config_.plan_compiles) {
      if (all_gone()) {
        metrics_->PlanCompiled("gone");
        return why_gone;
      }
      compile_slot_cv_.wait_for(lock, std::chrono::milliseconds(20));
    }
    ++compiles_running_;
  }
  struct Slot {
    PlanCompiler* compiler;
    ~Slot() {
      {
        std::lock_guard lock(compiler->flights_mu_);
        --compiler->compiles_running_;
      }
      compiler->compile_slot_cv_.notify_one();
    }
  } slot{this};
  const auto start = std::chrono::steady_clock::now();
  const double cpu0 = ThreadCpuSeconds();
  bool over_budget = false;
  auto stop = [&] {
    over_budget = ThreadCpuSeconds() - cpu0 > config_.plan_compile_cpu_s;
    return over_budget || all_gone();
  };
  auto compiled = CompilePlan(topo.topology, {rank_hosts.begin(), rank_hosts.end()}, collective, algorithm, stop);
  const double cpu = ThreadCpuSeconds() - cpu0;
  if (!compiled.ok() && (over_budget || leader_gone)) {
    // What the compile built is freed; give the memory back to the system.
    malloc_trim(0);
    if (over_budget) {
      metrics_->PlanCompiled("cpu_budget");
      return {grpc::StatusCode::RESOURCE_EXHAUSTED,
              fmt::format("compiling the {} {} plan of {} ranks took more than plan_compile_cpu ({:g} s of "
                          "CPU) in topotuned's configuration; it was stopped",
                          collective, algorithm, rank_hosts.size(), config_.plan_compile_cpu_s)};
    }
    metrics_->PlanCompiled("gone");
    spdlog::info("stopped compiling {} {} for {} ranks after {:.1f} s of CPU: every caller is gone ({})", collective,
                 algorithm, rank_hosts.size(), cpu, why_gone.error_message());
    return why_gone;
  }
  if (!compiled.ok()) {
    metrics_->PlanCompiled("error");
    return ToGrpc(compiled.status());
  }
  metrics_->PlanCompiled("ok");
  *out = std::make_shared<const CompiledPlan>(std::move(*compiled));
  cache_.Put(key, *out);
  Status put = store_.PutPlan(dbkey, EncodePlan(**out));
  if (put.ok()) {
    auto evicted = store_.EvictPlansLru(4 * config_.plan_cache_bytes);
    if (!evicted.ok()) spdlog::warn("plan cache eviction: {}", evicted.status().message());
  } else {
    spdlog::warn("persisting a plan: {}", put.message());
  }
  // A large compile leaves freed structs in malloc's arenas (1.4 GB for a
  // 92 MB plan of 2,048 ranks): return them.
  if ((*out)->bytes() > kLargeCompileBytes) malloc_trim(0);
  spdlog::log((*out)->bytes() > kLargeCompileBytes ? spdlog::level::info : spdlog::level::debug,
              "compiled {} {} for {} ranks in {:.3f} s ({:.1f} s of CPU), {} MB; resident memory {} MB", collective,
              algorithm, rank_hosts.size(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), cpu,
              (*out)->bytes() >> 20, ResidentBytes() >> 20);
  return grpc::Status::OK;
}

}  // namespace topotune::daemon
