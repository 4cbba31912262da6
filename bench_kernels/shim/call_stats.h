// Per-collective call statistics of one rank, as ReportJob and
// TOPOTUNE_STATS_FILE carry them: calls, bytes, time and fallbacks by
// (collective, algorithm that ran, message size).
//
// Thread-safety: not thread-safe; the shim guards it with its lock.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "bench_kernels/kernel.h"
#include "topotune/v1/admin.pb.h"

namespace topotune::shim {

class CallStats {
 public:
  struct Totals {
    int64_t calls = 0;
    int64_t bytes = 0;
    double seconds = 0;
    int64_t fallbacks = 0;
  };

  // One call of `collective` that ran `algorithm` (a registry name; "native"
  // after a fallback) for blocks of `msize` bytes, moving `bytes` between
  // distinct ranks in `seconds`.
  void Add(kernels::Collective collective, std::string_view algorithm, int64_t msize, int64_t bytes, double seconds,
           bool fallback);

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
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<int64_t>()(k.msize) * 31 + std::hash<std::string_view>()(k.algorithm) * 7 +
             static_cast<size_t>(k.collective);
    }
  };
  std::unordered_map<Key, Totals, KeyHash> entries_;
};

}  // namespace topotune::shim
