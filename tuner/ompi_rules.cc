#include "tuner/ompi_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <span>

#include "tuner/topology.h"

namespace topotune {
namespace {

constexpr std::string_view kOmpiPrefix = "ompi:";
// Open MPI reads classic sizes with %li; 2^62 leaves room below LONG_MAX.
constexpr double kMaxOmpiMsize = 4611686018427387904.0;

// One coll/tuned algorithm, as coll_tuned_<collective>_decision.c lists it
// (the enumerator values of coll_tuned_<collective>_algorithm).
struct OmpiAlgorithm {
  std::string_view name;
  int id;
  // FANINOUT written with it. Open MPI 6 runs allgather id 2 as a k-ary
  // Bruck with k = FANINOUT, where 0 never terminates; its fixed decision
  // passes 2, the classic Bruck that 4.1 and 5.0 run regardless.
  int faninout = 0;
  std::string_view since = {};  // Oldest Open MPI with this id; older ones fail the call (MPI_ERR_ARG).
  bool two_ranks_only = false;  // Fails the call on other communicator sizes.
};

constexpr OmpiAlgorithm kAllgather[] = {
    {"linear", 1},
    {"bruck", 2, 2},
    {"bruck-k-fanout", 2, 2},  // Open MPI 6's name for id 2.
    {"recursive_doubling", 3},
    {"ring", 4},
    {"neighbor", 5},
    {"two_proc", 6, 0, {}, true},
    {"sparbit", 7, 0, "5.0"},
    {"direct-messaging", 8, 0, "6.0"},
};
constexpr OmpiAlgorithm kAlltoall[] = {
    {"linear", 1}, {"pairwise", 2}, {"modified_bruck", 3}, {"linear_sync", 4}, {"two_proc", 5, 0, {}, true},
};
constexpr OmpiAlgorithm kAlltoallv[] = {{"basic_linear", 1}, {"pairwise", 2}};

struct OmpiCollective {
  std::string_view name;
  int id;  // COLLTYPE_T in ompi/mca/coll/base/coll_base_functions.h.
  // False for alltoallv: coll_tuned_decision_dynamic.c looks its rules up
  // with message size 0.
  bool has_msize;
  std::span<const OmpiAlgorithm> algorithms;
};

// Ordered by id, the order collectives appear in a file.
constexpr OmpiCollective kCollectives[] = {
    {"allgather", 0, true, kAllgather},
    {"alltoall", 3, true, kAlltoall},
    {"alltoallv", 4, false, kAlltoallv},
};

const OmpiCollective* FindCollective(std::string_view name) {
  for (const OmpiCollective& c : kCollectives)
    if (c.name == name) return &c;
  return nullptr;
}

const OmpiAlgorithm* FindAlgorithm(const OmpiCollective& c, std::string_view name) {
  for (const OmpiAlgorithm& a : c.algorithms)
    if (a.name == name) return &a;
  return nullptr;
}

std::string FormatEnd(double bytes) { return std::isinf(bytes) ? std::string("inf") : FormatBytes(bytes); }

std::string FormatRange(double lo, double hi) { return fmt::format("[{}, {})", FormatBytes(lo), FormatEnd(hi)); }

// A stretch of block sizes [lo, hi) (whole bytes; hi may be infinite) with
// one Open MPI algorithm id.
struct Segment {
  double lo = 0;
  double hi = 0;
  int alg = 0;
  int faninout = 0;
  bool two_ranks_only = false;
  std::string name;                  // The Open MPI algorithm; empty for 0.
  std::vector<std::string> origins;  // For 0: what topotune had there ("native", "tree_scheduled", "no decision").
};

std::string SegmentLabel(const Segment& s) {
  if (s.alg != 0) return s.name;
  std::string joined;
  for (const std::string& o : s.origins) joined += (joined.empty() ? "" : ", ") + o;
  return fmt::format("fixed decision ({})", joined);
}

// One rules-file rule.
struct Rule {
  int64_t msize = 0;  // Open MPI's message size.
  Segment segment;
};

// One set turned into rules.
struct SetRules {
  const OmpiCollective* collective = nullptr;
  const OmpiRuleSet* set = nullptr;
  std::vector<Rule> rules;
  bool uses_two_ranks_only = false;
};

Status CheckRanges(const OmpiRuleSet& set, const std::string& where) {
  TOPOTUNE_RETURN_IF_ERROR(CheckRuleSetRanges(set, where));
  for (size_t i = 0; i < set.table.size(); ++i) {
    const DecisionRange& r = set.table[i];
    if (std::ceil(r.min_msize) * set.comm_size > kMaxOmpiMsize)
      return Status::InvalidArgument(
          fmt::format("{}: range {} starts at {} bytes per block; times {} ranks that is "
                      "more than the 2^62 bytes a rules file can hold",
                      where, i + 1, r.min_msize, set.comm_size));
  }
  return Status::Ok();
}

// The set's table as segments of whole block sizes covering [0, inf), each
// with its Open MPI algorithm, adjacent equal ones merged.
StatusOr<std::vector<Segment>> BuildSegments(const OmpiRuleSet& set, const OmpiCollective& coll,
                                             const std::string& where, std::vector<std::string>* notes) {
  TOPOTUNE_RETURN_IF_ERROR(CheckRanges(set, where));
  std::vector<Segment> segments;
  auto add_gap = [&](double lo, double hi) {
    notes->push_back(
        fmt::format("{} {}: no decision; Open MPI's fixed decision is used there", where, FormatRange(lo, hi)));
    segments.push_back({lo, hi, 0, 0, false, "", {"no decision"}});
  };
  double cursor = 0;
  for (const DecisionRange& r : set.table) {
    // Block sizes are whole bytes: b >= min exactly when b >= ceil(min).
    const double lo = std::ceil(r.min_msize);
    const double hi = std::isinf(r.max_msize) ? r.max_msize : std::ceil(r.max_msize);
    const std::string& name = r.algorithm;
    const OmpiAlgorithm* a = nullptr;
    std::string_view ompi_name;
    if (name.starts_with(kOmpiPrefix)) {
      ompi_name = std::string_view(name).substr(kOmpiPrefix.size());
      a = FindAlgorithm(coll, ompi_name);
      if (a == nullptr) {
        std::string valid;
        for (const OmpiAlgorithm& v : coll.algorithms)
          valid += fmt::format("{}{}{}", valid.empty() ? "" : ", ", kOmpiPrefix, v.name);
        return Status::InvalidArgument(fmt::format("{} {}: unknown Open MPI {} algorithm '{}'; valid: native, {}",
                                                   where, FormatRange(lo, hi), coll.name, name, valid));
      }
      if (a->two_ranks_only && set.comm_size != 2)
        return Status::InvalidArgument(
            fmt::format("{} {}: {} only works on 2 ranks", where, FormatRange(lo, hi), name));
    }
    if (lo >= hi) continue;  // Holds no whole number of bytes.
    if (lo > cursor) add_gap(cursor, lo);
    Segment s{lo, hi, 0, 0, false, "", {}};
    if (a != nullptr) {
      if (!a->since.empty())
        notes->push_back(
            fmt::format("{} {}: {} ({}) exists in Open MPI {} and later only; older versions fail the call", where,
                        FormatRange(lo, hi), ompi_name, a->id, a->since));
      s.alg = a->id;
      s.faninout = a->faninout;
      s.two_ranks_only = a->two_ranks_only;
      s.name = std::string(ompi_name);
    } else if (name == "native") {
      s.origins.push_back(name);
    } else {
      notes->push_back(fmt::format(
          "{} {}: {} is a topotune algorithm; it needs libtopotune-mpi.so (the shim); Open MPI's fixed decision is "
          "used there",
          where, FormatRange(lo, hi), name));
      s.origins.push_back(name);
    }
    segments.push_back(std::move(s));
    cursor = hi;
  }
  if (!std::isinf(cursor)) add_gap(cursor, std::numeric_limits<double>::infinity());

  std::vector<Segment> merged = rules_detail::MergeAdjacent(
      std::move(segments), [](const Segment& a, const Segment& b) { return a.alg == b.alg; });

  if (!coll.has_msize && merged.size() > 1) {
    std::string table;
    for (const Segment& s : merged)
      table += fmt::format("{}{} {}", table.empty() ? "" : "; ", FormatRange(s.lo, s.hi), SegmentLabel(s));
    notes->push_back(fmt::format(
        "{}: the table changes algorithm with the message size ({}), but Open MPI chooses {} algorithms by "
        "communicator size only (its rules are looked up at message size 0); Open MPI's fixed decision is used",
        where, table, coll.name));
    merged = {Segment{0, std::numeric_limits<double>::infinity(), 0, 0, false, "", {"the table varies with size"}}};
  }
  return merged;
}

struct Collected {
  // Per collective (in id order), its sets in ascending communicator size.
  std::vector<std::vector<SetRules>> collectives;
  std::vector<std::string> notes;
};

StatusOr<Collected> Collect(const std::vector<OmpiRuleSet>& sets, OmpiRulesFormat format) {
  std::vector<const OmpiRuleSet*> order;
  for (const OmpiRuleSet& s : sets) {
    const OmpiCollective* coll = FindCollective(s.collective);
    if (coll == nullptr) {
      std::string valid;
      for (const OmpiCollective& c : kCollectives) valid += fmt::format("{}{}", valid.empty() ? "" : ", ", c.name);
      return Status::InvalidArgument(
          fmt::format("unknown collective '{}'; Open MPI rules can be written for: {}", s.collective, valid));
    }
    if (s.comm_size < 2)
      return Status::InvalidArgument(
          fmt::format("{} comm size {}: a communicator size is at least 2 (one rank uses coll/self, not coll/tuned)",
                      s.collective, s.comm_size));
    if (s.max_requests < 0)
      return Status::InvalidArgument(
          fmt::format("{} comm size {}: max_requests {} is negative", s.collective, s.comm_size, s.max_requests));
    if (s.max_requests != 0 && s.collective != "alltoall")
      return Status::InvalidArgument(fmt::format("{} comm size {}: max_requests applies to alltoall (linear_sync) only",
                                                 s.collective, s.comm_size));
    order.push_back(&s);
  }
  auto coll_id = [](const OmpiRuleSet* s) { return FindCollective(s->collective)->id; };
  std::stable_sort(order.begin(), order.end(), [&](const OmpiRuleSet* a, const OmpiRuleSet* b) {
    return std::pair(coll_id(a), a->comm_size) < std::pair(coll_id(b), b->comm_size);
  });

  Collected out;
  for (size_t i = 0; i < order.size(); ++i) {
    const OmpiRuleSet& set = *order[i];
    const OmpiCollective* coll = FindCollective(set.collective);
    const std::string where = fmt::format("{} comm size {}", set.collective, set.comm_size);
    if (i > 0 && order[i - 1]->collective == set.collective && order[i - 1]->comm_size == set.comm_size)
      return Status::InvalidArgument(where + ": given twice");
    auto segments = BuildSegments(set, *coll, where, &out.notes);
    if (!segments.ok()) return segments.status();
    if (format == OmpiRulesFormat::kClassicV1 && set.max_requests != 0)
      out.notes.push_back(
          fmt::format("{}: format 1 cannot hold max_requests {}; Open MPI uses 0 there (4.1.7 and older) or "
                      "coll_tuned_alltoall_algorithm_max_requests (4.1.8, 5.0.7 and later); formats 2 and 3 can",
                      where, set.max_requests));
    SetRules sr{coll, &set, {}, false};
    for (Segment& s : *segments) {
      sr.uses_two_ranks_only = sr.uses_two_ranks_only || s.two_ranks_only;
      const int64_t msize = coll->has_msize ? static_cast<int64_t>(s.lo) * set.comm_size : 0;
      sr.rules.push_back({msize, std::move(s)});
    }
    if (out.collectives.empty() || out.collectives.back().front().collective != coll) out.collectives.emplace_back();
    out.collectives.back().push_back(std::move(sr));
  }
  return out;
}

// two_proc on 2 ranks must not reach a communicator of 3 or more: when the
// next set listed is not for 3 ranks, those sizes get the fixed decision.
bool NeedsTwoRanksGuard(const std::vector<SetRules>& sets, size_t i) {
  return sets[i].uses_two_ranks_only && (i + 1 == sets.size() || sets[i + 1].set->comm_size != 3);
}

std::string GuardNote(const SetRules& s) {
  return fmt::format(
      "{} comm size 2: two_proc only works on 2 ranks, so communicators of 3 or more ranks without a table of their "
      "own get Open MPI's fixed decision",
      s.set->collective);
}

std::string Line(const std::string& data, const std::string& comment) {
  return fmt::format("{:<20} # {}\n", data, comment);
}

std::string ClassicText(const Collected& c, OmpiRulesFormat format, const std::vector<std::string>& notes) {
  const bool v2 = format == OmpiRulesFormat::kClassicV2;
  std::string t;
  // The version line must be the file's first bytes: Open MPI matches it
  // with fscanf before anything else.
  if (v2) t += "rule-file-version-2\n";
  t += "# Open MPI coll/tuned dynamic rules, written by topotune.\n";
  if (v2) {
    t += "# Format 2: read by Open MPI 4.1.8, 5.0.7 and later. Older versions (4.1.4 of Debian 12 among them)\n";
    t += "#   ignore this whole file without a message and keep their fixed decision: use format 1 there.\n";
  } else {
    t += "# Format 1 (no version line): read by Open MPI 4.1 and later.\n";
  }
  t += "# Use: mpirun --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename FILE ...\n";
  t += v2 ? "# A rule is MSGSIZE ALG FANINOUT SEGSIZE MAXREQ. MSGSIZE is Open MPI's message size: bytes per block\n"
          : "# A rule is MSGSIZE ALG FANINOUT SEGSIZE. MSGSIZE is Open MPI's message size: bytes per block\n";
  t += "#   times communicator size for alltoall and allgather; alltoallv always uses the rule at 0.\n";
  if (v2) t += "#   MAXREQ is alltoall linear_sync's limit of outstanding requests (0: none).\n";
  t += "# ALG 0 is Open MPI's fixed decision. Where topotune chose one of its own algorithms the rule is 0\n";
  t += "#   too: those algorithms need libtopotune-mpi.so (the shim).\n";
  t += "# A communicator size's rules apply up to the next size listed (the first's also below it). Each\n";
  t += "#   size N is listed as N and as N+1, because Open MPI 6 reads a size as the end of the range before it.\n";
  if (!notes.empty()) {
    t += "# Notes:\n";
    for (const std::string& n : notes) t += "#   - " + n + "\n";
  }
  t += Line(fmt::format("{}", c.collectives.size()), "number of collectives");
  static const std::vector<Rule> kGuard = {
      {0, Segment{0, std::numeric_limits<double>::infinity(), 0, 0, false, "", {"no two_proc on 3 or more ranks"}}}};
  for (const std::vector<SetRules>& sets : c.collectives) {
    struct Entry {
      int comm_size;
      const std::vector<Rule>* rules;
      int max_requests;
      std::string comment;
    };
    std::vector<Entry> entries;
    for (size_t i = 0; i < sets.size(); ++i) {
      const SetRules& s = sets[i];
      const int n = s.set->comm_size;
      const bool guard = NeedsTwoRanksGuard(sets, i);
      entries.push_back({n, &s.rules, s.set->max_requests, fmt::format("communicator size {}", n)});
      if (i + 1 < sets.size() || guard)
        entries.push_back(
            {n + 1, &s.rules, s.set->max_requests, fmt::format("communicator size {} again, for Open MPI 6", n)});
      if (guard) entries.push_back({3, &kGuard, 0, "communicator sizes 3 and up: no two_proc"});
    }
    const OmpiCollective& coll = *sets.front().collective;
    t += Line(fmt::format("{}", coll.id), fmt::format("collective id: {}", coll.name));
    t += Line(fmt::format("{}", entries.size()), "number of communicator sizes");
    for (const Entry& e : entries) {
      t += Line(fmt::format("{}", e.comm_size), e.comment);
      t += Line(fmt::format("{}", e.rules->size()), "number of rules");
      for (const Rule& r : *e.rules) {
        std::string data = fmt::format("{} {} {} 0", r.msize, r.segment.alg, r.segment.faninout);
        if (v2) data += fmt::format(" {}", e.max_requests);
        t += Line(data, fmt::format("block {}: {}", FormatRange(r.segment.lo, r.segment.hi), SegmentLabel(r.segment)));
      }
    }
  }
  return t;
}

std::string JsonText(const Collected& c) {
  using Json = nlohmann::ordered_json;
  Json collectives = Json::object();
  for (const std::vector<SetRules>& sets : c.collectives) {
    Json comm_rules = Json::array();
    for (size_t i = 0; i < sets.size(); ++i) {
      const SetRules& s = sets[i];
      Json comm_rule = Json::object();
      comm_rule["comm_size_min"] = i == 0 ? 0 : s.set->comm_size;
      // No comm_size_max on the last: Open MPI 6 stores "inf" in an int
      // (as -1), and an absent maximum is INT_MAX.
      if (NeedsTwoRanksGuard(sets, i))
        comm_rule["comm_size_max"] = s.set->comm_size;
      else if (i + 1 < sets.size())
        comm_rule["comm_size_max"] = sets[i + 1].set->comm_size - 1;
      Json rules = Json::array();
      for (size_t k = 0; k < s.rules.size(); ++k) {
        const Rule& r = s.rules[k];
        Json rule = Json::object();
        rule["msg_size_min"] = r.msize;
        if (k + 1 < s.rules.size())
          rule["msg_size_max"] = s.rules[k + 1].msize - 1;
        else
          rule["msg_size_max"] = "inf";
        rule["alg"] = r.segment.alg;
        if (r.segment.faninout != 0) rule["faninout"] = r.segment.faninout;
        if (s.set->max_requests != 0) rule["reqs"] = s.set->max_requests;
        rules.push_back(std::move(rule));
      }
      comm_rule["rules"] = std::move(rules);
      comm_rules.push_back(std::move(comm_rule));
    }
    collectives[std::string(sets.front().collective->name)] = std::move(comm_rules);
  }
  Json root = Json::object();
  root["rule_file_version"] = 3;
  root["module"] = "tuned";
  root["collectives"] = std::move(collectives);
  return root.dump(2) + "\n";
}

}  // namespace

Status CheckRuleSetRanges(const OmpiRuleSet& set, const std::string& where) {
  if (set.table.empty()) return Status::InvalidArgument(where + ": the decision table has no ranges");
  for (size_t i = 0; i < set.table.size(); ++i) {
    const DecisionRange& r = set.table[i];
    if (!std::isfinite(r.min_msize) || r.min_msize < 0)
      return Status::InvalidArgument(
          fmt::format("{}: range {} ({}) starts at {} bytes; a range starts at a finite size >= 0", where, i + 1,
                      r.algorithm, r.min_msize));
    if (!(r.max_msize > r.min_msize))
      return Status::InvalidArgument(
          fmt::format("{}: range {} ({}) [{}, {}) is empty", where, i + 1, r.algorithm, r.min_msize, r.max_msize));
    if (i > 0 && r.min_msize < set.table[i - 1].max_msize)
      return Status::InvalidArgument(fmt::format(
          "{}: range {} ({}) starts at {} bytes, before range {} ends at {}; ranges must ascend without overlapping",
          where, i + 1, r.algorithm, r.min_msize, i, set.table[i - 1].max_msize));
  }
  return Status::Ok();
}

StatusOr<OmpiRulesFormat> ParseOmpiRulesFormat(std::string_view name) {
  if (name == "1" || name == "classic") return OmpiRulesFormat::kClassicV1;
  if (name == "2") return OmpiRulesFormat::kClassicV2;
  if (name == "3" || name == "json") return OmpiRulesFormat::kJsonV3;
  return Status::InvalidArgument(
      fmt::format("unknown Open MPI rules format '{}'; valid: 1 (or classic), 2, 3 (or json)", name));
}

StatusOr<OmpiExport> ExportOmpiRules(const std::vector<OmpiRuleSet>& sets, OmpiRulesFormat format) {
  auto collected = Collect(sets, format);
  if (!collected.ok()) return collected.status();
  OmpiExport out;
  out.notes = std::move(collected->notes);
  for (const std::vector<SetRules>& coll_sets : collected->collectives)
    for (size_t i = 0; i < coll_sets.size(); ++i)
      if (NeedsTwoRanksGuard(coll_sets, i)) out.notes.push_back(GuardNote(coll_sets[i]));
  out.text = format == OmpiRulesFormat::kJsonV3 ? JsonText(*collected) : ClassicText(*collected, format, out.notes);
  return out;
}

std::optional<int> OmpiCollectiveId(std::string_view collective) {
  const OmpiCollective* c = FindCollective(collective);
  if (c == nullptr) return std::nullopt;
  return c->id;
}

std::optional<int> OmpiAlgorithmId(std::string_view collective, std::string_view algorithm) {
  const OmpiCollective* c = FindCollective(collective);
  if (c == nullptr) return std::nullopt;
  if (algorithm == "native") return 0;
  if (!algorithm.starts_with(kOmpiPrefix)) return std::nullopt;
  const OmpiAlgorithm* a = FindAlgorithm(*c, algorithm.substr(kOmpiPrefix.size()));
  if (a == nullptr) return std::nullopt;
  return a->id;
}

}  // namespace topotune
