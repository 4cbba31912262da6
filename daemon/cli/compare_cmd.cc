// `topotune compare` (compare_cmd.h): two labels of topotune-bench samples
// side by side, each point judged on the 95 % interval of the ratio of means.
#include "daemon/cli/compare_cmd.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <tuple>
#include <utility>

#include "daemon/cli/cli.h"
#include "tuner/read_file.h"
#include "tuner/topology.h"

namespace topotune::cli {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

// nlohmann's what() starts with "[json.exception.parse_error.101] ".
std::string JsonMessage(const std::exception& e) {
  std::string_view m = e.what();
  if (m.starts_with("[json.exception.")) {
    if (size_t at = m.find("] "); at != std::string_view::npos) m.remove_prefix(at + 2);
  }
  return std::string(m);
}

// A non-negative whole number (JSON integer, or a float with no fraction).
std::optional<int64_t> WholeNumber(const Json& v) {
  if (v.is_number_unsigned()) return static_cast<int64_t>(v.get<uint64_t>());
  if (v.is_number_integer()) {
    int64_t n = v.get<int64_t>();
    return n >= 0 ? std::optional<int64_t>(n) : std::nullopt;
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isfinite(d) && d >= 0 && std::floor(d) == d && d < 9.2e18) return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

Status NotASample(const std::string& where, std::string_view why) {
  return Status::InvalidArgument(fmt::format("{}: not a topotune-bench sample: {}", where, why));
}

StatusOr<BenchSample> SampleFromJson(const Json& j, const std::string& where) {
  if (!j.is_object()) return NotASample(where, "not a JSON object");
  BenchSample s;
  s.source = where;
  for (const char* key : {"collective", "label"}) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string() || it->get<std::string>().empty())
      return NotASample(where, fmt::format("no '{}' string", key));
  }
  s.collective = j["collective"].get<std::string>();
  s.label = j["label"].get<std::string>();
  if (auto it = j.find("algorithm"); it != j.end() && it->is_string()) s.algorithm = it->get<std::string>();
  if (auto it = j.find("pattern"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return NotASample(where, "'pattern' is not a string");
    s.pattern = it->get<std::string>();
  }
  auto msize = j.find("msize");
  if (msize == j.end()) return NotASample(where, "no 'msize'");
  auto m = WholeNumber(*msize);
  if (!m) return NotASample(where, fmt::format("'msize' {} is not a whole number of bytes", msize->dump()));
  s.msize = *m;
  if (auto it = j.find("nprocs"); it != j.end()) {
    auto n = WholeNumber(*it);
    if (!n || *n > 1 << 30) return NotASample(where, fmt::format("'nprocs' {} is not a rank count", it->dump()));
    s.nprocs = static_cast<int>(*n);
  }
  if (auto it = j.find("bound_s"); it != j.end() && !it->is_null()) {
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0)
      return NotASample(where, fmt::format("'bound_s' {} is not a time in seconds", it->dump()));
    s.bound_s = it->get<double>();
  }
  if (auto it = j.find("order_seed"); it != j.end() && !it->is_null()) s.interleaved = true;
  if (auto it = j.find("times_s"); it != j.end()) {
    if (!it->is_array()) return NotASample(where, "'times_s' is not an array");
    s.has_times = true;
    s.times_s.reserve(it->size());
    for (const Json& t : *it) {
      if (!t.is_number() || !std::isfinite(t.get<double>()) || t.get<double>() < 0)
        return NotASample(where, fmt::format("'times_s' holds {}, not a time in seconds", t.dump()));
      s.times_s.push_back(t.get<double>());
    }
  }
  return s;
}

// "alltoall", "alltoallv skewed".
std::string PointName(std::string_view collective, std::string_view pattern) {
  return pattern.empty() ? std::string(collective) : fmt::format("{} {}", collective, pattern);
}

// In ms, three significant digits (at least the units): 1.2345 s -> "1235",
// 0.1234 -> "123", 0.01234 -> "12.3", 0.0001234 -> "0.123", 1.19e-6 -> "0.00119".
std::string MsSignificant(double seconds) {
  const double ms = seconds * 1e3;
  if (!(ms > 0)) return "0";
  const int decimals = std::clamp(2 - static_cast<int>(std::floor(std::log10(ms))), 0, 6);
  return fmt::format("{:.{}f}", ms, decimals);
}

std::string Fraction(const std::optional<double>& f) { return f ? fmt::format("{:.2f}", *f) : std::string("-"); }

std::string Interval(const RatioInterval& r) { return fmt::format("[{:.2f}, {:.2f}]", r.lo, r.hi); }

std::string VerdictText(const CompareRow& row) {
  switch (row.verdict) {
    case Verdict::kSameAlgorithm:
      // Never a speedup: both sides ran Open MPI's collective.
      return fmt::format("same algorithm: ratio {:.2f} {}{}", row.ratio.estimate, Interval(row.ratio),
                         row.difference == Difference::kNoDifference ? "" : " != 1");
    case Verdict::kNoDifference:
      return fmt::format("no difference {:.2f}x {}", row.ratio.estimate, Interval(row.ratio));
    case Verdict::kSpeedup:
      return fmt::format("speedup {:.2f}x {}", row.ratio.estimate, Interval(row.ratio));
    case Verdict::kSlower:
      return fmt::format("slower {:.2f}x {}", row.ratio.estimate, Interval(row.ratio));
  }
  return "";
}

OrderedJson SideJson(const CompareSide& s) {
  OrderedJson j;
  j["label"] = s.label;
  j["calls"] = s.summary.calls;
  j["mean_s"] = s.summary.mean;
  j["median_s"] = s.summary.median;
  j["p95_s"] = s.summary.p95;
  j["fraction_of_bound"] = s.fraction_of_bound ? Json(*s.fraction_of_bound) : Json(nullptr);
  return j;
}

}  // namespace

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kSameAlgorithm:
      return "same algorithm";
    case Verdict::kNoDifference:
      return "no difference";
    case Verdict::kSpeedup:
      return "speedup";
    case Verdict::kSlower:
      return "slower";
  }
  return "no difference";
}

StatusOr<std::vector<BenchSample>> ParseBenchSamples(std::string_view text, const std::string& source) {
  std::vector<BenchSample> out;
  size_t line_no = 0;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string where = fmt::format("{}:{}", source, line_no);
    Json j;
    try {
      j = Json::parse(line);
    } catch (const Json::exception& e) {
      return Status::InvalidArgument(fmt::format("{}: not JSON: {}", where, JsonMessage(e)));
    }
    auto sample = SampleFromJson(j, where);
    if (!sample.ok()) return sample.status();
    out.push_back(std::move(sample).value());
  }
  return out;
}

StatusOr<LibraryStats> ParseLibraryStats(std::string_view text, const std::string& source) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument(fmt::format("{}: not a TOPOTUNE_STATS_FILE of libtopotune-mpi.so: {}", source, why));
  };
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    return bad(fmt::format("not JSON: {}", JsonMessage(e)));
  }
  if (!j.is_object()) return bad("not a JSON object");
  auto stats = j.find("stats");
  if (stats == j.end() || !stats->is_array()) return bad("no 'stats' list");
  LibraryStats out;
  out.source = source;
  if (auto plan = j.find("plan"); plan != j.end() && plan->is_object()) {
    out.plan_status = plan->value("status", "");
    out.plan_reason = plan->value("reason", "");
    if (auto id = plan->find("plan_id"); id != plan->end())
      out.plan_id = id->is_string() ? id->get<std::string>() : id->dump();
    if (auto v = plan->find("topology_version"); v != plan->end() && WholeNumber(*v))
      out.topology_version = *WholeNumber(*v);
  }
  if (auto n = j.find("nprocs"); n != j.end() && WholeNumber(*n)) out.nprocs = static_cast<int>(*WholeNumber(*n));
  for (size_t i = 0; i < stats->size(); ++i) {
    const Json& e = (*stats)[i];
    LibraryStats::Entry entry;
    auto msize = e.is_object() && e.contains("msize") ? WholeNumber(e["msize"]) : std::nullopt;
    if (!e.is_object() || !e.contains("collective") || !e["collective"].is_string() || !e.contains("algorithm") ||
        !e["algorithm"].is_string() || !msize)
      return bad(fmt::format("stats[{}] lacks collective, algorithm or msize", i));
    entry.collective = e["collective"].get<std::string>();
    entry.algorithm = e["algorithm"].get<std::string>();
    entry.msize = *msize;
    if (auto c = e.find("calls"); c != e.end() && WholeNumber(*c)) entry.calls = *WholeNumber(*c);
    if (auto f = e.find("fallbacks"); f != e.end() && WholeNumber(*f)) entry.fallbacks = *WholeNumber(*f);
    out.entries.push_back(std::move(entry));
  }
  return out;
}

StatusOr<std::vector<CompareRow>> CompareSamples(const std::vector<BenchSample>& samples, const LibraryStats* stats,
                                                 const CompareOptions& options) {
  // The labels found, in order of appearance, for the error message.
  std::vector<std::string> labels;
  for (const BenchSample& s : samples)
    if (std::find(labels.begin(), labels.end(), s.label) == labels.end()) labels.push_back(s.label);
  std::vector<std::string> missing;
  for (const std::string& label : {options.baseline, options.candidate})
    if (std::find(labels.begin(), labels.end(), label) == labels.end()) missing.push_back("'" + label + "'");
  if (!missing.empty()) {
    return Status::NotFound(fmt::format(
        "no samples labelled {}; labels found: {}; pick two with --baseline and --candidate",
        fmt::join(missing, " or "), labels.empty() ? std::string("none") : fmt::format("{}", fmt::join(labels, ", "))));
  }

  // Pool each side's calls per point. Points keep the order in which their
  // collective and pattern first appear, then ranks and size.
  using Key = std::tuple<size_t, int, int64_t>;  // (collective+pattern index, nprocs, msize)
  struct Pool {
    std::vector<double> times;
    std::optional<double> bound_s;
    bool interleaved = true;
  };
  std::vector<std::pair<std::string, std::string>> groups;  // (collective, pattern)
  std::map<Key, Pool> pools[2];
  for (const BenchSample& s : samples) {
    const int side = s.label == options.baseline ? 0 : s.label == options.candidate ? 1 : -1;
    if (side < 0) continue;
    const std::string what = fmt::format("the '{}' sample of {} at {}", s.label, PointName(s.collective, s.pattern),
                                         FormatBytes(static_cast<double>(s.msize)));
    if (!s.has_times)
      return Status::InvalidArgument(
          fmt::format("{}: {} has no times_s (every call's time): run topotune-bench with --times", s.source, what));
    if (s.times_s.empty()) return Status::InvalidArgument(fmt::format("{}: {} has no timed calls", s.source, what));
    auto group = std::make_pair(s.collective, s.pattern);
    auto at = std::find(groups.begin(), groups.end(), group);
    if (at == groups.end()) at = groups.insert(groups.end(), group);
    Pool& pool = pools[side][Key{static_cast<size_t>(at - groups.begin()), s.nprocs, s.msize}];
    pool.times.insert(pool.times.end(), s.times_s.begin(), s.times_s.end());
    if (!pool.bound_s) pool.bound_s = s.bound_s;
    pool.interleaved = pool.interleaved && s.interleaved;
  }

  std::vector<CompareRow> rows;
  for (const auto& [key, base] : pools[0]) {
    auto cand = pools[1].find(key);
    if (cand == pools[1].end()) continue;
    CompareRow row;
    const auto& [group, nprocs, msize] = key;
    row.collective = groups[group].first;
    row.pattern = groups[group].second;
    row.nprocs = nprocs;
    row.msize = msize;
    row.bound_s = base.bound_s ? base.bound_s : cand->second.bound_s;
    row.interleaved = base.interleaved && cand->second.interleaved;
    row.baseline.label = options.baseline;
    row.candidate.label = options.candidate;
    row.baseline.summary = SummarizeTimes(base.times);
    row.candidate.summary = SummarizeTimes(cand->second.times);
    for (CompareSide* side : {&row.baseline, &row.candidate}) {
      if (!(side->summary.mean > 0))
        return Status::InvalidArgument(fmt::format("every call of '{}' at {} {} took 0 s: no ratio to take",
                                                   side->label, PointName(row.collective, row.pattern),
                                                   FormatBytes(static_cast<double>(msize))));
      if (row.bound_s) side->fraction_of_bound = *row.bound_s / side->summary.mean;
    }
    row.ratio =
        RatioOfMeans(base.times, cand->second.times,
                     ComparisonSeed(options.seed, row.collective + options.candidate, static_cast<double>(msize)));
    Difference d = Compare(row.ratio, options.margin);
    // The bootstrap interval is overconfident when a rare stall fell on one
    // side only; a difference stands only where the permutation test agrees
    // at the interval's level (one-sided 2.5 %, stats.h).
    const uint64_t test_seed =
        ComparisonSeed(options.seed + 1, row.collective + options.candidate, static_cast<double>(msize));
    if (d == Difference::kSlower &&
        PermutationPLess(cand->second.times, 1 + options.margin, base.times, test_seed) >= 0.025)
      d = Difference::kNoDifference;
    if (d == Difference::kFaster &&
        PermutationPLess(base.times, 1 / (1 - options.margin), cand->second.times, test_seed) >= 0.025)
      d = Difference::kNoDifference;
    switch (d) {
      case Difference::kSlower:  // The baseline is slower: the candidate is faster.
        row.difference = Difference::kFaster;
        break;
      case Difference::kFaster:
        row.difference = Difference::kSlower;
        break;
      case Difference::kNoDifference:
        row.difference = Difference::kNoDifference;
        break;
    }
    rows.push_back(std::move(row));
  }
  if (rows.empty()) {
    return Status::NotFound(fmt::format("'{}' and '{}' were never measured at the same collective, ranks and size",
                                        options.baseline, options.candidate));
  }

  // What the library ran, from its statistics: each entry counts for the
  // rows of its collective (and job size) at the nearest size.
  if (stats != nullptr) {
    std::vector<std::map<std::string, int64_t>> ran(rows.size());
    auto distance = [](int64_t a, int64_t b) {
      return std::fabs(std::log(static_cast<double>(a + 1) / static_cast<double>(b + 1)));
    };
    for (const LibraryStats::Entry& e : stats->entries) {
      double best = std::log(2.0) + 1e-9;  // Within a factor of 2.
      for (const CompareRow& row : rows)
        if (row.collective == e.collective && (stats->nprocs == 0 || row.nprocs == stats->nprocs))
          best = std::min(best, distance(row.msize, e.msize));
      for (size_t i = 0; i < rows.size(); ++i) {
        const CompareRow& row = rows[i];
        if (row.collective == e.collective && (stats->nprocs == 0 || row.nprocs == stats->nprocs) &&
            distance(row.msize, e.msize) <= best)
          ran[i][e.algorithm] += e.calls;
      }
    }
    for (size_t i = 0; i < rows.size(); ++i) {
      std::vector<std::pair<std::string, int64_t>> by_calls(ran[i].begin(), ran[i].end());
      std::stable_sort(by_calls.begin(), by_calls.end(),
                       [](const auto& a, const auto& b) { return a.second > b.second; });
      for (const auto& entry : by_calls) rows[i].algorithms.push_back(entry.first);
    }
  }

  for (CompareRow& row : rows) {
    row.same_algorithm = options.same_algorithm || (row.algorithms.size() == 1 && row.algorithms.front() == "native");
    if (row.same_algorithm)
      row.verdict = Verdict::kSameAlgorithm;
    else if (row.difference == Difference::kFaster)
      row.verdict = Verdict::kSpeedup;
    else if (row.difference == Difference::kSlower)
      row.verdict = Verdict::kSlower;
    else
      row.verdict = Verdict::kNoDifference;
  }
  return rows;
}

std::string FormatCompareTable(const std::vector<CompareRow>& rows, const CompareOptions& options,
                               const LibraryStats* stats) {
  std::set<int> nprocs;
  for (const CompareRow& row : rows) nprocs.insert(row.nprocs);
  // Columns: 0 collective, 1 size, 2 bound | 3-6 baseline | 7-10 candidate | 11 ran, 12 verdict.
  constexpr size_t kColumns = 13;
  std::vector<std::array<std::string, kColumns>> cells;
  cells.push_back({"collective", "size", "bound", "mean", "median", "p95", "of bound", "mean", "median", "p95",
                   "of bound", "ran", "verdict"});
  for (const CompareRow& row : rows) {
    std::string name = PointName(row.collective, row.pattern);
    if (nprocs.size() > 1) name += fmt::format(" x{}", row.nprocs);
    std::string ran = stats == nullptr         ? "?"
                      : row.algorithms.empty() ? "-"
                                               : fmt::format("{}", fmt::join(row.algorithms, ","));
    cells.push_back({name, FormatBytes(static_cast<double>(row.msize)), row.bound_s ? MsSignificant(*row.bound_s) : "-",
                     MsSignificant(row.baseline.summary.mean), MsSignificant(row.baseline.summary.median),
                     MsSignificant(row.baseline.summary.p95), Fraction(row.baseline.fraction_of_bound),
                     MsSignificant(row.candidate.summary.mean), MsSignificant(row.candidate.summary.median),
                     MsSignificant(row.candidate.summary.p95), Fraction(row.candidate.fraction_of_bound), ran,
                     VerdictText(row)});
  }
  std::array<size_t, kColumns> width{};
  for (const auto& line : cells)
    for (size_t c = 0; c < kColumns; ++c) width[c] = std::max(width[c], line[c].size());
  // The group headers must fit above their four columns.
  const std::string groups[2] = {options.baseline + " (ms)", options.candidate + " (ms)"};
  for (size_t g = 0; g < 2; ++g) {
    const size_t first = 3 + 4 * g;
    const size_t span = width[first] + width[first + 1] + width[first + 2] + width[first + 3] + 6;
    if (groups[g].size() > span) width[first] += groups[g].size() - span;
  }
  auto separator = [](size_t c) { return c == 3 || c == 7 || c == 11 ? " | " : "  "; };
  std::string out;
  // Group header line.
  {
    std::string line;
    for (size_t c = 0; c < 3; ++c) line += (c ? separator(c) : "") + std::string(width[c], ' ');
    for (size_t g = 0; g < 2; ++g) {
      const size_t first = 3 + 4 * g;
      const size_t span = width[first] + width[first + 1] + width[first + 2] + width[first + 3] + 6;
      line += separator(first) + fmt::format("{:^{}}", groups[g], span);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  for (const auto& line : cells) {
    std::string text;
    for (size_t c = 0; c < kColumns; ++c) {
      if (c) text += separator(c);
      const bool left = c == 0 || c >= 11;
      text += left ? fmt::format("{:<{}}", line[c], width[c]) : fmt::format("{:>{}}", line[c], width[c]);
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  }

  // The footer: how the numbers were made, and how to read the verdicts.
  size_t min_calls = SIZE_MAX, max_calls = 0, alternated = 0;
  bool aa_differs = false;
  for (const CompareRow& row : rows) {
    for (const CompareSide* s : {&row.baseline, &row.candidate}) {
      min_calls = std::min(min_calls, s->summary.calls);
      max_calls = std::max(max_calls, s->summary.calls);
    }
    alternated += row.interleaved;
    aa_differs = aa_differs || (row.same_algorithm && row.difference != Difference::kNoDifference);
  }
  const std::string calls =
      min_calls == max_calls ? fmt::format("{}", min_calls) : fmt::format("{} to {}", min_calls, max_calls);
  // Each footer line stays under 110 columns for the usual labels.
  out += "\n";
  out +=
      fmt::format("mean, median and p95 of {} calls per side{}, in ms; each call lasts as long as its slowest rank\n",
                  calls, nprocs.size() == 1 && *nprocs.begin() > 0 ? fmt::format(" on {} ranks", *nprocs.begin()) : "");
  out += "bound: the physical lower bound of one call; of bound: bound / mean (1.00 is the physical limit)\n";
  out += fmt::format("speedup: mean({}) / mean({}) with its 95 % bootstrap interval (seed {})\n", options.baseline,
                     options.candidate, options.seed);
  out += options.margin > 0
             ? fmt::format("no difference: the interval reaches within {:g} % of 1 (--margin)\n", options.margin * 100)
             : "no difference: the interval includes 1\n";
  if (alternated == rows.size())
    out += "the two sides alternated call by call, in a fresh random order each round (topotune-bench --interleave)\n";
  else if (alternated == 0)
    out +=
        "the two sides were timed one after the other at each size, not alternated call by call\n"
        "(topotune-bench --interleave alternates them)\n";
  else
    out += fmt::format("the two sides alternated call by call at {} of {} points (topotune-bench --interleave)\n",
                       alternated, rows.size());
  if (stats == nullptr) {
    out += "ran: unknown without --stats (the library's TOPOTUNE_STATS_FILE)\n";
    if (options.same_algorithm) out += "same algorithm (--same-algorithm): every ratio is a noise check\n";
  } else {
    int64_t fallbacks = 0;
    for (const LibraryStats::Entry& e : stats->entries) fallbacks += e.fallbacks;
    const std::string plan =
        stats->plan_status == "ok" || stats->plan_status.empty()
            ? fmt::format("plan {}, topology version {}", stats->plan_id.empty() ? "?" : stats->plan_id,
                          stats->topology_version)
            : fmt::format("no plan: {}", stats->plan_reason.empty() ? stats->plan_status : stats->plan_reason);
    out += fmt::format("ran: what libtopotune-mpi.so ran at that size, from {} ({}; {} fallback{})\n", stats->source,
                       plan, fallbacks, fallbacks == 1 ? "" : "s");
    out +=
        "same algorithm: the library ran native, Open MPI's own collective, like the baseline;\n"
        "  its ratio is a noise check, not a speedup\n";
  }
  if (aa_differs)
    out +=
        "'!= 1': the interval excludes 1 although both sides ran the same algorithm: noise the interval\n"
        "  does not capture (drift, stalls), or the library's own cost\n";
  return out;
}

std::string FormatCompareJson(const std::vector<CompareRow>& rows) {
  std::string out;
  for (const CompareRow& row : rows) {
    OrderedJson j;
    j["collective"] = row.collective;
    j["pattern"] = row.pattern.empty() ? Json(nullptr) : Json(row.pattern);
    j["nprocs"] = row.nprocs;
    j["msize"] = row.msize;
    j["bound_s"] = row.bound_s ? Json(*row.bound_s) : Json(nullptr);
    j["baseline"] = SideJson(row.baseline);
    j["candidate"] = SideJson(row.candidate);
    j["algorithms"] = row.algorithms;
    j["same_algorithm"] = row.same_algorithm;
    j["ratio"] = row.ratio.estimate;
    j["ratio_lo"] = row.ratio.lo;
    j["ratio_hi"] = row.ratio.hi;
    j["verdict"] = std::string(VerdictName(row.verdict));
    j["differs"] = row.difference != Difference::kNoDifference;
    j["alternated"] = row.interleaved;
    out += j.dump() + "\n";
  }
  return out;
}

void AddCompareCommand(CLI::App& app, CompareArgs* args) {
  CLI::App* cmd = app.add_subcommand("compare", "Compare two labels of topotune-bench samples, with 95 % intervals");
  args->command = cmd;
  args->description =
      "Reads JSON Lines written by 'topotune-bench --times' and puts two labels side by side, point by point\n"
      "(collective, alltoallv pattern, ranks, message size): by default Open MPI's own collective\n"
      "(ompi:default, topotune-bench --label-native) against what libtopotune-mpi.so serves (topotune:tuned,\n"
      "--via-mpi). For each side it prints the mean, median and p95 call over every timed call (times_s;\n"
      "samples of one label at one point, e.g. from several files, are pooled) and the fraction of the\n"
      "physical bound (bound / mean), then a verdict on the speedup mean(baseline) / mean(candidate) and\n"
      "its 95 % bootstrap interval (tuner/stats.h; --seed makes it reproducible):\n"
      "  same algorithm  --stats says the library ran only native there, Open MPI's own collective, as the\n"
      "                  baseline does (or --same-algorithm says so everywhere): the ratio is a noise check;\n"
      "                  '!= 1' marks a check whose interval excludes 1\n"
      "  no difference   the interval reaches 1 (or within --margin of it)\n"
      "  speedup         the interval lies above 1 + margin: 'speedup 1.23x [1.10, 1.35]'\n"
      "  slower          the interval lies below 1 - margin: 'slower 0.80x [0.70, 0.90]'\n"
      "Means, because an application pays the mean call, stalls included. Time the two sides in one job with\n"
      "topotune-bench --interleave, so that they alternate call by call and drift hits both alike; the\n"
      "footer says whether they did.\n"
      "\n"
      "--stats reads the TOPOTUNE_STATS_FILE that libtopotune-mpi.so wrote in the same job (rank 0's): the\n"
      "'ran' column lists the algorithms it ran at each size, most calls first ('-': none recorded there;\n"
      "'?': no --stats).\n"
      "\n"
      "--format json prints one object per point and line: collective, pattern (null unless alltoallv),\n"
      "nprocs, msize, bound_s, baseline and candidate {label, calls, mean_s, median_s, p95_s,\n"
      "fraction_of_bound}, algorithms, same_algorithm, ratio, ratio_lo, ratio_hi, verdict ('same algorithm',\n"
      "'no difference', 'speedup', 'slower'), differs (the interval excludes 1 beyond the margin, whatever\n"
      "the verdict), alternated.\n";
  cmd->add_option("FILE", args->files, "topotune-bench JSON Lines (--times)")->required()->type_name("");
  cmd->add_option("--baseline", args->options.baseline, "The label to compare against")
      ->type_name("LABEL")
      ->capture_default_str();
  cmd->add_option("--candidate", args->options.candidate, "The label judged against the baseline")
      ->type_name("LABEL")
      ->capture_default_str();
  cmd->add_option("--stats", args->stats_file, "libtopotune-mpi.so's TOPOTUNE_STATS_FILE of the same job")
      ->type_name("FILE");
  cmd->add_flag("--same-algorithm", args->options.same_algorithm,
                "Both sides run one algorithm (an A/A check): every point is a noise check");
  cmd->add_option("--margin", args->options.margin, "Relative differences below this count as none (0.02: 2 %)")
      ->option_text("FRACTION (default 0)")
      ->check(CLI::Range(0.0, 0.5));
  cmd->add_option("--seed", args->options.seed, "Seed of the bootstrap resampling")
      ->type_name("N")
      ->capture_default_str();
  cmd->add_option("--format", args->format, "Output format: table (default) or json (one object per line)")
      ->option_text("table|json")
      ->check(CLI::IsMember({"table", "json"}));
  cmd->footer(
      "EXIT STATUS\n"
      "  0  success\n"
      "  1  bad input: a missing file, a line that is not a topotune-bench sample (file and line named), a\n"
      "     compared sample without times_s (run topotune-bench with --times), a label with no samples (the\n"
      "     labels found are listed), no point where both labels were measured\n"
      "  2  usage error\n"
      "\n"
      "EXAMPLES\n"
      "  topotune compare --stats a2a.stats.json a2a.jsonl\n"
      "  topotune compare --baseline ompi:default --candidate tree_scheduled --margin 0.02 kernels.jsonl\n"
      "  topotune compare --baseline ompi:default --candidate native:aa --same-algorithm aa.jsonl\n"
      "  topotune compare --format json --stats a2a.stats.json a2a.jsonl | jq -r .verdict\n"
      "  # a2a.jsonl and a2a.stats.json from one job, the two sides alternated call by call:\n"
      "  mpirun -x LD_PRELOAD=libtopotune-mpi.so -x TOPOTUNE_SERVER=head01:50051 \\\n"
      "      -x TOPOTUNE_STATS_FILE=a2a.stats.json -np 8 topotune-bench --collective alltoall \\\n"
      "      --algorithms native --label-native ompi:default --via-mpi topotune:tuned \\\n"
      "      --interleave --iterations 30 --times --out a2a.jsonl\n");
}

int RunCompare(const CompareArgs& args, std::ostream& out, std::ostream& err) {
  if (args.options.baseline == args.options.candidate) {
    err << fmt::format(
        "topotune: --baseline and --candidate are both '{}'; give two labels\nRun 'topotune compare --help' for "
        "usage.\n",
        args.options.baseline);
    return kExitUsage;
  }
  std::vector<BenchSample> samples;
  for (const std::string& path : args.files) {
    auto text = ReadWholeFile(path, "the benchmark samples");
    if (!text.ok()) return Fail(err, text.status().message());
    auto parsed = ParseBenchSamples(*text, path);
    if (!parsed.ok()) return Fail(err, parsed.status().message());
    samples.insert(samples.end(), std::make_move_iterator(parsed->begin()), std::make_move_iterator(parsed->end()));
  }
  std::optional<LibraryStats> stats;
  if (!args.stats_file.empty()) {
    auto text = ReadWholeFile(args.stats_file, "the library's statistics (--stats)");
    if (!text.ok()) return Fail(err, text.status().message());
    auto parsed = ParseLibraryStats(*text, args.stats_file);
    if (!parsed.ok()) return Fail(err, parsed.status().message());
    stats = std::move(parsed).value();
  }
  const LibraryStats* stats_ptr = stats ? &*stats : nullptr;
  auto rows = CompareSamples(samples, stats_ptr, args.options);
  if (!rows.ok()) return Fail(err, rows.status().message());
  out << (args.format == "json" ? FormatCompareJson(*rows) : FormatCompareTable(*rows, args.options, stats_ptr));
  return kExitOk;
}

}  // namespace topotune::cli
