// RunBench: buffers, the timing loop, verification and the bound. See bench.h
// for the protocol and the definitions of the reported numbers.
#include "bench_kernels/driver/bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>

#include "bench_kernels/alltoallv/pattern_class.h"
#include "bench_kernels/buffers.h"
#include "bench_kernels/driver/tcp_counters.h"
#include "tuner/bounds.h"
#include "tuner/crossover.h"
#include "tuner/round_rule.h"
#include "tuner/stats.h"
#include "tuner/topology_io.h"

namespace topotune::bench {

using kernels::Collective;
using kernels::KernelInfo;

std::string_view PatternName(Pattern p) {
  switch (p) {
    case Pattern::kUniform:
      return "uniform";
    case Pattern::kSkewed:
      return "skewed";
    case Pattern::kRandom:
      return "random";
    case Pattern::kSparse:
      return "sparse";
  }
  return "unknown";
}

bool ParsePattern(std::string_view name, Pattern* out) {
  for (Pattern p : {Pattern::kUniform, Pattern::kSkewed, Pattern::kRandom, Pattern::kSparse}) {
    if (PatternName(p) == name) {
      *out = p;
      return true;
    }
  }
  return false;
}

namespace {

// SplitMix64 (Steele, Lea, Flood 2014): a stateless, well-mixed hash, so that
// every rank computes the same sizes and bytes without a shared generator.
uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

std::vector<int64_t> AlltoallvSizes(Pattern pattern, int n, int64_t mean, uint64_t seed) {
  const size_t cells = static_cast<size_t>(n) * static_cast<size_t>(n);
  std::vector<int64_t> sizes(cells, mean);
  if (pattern == Pattern::kUniform || mean == 0) return sizes;
  const uint64_t base = Mix(seed ^ Mix(static_cast<uint64_t>(mean)));
  if (pattern == Pattern::kRandom) {
    for (size_t i = 0; i < cells; ++i)
      sizes[i] = static_cast<int64_t>(Mix(base + i) % static_cast<uint64_t>(2 * mean + 1));
    return sizes;
  }
  // Skewed: heavy pairs weigh 8, light ones 1. Sparse: one pair in four
  // weighs 1, the others 0 (the first off-diagonal pair 1 when none does).
  // Scaled so that the mean is `mean`.
  std::vector<int> weight(cells);
  double total = 0;
  for (size_t i = 0; i < cells; ++i) {
    if (pattern == Pattern::kSparse)
      weight[i] = Mix(base + i) % 4 == 0 ? 1 : 0;
    else
      weight[i] = Mix(base + i) % 8 == 0 ? 8 : 1;
    total += weight[i];
  }
  if (total == 0) {
    weight[cells > 1 ? 1 : 0] = 1;
    total = 1;
  }
  for (size_t i = 0; i < cells; ++i) {
    sizes[i] = std::llround(static_cast<double>(mean) * weight[i] * static_cast<double>(cells) / total);
  }
  return sizes;
}

std::vector<int64_t> LogSweep(int64_t min_bytes, int64_t max_bytes) {
  std::vector<int64_t> out;
  if (min_bytes < 1 || max_bytes < min_bytes) return out;
  for (int64_t s = min_bytes; s <= max_bytes; s *= 2) {
    out.push_back(s);
    if (s > INT64_MAX / 2) break;
  }
  if (out.back() != max_bytes) out.push_back(max_bytes);
  return out;
}

std::string SampleToJson(const Sample& s, bool with_times) {
  using Json = nlohmann::ordered_json;
  auto opt = [](const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); };
  Json j;
  j["collective"] = s.collective;
  j["algorithm"] = s.algorithm;
  j["label"] = s.label;
  if (!s.pattern.empty()) j["pattern"] = s.pattern;
  j["nprocs"] = s.nprocs;
  j["ranks_per_node"] = s.ranks_per_node;
  j["msize"] = s.msize;
  j["iterations"] = s.iterations;
  j["min_s"] = s.min_s;
  j["median_s"] = s.median_s;
  j["p95_s"] = s.p95_s;
  j["max_s"] = s.max_s;
  j["mean_s"] = s.mean_s;
  if (s.order_seed != 0) j["order_seed"] = s.order_seed;
  j["bytes_per_call"] = s.bytes_per_call;
  j["bytes_per_s"] = opt(s.bytes_per_s);
  j["bound_s"] = opt(s.bound_s);
  j["fraction_of_bound"] = opt(s.fraction_of_bound);
  j["verified"] = s.verified;
  j["verify_errors"] = s.verify_errors;
  j["fallbacks"] = s.fallbacks;
  if (s.tcp_timeouts) j["tcp_timeouts"] = *s.tcp_timeouts;
  if (s.tcp_retrans_segs) j["tcp_retrans_segs"] = *s.tcp_retrans_segs;
  if (with_times) j["times_s"] = s.times_s;
  if (!s.dropped.empty()) j["dropped"] = s.dropped;
  if (s.size_seconds > 0) j["size_seconds"] = s.size_seconds;
  if (s.matrices > 1) j["matrices"] = s.matrices;
  return j.dump();
}

std::vector<std::string> PhaseTraceLines(std::string_view collective, std::string_view algorithm, int64_t msize,
                                         int64_t call, const std::vector<int>& counts,
                                         const std::vector<double>& marks) {
  using Json = nlohmann::ordered_json;
  std::vector<std::string> lines;
  size_t at = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    for (int i = 0; i < counts[r] && at + 3 <= marks.size(); ++i, at += 3) {
      Json j;
      j["collective"] = collective;
      j["algorithm"] = algorithm;
      j["msize"] = msize;
      j["call"] = call;
      j["rank"] = r;
      j["event"] = kernels::TraceEventName(static_cast<kernels::TraceEvent>(static_cast<int32_t>(marks[at])));
      j["value"] = static_cast<int32_t>(marks[at + 1]);
      j["t_s"] = marks[at + 2];
      lines.push_back(j.dump());
    }
  }
  return lines;
}

Status ValidateAlgorithms(const BenchOptions& options) {
  for (const std::string& name : options.algorithms) {
    if (kernels::FindKernel(options.collective, name) == nullptr) {
      return Status::InvalidArgument(fmt::format("unknown {} algorithm '{}'; {}",
                                                 kernels::CollectiveName(options.collective), name,
                                                 kernels::ValidKernels(options.collective)));
    }
  }
  return Status::Ok();
}

namespace {

constexpr int64_t kDefaultMaxSize = int64_t{4} << 20;
constexpr int kMaxBudgetIterations = 1000000;
constexpr unsigned char kRecvFill = 0xA5;

// The data of one block in call `call`: bytes of Mix(seed + word). `dst` is
// n for allgather (a rank's block is the same for every destination).
uint64_t BlockSeed(int src, int dst, int64_t call) {
  return Mix(Mix(Mix(static_cast<uint64_t>(src)) ^ static_cast<uint64_t>(dst)) ^ static_cast<uint64_t>(call));
}

void FillBlock(char* p, int64_t len, uint64_t seed) {
  for (int64_t off = 0; off < len; off += 8) {
    uint64_t v = Mix(seed + static_cast<uint64_t>(off));
    std::memcpy(p + off, &v, static_cast<size_t>(std::min<int64_t>(8, len - off)));
  }
}

// Index of the first wrong byte, or -1; *expected and *got describe it.
int64_t CheckBlock(const char* p, int64_t len, uint64_t seed, unsigned* expected, unsigned* got) {
  for (int64_t off = 0; off < len; off += 8) {
    uint64_t v = Mix(seed + static_cast<uint64_t>(off));
    const int64_t chunk = std::min<int64_t>(8, len - off);
    if (std::memcmp(p + off, &v, static_cast<size_t>(chunk)) == 0) continue;
    unsigned char want[8];
    std::memcpy(want, &v, 8);
    for (int64_t i = 0; i < chunk; ++i) {
      if (static_cast<unsigned char>(p[off + i]) != want[i]) {
        *expected = want[i];
        *got = static_cast<unsigned char>(p[off + i]);
        return off + i;
      }
    }
  }
  return -1;
}

int64_t TotalFallbacks(const kernels::FallbackLog& log) {
  int64_t total = 0;
  for (const auto& [reason, count] : log.counts()) total += count;
  return total;
}

// Bytes crossing each directed edge for the size matrix, then the bound:
// max over network edges and directions of bytes / (speed / 8).
std::optional<double> PatternBound(const RankTree& tree, const std::vector<int64_t>& sizes) {
  const int n = tree.num_ranks();
  std::vector<double> load(2 * static_cast<size_t>(tree.num_edges()), 0.0);
  std::vector<int> path;
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) {
      const int64_t bytes = sizes[static_cast<size_t>(s) * n + d];
      if (s == d || bytes == 0) continue;
      path.clear();
      tree.Path(s, d, &path);
      for (int de : path) load[de] += static_cast<double>(bytes);
    }
  }
  std::optional<double> best;
  for (int e = 0; e < tree.num_edges(); ++e) {
    if (tree.edge(e).intra_host) continue;
    const double bytes_per_s = tree.edge(e).speed_bps / 8.0;
    const size_t de = 2 * static_cast<size_t>(e);  // Directed ids 2e (a->b) and 2e+1 (b->a).
    const double t = std::max(load[de], load[de + 1]) / bytes_per_s;
    if (!best || t > *best) best = t;
  }
  return best;
}

// The buffers and arguments of one collective at one size, on one rank.
struct Workload {
  Collective collective;
  int rank = 0;
  int n = 0;
  int64_t msize = 0;
  std::vector<int64_t> matrix;  // alltoallv: sizes[src * n + dst].
  std::vector<int> sendcounts, sdispls, recvcounts, rdispls;
  kernels::FoldableBytes send, recv;  // Folded with --fold-buffers.
  int64_t bytes_per_call = 0;

  // Returns an error message when the size does not fit MPI's int counts.
  std::string Init(Collective c, int my_rank, int nprocs, int64_t size, Pattern pattern, uint64_t seed, bool fold) {
    collective = c;
    rank = my_rank;
    n = nprocs;
    msize = size;
    if (size > INT_MAX) return fmt::format("size {} exceeds the largest MPI count ({} bytes)", size, INT_MAX);
    int64_t send_bytes = 0, recv_bytes = 0;
    switch (c) {
      case Collective::kAlltoall:
        send_bytes = recv_bytes = size * n;
        bytes_per_call = static_cast<int64_t>(n) * (n - 1) * size;
        break;
      case Collective::kAllgather:
        send_bytes = size;
        recv_bytes = size * n;
        bytes_per_call = static_cast<int64_t>(n) * (n - 1) * size;
        break;
      case Collective::kAlltoallv: {
        matrix = AlltoallvSizes(pattern, n, size, seed);
        sendcounts.assign(n, 0);
        sdispls.assign(n, 0);
        recvcounts.assign(n, 0);
        rdispls.assign(n, 0);
        bytes_per_call = 0;
        // Every rank checks every row and column, so all agree on an error.
        int64_t worst = 0;
        for (int r = 0; r < n; ++r) {
          int64_t row = 0, col = 0;
          for (int k = 0; k < n; ++k) {
            row += matrix[static_cast<size_t>(r) * n + k];
            col += matrix[static_cast<size_t>(k) * n + r];
            if (k != r) bytes_per_call += matrix[static_cast<size_t>(r) * n + k];
          }
          worst = std::max({worst, row, col});
        }
        if (worst > INT_MAX) {
          return fmt::format("alltoallv at {} bytes per pair needs displacements up to {} bytes, beyond MPI's int",
                             size, worst);
        }
        for (int k = 0; k < n; ++k) {
          sendcounts[k] = static_cast<int>(matrix[static_cast<size_t>(rank) * n + k]);
          recvcounts[k] = static_cast<int>(matrix[static_cast<size_t>(k) * n + rank]);
          if (k > 0) {
            sdispls[k] = sdispls[k - 1] + sendcounts[k - 1];
            rdispls[k] = rdispls[k - 1] + recvcounts[k - 1];
          }
        }
        send_bytes = sdispls[n - 1] + sendcounts[n - 1];
        recv_bytes = rdispls[n - 1] + recvcounts[n - 1];
        break;
      }
    }
    // At least one byte, so that no buffer pointer is null.
    send.Assign(static_cast<size_t>(std::max<int64_t>(send_bytes, 1)), 0, fold);
    recv.Assign(static_cast<size_t>(std::max<int64_t>(recv_bytes, 1)), 0, fold);
    return {};
  }

  void FillSend(int64_t call) {
    switch (collective) {
      case Collective::kAlltoall:
        for (int d = 0; d < n; ++d) FillBlock(send.data() + d * msize, msize, BlockSeed(rank, d, call));
        break;
      case Collective::kAllgather:
        FillBlock(send.data(), msize, BlockSeed(rank, n, call));
        break;
      case Collective::kAlltoallv:
        for (int d = 0; d < n; ++d) FillBlock(send.data() + sdispls[d], sendcounts[d], BlockSeed(rank, d, call));
        break;
    }
  }

  // Counts the blocks received wrongly; describes the first in *first.
  int64_t CheckRecv(int64_t call, std::string* first) const {
    int64_t bad = 0;
    for (int s = 0; s < n; ++s) {
      const char* p = nullptr;
      int64_t len = 0;
      uint64_t seed = 0;
      switch (collective) {
        case Collective::kAlltoall:
          p = recv.data() + s * msize;
          len = msize;
          seed = BlockSeed(s, rank, call);
          break;
        case Collective::kAllgather:
          p = recv.data() + s * msize;
          len = msize;
          seed = BlockSeed(s, n, call);
          break;
        case Collective::kAlltoallv:
          p = recv.data() + rdispls[s];
          len = recvcounts[s];
          seed = BlockSeed(s, rank, call);
          break;
      }
      unsigned want = 0, got = 0;
      const int64_t at = CheckBlock(p, len, seed, &want, &got);
      if (at < 0) continue;
      if (bad++ == 0 && first->empty()) {
        *first = fmt::format("byte {} of the {}-byte block from rank {}: expected 0x{:02x}, got 0x{:02x}", at, len, s,
                             want, got);
      }
    }
    return bad;
  }

  // What libtopotune-mpi.so adds before an alltoallv call that agrees on its
  // class and size (shim/runtime.cc): this rank's row features, summed by
  // one allreduce of six integers.
  int Agree(MPI_Comm comm) const {
    constexpr int kWords = kernels::PatternFeatures::kWords;
    int64_t words[kWords + 1];
    kernels::RowFeatures(std::span<const int>(sendcounts), 1, rank).ToWords(words);
    words[kWords] = 0;
    return MPI_Allreduce(MPI_IN_PLACE, words, kWords + 1, MPI_INT64_T, MPI_SUM, comm);
  }

  // One call of kernel k, or of the public MPI function when k is null
  // (BenchOptions::via_mpi_label).
  int Call(const KernelInfo* k, MPI_Comm comm, const kernels::KernelContext& ctx, kernels::FallbackLog* log) {
    if (k == nullptr) return CallMpi(comm);
    switch (collective) {
      case Collective::kAlltoall:
        return kernels::RunAlltoall(
            *k, {send.data(), static_cast<int>(msize), MPI_BYTE, recv.data(), static_cast<int>(msize), MPI_BYTE, comm},
            ctx, log);
      case Collective::kAllgather:
        return kernels::RunAllgather(
            *k, {send.data(), static_cast<int>(msize), MPI_BYTE, recv.data(), static_cast<int>(msize), MPI_BYTE, comm},
            ctx, log);
      case Collective::kAlltoallv:
        return kernels::RunAlltoallv(*k, AlltoallvShape(comm), ctx, log);
    }
    return MPI_ERR_OTHER;
  }

  // MPI_, not PMPI_: a PMPI library in the job sees these calls.
  int CallMpi(MPI_Comm comm) {
    const int count = static_cast<int>(msize);
    switch (collective) {
      case Collective::kAlltoall:
        return MPI_Alltoall(send.data(), count, MPI_BYTE, recv.data(), count, MPI_BYTE, comm);
      case Collective::kAllgather:
        return MPI_Allgather(send.data(), count, MPI_BYTE, recv.data(), count, MPI_BYTE, comm);
      case Collective::kAlltoallv:
        return MPI_Alltoallv(send.data(), sendcounts.data(), sdispls.data(), MPI_BYTE, recv.data(), recvcounts.data(),
                             rdispls.data(), MPI_BYTE, comm);
    }
    return MPI_ERR_OTHER;
  }

  kernels::AlltoallvArgs AlltoallvShape(MPI_Comm comm) {
    return {send.data(),       sendcounts.data(), sdispls.data(), MPI_BYTE, recv.data(),
            recvcounts.data(), rdispls.data(),    MPI_BYTE,       comm};
  }
};

// One measured line of a size: a kernel (null: the public MPI function)
// under its label, and what its calls gave.
struct Entry {
  const KernelInfo* k = nullptr;
  std::string name;   // Registry name, kViaMpiAlgorithm, or kAaControlLabel for the A/A copy.
  std::string label;  // Of its samples.
  std::vector<double> times;
  long long verify_errors = 0;
  long long fallbacks = 0;
  long long tcp_timeouts = 0, tcp_retrans_segs = 0;  // This rank's share (tcp_counters).
  std::string first_error;
  std::string dropped;  // Why it left the size's rounds (rank 0's words; every rank knows that it left).
};

// The order of one round: a Fisher-Yates shuffle drawn from the seed, the
// size and the round, so every rank draws the same order without talking.
void RoundOrder(uint64_t seed, int64_t msize, int round, std::vector<size_t>* order) {
  std::iota(order->begin(), order->end(), size_t{0});
  uint64_t state = Mix(seed ^ Mix(static_cast<uint64_t>(msize) ^ Mix(static_cast<uint64_t>(round))));
  for (size_t i = order->size(); i > 1; --i) {
    state = Mix(state);
    std::swap((*order)[i - 1], (*order)[state % i]);
  }
}

// Rank 0's rule of a size's interleaved rounds (tuner/round_rule.h) on
// the entries: the size's wall time from its first round, the calls
// numbered by round, and who leaves the race.
class EntryRounds {
 public:
  EntryRounds(const BenchOptions& o, int64_t msize) : rule_(RuleOptions(o)), msize_(msize), start_s_(MPI_Wtime()) {}

  bool IsCheckpoint(int round) const { return rule_.IsCheckpoint(round); }

  // Whether to run another round after `rounds` rounds; the entries that
  // leave the race get their reason in Entry::dropped.
  bool GoOn(int rounds, std::vector<Entry>* entries) {
    std::vector<SampleSet> sets;
    for (const Entry& e : *entries) {
      SampleSet s{e.name, static_cast<double>(msize_), e.times, ConsecutiveRounds(e.times.size())};
      s.dropped = e.dropped;
      sets.push_back(std::move(s));
    }
    // Wall time, barriers and reductions included: what the budget buys.
    const bool go_on = rule_.GoOn(rounds, MPI_Wtime() - start_s_, &sets);
    for (size_t i = 0; i < entries->size(); ++i) (*entries)[i].dropped = sets[i].dropped;
    return go_on;
  }

 private:
  static RoundRuleOptions RuleOptions(const BenchOptions& o) {
    RoundRuleOptions r;
    r.min_rounds = std::max(1, o.iterations);
    r.max_rounds = o.max_rounds;
    r.budget_s = o.size_budget_s;
    r.race = o.race;
    r.choice.alpha = o.alpha;
    r.choice.margin = o.margin;
    r.choice.seed = o.order_seed;
    r.unraced = {std::string(kViaMpiAlgorithm)};
    return r;
  }

  RoundRule rule_;
  int64_t msize_;
  double start_s_;
};

// "1.23 s", "45.6 ms": a call's time in a reason.
std::string FormatSeconds(double s) { return s >= 1 ? fmt::format("{:.3g} s", s) : fmt::format("{:.3g} ms", s * 1e3); }

// The size matrices a size cycles through: BenchOptions::matrices for an
// interleaved alltoallv whose pattern depends on the seed, else 1.
int Matrices(const BenchOptions& o) {
  const bool seeded = o.collective == Collective::kAlltoallv && o.pattern != Pattern::kUniform;
  return o.interleave && seeded ? std::max(1, o.matrices) : 1;
}

// Whether an entry can leave a size early: a kernel other than native (the
// reference) and its A/A copy; the public MPI function is only timed beside.
bool Raced(const Entry& e) { return e.k != nullptr && e.k->name != "native"; }

// --phase-trace: gathers every rank's marks of the call that began at its
// `t0` to rank 0, which hands them to `sink` (PhaseTraceLines). Collective.
void SendPhaseTrace(const kernels::PhaseTrace& trace, double t0, MPI_Comm comm, std::string_view collective,
                    std::string_view algorithm, int64_t msize, int64_t call,
                    const std::function<void(const std::string&)>& sink) {
  int rank = 0, n = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &n);
  std::vector<double> mine;
  mine.reserve(3 * trace.size());
  for (const kernels::TraceMark& m : trace) {
    mine.push_back(static_cast<double>(m.event));
    mine.push_back(m.value);
    mine.push_back(m.t - t0);
  }
  const int count = static_cast<int>(trace.size());
  std::vector<int> counts(rank == 0 ? n : 0), lengths, displs;
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
  std::vector<double> all;
  if (rank == 0) {
    for (int c : counts) {
      displs.push_back(static_cast<int>(all.size()));
      lengths.push_back(3 * c);
      all.resize(all.size() + 3 * static_cast<size_t>(c));
    }
  }
  MPI_Gatherv(mine.data(), 3 * count, MPI_DOUBLE, all.data(), lengths.data(), displs.data(), MPI_DOUBLE, 0, comm);
  if (rank == 0)
    for (const std::string& line : PhaseTraceLines(collective, algorithm, msize, call, counts, all)) sink(line);
}

std::string MpiErrorString(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return std::string(text, static_cast<size_t>(len));
}

}  // namespace

int RunBench(const BenchOptions& options, MPI_Comm comm, const std::function<void(const Sample&)>& sink) {
  int rank = 0, n = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &n);
  auto log = [&](const std::string& line) {
    if (options.log)
      options.log(line);
    else
      std::fprintf(stderr, "%s\n", line.c_str());
  };
  // For errors every rank detects alike: one message, from rank 0.
  auto fail = [&](int code, const std::string& message) {
    if (rank == 0) log("topotune-bench: " + message);
    return code;
  };
  const Collective collective = options.collective;
  const std::string_view cname = kernels::CollectiveName(collective);

  if (Status st = ValidateAlgorithms(options); !st.ok()) return fail(kExitUsage, st.message());
  std::vector<const KernelInfo*> kernel_list;
  if (options.algorithms.empty()) {
    for (const KernelInfo& k : kernels::Kernels())
      if (k.collective == collective) kernel_list.push_back(&k);
  } else {
    for (const std::string& name : options.algorithms) {
      const KernelInfo* k = kernels::FindKernel(collective, name);
      if (std::find(kernel_list.begin(), kernel_list.end(), k) == kernel_list.end()) kernel_list.push_back(k);
    }
  }
  if (kernel_list.empty()) return fail(kExitUsage, fmt::format("no {} kernels are registered", cname));
  // The public MPI function (null) goes first, next to native when that is
  // the registry's first kernel, so the two are measured closest in time.
  if (!options.via_mpi_label.empty()) kernel_list.insert(kernel_list.begin(), nullptr);
  const std::vector<int64_t> sizes = options.sizes.empty() ? LogSweep(1, kDefaultMaxSize) : options.sizes;
  if (options.iterations < 1 && options.time_budget_s <= 0)
    return fail(kExitUsage, "the number of iterations must be at least 1");
  if (options.warmup < 0) return fail(kExitUsage, "the number of warm-up calls must not be negative");
  if (options.interleave && options.iterations < 1)
    return fail(kExitUsage, "interleaved rounds need at least 1 round (iterations), not a time budget");
  for (int64_t s : sizes)
    if (s < 0) return fail(kExitUsage, fmt::format("size {} is negative", s));
#ifndef TOPOTUNE_SMPI
  if (options.fold_buffers)
    return fail(kExitUsage, "--fold-buffers is for topotune-bench-smpi (SimGrid SMPI); this program runs on real MPI");
#endif
  if (options.fold_buffers && options.verify)
    return fail(kExitUsage, "--fold-buffers shares every rank's buffers, so there is nothing to --verify; drop one");

  // The topology, placement and rank tree, when given.
  std::optional<JobTree> job;
  if (!options.topology_text.empty() || !options.topology_file.empty()) {
    std::string text = options.topology_text;
    std::string source = options.topology_file.empty() ? std::string("<topology>") : options.topology_file;
    if (text.empty()) {
      auto read = ReadAndBroadcast(options.topology_file, comm);
      if (!read.ok()) return fail(kExitFailure, read.status().message());
      text = std::move(read).value();
    }
    auto topo = ParseTopology(text, source);
    if (!topo.ok()) return fail(kExitFailure, topo.status().message());
    auto placed = PlaceRanks(std::move(topo).value(), options.placement, n);
    if (!placed.ok()) return fail(kExitUsage, placed.status().message());
    job.emplace(std::move(placed).value());
  }

  kernels::PhaseTrace trace;  // --phase-trace: one call's marks on this rank.
  ContextHolder holder;
  holder.FoldMemory(options.fold_buffers);
  if (options.phase_trace) holder.TracePhases(&trace);
  if (int rc = holder.DupComm(comm); rc != MPI_SUCCESS)
    return fail(kExitFailure, "MPI_Comm_dup: " + MpiErrorString(rc));
  if (job) {
    if (Status st = holder.AddTopology(job->tree, collective, rank); !st.ok()) return fail(kExitFailure, st.message());
  }

  // Ranks per node: from the placement when there is one (an emulated
  // cluster shares one kernel), else from the shared-memory split. Without a
  // placement, node_rank and node_size are this rank's index and count on
  // its shared-memory node.
  int ranks_per_node = 1, node_rank = 0, node_size = 1;
  if (job) {
    std::map<int, int> per_host;
    for (int h : job->placement.rank_host) ranks_per_node = std::max(ranks_per_node, ++per_host[h]);
  } else {
    MPI_Comm node_comm = MPI_COMM_NULL;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node_comm);
    if (node_comm != MPI_COMM_NULL) {
      MPI_Comm_rank(node_comm, &node_rank);
      MPI_Comm_size(node_comm, &node_size);
      MPI_Comm_free(&node_comm);
    }
    MPI_Allreduce(&node_size, &ranks_per_node, 1, MPI_INT, MPI_MAX, comm);
  }

  // With --tcp-counters, one rank per host reads its namespace's counters:
  // the first of each host in the placement, else the first of each
  // shared-memory node.
  bool counts_tcp = false;
  if (options.tcp_counters) {
    if (job) {
      const auto& hosts = job->placement.rank_host;
      counts_tcp = std::find(hosts.begin(), hosts.end(), hosts[rank]) - hosts.begin() == rank;
    } else {
      counts_tcp = node_rank == 0;
    }
    int missing = counts_tcp && !ReadTcpCounters() ? 1 : 0, any_missing = 0;
    MPI_Allreduce(&missing, &any_missing, 1, MPI_INT, MPI_MAX, comm);
    if (any_missing)
      return fail(kExitFailure, "--tcp-counters: /proc/net/netstat or /proc/net/snmp lacks TCPTimeouts or RetransSegs");
  }

  kernels::FallbackLog fallback_log;
  // Kernels decline alike on every rank, so rank 0 speaks for all; a
  // rank-specific decline still shows in Sample::fallbacks (max over ranks).
  fallback_log.sink = [&](const std::string& line) {
    if (rank == 0) log(line);
  };
  // What each size measures: every kernel of the list (null: the public MPI
  // function), and native a second time as the A/A control.
  std::vector<Entry> plan;
  for (const KernelInfo* k : kernel_list) {
    Entry e;
    e.k = k;
    e.name = k != nullptr ? k->name : kViaMpiAlgorithm;
    if (k == nullptr)
      e.label = options.via_mpi_label;
    else
      e.label = k->name == "native" && !options.native_label.empty() ? options.native_label : std::string(k->name);
    plan.push_back(e);
    if (options.aa_control && k != nullptr && k->name == "native") {
      e.name = e.label = std::string(kAaControlLabel);
      plan.push_back(std::move(e));
    }
  }
  const int total_steps = static_cast<int>(sizes.size() * plan.size());
  int step = 0;
  int status = kExitOk;
  int64_t call = 0;  // Numbers every call, so that each call's data differ.

  for (int64_t msize : sizes) {
    const double size_start = MPI_Wtime();
    // The size's workloads: one, or with `matrices` an alltoallv size matrix
    // per seed (seed, seed + 1, ...), round r calling on matrix r mod K.
    const int matrices = Matrices(options);
    std::vector<Workload> loads(static_cast<size_t>(matrices));
    for (int m = 0; m < matrices; ++m) {
      Workload& load = loads[static_cast<size_t>(m)];
      if (std::string err = load.Init(collective, rank, n, msize, options.pattern,
                                      options.seed + static_cast<uint64_t>(m), options.fold_buffers);
          !err.empty())
        return fail(kExitUsage, err);
      // Touch the pages outside the timed region.
      load.FillSend(call);
      std::fill(load.recv.begin(), load.recv.end(), static_cast<char>(kRecvFill));
    }
    Workload* current = &loads.front();  // The workload the calls below use.
    std::optional<double> bound;
    if (job && rank == 0) {
      EdgeBound b;
      switch (collective) {
        case Collective::kAlltoall:
          b = AlltoallBound(job->tree, static_cast<double>(msize));
          if (b.edge >= 0) bound = b.seconds;
          break;
        case Collective::kAllgather:
          b = AllgatherBound(job->tree, static_cast<double>(msize));
          if (b.edge >= 0) bound = b.seconds;
          break;
        case Collective::kAlltoallv: {
          // The mean over the matrices, as the mean call is.
          double sum = 0;
          bool all = true;
          for (const Workload& load : loads) {
            const std::optional<double> one = PatternBound(job->tree, load.matrix);
            all = all && one.has_value();
            sum += one.value_or(0);
          }
          if (all) bound = sum / matrices;
          break;
        }
      }
    }

    std::vector<Entry> entries = plan;
    int rc = MPI_SUCCESS;
    std::string rc_what;  // What returned rc.
    // The alltoallv plan of a topology-aware kernel, around its calls.
    auto set_plan = [&](const Entry& e) {
      if (collective != Collective::kAlltoallv || e.k == nullptr || !e.k->needs_context) return true;
      rc = holder.SetAlltoallvPlanFor(current->AlltoallvShape(comm), e.k->name);
      if (rc != MPI_SUCCESS) rc_what = "building the alltoallv plan";
      return rc == MPI_SUCCESS;
    };
    auto clear_plan = [&] {
      if (collective == Collective::kAlltoallv) holder.ClearAlltoallvPlan();
    };
    // Whether a call of `e` pays the library's alltoallv agreement.
    auto agree = [&](const Entry& e) {
      return options.alltoallv_agreement && collective == Collective::kAlltoallv && e.k != nullptr &&
             e.k->name != "native";
    };
    // One call of `e`; a timed one adds its time (max over ranks) to e.times
    // and returns it (a measured one only returns it; else 0).
    auto one_call = [&](Entry& e, bool timed, bool measured = false) {
      measured = measured || timed;
      ++call;
      Workload& cw = *current;
      if (options.verify) {
        cw.FillSend(call);
        std::fill(cw.recv.begin(), cw.recv.end(), static_cast<char>(kRecvFill));
      }
      const int64_t fallbacks_before = TotalFallbacks(fallback_log);
      const std::optional<TcpCounters> tcp_before = timed && counts_tcp ? ReadTcpCounters() : std::nullopt;
      if (measured) MPI_Barrier(comm);
      trace.clear();
      const double t0 = MPI_Wtime();
      rc = agree(e) ? cw.Agree(comm) : MPI_SUCCESS;
      if (rc == MPI_SUCCESS) rc = cw.Call(e.k, comm, holder.context(), &fallback_log);
      const double t = MPI_Wtime() - t0;
      double elapsed = 0;
      if (measured) MPI_Allreduce(&t, &elapsed, 1, MPI_DOUBLE, MPI_MAX, comm);
      if (timed && options.phase_trace && e.k != nullptr)
        SendPhaseTrace(trace, t0, comm, cname, e.k->name, msize, call, options.phase_trace);
      if (timed) {
        e.times.push_back(elapsed);
        e.fallbacks += TotalFallbacks(fallback_log) - fallbacks_before;
        // After the allreduce every rank's call is over: its retransmissions are counted.
        if (tcp_before) {
          if (auto after = ReadTcpCounters()) {
            e.tcp_timeouts += after->timeouts - tcp_before->timeouts;
            e.tcp_retrans_segs += after->retrans_segs - tcp_before->retrans_segs;
          }
        }
      }
      if (rc != MPI_SUCCESS) rc_what = std::string(e.name);
      if (options.verify && rc == MPI_SUCCESS) {
        std::string what;
        int64_t bad = cw.CheckRecv(call, &what);
        if (bad > 0 && e.first_error.empty()) e.first_error = fmt::format("call {}: {}", call, what);
        e.verify_errors += bad;
      }
      return elapsed;
    };
    auto progress = [&](int done, const std::string& what) {
      if (rank == 0 && options.progress)
        options.progress(done, total_steps, fmt::format("{} {} {}", cname, what, FormatBytes(msize)));
    };

    if (!options.interleave) {
      for (Entry& e : entries) {
        progress(step++, e.name);
        if (!set_plan(e)) break;
        for (int i = 0; i < options.warmup && rc == MPI_SUCCESS; ++i) one_call(e, false);
        double spent = 0;
        while (rc == MPI_SUCCESS) {
          if (options.time_budget_s > 0) {
            if (!e.times.empty() && (spent >= options.time_budget_s || e.times.size() >= kMaxBudgetIterations)) break;
          } else if (static_cast<int>(e.times.size()) >= options.iterations) {
            break;
          }
          one_call(e, true);
          spent += e.times.back();
        }
        clear_plan();
        if (rc != MPI_SUCCESS) break;
      }
    } else {
      progress(step, "warm-up of every algorithm at");
      // Native first, so that its warm-up is known when a candidate's is judged.
      std::vector<size_t> warm_order(entries.size());
      std::iota(warm_order.begin(), warm_order.end(), size_t{0});
      std::stable_partition(warm_order.begin(), warm_order.end(),
                            [&](size_t i) { return entries[i].k != nullptr && entries[i].k->name == "native"; });
      const bool judged = options.candidate_limit_s > 0 || options.slow_warmup_factor > 0;
      std::optional<double> native_warm;  // Native's fastest warm-up call.
      for (size_t i : warm_order) {
        Entry& e = entries[i];
        if (rank == 0 && options.round_started)
          options.round_started(fmt::format("{} {} warm-up at {}", cname, e.label, FormatBytes(msize)));
        if (!set_plan(e)) break;
        std::optional<double> fastest;
        for (int c = 0; c < options.warmup && rc == MPI_SUCCESS; ++c) {
          const double t = one_call(e, false, judged);
          fastest = std::min(t, fastest.value_or(t));
          if (Raced(e) && options.candidate_limit_s > 0 && t > options.candidate_limit_s) {
            e.dropped = fmt::format("a warm-up call took {}, over the candidate time limit of {}", FormatSeconds(t),
                                    FormatSeconds(options.candidate_limit_s));
            break;
          }
          // Hopeless already: not worth the next warm-up call's time.
          if (Raced(e) && native_warm && options.slow_warmup_factor > 0 && t > kHopelessWarmupS &&
              t > 2 * options.slow_warmup_factor * *native_warm) {
            e.dropped =
                fmt::format("a warm-up call took {}, {:.1f}x native's {} (over twice {:.1f}x)", FormatSeconds(t),
                            t / *native_warm, FormatSeconds(*native_warm), options.slow_warmup_factor);
            break;
          }
        }
        clear_plan();
        if (rc != MPI_SUCCESS) break;
        if (!fastest) continue;
        if (e.k != nullptr && e.name == "native") native_warm = fastest;  // Not its A/A copy.
        if (Raced(e) && e.dropped.empty() && native_warm && options.slow_warmup_factor > 0 &&
            *fastest > kSlowWarmupFloorS && *fastest > options.slow_warmup_factor * *native_warm)
          e.dropped = fmt::format("its fastest warm-up call took {}, {:.1f}x native's {} (over {:.1f}x)",
                                  FormatSeconds(*fastest), *fastest / *native_warm, FormatSeconds(*native_warm),
                                  options.slow_warmup_factor);
      }
      EntryRounds rule(options, msize);
      std::vector<size_t> order(entries.size());
      for (int round = 0; rc == MPI_SUCCESS; ++round) {
        const std::string what = fmt::format("round {} of every algorithm at", round + 1);
        if (rule.IsCheckpoint(round)) progress(step, what);
        RoundOrder(options.order_seed, msize, round, &order);
        current = &loads[static_cast<size_t>(round % matrices)];
        for (size_t i : order) {
          Entry& e = entries[i];
          if (!e.dropped.empty()) continue;
          if (rank == 0 && options.round_started)
            options.round_started(
                fmt::format("{} {} in round {} at {}", cname, e.label, round + 1, FormatBytes(msize)));
          if (!set_plan(e)) break;
          const double t = one_call(e, true);
          clear_plan();
          if (rc != MPI_SUCCESS) break;
          if (Raced(e) && options.candidate_limit_s > 0 && t > options.candidate_limit_s)
            e.dropped = fmt::format("a call in round {} took {}, over the candidate time limit of {}", round + 1,
                                    FormatSeconds(t), FormatSeconds(options.candidate_limit_s));
        }
        if (rc != MPI_SUCCESS) break;
        // Rank 0's verdict: another round or not, and who leaves the race.
        std::vector<int> verdict(entries.size() + 1, 0);
        if (rank == 0) {
          verdict[0] = rule.GoOn(round + 1, &entries);
          for (size_t i = 0; i < entries.size(); ++i) verdict[i + 1] = entries[i].dropped.empty() ? 0 : 1;
        }
        MPI_Bcast(verdict.data(), static_cast<int>(verdict.size()), MPI_INT, 0, comm);
        for (size_t i = 0; i < entries.size(); ++i)
          if (verdict[i + 1] && entries[i].dropped.empty()) entries[i].dropped = "left the race (rank 0's verdict)";
        if (!verdict[0]) break;
      }
      step += static_cast<int>(entries.size());
    }
    if (rc != MPI_SUCCESS) {
      log(fmt::format("topotune-bench: rank {}: {} {} at {} bytes: MPI error: {}", rank, cname, rc_what, msize,
                      MpiErrorString(rc)));
      return kExitFailure;
    }

    const double size_seconds = MPI_Wtime() - size_start;
    for (Entry& e : entries) {
      long long fallbacks = e.fallbacks, max_fallbacks = 0, all_errors = 0, verify_errors = e.verify_errors;
      MPI_Allreduce(&fallbacks, &max_fallbacks, 1, MPI_LONG_LONG, MPI_MAX, comm);
      MPI_Allreduce(&verify_errors, &all_errors, 1, MPI_LONG_LONG, MPI_SUM, comm);
      long long tcp[2] = {e.tcp_timeouts, e.tcp_retrans_segs}, tcp_sum[2] = {0, 0};
      if (options.tcp_counters) MPI_Allreduce(tcp, tcp_sum, 2, MPI_LONG_LONG, MPI_SUM, comm);
      if (!e.first_error.empty()) {
        log(fmt::format("topotune-bench: rank {}: {} {} at {} bytes: verification failed: {}", rank, cname, e.label,
                        msize, e.first_error));
      }
      if (all_errors > 0) status = kExitFailure;
      if (rank != 0) continue;
      Sample s;
      s.collective = std::string(cname);
      s.algorithm = e.k != nullptr ? std::string(e.k->name) : std::string(kViaMpiAlgorithm);
      s.label = e.label;
      if (collective == Collective::kAlltoallv) s.pattern = std::string(PatternName(options.pattern));
      s.nprocs = n;
      s.ranks_per_node = ranks_per_node;
      s.msize = msize;
      s.iterations = static_cast<int>(e.times.size());
      TimeSummary st = SummarizeTimes(e.times);
      s.min_s = st.min;
      s.median_s = st.median;
      s.p95_s = st.p95;
      s.max_s = st.max;
      s.mean_s = st.mean;
      s.order_seed = options.interleave ? options.order_seed : 0;
      int64_t bytes = 0;  // The mean over the matrices.
      for (const Workload& load : loads) bytes += load.bytes_per_call;
      s.bytes_per_call = bytes / matrices;
      if (s.bytes_per_call == 0)
        s.bytes_per_s = 0.0;
      else if (st.mean > 0)
        s.bytes_per_s = static_cast<double>(s.bytes_per_call) / st.mean;
      s.bound_s = bound;
      if (bound && st.mean > 0) s.fraction_of_bound = *bound / st.mean;
      s.verified = options.verify && all_errors == 0;
      s.verify_errors = all_errors;
      s.fallbacks = max_fallbacks;
      if (options.tcp_counters) {
        s.tcp_timeouts = tcp_sum[0];
        s.tcp_retrans_segs = tcp_sum[1];
      }
      s.times_s = std::move(e.times);
      s.dropped = e.dropped;
      s.size_seconds = size_seconds;
      s.matrices = matrices;
      if (sink) sink(s);
    }
  }
  if (rank == 0 && options.progress) options.progress(total_steps, total_steps, "");
  return status;
}

}  // namespace topotune::bench
