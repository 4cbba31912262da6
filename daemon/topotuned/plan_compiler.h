// PlanCompiler: the compiled plans GetPlan hands out (plans.h), from the
// memory cache (an LRU bounded by plan_cache_bytes), else the store's
// persisted plans, else compiled now. The limits of topotuned's
// configuration apply before and during a compile: a plan estimated over
// plan_compile_max_size is not compiled (Refusal), plan_compiles compile at
// once and further ones wait for a slot, and a compile is stopped past
// plan_compile_cpu seconds of CPU. Compiles are single-flight: the callers
// asking for one plan key at a time share one load or compile, and when
// every one of them is gone (CallContext) the compile is abandoned, its
// memory given back (malloc_trim), and a caller that joined as the last one
// left starts again. Core owns one and calls it from GetPlan.
//
// Thread-safety: every public method may be called from any thread.
#pragma once

#include <google/protobuf/repeated_ptr_field.h>
#include <grpcpp/support/status.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "daemon/topotuned/config.h"
#include "daemon/topotuned/metrics.h"
#include "daemon/topotuned/plans.h"
#include "db/store.h"

namespace topotune::daemon {

// What a handler knows of its call beyond the request: `gone` returns OK
// while the client still waits, else why it stopped (CANCELLED,
// DEADLINE_EXCEEDED). Long work (a plan compile) asks it, and stops when
// every caller waiting for it is gone. Default: the client never leaves.
struct CallContext {
  std::function<grpc::Status()> gone;
};

// Resident memory of this process (/proc/self/statm), bytes.
int64_t ResidentBytes();

class PlanCompiler {
 public:
  using RankHosts = google::protobuf::RepeatedPtrField<std::string>;

  // `config` and `store` are Core's and must outlive the compiler; `metrics`
  // (not owned) too.
  PlanCompiler(const Config& config, db::Store& store, Metrics* metrics);
  PlanCompiler(const PlanCompiler&) = delete;
  PlanCompiler& operator=(const PlanCompiler&) = delete;

  // Why the plan of (collective, algorithm) for `num_ranks` ranks on
  // `num_hosts` hosts is not compiled: its estimate (EstimatePlan, known
  // before any work) is over plan_compile_max_size; the message names the
  // plan, its size and the limit, and the refusal is counted. nullopt when
  // it may be compiled.
  std::optional<std::string> Refusal(std::string_view collective, std::string_view algorithm, int64_t num_ranks,
                                     int64_t num_hosts);

  // The plan of (collective, algorithm) for the placement on `topo`, from
  // memory, the store or compiled now (once for all callers asking for it at
  // the time). RESOURCE_EXHAUSTED past plan_compile_cpu; the call's own
  // status (CANCELLED, DEADLINE_EXCEEDED) when its caller is gone.
  grpc::Status PlanFor(const db::StoredTopology& topo, const RankHosts& rank_hosts, uint64_t placement_hash,
                       const std::string& collective, const std::string& algorithm, const CallContext& call,
                       std::shared_ptr<const CompiledPlan>* out);

  // Drops the plans of topology versions below `version`, from memory and
  // from the store.
  void DropBefore(int64_t version);

  // The memory cache's figures, for the metrics.
  PlanCache::Stats cache_stats() const;

 private:
  struct Flight;  // One plan being loaded or compiled.
  // The leader of a flight: the store, else a compile in a compile slot.
  grpc::Status LoadOrCompile(const db::StoredTopology& topo, const RankHosts& rank_hosts, const PlanKey& key,
                             const CallContext& call, Flight* flight, std::shared_ptr<const CompiledPlan>* out);

  const Config& config_;
  db::Store& store_;
  Metrics* const metrics_;
  PlanCache cache_;

  std::mutex flights_mu_;  // Guards flights_ and compiles_running_.
  std::condition_variable compile_slot_cv_;
  std::unordered_map<PlanKey, std::shared_ptr<Flight>, PlanKeyHash> flights_;  // Plans being loaded or compiled.
  int compiles_running_ = 0;
};

}  // namespace topotune::daemon
