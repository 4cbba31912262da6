// Validation of topotune.v1 requests (validate.h).
//
// Every Validate below is a list of checks in field order, one line per rule,
// built from the small Check* helpers of the anonymous namespace, so that the
// rules read like the .proto comments they come from and every message has
// the same shape: "<field>: <value or size>, <what is wrong>[; <what is
// allowed>]". Field paths ("stats[5].algorithm") are formatted only when a
// check fails: the 65536 host names of a placement cost no string building.
#include "daemon/topotuned/validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <tuple>

#include "proto/limits.h"
#include "tuner/mpich_csel.h"

namespace topotune::daemon {
namespace {

namespace limits = v1::limits;
using google::protobuf::EnumDescriptor;
using google::protobuf::RepeatedField;

// --- Names of fields and limits -------------------------------------------

// The path of a field in a request, as messages name it: "rank_hosts[3]",
// "host.lldp_neighbor.chassis_id", "stats[5].algorithm". A Field refers to
// its parent: make sub-fields and entries as arguments (f.Sub("x"), f.At(i))
// and do not keep them beyond the parent's life.
class Field {
 public:
  Field(const char* name) : name_(name) {}  // NOLINT(google-explicit-constructor): fields are written as literals.

  // Entry `index` of this repeated field.
  Field At(int index) const { return Field(this, "", index); }
  // Field `name` of this message field.
  Field Sub(const char* name) const { return Field(this, name, -1); }

  std::string Name() const {
    if (parent_ == nullptr) return std::string(name_);
    if (index_ >= 0) return fmt::format("{}[{}]", parent_->Name(), index_);
    return fmt::format("{}.{}", parent_->Name(), name_);
  }

 private:
  Field(const Field* parent, std::string_view name, int index) : parent_(parent), name_(name), index_(index) {}

  const Field* parent_ = nullptr;
  std::string_view name_;
  int index_ = -1;
};

// A bound, with the name a client finds in the .proto comments and
// proto/limits.h ("kMaxRanks (65536)"), or a plain number ("1").
struct Limit {
  Limit(int64_t v) : value(v) {}  // NOLINT(google-explicit-constructor): plain numbers are bounds too.
  Limit(int64_t v, std::string_view n) : value(v), name(n) {}

  std::string Str() const { return name.empty() ? fmt::format("{}", value) : fmt::format("{} ({})", name, value); }

  int64_t value;
  std::string_view name;
};

// A limit of proto/limits.h under its own name, so that the name a message
// quotes cannot drift from the value it enforces.
#define TOPOTUNE_LIMIT(k) Limit(limits::k, #k)

const Limit kUnbounded(std::numeric_limits<int64_t>::max());

// google.protobuf.Duration and Timestamp ranges (duration.proto,
// timestamp.proto): about +-10000 years, and 0001-01-01 to 9999-12-31.
constexpr int64_t kMaxDurationSeconds = 315'576'000'000;
constexpr int64_t kMinTimestampSeconds = -62'135'596'800;
constexpr int64_t kMaxTimestampSeconds = 253'402'300'799;
constexpr int32_t kMaxNanos = 999'999'999;

// --- Messages -------------------------------------------------------------

// Values quoted in messages are cut to this many bytes (then "...").
constexpr size_t kMaxQuotedBytes = 64;

}  // namespace

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (const char ch : s.substr(0, kMaxQuotedBytes)) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c >= 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += ch;
    }
  }
  out += '"';
  if (s.size() > kMaxQuotedBytes) out += "...";
  return out;
}

namespace {

Status Invalid(const Field& f, std::string_view why) {
  return Status::InvalidArgument(fmt::format("{}: {}", f.Name(), why));
}

// The first failure among `checks`, in list order, or Ok. Every check is
// evaluated (they are cheap, and none assumes an earlier one passed); the
// list order is the order in which a client meets the errors.
Status First(std::initializer_list<Status> checks) {
  for (const Status& s : checks)
    if (!s.ok()) return s;
  return Status::Ok();
}

// The first failure of `check(field.At(i), items[i])` over a repeated field.
template <typename Items, typename Check>
Status Each(const Field& field, const Items& items, Check check) {
  for (int i = 0; i < items.size(); ++i) {
    Status s = check(field.At(i), items[i]);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

// --- Checks of one value --------------------------------------------------

// `min` to `max` bytes. Sizes are bytes, not characters: the limits bound
// what the server stores.
Status CheckString(const Field& f, std::string_view v, int64_t min, const Limit& max) {
  const auto n = static_cast<int64_t>(v.size());
  if (n > max.value) return Invalid(f, fmt::format("{} bytes, more than {}: {}", n, max.Str(), Quote(v)));
  if (n < min) {
    if (n == 0) return Invalid(f, fmt::format("empty; {} to {} bytes are required", min, max.Str()));
    return Invalid(f, fmt::format("{} bytes, fewer than {}: {}", n, min, Quote(v)));
  }
  return Status::Ok();
}

// `min` to `max` entries of a repeated field.
Status CheckCount(const Field& f, int64_t n, int64_t min, const Limit& max) {
  if (n > max.value) return Invalid(f, fmt::format("{} entries, more than {}", n, max.Str()));
  if (n < min) {
    if (n == 0) return Invalid(f, fmt::format("no entries; {} to {} are required", min, max.Str()));
    return Invalid(f, fmt::format("{} entries, fewer than {}", n, min));
  }
  return Status::Ok();
}

// An integer from `min` to `max`, both included.
Status CheckRange(const Field& f, int64_t v, const Limit& min, const Limit& max) {
  if (v > max.value) return Invalid(f, fmt::format("{}, more than {}", v, max.Str()));
  if (v < min.value) return Invalid(f, fmt::format("{}, less than {}", v, min.Str()));
  return Status::Ok();
}

// A measured time (or a ratio of times): finite and not negative.
Status CheckTime(const Field& f, double v) {
  if (!std::isfinite(v)) return Invalid(f, fmt::format("{} is not a finite number", v));
  if (v < 0) return Invalid(f, fmt::format("{} is negative", v));
  return Status::Ok();
}

// A fraction such as a margin or a significance level: finite, 0 to `max`.
Status CheckFraction(const Field& f, double v, double max) {
  if (!std::isfinite(v) || v < 0 || v > max)
    return Invalid(f, fmt::format("{}; it must be a number from 0 to {}", v, max));
  return Status::Ok();
}

// `lo` <= `hi` for two summary statistics of the same calls (both already
// checked to be times; NaN compares false and passes here).
Status CheckOrdered(const Field& lo_field, double lo, const Field& hi_field, double hi) {
  if (lo > hi) return Invalid(hi_field, fmt::format("{} is less than {} ({})", hi, lo_field.Name(), lo));
  return Status::Ok();
}

// A set Duration: valid, and more than zero. Unset means "none" in the API,
// so a zero is always a mistake (a zero time_budget would read as "no budget"
// to topotune-bench, a zero timeout would kill the task at launch).
Status CheckDuration(const Field& f, const google::protobuf::Duration& d) {
  const int64_t s = d.seconds();
  const int32_t ns = d.nanos();
  const auto shown = fmt::format("{{seconds: {}, nanos: {}}}", s, ns);
  if (ns < -kMaxNanos || ns > kMaxNanos || (s > 0 && ns < 0) || (s < 0 && ns > 0) || s > kMaxDurationSeconds ||
      s < -kMaxDurationSeconds)
    return Invalid(f, fmt::format("{} is not a valid Duration (seconds up to {}, nanos up to {}, same sign)", shown,
                                  kMaxDurationSeconds, kMaxNanos));
  if (s < 0 || ns < 0) return Invalid(f, fmt::format("{} is negative; a duration must be more than 0", shown));
  if (s == 0 && ns == 0) return Invalid(f, "0 when set; leave it unset, or give more than 0");
  return Status::Ok();
}

// A set Timestamp: in Timestamp's range (years 1 to 9999, nanos 0 to 999999999).
Status CheckTimestamp(const Field& f, const google::protobuf::Timestamp& t) {
  if (t.seconds() < kMinTimestampSeconds || t.seconds() > kMaxTimestampSeconds || t.nanos() < 0 ||
      t.nanos() > kMaxNanos)
    return Invalid(f,
                   fmt::format("{{seconds: {}, nanos: {}}} is not a valid Timestamp (seconds {} to {}, nanos 0 to {})",
                               t.seconds(), t.nanos(), kMinTimestampSeconds, kMaxTimestampSeconds, kMaxNanos));
  return Status::Ok();
}

// An enum type of the API: its descriptor (for names in messages) and its
// generated *_IsValid (proto3 enums are open: a field can hold any int).
struct EnumType {
  const EnumDescriptor* (*descriptor)();
  bool (*is_valid)(int);
};
constexpr EnumType kCollective{v1::Collective_descriptor, v1::Collective_IsValid};
constexpr EnumType kPattern{v1::AlltoallvPattern_descriptor, v1::AlltoallvPattern_IsValid};
constexpr EnumType kAgentState{v1::AgentState_descriptor, v1::AgentState_IsValid};
constexpr EnumType kChassisIdSubtype{v1::LldpChassisIdSubtype_descriptor, v1::LldpChassisIdSubtype_IsValid};
constexpr EnumType kPortIdSubtype{v1::LldpPortIdSubtype_descriptor, v1::LldpPortIdSubtype_IsValid};
constexpr EnumType kRulesFormat{v1::RulesFormat_descriptor, v1::RulesFormat_IsValid};
constexpr EnumType kDecisionSource{v1::DecisionSource_descriptor, v1::DecisionSource_IsValid};

enum class Unspecified { kAllowed, kRejected };

// "COLLECTIVE_ALLTOALL", or the number when the type has no such value.
std::string EnumName(const EnumType& type, int v) {
  const auto* value = type.descriptor()->FindValueByNumber(v);
  return value != nullptr ? value->name() : fmt::format("{}", v);
}

// "COLLECTIVE_ALLTOALL (1), COLLECTIVE_ALLTOALLV (2), ...": the values a
// field takes, without the zero value when it is rejected.
std::string EnumValues(const EnumType& type, Unspecified unspecified) {
  const EnumDescriptor* d = type.descriptor();
  std::string out;
  for (int i = 0; i < d->value_count(); ++i) {
    if (d->value(i)->number() == 0 && unspecified == Unspecified::kRejected) continue;
    if (!out.empty()) out += ", ";
    out += fmt::format("{} ({})", d->value(i)->name(), d->value(i)->number());
  }
  return out;
}

Status CheckEnum(const Field& f, int v, const EnumType& type, Unspecified unspecified) {
  if (!type.is_valid(v))
    return Invalid(f, fmt::format("{} is not a value of {}; use one of {}", v, type.descriptor()->name(),
                                  EnumValues(type, unspecified)));
  if (v == 0 && unspecified == Unspecified::kRejected)
    return Invalid(
        f, fmt::format("{} is not allowed here; use one of {}", EnumName(type, v), EnumValues(type, unspecified)));
  return Status::Ok();
}

Status CheckCollective(const Field& f, int v) { return CheckEnum(f, v, kCollective, Unspecified::kRejected); }

// A size pattern: a known value, and UNSPECIFIED unless the collective is
// alltoallv (the enum's comment; topotune-bench writes no pattern for the
// others, and a stray one would split their samples by pattern).
Status CheckPattern(const Field& f, int pattern, int collective) {
  Status s = CheckEnum(f, pattern, kPattern, Unspecified::kAllowed);
  if (!s.ok()) return s;
  if (pattern != v1::ALLTOALLV_PATTERN_UNSPECIFIED && collective != v1::COLLECTIVE_ALLTOALLV)
    return Invalid(f, fmt::format("{} is set for {}; a pattern is for COLLECTIVE_ALLTOALLV only",
                                  EnumName(kPattern, pattern), EnumName(kCollective, collective)));
  return Status::Ok();
}

// A pattern class to tune: UNIFORM, SKEWED or SPARSE (RANDOM is a benchmark
// pattern, not a class decisions are kept for).
Status CheckPatternClass(const Field& f, int pattern) {
  Status s = CheckEnum(f, pattern, kPattern, Unspecified::kRejected);
  if (!s.ok()) return s;
  if (pattern == v1::ALLTOALLV_PATTERN_RANDOM)
    return Invalid(f, "ALLTOALLV_PATTERN_RANDOM is not a pattern class; use UNIFORM, SKEWED or SPARSE");
  return Status::Ok();
}

// A MAC address as the API writes it: "00:1b:21:bb:e6:f0".
Status CheckMac(const Field& f, std::string_view v) {
  constexpr std::string_view kForm = "six hex pairs joined by ':', as in \"00:1b:21:bb:e6:f0\"";
  bool upper = false;
  bool ok = v.size() == 17;
  for (size_t i = 0; ok && i < v.size(); ++i) {
    const char c = v[i];
    if (i % 3 == 2) {
      ok = c == ':';
    } else {
      upper = upper || (c >= 'A' && c <= 'F');
      ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    }
  }
  if (!ok) return Invalid(f, fmt::format("{} is not a MAC address ({})", Quote(v), kForm));
  if (upper) {
    std::string lower(v);
    for (char& c : lower)
      if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
    return Invalid(
        f, fmt::format("{} has upper-case hex digits; write MAC addresses in lower case ({})", Quote(v), Quote(lower)));
  }
  return Status::Ok();
}

// 1 to kMaxHostnameBytes bytes of ASCII letters, digits, '-', '_' and '.'.
Status CheckHostname(const Field& f, std::string_view name) {
  Status s = CheckString(f, name, 1, TOPOTUNE_LIMIT(kMaxHostnameBytes));
  if (!s.ok()) return s;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
    if (!ok)
      return Invalid(f, fmt::format("{} has {} at byte {}; a host name has only letters, digits, '-', '_' and '.'",
                                    Quote(name), Quote(name.substr(i, 1)), i));
  }
  return Status::Ok();
}

// --- Checks of repeated fields --------------------------------------------

// No value twice in a repeated enum field. A map, not a scan of the earlier
// entries: every check runs, also on a list far over its count limit.
Status CheckUnique(const Field& f, const RepeatedField<int>& v, const EnumType& type) {
  std::map<int, int> first;
  for (int i = 0; i < v.size(); ++i) {
    const auto [at, inserted] = first.emplace(v[i], i);
    if (!inserted)
      return Invalid(f.At(i), fmt::format("{} appears twice (also {}[{}]); name each value once", EnumName(type, v[i]),
                                          f.Name(), at->second));
  }
  return Status::Ok();
}

// Collectives: `min` to kMaxCollectives entries, each set and known; with
// `unique`, none twice.
Status CheckCollectives(const Field& f, const RepeatedField<int>& v, int64_t min, bool unique) {
  return First({
      CheckCount(f, v.size(), min, TOPOTUNE_LIMIT(kMaxCollectives)),
      Each(f, v, CheckCollective),
      unique ? CheckUnique(f, v, kCollective) : Status::Ok(),
  });
}

// Each value more than the one before.
Status CheckAscending(const Field& f, const RepeatedField<int64_t>& v) {
  for (int i = 1; i < v.size(); ++i)
    if (v[i] <= v[i - 1])
      return Invalid(f.At(i), fmt::format("{} is not more than {}[{}] ({}); give values in ascending order without "
                                          "duplicates",
                                          v[i], f.Name(), i - 1, v[i - 1]));
  return Status::Ok();
}

// Message sizes: at most kMaxMsizes values, each 1 to kMaxMsizeBytes; with
// `ascending`, each more than the one before.
Status CheckMsizes(const Field& f, const RepeatedField<int64_t>& v, bool ascending) {
  return First({
      CheckCount(f, v.size(), 0, TOPOTUNE_LIMIT(kMaxMsizes)),
      Each(f, v, [](const Field& entry, int64_t m) { return CheckRange(entry, m, 1, TOPOTUNE_LIMIT(kMaxMsizeBytes)); }),
      ascending ? CheckAscending(f, v) : Status::Ok(),
  });
}

// A placement: 1 to kMaxRanks host names.
Status CheckRankHosts(const Field& f, const google::protobuf::RepeatedPtrField<std::string>& hosts) {
  return First({
      CheckCount(f, hosts.size(), 1, TOPOTUNE_LIMIT(kMaxRanks)),
      Each(f, hosts, CheckHostname),
  });
}

// StartTuning's layouts: the largest node count x the largest ranks per node
// (the largest layout, which bounds every other) at most kMaxRanks.
Status CheckLargestLayout(const RepeatedField<int32_t>& node_counts, const RepeatedField<int32_t>& ranks_per_node) {
  if (node_counts.empty() || ranks_per_node.empty()) return Status::Ok();  // CheckCount's to report.
  const auto n = std::max_element(node_counts.begin(), node_counts.end());
  const auto r = std::max_element(ranks_per_node.begin(), ranks_per_node.end());
  const int64_t ranks = int64_t{*n} * *r;
  if (ranks <= limits::kMaxRanks) return Status::Ok();
  return Status::InvalidArgument(fmt::format("node_counts[{}] x ranks_per_node[{}]: {} x {} = {} ranks, more than {}",
                                             n - node_counts.begin(), r - ranks_per_node.begin(), *n, *r, ranks,
                                             TOPOTUNE_LIMIT(kMaxRanks).Str()));
}

// --- Sub-messages ---------------------------------------------------------

// LLDP strings: at most kMaxLldpStringBytes; a MAC when its subtype says so.
Status CheckLldpNeighbor(const Field& f, const v1::LldpNeighbor& n) {
  auto lldp_string = [](const Field& sf, const std::string& v) {
    return CheckString(sf, v, 0, TOPOTUNE_LIMIT(kMaxLldpStringBytes));
  };
  return First({
      lldp_string(f.Sub("local_interface"), n.local_interface()),
      CheckEnum(f.Sub("chassis_id_subtype"), n.chassis_id_subtype(), kChassisIdSubtype, Unspecified::kAllowed),
      lldp_string(f.Sub("chassis_id"), n.chassis_id()),
      n.chassis_id_subtype() == v1::LLDP_CHASSIS_ID_SUBTYPE_MAC_ADDRESS ? CheckMac(f.Sub("chassis_id"), n.chassis_id())
                                                                        : Status::Ok(),
      lldp_string(f.Sub("system_name"), n.system_name()),
      CheckEnum(f.Sub("port_id_subtype"), n.port_id_subtype(), kPortIdSubtype, Unspecified::kAllowed),
      lldp_string(f.Sub("port_id"), n.port_id()),
      n.port_id_subtype() == v1::LLDP_PORT_ID_SUBTYPE_MAC_ADDRESS ? CheckMac(f.Sub("port_id"), n.port_id())
                                                                  : Status::Ok(),
      lldp_string(f.Sub("port_description"), n.port_description()),
      lldp_string(f.Sub("management_address"), n.management_address()),
  });
}

// mpi_mac: empty (unknown), or a MAC in the API's form that is one of
// `macs`: discovery looks the MPI NIC up among the host's MACs, so one that
// is not there could place the host nowhere.
Status CheckMpiMac(const Field& f, const Field& macs, const v1::HostFacts& h) {
  if (h.mpi_mac().empty()) return Status::Ok();
  if (Status s = CheckMac(f, h.mpi_mac()); !s.ok()) return s;
  if (std::find(h.macs().begin(), h.macs().end(), h.mpi_mac()) == h.macs().end())
    return Invalid(f, fmt::format("{} is not one of {}; it must be the MAC of one of the host's NICs, or empty",
                                  Quote(h.mpi_mac()), macs.Name()));
  return Status::Ok();
}

Status CheckHostFacts(const Field& f, const v1::HostFacts& h) {
  const Field macs = f.Sub("macs");
  return First({
      CheckHostname(f.Sub("hostname"), h.hostname()),
      CheckCount(macs, h.macs_size(), 1, TOPOTUNE_LIMIT(kMaxMacs)),
      Each(macs, h.macs(), CheckMac),
      CheckRange(f.Sub("nic_speed_bps"), h.nic_speed_bps(), 0, kUnbounded),
      CheckRange(f.Sub("cores"), h.cores(), 1, TOPOTUNE_LIMIT(kMaxCores)),
      h.has_lldp_neighbor() ? CheckLldpNeighbor(f.Sub("lldp_neighbor"), h.lldp_neighbor()) : Status::Ok(),
      CheckMpiMac(f.Sub("mpi_mac"), macs, h),
      CheckString(f.Sub("mpi_interface"), h.mpi_interface(), 0, TOPOTUNE_LIMIT(kMaxLldpStringBytes)),
  });
}

Status CheckSample(const Field& f, const v1::BenchSample& s) {
  const Field min_s = f.Sub("min_s");
  const Field median_s = f.Sub("median_s");
  const Field p95_s = f.Sub("p95_s");
  const Field max_s = f.Sub("max_s");
  const Field times_s = f.Sub("times_s");
  const int64_t iterations = s.iterations();
  return First({
      CheckCollective(f.Sub("collective"), s.collective()),
      CheckString(f.Sub("algorithm"), s.algorithm(), 1, TOPOTUNE_LIMIT(kMaxAlgorithmNameBytes)),
      CheckString(f.Sub("label"), s.label(), 0, TOPOTUNE_LIMIT(kMaxLabelBytes)),
      CheckPattern(f.Sub("pattern"), s.pattern(), s.collective()),
      CheckRange(f.Sub("nprocs"), s.nprocs(), 1, TOPOTUNE_LIMIT(kMaxRanks)),
      CheckRange(f.Sub("ranks_per_node"), s.ranks_per_node(), 1, Limit(s.nprocs(), "nprocs")),
      CheckRange(f.Sub("msize"), s.msize(), 1, TOPOTUNE_LIMIT(kMaxMsizeBytes)),
      // Not bounded by kMaxIterations: with a time budget the count is measured, not asked for.
      // An algorithm dropped before its first timed call has none.
      CheckRange(f.Sub("iterations"), iterations, s.dropped().empty() ? 1 : 0, kUnbounded),
      CheckString(f.Sub("dropped"), s.dropped(), 0, TOPOTUNE_LIMIT(kMaxDroppedBytes)),
      CheckTime(f.Sub("size_seconds"), s.size_seconds()),
      CheckRange(f.Sub("matrices"), s.matrices(), 0, TOPOTUNE_LIMIT(kMaxMatrices)),
      CheckTime(min_s, s.min_s()),
      CheckTime(median_s, s.median_s()),
      CheckTime(p95_s, s.p95_s()),
      CheckTime(max_s, s.max_s()),
      CheckTime(f.Sub("mean_s"), s.mean_s()),
      CheckOrdered(min_s, s.min_s(), median_s, s.median_s()),
      CheckOrdered(median_s, s.median_s(), p95_s, s.p95_s()),
      CheckOrdered(p95_s, s.p95_s(), max_s, s.max_s()),
      CheckRange(f.Sub("bytes_per_call"), s.bytes_per_call(), 0, kUnbounded),
      s.has_bytes_per_s() ? CheckTime(f.Sub("bytes_per_s"), s.bytes_per_s()) : Status::Ok(),
      s.has_bytes_per_s() && s.median_s() == 0
          ? Invalid(f.Sub("bytes_per_s"), "set while median_s is 0; leave it unset")
          : Status::Ok(),
      s.has_bound_s() ? CheckTime(f.Sub("bound_s"), s.bound_s()) : Status::Ok(),
      s.has_fraction_of_bound() ? CheckTime(f.Sub("fraction_of_bound"), s.fraction_of_bound()) : Status::Ok(),
      s.has_fraction_of_bound() && !s.has_bound_s()
          ? Invalid(f.Sub("fraction_of_bound"), "set without bound_s; leave it unset")
          : Status::Ok(),
      CheckRange(f.Sub("verify_errors"), s.verify_errors(), 0, kUnbounded),
      CheckRange(f.Sub("fallbacks"), s.fallbacks(), 0, Limit(iterations, "iterations")),
      CheckCount(times_s, s.times_s_size(), 0, TOPOTUNE_LIMIT(kMaxTimesPerSample)),
      s.times_s_size() != 0 && s.times_s_size() != iterations
          ? Invalid(times_s, fmt::format("{} entries, but iterations is {}; give every timed call or none",
                                         s.times_s_size(), iterations))
          : Status::Ok(),
      Each(times_s, s.times_s(), CheckTime),
  });
}

Status CheckStats(const Field& f, const v1::CollectiveCallStats& s) {
  return First({
      CheckCollective(f.Sub("collective"), s.collective()),
      CheckString(f.Sub("algorithm"), s.algorithm(), 1, TOPOTUNE_LIMIT(kMaxAlgorithmNameBytes)),
      CheckRange(f.Sub("msize"), s.msize(), 0, kUnbounded),
      CheckRange(f.Sub("calls"), s.calls(), 0, kUnbounded),
      CheckRange(f.Sub("total_bytes"), s.total_bytes(), 0, kUnbounded),
      CheckTime(f.Sub("total_seconds"), s.total_seconds()),
      CheckRange(f.Sub("fallbacks"), s.fallbacks(), 0, Limit(s.calls(), "calls")),
      CheckPattern(f.Sub("pattern"), s.pattern(), s.collective()),
      s.pattern() == v1::ALLTOALLV_PATTERN_RANDOM ? CheckPatternClass(f.Sub("pattern"), s.pattern()) : Status::Ok(),
      CheckEnum(f.Sub("source"), s.source(), kDecisionSource, Unspecified::kAllowed),
      CheckRange(f.Sub("tuned_nprocs"), s.tuned_nprocs(), 0, TOPOTUNE_LIMIT(kMaxRanks)),
      CheckRange(f.Sub("tuned_ranks_per_node"), s.tuned_ranks_per_node(), 0, Limit(s.tuned_nprocs(), "tuned_nprocs")),
      CheckRange(f.Sub("comm_size"), s.comm_size(), 0, TOPOTUNE_LIMIT(kMaxRanks)),
      CheckRange(f.Sub("comm_ranks_per_node"), s.comm_ranks_per_node(), 0, Limit(s.comm_size(), "comm_size")),
      CheckRange(f.Sub("comm_hosts"), s.comm_hosts(), 0, Limit(s.comm_size(), "comm_size")),
      CheckString(f.Sub("plan_id"), s.plan_id(), 0, TOPOTUNE_LIMIT(kMaxIdBytes)),
  });
}

Status CheckExplored(const Field& f, const v1::ExploredCandidate& c) {
  return First({
      CheckString(f.Sub("algorithm"), c.algorithm(), 1, TOPOTUNE_LIMIT(kMaxAlgorithmNameBytes)),
      CheckRange(f.Sub("pairs"), c.pairs(), 0, kUnbounded),
      CheckTime(f.Sub("mean_seconds"), c.mean_seconds()),
      CheckTime(f.Sub("native_mean_seconds"), c.native_mean_seconds()),
      CheckFraction(f.Sub("p"), c.p(), 1),
      CheckString(f.Sub("why"), c.why(), 0, TOPOTUNE_LIMIT(kMaxDroppedBytes)),
  });
}

Status CheckAdapted(const Field& f, const v1::AdaptedBucket& b) {
  return First({
      CheckCollective(f.Sub("collective"), b.collective()),
      CheckRange(f.Sub("size_bucket"), b.size_bucket(), 0, TOPOTUNE_LIMIT(kMaxMsizeBytes)),
      CheckRange(f.Sub("comm_size"), b.comm_size(), 1, TOPOTUNE_LIMIT(kMaxRanks)),
      CheckRange(f.Sub("comm_ranks_per_node"), b.comm_ranks_per_node(), 1, Limit(b.comm_size(), "comm_size")),
      CheckString(f.Sub("plan_id"), b.plan_id(), 0, TOPOTUNE_LIMIT(kMaxIdBytes)),
      CheckRange(f.Sub("calls"), b.calls(), 0, kUnbounded),
      CheckRange(f.Sub("exploring_calls"), b.exploring_calls(), 0, Limit(b.calls(), "calls")),
      std::isfinite(b.extra_seconds()) ? Status::Ok() : Invalid(f.Sub("extra_seconds"), "not finite"),
      CheckString(f.Sub("choice"), b.choice(), b.settled() ? 1 : 0, TOPOTUNE_LIMIT(kMaxAlgorithmNameBytes)),
      CheckString(f.Sub("why"), b.why(), 0, TOPOTUNE_LIMIT(kMaxDroppedBytes)),
      CheckCount(f.Sub("candidates"), b.candidates_size(), 0, 8),
      Each(f.Sub("candidates"), b.candidates(), CheckExplored),
      CheckPattern(f.Sub("pattern"), b.pattern(), b.collective()),
      b.pattern() == v1::ALLTOALLV_PATTERN_RANDOM ? CheckPatternClass(f.Sub("pattern"), b.pattern()) : Status::Ok(),
  });
}

// Each (collective, algorithm, msize, pattern, source, communicator,
// plan) once: a job's calls of one kind are one entry.
Status CheckStatsOnce(const google::protobuf::RepeatedPtrField<v1::CollectiveCallStats>& stats) {
  using Key = std::tuple<int, std::string_view, int64_t, int, int, int, int, int, int, int, std::string_view>;
  std::map<Key, int> first;
  for (int i = 0; i < stats.size(); ++i) {
    const v1::CollectiveCallStats& s = stats[i];
    const auto [it, fresh] = first.try_emplace(
        Key{s.collective(), s.algorithm(), s.msize(), s.pattern(), s.source(), s.tuned_nprocs(),
            s.tuned_ranks_per_node(), s.comm_size(), s.comm_ranks_per_node(), s.comm_hosts(), s.plan_id()},
        i);
    if (!fresh)
      return Invalid(Field("stats").At(i),
                     fmt::format("{} {} at msize {} is stats[{}] again; report each once",
                                 EnumName(kCollective, s.collective()), Quote(s.algorithm()), s.msize(), it->second));
  }
  return Status::Ok();
}

Status CheckId(const Field& f, std::string_view id, int64_t min) {
  return CheckString(f, id, min, TOPOTUNE_LIMIT(kMaxIdBytes));
}

}  // namespace

Status ValidateHostname(std::string_view field, std::string_view name) {
  const std::string f(field);
  return CheckHostname(f.c_str(), name);
}

// --- Agents ---------------------------------------------------------------

Status Validate(const v1::RegisterRequest& req) {
  return First({
      req.has_host() ? CheckHostFacts("host", req.host()) : Invalid("host", "not set; the host's facts are required"),
      CheckString("agent_version", req.agent_version(), 0, TOPOTUNE_LIMIT(kMaxVersionBytes)),
  });
}

Status Validate(const v1::HeartbeatRequest& req) {
  const bool benchmarking = req.state() == v1::AGENT_STATE_BENCHMARKING;
  return First({
      // The agent id is the registered hostname (Register), so it has the
      // hostname's limit, not the id's.
      CheckString(Field("agent_id"), req.agent_id(), 1, TOPOTUNE_LIMIT(kMaxHostnameBytes)),
      CheckEnum("state", req.state(), kAgentState, Unspecified::kAllowed),
      CheckId("task_id", req.task_id(), 0),
      benchmarking && req.task_id().empty() ? Invalid("task_id", "empty while state is AGENT_STATE_BENCHMARKING")
                                            : Status::Ok(),
      !benchmarking && !req.task_id().empty()
          ? Invalid("task_id", fmt::format("{} is set while state is {}; it is for AGENT_STATE_BENCHMARKING only",
                                           Quote(req.task_id()), EnumName(kAgentState, req.state())))
          : Status::Ok(),
  });
}

Status Validate(const v1::FetchBenchTaskRequest& req) {
  return First({
      CheckId("task_id", req.task_id(), 1),
      // Empty is within the proto's limit (the placement check then fails);
      // a name given must be a host name.
      req.hostname().empty() ? Status::Ok() : CheckHostname("hostname", req.hostname()),
  });
}

Status Validate(const v1::ReportSamplesRequest& req) {
  return First({
      CheckId("task_id", req.task_id(), 1),
      CheckRange("sequence", req.sequence(), 0, kUnbounded),
      req.has_sample() ? CheckSample("sample", req.sample())
                       : Invalid("sample", "not set; the measurement is required"),
  });
}

Status Validate(const v1::BenchTask& task) {
  const int64_t nprocs = task.nprocs();
  const bool budget = task.has_time_budget();
  return First({
      CheckId("task_id", task.task_id(), 1),
      CheckId("tuning_id", task.tuning_id(), 0),
      CheckCollective("collective", task.collective()),
      CheckCount("algorithms", task.algorithms_size(), 0, TOPOTUNE_LIMIT(kMaxAlgorithms)),
      Each(Field("algorithms"), task.algorithms(),
           [](const Field& f, const std::string& a) {
             return CheckString(f, a, 1, TOPOTUNE_LIMIT(kMaxAlgorithmNameBytes));
           }),
      CheckMsizes("msizes", task.msizes(), /*ascending=*/true),
      CheckRange("warmup", task.warmup(), 0, kUnbounded),
      // With a time budget the count is measured, and iterations may be 0.
      CheckRange("iterations", task.iterations(), budget ? 0 : 1, TOPOTUNE_LIMIT(kMaxIterations)),
      budget ? CheckDuration("time_budget", task.time_budget()) : Status::Ok(),
      CheckPattern("pattern", task.pattern(), task.collective()),
      CheckRankHosts("rank_hosts", task.rank_hosts()),
      CheckRange("nprocs", nprocs, 1, TOPOTUNE_LIMIT(kMaxRanks)),
      nprocs != task.rank_hosts_size()
          ? Invalid("nprocs", fmt::format("{}, but rank_hosts has {} entries; they must be equal", nprocs,
                                          task.rank_hosts_size()))
          : Status::Ok(),
      CheckRange("ranks_per_node", task.ranks_per_node(), 1, Limit(nprocs, "nprocs")),
      CheckRange("topology_version", task.topology_version(), 0, kUnbounded),
      CheckString("topology_yaml", task.topology_yaml(), 0, TOPOTUNE_LIMIT(kMaxTopologyYamlBytes)),
      CheckString("native_label", task.native_label(), 0, TOPOTUNE_LIMIT(kMaxLabelBytes)),
      task.has_task_timeout() ? CheckDuration("task_timeout", task.task_timeout()) : Status::Ok(),
      task.has_point_timeout() ? CheckDuration("point_timeout", task.point_timeout()) : Status::Ok(),
      task.has_size_budget() && (task.size_budget().seconds() != 0 || task.size_budget().nanos() != 0)
          ? CheckDuration("size_budget", task.size_budget())
          : Status::Ok(),
      CheckRange("max_rounds", task.max_rounds(), 0, TOPOTUNE_LIMIT(kMaxIterations)),
      CheckFraction("margin", task.margin(), 0.5),
      CheckFraction("alpha", task.alpha(), 0.5),
      task.has_candidate_timeout() && (task.candidate_timeout().seconds() != 0 || task.candidate_timeout().nanos() != 0)
          ? CheckDuration("candidate_timeout", task.candidate_timeout())
          : Status::Ok(),
      CheckRange("matrices", task.matrices(), 0, TOPOTUNE_LIMIT(kMaxMatrices)),
      !std::isfinite(task.slow_warmup_factor()) ||
              (task.slow_warmup_factor() != 0 && (task.slow_warmup_factor() < 1 || task.slow_warmup_factor() > 1000))
          ? Invalid("slow_warmup_factor", fmt::format("{} is not 0 or 1 to 1000", task.slow_warmup_factor()))
          : Status::Ok(),
  });
}

// --- Plans ----------------------------------------------------------------

// A forced collective must be one of the request's, and forced once.
Status CheckForcedCollective(const Field& f, int collective, const v1::GetPlanRequest& req) {
  if (std::find(req.collectives().begin(), req.collectives().end(), collective) == req.collectives().end())
    return Invalid(f, fmt::format("{} is not one of the request's collectives; add it to collectives",
                                  EnumName(kCollective, collective)));
  int times = 0;
  for (const v1::ForcedAlgorithm& other : req.force()) times += other.collective() == collective;
  if (times > 1)
    return Invalid(
        f, fmt::format("{} is forced {} times; force each collective once", EnumName(kCollective, collective), times));
  return Status::Ok();
}

Status Validate(const v1::GetPlanRequest& req) {
  return First({
      CheckId("job_id", req.job_id(), 0),
      CheckRankHosts("rank_hosts", req.rank_hosts()),
      CheckCollectives("collectives", req.collectives(), 1, /*unique=*/true),
      CheckCount("force", req.force_size(), 0, TOPOTUNE_LIMIT(kMaxCollectives)),
      Each(Field("force"), req.force(),
           [&req](const Field& f, const v1::ForcedAlgorithm& forced) {
             return First({
                 CheckCollective(f.Sub("collective"), forced.collective()),
                 CheckForcedCollective(f.Sub("collective"), forced.collective(), req),
                 CheckString(f.Sub("algorithm"), forced.algorithm(), 1, TOPOTUNE_LIMIT(kMaxAlgorithmNameBytes)),
             });
           }),
  });
}

// --- Admin ----------------------------------------------------------------

Status Validate(const v1::GetTopologyRequest& req) { return CheckRange("version", req.version(), 0, kUnbounded); }

Status Validate(const v1::DiscoverRequest& req) {
  return First({
      CheckCount("seeds", req.seeds_size(), 0, TOPOTUNE_LIMIT(kMaxSeeds)),
      // Seeds are host names or addresses with an optional port ("[fe80::1]:161"),
      // so only their size is checked here; discovery reports unresolvable ones.
      Each(
          Field("seeds"), req.seeds(),
          [](const Field& f, const std::string& s) { return CheckString(f, s, 1, TOPOTUNE_LIMIT(kMaxHostnameBytes)); }),
  });
}

namespace {

// A Duration set to more than 0 and at most 366 days.
Status CheckWindow(const Field& f, const google::protobuf::Duration& d) {
  constexpr int64_t kMaxWindowSeconds = int64_t{366} * 24 * 3600;
  if (Status st = CheckDuration(f, d); !st.ok()) return st;
  if (d.seconds() > kMaxWindowSeconds || (d.seconds() == kMaxWindowSeconds && d.nanos() > 0))
    return Invalid(f, fmt::format("{} s is longer than 366 days", d.seconds()));
  return Status::Ok();
}

}  // namespace

Status Validate(const v1::StartTuningRequest& req) {
  auto layout_value = [](const Field& f, int32_t v) { return CheckRange(f, v, 1, TOPOTUNE_LIMIT(kMaxRanks)); };
  // From demand, the lists only filter the cells and may be empty.
  const int64_t at_least = req.from_demand() ? 0 : 1;
  const bool demand_only = req.has_demand_window() || req.has_budget();
  return First({
      CheckCollectives("collectives", req.collectives(), at_least, /*unique=*/false),
      CheckCount("node_counts", req.node_counts_size(), at_least, TOPOTUNE_LIMIT(kMaxLayoutValues)),
      Each(Field("node_counts"), req.node_counts(), layout_value),
      CheckCount("ranks_per_node", req.ranks_per_node_size(), at_least, TOPOTUNE_LIMIT(kMaxLayoutValues)),
      Each(Field("ranks_per_node"), req.ranks_per_node(), layout_value),
      CheckLargestLayout(req.node_counts(), req.ranks_per_node()),
      CheckMsizes("msizes", req.msizes(), /*ascending=*/false),
      CheckRange("iterations", req.iterations(), 0, TOPOTUNE_LIMIT(kMaxIterations)),
      CheckCount("alltoallv_patterns", req.alltoallv_patterns_size(), 0, 3),
      Each(Field("alltoallv_patterns"), req.alltoallv_patterns(), CheckPatternClass),
      req.from_demand() && req.msizes_size() > 0
          ? Invalid("msizes", "set with from_demand; each run measures its cells' sizes")
          : Status::Ok(),
      demand_only && !req.from_demand() ? Invalid("from_demand", "false, but demand_window or budget is set")
                                        : Status::Ok(),
      req.has_demand_window() ? CheckWindow("demand_window", req.demand_window()) : Status::Ok(),
      req.has_budget() ? CheckWindow("budget", req.budget()) : Status::Ok(),
  });
}

Status Validate(const v1::TuningStatusRequest& req) { return CheckId("tuning_id", req.tuning_id(), 1); }

Status Validate(const v1::ListDecisionsRequest& req) {
  return First({
      CheckRange("topology_version", req.topology_version(), 0, kUnbounded),
      CheckEnum("collective", req.collective(), kCollective, Unspecified::kAllowed),
      CheckRange("nprocs", req.nprocs(), 0, TOPOTUNE_LIMIT(kMaxRanks)),
      CheckRange("ranks_per_node", req.ranks_per_node(), 0, TOPOTUNE_LIMIT(kMaxRanks)),
      CheckRange("page_size", req.page_size(), 0, TOPOTUNE_LIMIT(kMaxPageSize)),
      CheckId("page_token", req.page_token(), 0),
  });
}

namespace {

// MPICH's selection file starts from the base the client sends (MPICH's
// MPIR tree: tuner/mpich_csel.h CheckMpichBase); the Open MPI formats take
// none.
Status CheckMpichBaseField(const v1::ExportRulesRequest& req) {
  if (req.format() != v1::RULES_FORMAT_MPICH_CSEL)
    return req.mpich_base().empty() ? Status::Ok()
                                    : Invalid("mpich_base", "is set, but only RULES_FORMAT_MPICH_CSEL reads it");
  if (req.mpich_base().empty())
    return Invalid("mpich_base",
                   "empty; RULES_FORMAT_MPICH_CSEL starts from MPICH's own selection JSON (its MPIR tree, which "
                   "`topotune export` reads from libmpich.so)");
  TOPOTUNE_RETURN_IF_ERROR(CheckString("mpich_base", req.mpich_base(), 1, TOPOTUNE_LIMIT(kMaxMpichBaseBytes)));
  if (Status s = CheckMpichBase(req.mpich_base()); !s.ok()) return Invalid("mpich_base", s.message());
  return Status::Ok();
}

}  // namespace

Status Validate(const v1::ExportRulesRequest& req) {
  return First({
      CheckEnum("format", req.format(), kRulesFormat, Unspecified::kRejected),
      CheckCollectives("collectives", req.collectives(), 0, /*unique=*/false),
      CheckRange("topology_version", req.topology_version(), 0, kUnbounded),
      CheckRange("ranks_per_node", req.ranks_per_node(), 0, TOPOTUNE_LIMIT(kMaxRanks)),
      CheckMpichBaseField(req),
  });
}

Status Validate(const v1::ReportJobRequest& req) {
  const bool both_times = req.has_started_at() && req.has_finished_at();
  const auto& start = req.started_at();
  const auto& end = req.finished_at();
  const bool ends_before = both_times && (end.seconds() < start.seconds() ||
                                          (end.seconds() == start.seconds() && end.nanos() < start.nanos()));
  return First({
      CheckId("job_id", req.job_id(), 0),
      CheckId("plan_id", req.plan_id(), 0),
      CheckRange("nprocs", req.nprocs(), 1, TOPOTUNE_LIMIT(kMaxRanks)),
      CheckRange("ranks_per_node", req.ranks_per_node(), 1, Limit(req.nprocs(), "nprocs")),
      req.has_started_at() ? CheckTimestamp("started_at", start) : Status::Ok(),
      req.has_finished_at() ? CheckTimestamp("finished_at", end) : Status::Ok(),
      ends_before ? Invalid("finished_at",
                            fmt::format("{{seconds: {}, nanos: {}}} is before started_at", end.seconds(), end.nanos()))
                  : Status::Ok(),
      CheckCount("stats", req.stats_size(), 0, TOPOTUNE_LIMIT(kMaxJobStats)),
      Each(Field("stats"), req.stats(), CheckStats),
      CheckStatsOnce(req.stats()),
      CheckCount("adapted", req.adapted_size(), 0, TOPOTUNE_LIMIT(kMaxJobStats)),
      Each(Field("adapted"), req.adapted(), CheckAdapted),
  });
}

Status Validate(const v1::ListDemandRequest& req) {
  return First({
      req.has_window() ? CheckWindow("window", req.window()) : Status::Ok(),
      CheckEnum("collective", req.collective(), kCollective, Unspecified::kAllowed),
      CheckRange("limit", req.limit(), 0, TOPOTUNE_LIMIT(kMaxPageSize)),
  });
}

Status Validate(const v1::ListAgentsRequest& /*req*/) { return Status::Ok(); }

#undef TOPOTUNE_LIMIT

}  // namespace topotune::daemon
