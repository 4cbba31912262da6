// Text renderings of topotuned's answers (server_render.h).
#include "daemon/cli/server_render.h"

#include <fmt/format.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/time_util.h>

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "daemon/cli/cli.h"
#include "proto/names.h"
#include "tuner/crossover.h"
#include "tuner/topology.h"

namespace topotune::cli {
namespace {

std::string CollectiveLabel(v1::Collective c) {
  std::string_view name = v1::CollectiveName(c);
  return name.empty() ? fmt::format("collective {}", static_cast<int>(c)) : std::string(name);
}

// "16 ranks, 2 per node".
std::string Layout(int64_t nprocs, int64_t ranks_per_node) {
  return fmt::format("{}, {} per node", Plural(nprocs, "rank", "ranks"), ranks_per_node);
}

// Rows of cells as left-aligned columns two spaces apart, each line indented
// and without trailing blanks.
std::string Columns(const std::vector<std::vector<std::string>>& rows, int indent) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line(static_cast<size_t>(indent), ' ');
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

// The longest prefix of `s` of at most `n` bytes that does not cut a UTF-8
// sequence.
std::string_view Utf8Prefix(std::string_view s, size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

}  // namespace

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = false;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string out;
  auto status = google::protobuf::util::MessageToJsonString(message, &out, options);
  // Only a message with an Any of an unknown type fails; topotune.v1 has none.
  if (!status.ok()) return fmt::format("{{\"error\":\"{}\"}}\n", status.ToString());
  return out + "\n";
}

std::string FormatTimestamp(const google::protobuf::Timestamp& t) {
  if (t.seconds() == 0 && t.nanos() == 0) return "-";
  if (t.seconds() < google::protobuf::util::TimeUtil::kTimestampMinSeconds ||
      t.seconds() > google::protobuf::util::TimeUtil::kTimestampMaxSeconds || t.nanos() < 0 || t.nanos() > 999999999) {
    return fmt::format("(invalid time {}s {}ns)", t.seconds(), t.nanos());
  }
  return google::protobuf::util::TimeUtil::ToString(t);
}

std::string TuningStateName(v1::TuningState state) {
  switch (state) {
    case v1::TUNING_STATE_QUEUED:
      return "queued";
    case v1::TUNING_STATE_RUNNING:
      return "running";
    case v1::TUNING_STATE_SUCCEEDED:
      return "succeeded";
    case v1::TUNING_STATE_FAILED:
      return "failed";
    case v1::TUNING_STATE_CANCELLED:
      return "cancelled";
    default:
      return "unspecified";
  }
}

std::string FormatDecisionTable(const v1::DecisionTable& table, int indent) {
  std::vector<std::vector<std::string>> rows{{"message size", "algorithm"}};
  for (const v1::DecisionRange& r : table.ranges()) {
    std::string sizes = r.max_msize() == 0 ? fmt::format("{} and up", FormatBytes(static_cast<double>(r.min_msize())))
                                           : fmt::format("{} - {}", FormatBytes(static_cast<double>(r.min_msize())),
                                                         FormatBytes(static_cast<double>(r.max_msize())));
    rows.push_back({std::move(sizes), r.algorithm()});
  }
  if (table.ranges().empty()) rows.push_back({"(no ranges)", ""});
  return Columns(rows, indent);
}

namespace {

// "0.953 [0.912, 0.991]"
std::string FormatInterval(const v1::RatioInterval& r) {
  return fmt::format("{:.3f} [{:.3f}, {:.3f}]", r.estimate(), r.lo(), r.hi());
}

// Where the reference stays: the fastest other candidate and its interval.
std::string BestOther(const v1::SizeChoice& c) {
  if (c.chosen() != c.reference() || c.reference().empty()) return "-";
  for (const v1::CandidateStats& k : c.candidates())  // By mean.
    if (k.algorithm() != c.reference() && k.algorithm() != kAaControlLabel)
      return fmt::format("{} {}", k.algorithm(), FormatInterval(k.ratio()));
  return "-";
}

// Where a plan's table comes from, for FormatPlan.
std::string SourceText(v1::DecisionSource source, int tuned_nprocs, int tuned_ranks_per_node) {
  switch (source) {
    case v1::DECISION_SOURCE_TUNED:
      return fmt::format("tuned on this layout ({})", Layout(tuned_nprocs, tuned_ranks_per_node));
    case v1::DECISION_SOURCE_NEAREST:
      return fmt::format("nearest, tuned on {}", Layout(tuned_nprocs, tuned_ranks_per_node));
    case v1::DECISION_SOURCE_DEFAULT:
      return "default, nothing measured";
    case v1::DECISION_SOURCE_FORCED:
      return "forced by the job";
    default:
      return "source unspecified";
  }
}

}  // namespace

std::string FormatDecisions(const v1::ListDecisionsResponse& response) {
  // What production jobs learned where nothing (or another layout) was tuned.
  std::string learned;
  for (const v1::LearnedLayout& l : response.learned()) {
    learned += fmt::format("{}, {}: LEARNED in production jobs (in-job adaptation)\n", CollectiveLabel(l.collective()),
                           Layout(l.nprocs(), l.ranks_per_node()));
    std::vector<std::vector<std::string>> rows{{"size", "algorithm", "vs native", "jobs"}};
    for (const v1::LearnedChoice& c : l.choices())
      rows.push_back({"~" + FormatBytes(static_cast<double>(c.size_bucket())), c.algorithm(),
                      fmt::format("{:.3f}", c.ratio()), std::to_string(c.jobs())});
    learned += Columns(rows, 2);
  }
  if (response.decisions().empty()) return learned.empty() ? "no decisions\n" : learned;
  std::string out;
  bool first = true;
  for (const v1::Decision& d : response.decisions()) {
    if (!first) out += "\n";
    first = false;
    out += fmt::format("{}{}, {}, topology version {}: {}, updated {}\n", CollectiveLabel(d.collective()),
                       d.pattern() == v1::ALLTOALLV_PATTERN_UNSPECIFIED
                           ? std::string()
                           : fmt::format(" ({} pattern)", v1::PatternName(d.pattern())),
                       Layout(d.nprocs(), d.ranks_per_node()), d.topology_version(),
                       Plural(d.num_samples(), "sample", "samples"), FormatTimestamp(d.updated_at()));
    out += FormatDecisionTable(d.table(), 2);
    if (d.choices().empty()) continue;
    std::vector<std::vector<std::string>> rows{{"measured", "chosen", "mean", "median", "p95", "vs native",
                                                "best other", "calls", "A/A", "sampling", "tuned in"}};
    int noisy = 0;
    std::string left;  // Who left each size early, and why.
    for (const v1::SizeChoice& c : d.choices()) {
      noisy += c.noisy();
      const std::string size = FormatBytes(static_cast<double>(c.msize()));
      if (c.failed()) {
        rows.push_back({size, c.chosen() + " (failed)", "-", "-", "-", "-", "-", "-", "-", "-",
                        c.tuning_seconds() > 0 ? FormatSeconds(c.tuning_seconds()) : "-"});
        left += fmt::format("  {}: FAILED, {} runs there: {}\n", size, c.chosen(), c.failure());
        continue;
      }
      if (c.matrices() > 1)
        left += fmt::format("  {}: {} over {} size matrices, {:.3f} to {:.3f} of {}'s mean within one\n", size,
                            c.chosen(), c.matrices(), c.matrix_ratio_min(), c.matrix_ratio_max(), c.reference());
      for (const v1::CandidateStats& k : c.candidates())
        if (!k.dropped().empty())
          left += fmt::format("  {}: {} left after {}: {}\n", size, k.algorithm(), Plural(k.calls(), "call", "calls"),
                              k.dropped());
      rows.push_back({size, c.chosen(), c.chosen_mean_s() > 0 ? FormatSeconds(c.chosen_mean_s()) : "-",
                      FormatSeconds(c.chosen_median_s()), c.chosen_p95_s() > 0 ? FormatSeconds(c.chosen_p95_s()) : "-",
                      c.chosen() == c.reference() || c.reference().empty() ? "-" : FormatInterval(c.ratio()),
                      BestOther(c), c.calls() > 0 ? std::to_string(c.calls()) : "-",
                      !c.has_aa() ? "-" : (c.noisy() ? "NOISY " : "") + FormatInterval(c.aa()),
                      c.reference().empty() ? "-" : (c.settled() ? "settled" : "budget"),
                      c.tuning_seconds() > 0 ? FormatSeconds(c.tuning_seconds()) : "-"});
    }
    out += Columns(rows, 2);
    if (!left.empty())
      out +=
          "  left early (racing, the candidate time limit, a slow warm-up), failed, or over several matrices:\n" + left;
    if (noisy > 0)
      out += fmt::format(
          "  NOISY at {}: the A/A control (native measured twice) differed with confidence, so the run was too\n"
          "  noisy to trust these choices; tune again when the cluster is quiet\n",
          Plural(noisy, "size", "sizes"));
  }
  if (!out.empty())
    out +=
        "\nmean, median, p95: the chosen algorithm's time per call; vs native: its mean over native's with the 95 % "
        "interval;\nbest other: where native stays, the fastest other algorithm and its interval; A/A: native "
        "measured twice, whose\nratio must show no difference; sampling: settled (every interval excludes the "
        "margin) or budget (time ran out);\ntuned in: the wall time tuning spent at the size\n";
  if (!learned.empty()) out += "\n" + learned;
  return out;
}

std::string FormatPlan(const v1::GetPlanResponse& response) {
  std::string out;
  out +=
      fmt::format("plan {}: {} (at most {} per node), topology version {}\n",
                  response.plan_id().empty() ? "(no id)" : response.plan_id(),
                  Plural(response.nprocs(), "rank", "ranks"), response.ranks_per_node(), response.topology_version());
  for (const v1::CollectivePlan& p : response.plans()) {
    out += "\n";
    const std::string source = SourceText(p.source(), p.tuned_nprocs(), p.tuned_ranks_per_node());
    out += fmt::format("{}{}: {}\n", CollectiveLabel(p.collective()),
                       p.pattern_tables().empty() ? "" : " (uniform pattern)", source);
    out += FormatDecisionTable(p.table(), 2);
    for (const v1::PatternTable& t : p.pattern_tables()) {
      out += fmt::format("{} ({} pattern): {}\n", CollectiveLabel(p.collective()), v1::PatternName(t.pattern()),
                         SourceText(t.source(), t.tuned_nprocs(), t.tuned_ranks_per_node()));
      out += FormatDecisionTable(t.table(), 2);
    }
    for (const v1::CompiledSchedule& s : p.schedules()) {
      if (!s.omitted_reason().empty() || s.programs().empty()) {
        out += fmt::format("  schedule {}: {}, {}, bottleneck load {}, {}; programs omitted: {}\n", s.algorithm(),
                           Plural(s.num_ranks(), "rank", "ranks"), Plural(s.num_phases(), "phase", "phases"),
                           s.bottleneck_load(), Plural(s.num_syncs(), "sync", "syncs"),
                           s.omitted_reason().empty() ? "(no reason given)" : s.omitted_reason());
        continue;
      }
      int64_t steps = 0;
      for (const v1::RankProgram& program : s.programs()) steps += program.steps_size();
      out += fmt::format("  schedule {}: {}, {}, bottleneck load {}, {}, {} in {}\n", s.algorithm(),
                         Plural(s.num_ranks(), "rank", "ranks"), Plural(s.num_phases(), "phase", "phases"),
                         s.bottleneck_load(), Plural(s.num_syncs(), "sync", "syncs"), Plural(steps, "step", "steps"),
                         Plural(s.programs_size(), "program", "programs"));
    }
    if (p.has_ring() && !p.ring().order().empty()) {
      int switches = 0;
      for (int sw : p.ring().switch_of_rank()) switches = std::max(switches, sw + 1);
      out += fmt::format("  ring order: {} over {}\n", Plural(p.ring().order_size(), "rank", "ranks"),
                         Plural(switches, "switch", "switches"));
    }
  }
  return out;
}

std::string FormatTopologyHeader(const v1::GetTopologyResponse& r) {
  std::string origin;
  switch (r.origin()) {
    case v1::TOPOLOGY_ORIGIN_FILE:
      origin = "file";
      break;
    case v1::TOPOLOGY_ORIGIN_DISCOVERY:
      origin = "discovery";
      break;
    default:
      origin = "unknown origin";
      break;
  }
  std::string source = r.source().empty() ? "" : fmt::format(" ({})", r.source());
  return fmt::format("topology version {} from {}{}, {}: {}, {}, {}\n", r.version(), origin, source,
                     FormatTimestamp(r.discovered_at()), Plural(r.num_switches(), "switch", "switches"),
                     Plural(r.num_hosts(), "host", "hosts"), Plural(r.num_links(), "link", "links"));
}

std::string FormatDiscoverResult(const v1::DiscoverResponse& r) {
  return Columns({{"topology version",
                   fmt::format("{} ({})", r.topology_version(), r.changed() ? "new: the tree changed" : "unchanged")},
                  {"switches walked", fmt::format("{}", r.switches_walked())},
                  {"hosts found", fmt::format("{}", r.hosts_found())},
                  {"warnings", fmt::format("{}", r.warnings_size())},
                  {"finished", FormatTimestamp(r.discovered_at())}},
                 0);
}

std::string FormatTuningStatus(const v1::TuningStatusResponse& s) {
  std::string out = fmt::format("tuning {}: {}\n", s.tuning_id(), TuningStateName(s.state()));
  out += Columns({{"runs", fmt::format("{}/{}", s.runs_done(), s.runs_total())},
                  {"samples", fmt::format("{}", s.samples_ingested())},
                  {"message", s.message().empty() ? "-" : s.message()},
                  {"created", FormatTimestamp(s.created_at())},
                  {"started", FormatTimestamp(s.started_at())},
                  {"finished", FormatTimestamp(s.finished_at())}},
                 2);
  for (const std::string& c : s.covered()) out += "  covered: " + c + "\n";
  for (const std::string& l : s.left_out()) out += "  left out: " + l + "\n";
  return out;
}

std::string ProgressLine(const v1::TuningStatusResponse& s, size_t max_width) {
  constexpr int kBarWidth = 24;
  const int64_t total = std::max(0, s.runs_total());
  const int64_t done = std::clamp<int64_t>(s.runs_done(), 0, total);
  const int64_t filled = total == 0 ? 0 : done * kBarWidth / total;
  std::string bar = std::string(static_cast<size_t>(filled), '#') + std::string(kBarWidth - filled, '.');
  std::string line = fmt::format("{:<9} [{}] {}/{} runs  {}", TuningStateName(s.state()), bar, s.runs_done(),
                                 s.runs_total(), Plural(s.samples_ingested(), "sample", "samples"));
  if (s.message().empty()) return line;
  // Control characters in the message would break a line redrawn with '\r'.
  std::string message = s.message();
  for (char& c : message) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = ' ';
  }
  constexpr std::string_view kGap = "  ", kEllipsis = "...";
  if (line.size() + kGap.size() + message.size() <= max_width) return line + std::string(kGap) + message;
  if (line.size() + kGap.size() + kEllipsis.size() + 1 > max_width) return line;
  size_t room = max_width - line.size() - kGap.size() - kEllipsis.size();
  return line + std::string(kGap) + std::string(Utf8Prefix(message, room)) + std::string(kEllipsis);
}

namespace {

std::string DemandStatusText(const v1::DemandCell& c) {
  switch (c.status()) {
    case v1::DEMAND_STATUS_TUNED:
      return "tuned";
    case v1::DEMAND_STATUS_OTHER_SIZES:
      return "layout tuned, not this size";
    case v1::DEMAND_STATUS_NEAREST:
      return fmt::format("nearest: {} x {} (distance {:.2f})", c.tuned_nprocs(), c.tuned_ranks_per_node(),
                         c.distance());
    case v1::DEMAND_STATUS_DEFAULT:
      return "not tuned (native)";
    default:
      return "unspecified";
  }
}

std::string Percent(double part, double whole) { return whole > 0 ? fmt::format("{:.0f}%", 100 * part / whole) : "-"; }

}  // namespace

std::string FormatDemand(const v1::ListDemandResponse& r) {
  const double days = static_cast<double>(r.window().seconds()) / 86400;
  std::string out = fmt::format(
      "Demand of the last {} (topology version {}): {}, {} in collectives, {} on tuned tables; {} at stake "
      "(cells not tuned now)\n",
      days >= 1                      ? fmt::format("{:g} days", days)
      : r.window().seconds() >= 3600 ? fmt::format("{:g} h", static_cast<double>(r.window().seconds()) / 3600)
                                     : fmt::format("{} s", r.window().seconds()),
      r.topology_version(), Plural(r.jobs(), "job", "jobs"), FormatSeconds(r.seconds()),
      Percent(r.tuned_seconds(), r.seconds()), FormatSeconds(r.seconds_at_stake()));
  if (r.cells().empty()) return out + "  no job reported calls in this window\n";
  std::vector<std::vector<std::string>> rows{{"collective", "layout", "size", "class", "calls", "jobs", "time",
                                              "tuned/nearest/default/forced", "spans", "now", "at stake"}};
  for (const v1::DemandCell& c : r.cells()) {
    const double t = c.seconds();
    rows.push_back({CollectiveLabel(c.collective()), fmt::format("{} x {}", c.nprocs(), c.ranks_per_node()),
                    fmt::format("~{} (mean {})", FormatBytes(static_cast<double>(c.size_bucket())),
                                FormatBytes(static_cast<double>(c.mean_msize()))),
                    c.collective() == v1::COLLECTIVE_ALLTOALLV ? std::string(v1::PatternName(c.pattern())) : "-",
                    fmt::format("{}", c.calls()), fmt::format("{}", c.jobs()), FormatSeconds(t),
                    fmt::format("{}/{}/{}/{}", Percent(c.tuned_seconds(), t), Percent(c.nearest_seconds(), t),
                                Percent(c.default_seconds(), t), Percent(c.forced_seconds(), t)),
                    c.hosts() > 0
                        ? fmt::format("{} hosts, {}", c.hosts(),
                                      c.switches() > 0 ? Plural(c.switches(), "switch", "switches") : "switches ?")
                        : "-",
                    DemandStatusText(c), FormatSeconds(c.seconds_at_stake())});
  }
  out += Columns(rows, 2);
  if (r.num_cells() > r.cells_size())
    out += fmt::format("  ... {} more cells (--limit)\n", r.num_cells() - r.cells_size());
  return out;
}

}  // namespace topotune::cli
