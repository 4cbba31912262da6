// Per-collective call statistics of one rank, as ReportJob and
// TOPOTUNE_STATS_FILE carry them: calls, bytes, time and fallbacks by
// (collective, algorithm that ran, message size, alltoallv pattern class,
// and the communicator and table the calls ran with).
//
// Thread-safety: not thread-safe; the shim guards it with its lock.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench_kernels/kernel.h"
#include "topotune/v1/admin.pb.h"

namespace topotune::shim {

// Where calls ran: their communicator's layout and plan, and where the
// table that chose their algorithm came from (ReportJob's per-entry context).
struct CallContext {
  std::string plan_id;  // "" without a daemon plan.
  int comm_size = 0, comm_ranks_per_node = 0, comm_hosts = 0;
  v1::DecisionSource source = v1::DECISION_SOURCE_DEFAULT;
  int tuned_nprocs = 0, tuned_ranks_per_node = 0;
  bool operator==(const CallContext&) const = default;
};

class CallStats {
 public:
  // No context: a call counted without its communicator (fields 0, source
  // DEFAULT).
  static constexpr int kNoContext = -1;
  // No pattern class: a collective other than alltoallv.
  static constexpr int kNoPattern = -1;

  struct Totals {
    int64_t calls = 0;
    int64_t bytes = 0;
    double seconds = 0;
    int64_t fallbacks = 0;
  };

  // The index of `context` (the same index for equal contexts).
  int Intern(const CallContext& context);

  // One call of `collective` that ran `algorithm` (a registry name; "native"
  // after a fallback) for blocks of `msize` bytes, moving `bytes` between
  // distinct ranks in `seconds`, in `context` (an index from Intern, or
  // kNoContext), of alltoallv pattern class `pattern` (a
  // kernels::PatternClass, or kNoPattern).
  void Add(kernels::Collective collective, std::string_view algorithm, int64_t msize, int64_t bytes, double seconds,
           bool fallback, int context = kNoContext, int pattern = kNoPattern);

  size_t size() const { return entries_.size(); }

  // The entries as ReportJob's stats, at most `max_entries` (when there are
  // more, message sizes are merged into powers of two, then into one entry
  // per collective and algorithm, with the mean size).
  void ToProto(int max_entries, google::protobuf::RepeatedPtrField<v1::CollectiveCallStats>* out) const;

 private:
  struct Key {
    kernels::Collective collective;
    std::string_view algorithm;  // Points into the kernel registry (static).
    int64_t msize;
    int context, pattern;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<int64_t>()(k.msize) * 31 + std::hash<std::string_view>()(k.algorithm) * 7 +
             static_cast<size_t>(k.collective) + static_cast<size_t>(k.context) * 131 +
             static_cast<size_t>(k.pattern + 1) * 17;
    }
  };
  std::unordered_map<Key, Totals, KeyHash> entries_;
  std::vector<CallContext> contexts_;
};

}  // namespace topotune::shim
