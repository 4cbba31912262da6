#include "bench_kernels/shim/call_stats.h"

#include <algorithm>
#include <bit>
#include <map>
#include <tuple>

#include "bench_kernels/alltoallv/pattern_class.h"
#include "proto/names.h"

namespace topotune::shim {

int CallStats::Intern(const CallContext& context) {
  auto it = std::find(contexts_.begin(), contexts_.end(), context);
  if (it != contexts_.end()) return static_cast<int>(it - contexts_.begin());
  contexts_.push_back(context);
  return static_cast<int>(contexts_.size()) - 1;
}

void CallStats::Add(kernels::Collective collective, std::string_view algorithm, int64_t msize, int64_t bytes,
                    double seconds, bool fallback, int context, int pattern) {
  Totals& t = entries_[Key{collective, algorithm, msize, context, pattern}];
  ++t.calls;
  t.bytes += bytes;
  t.seconds += seconds;
  t.fallbacks += fallback;
}

void CallStats::ToProto(int max_entries, google::protobuf::RepeatedPtrField<v1::CollectiveCallStats>* out) const {
  // Entries merged by (collective, algorithm, size class); bytes-weighted
  // sizes are kept as sums to report the mean.
  using Merged = std::map<std::tuple<int, std::string_view, int64_t, int, int>, std::pair<Totals, double>>;
  auto merge = [&](auto size_class) {
    Merged m;
    for (const auto& [key, t] : entries_) {
      auto& [sum, size_calls] =
          m[{static_cast<int>(key.collective), key.algorithm, size_class(key.msize), key.context, key.pattern}];
      sum.calls += t.calls;
      sum.bytes += t.bytes;
      sum.seconds += t.seconds;
      sum.fallbacks += t.fallbacks;
      size_calls += static_cast<double>(key.msize) * static_cast<double>(t.calls);
    }
    return m;
  };
  Merged m = merge([](int64_t s) { return s; });
  if (static_cast<int>(m.size()) > max_entries)
    m = merge(
        [](int64_t s) { return s <= 0 ? int64_t{0} : static_cast<int64_t>(std::bit_floor(static_cast<uint64_t>(s))); });
  if (static_cast<int>(m.size()) > max_entries) m = merge([](int64_t) { return int64_t{0}; });
  for (const auto& [key, value] : m) {
    if (out->size() >= max_entries) break;
    const auto& [sum, size_calls] = value;
    v1::CollectiveCallStats* s = out->Add();
    kernels::Collective c = static_cast<kernels::Collective>(std::get<0>(key));
    s->set_collective(*v1::ParseCollectiveName(kernels::CollectiveName(c)));
    s->set_algorithm(std::string(std::get<1>(key)));
    s->set_msize(sum.calls > 0 ? static_cast<int64_t>(size_calls / static_cast<double>(sum.calls) + 0.5) : 0);
    s->set_calls(sum.calls);
    s->set_total_bytes(sum.bytes);
    s->set_total_seconds(sum.seconds);
    s->set_fallbacks(sum.fallbacks);
    if (const int p = std::get<4>(key); p != kNoPattern)
      s->set_pattern(*v1::ParsePatternName(kernels::PatternClassName(static_cast<kernels::PatternClass>(p))));
    if (const int i = std::get<3>(key); i != kNoContext) {
      const CallContext& ctx = contexts_[static_cast<size_t>(i)];
      s->set_plan_id(ctx.plan_id);
      s->set_comm_size(ctx.comm_size);
      s->set_comm_ranks_per_node(ctx.comm_ranks_per_node);
      s->set_comm_hosts(ctx.comm_hosts);
      s->set_source(ctx.source);
      s->set_tuned_nprocs(ctx.tuned_nprocs);
      s->set_tuned_ranks_per_node(ctx.tuned_ranks_per_node);
    } else {
      s->set_source(v1::DECISION_SOURCE_DEFAULT);
    }
  }
}

}  // namespace topotune::shim
