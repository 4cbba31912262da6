#include "tuner/schedule_json.h"

#include <fmt/format.h>

#include <cstdint>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "tuner/bounds.h"

namespace topotune {
namespace {

// Appends `s` as a JSON string literal. Bytes >= 0x80 pass through unchanged:
// host names come from validated topology files, and this writer must not
// throw on them.
void AppendJsonString(std::string* out, std::string_view s) {
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\r':
        out->append("\\r");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          fmt::format_to(std::back_inserter(*out), "\\u{:04x}", static_cast<unsigned char>(c));
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

using Json = nlohmann::json;

Status Error(std::string_view where, std::string_view what) {
  return Status::InvalidArgument(fmt::format("schedule JSON: {}: {}", where, what));
}

// A short rendering of a JSON value for error messages.
std::string Show(const Json& v) {
  std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > 40) {
    s.resize(37);
    s += "...";
  }
  return s;
}

// Reads v as an integer in [lo, hi).
StatusOr<int64_t> ReadInt(const Json& v, const std::string& where, std::string_view what, int64_t lo, int64_t hi) {
  if (!v.is_number_integer()) return Error(where, fmt::format("expected an integer {}, got {}", what, Show(v)));
  int64_t x = 0;
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    x = u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? std::numeric_limits<int64_t>::max()
                                                                       : static_cast<int64_t>(u);
  } else {
    x = v.get<int64_t>();
  }
  if (x < lo || x >= hi) return Error(where, fmt::format("{} {} out of range [{}, {})", what, Show(v), lo, hi));
  return x;
}

// Reads v as a rank or phase index in [0, hi).
StatusOr<int32_t> ReadIndex(const Json& v, const std::string& where, std::string_view what, int64_t hi) {
  auto x = ReadInt(v, where, what, 0, hi);
  if (!x.ok()) return x.status();
  return static_cast<int32_t>(*x);
}

const Json* Member(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

}  // namespace

std::string ScheduleToJson(const Schedule& schedule, const RankTree& tree) {
  std::string out;
  // About 8 bytes per message and 14 per sync plus the per-rank host names.
  out.reserve(static_cast<size_t>(schedule.num_messages()) * 8 + schedule.syncs.size() * 14 +
              static_cast<size_t>(schedule.num_ranks) * 8 + 128);

  out.append("{\"collective\":");
  AppendJsonString(&out, schedule.collective);
  out.append(",\"algorithm\":");
  AppendJsonString(&out, schedule.algorithm);

  out.append(",\"ranks\":[");
  for (int r = 0; r < schedule.num_ranks; ++r) {
    if (r) out.push_back(',');
    AppendJsonString(&out, r < tree.num_ranks() ? std::string_view(tree.rank_host_name(r)) : std::string_view());
  }

  out.append("],\"phases\":[");
  for (int p = 0; p < schedule.num_phases(); ++p) {
    if (p) out.push_back(',');
    out.push_back('[');
    bool first = true;
    for (const Message& m : schedule.phase(p)) {
      if (!first) out.push_back(',');
      first = false;
      if (m.blocks == 1) {
        fmt::format_to(std::back_inserter(out), "[{},{}]", m.src, m.dst);
      } else {
        fmt::format_to(std::back_inserter(out), "[{},{},{}]", m.src, m.dst, m.blocks);
      }
    }
    out.push_back(']');
  }

  out.append("],\"syncs\":[");
  bool first = true;
  for (const Sync& s : schedule.syncs) {
    if (!first) out.push_back(',');
    first = false;
    fmt::format_to(std::back_inserter(out), "[{},{},{},{}]", s.from_rank, s.after_phase, s.to_rank, s.before_phase);
  }

  int64_t load = schedule.bottleneck_load != 0 ? schedule.bottleneck_load : BottleneckLoad(tree);
  fmt::format_to(std::back_inserter(out), "],\"bottleneck_load\":{}", load);
  if (schedule.host_combined) out.append(",\"host_combined\":true");
  if (schedule.receives_up_front) out.append(",\"receives_up_front\":true");
  out.push_back('}');
  return out;
}

StatusOr<Schedule> ScheduleFromJson(std::string_view json) {
  Json doc;
  try {
    doc = Json::parse(json.begin(), json.end());
  } catch (const Json::parse_error& e) {
    // e.what() reads "[json.exception.parse_error.101] parse error at line 1, column 7: ..."; keep the part
    // after the id, which names the position.
    std::string what = e.what();
    if (auto pos = what.find("] "); pos != std::string::npos) what = what.substr(pos + 2);
    return Status::InvalidArgument("schedule JSON: " + what);
  }
  if (!doc.is_object()) return Error("top level", fmt::format("expected an object, got {}", Show(doc)));

  // Every key of the format is required.
  static constexpr const char* kKeys[] = {"collective", "algorithm", "ranks", "phases", "syncs", "bottleneck_load"};
  for (const char* key : kKeys) {
    if (!Member(doc, key)) return Error("top level", fmt::format("missing key \"{}\"", key));
  }

  Schedule s;
  for (auto [key, field] : {std::pair{"collective", &s.collective}, std::pair{"algorithm", &s.algorithm}}) {
    const Json& v = *Member(doc, key);
    if (!v.is_string()) return Error(key, fmt::format("expected a string, got {}", Show(v)));
    *field = v.get<std::string>();
  }

  const Json& ranks = *Member(doc, "ranks");
  if (!ranks.is_array()) return Error("ranks", fmt::format("expected an array of host names, got {}", Show(ranks)));
  if (ranks.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) return Error("ranks", "too many ranks");
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (!ranks[i].is_string()) {
      return Error(fmt::format("ranks[{}]", i), fmt::format("expected a host name string, got {}", Show(ranks[i])));
    }
  }
  s.num_ranks = static_cast<int>(ranks.size());

  const Json& phases = *Member(doc, "phases");
  if (!phases.is_array()) return Error("phases", fmt::format("expected an array of phases, got {}", Show(phases)));
  if (phases.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max() - 1)) {
    return Error("phases", "too many phases");
  }
  int64_t total = 0;
  for (size_t p = 0; p < phases.size(); ++p) {
    if (!phases[p].is_array()) {
      return Error(fmt::format("phases[{}]", p),
                   fmt::format("expected an array of [src, dst] messages, got {}", Show(phases[p])));
    }
    total += static_cast<int64_t>(phases[p].size());
  }
  s.Reserve(total, static_cast<int>(phases.size()));
  for (size_t p = 0; p < phases.size(); ++p) {
    s.AddPhase();
    for (size_t k = 0; k < phases[p].size(); ++k) {
      const Json& m = phases[p][k];
      std::string where = fmt::format("phases[{}][{}]", p, k);
      if (!m.is_array() || (m.size() != 2 && m.size() != 3)) {
        return Error(where, fmt::format("expected a [src, dst] or [src, dst, blocks] message, got {}", Show(m)));
      }
      auto src = ReadIndex(m[0], where + "[0]", "rank", s.num_ranks);
      if (!src.ok()) return src.status();
      auto dst = ReadIndex(m[1], where + "[1]", "rank", s.num_ranks);
      if (!dst.ok()) return dst.status();
      int32_t blocks = 1;
      if (m.size() == 3) {
        const bool positive = (m[2].is_number_unsigned() || m[2].is_number_integer()) && m[2].get<int64_t>() >= 1 &&
                              m[2].get<int64_t>() <= std::numeric_limits<int32_t>::max();
        if (!positive) {
          return Error(where + "[2]", fmt::format("expected a block count in [1, {}], got {}",
                                                  std::numeric_limits<int32_t>::max(), Show(m[2])));
        }
        blocks = static_cast<int32_t>(m[2].get<int64_t>());
      }
      s.Add(Message{*src, *dst, blocks});
    }
  }

  const Json& syncs = *Member(doc, "syncs");
  if (!syncs.is_array()) return Error("syncs", fmt::format("expected an array of syncs, got {}", Show(syncs)));
  s.syncs.reserve(syncs.size());
  const int64_t num_phases = static_cast<int64_t>(phases.size());
  for (size_t k = 0; k < syncs.size(); ++k) {
    const Json& v = syncs[k];
    std::string where = fmt::format("syncs[{}]", k);
    if (!v.is_array() || v.size() != 4) {
      return Error(where, fmt::format("expected [from_rank, after_phase, to_rank, before_phase], got {}", Show(v)));
    }
    auto from = ReadIndex(v[0], where + "[0]", "from_rank", s.num_ranks);
    if (!from.ok()) return from.status();
    auto after = ReadIndex(v[1], where + "[1]", "after_phase", num_phases);
    if (!after.ok()) return after.status();
    auto to = ReadIndex(v[2], where + "[2]", "to_rank", s.num_ranks);
    if (!to.ok()) return to.status();
    auto before = ReadIndex(v[3], where + "[3]", "before_phase", num_phases);
    if (!before.ok()) return before.status();
    s.syncs.push_back(Sync{*from, *after, *to, *before});
  }

  const Json& load = *Member(doc, "bottleneck_load");
  const bool non_negative = load.is_number_unsigned() || (load.is_number_integer() && load.get<int64_t>() >= 0);
  if (!non_negative)
    return Error("bottleneck_load", fmt::format("expected a non-negative integer, got {}", Show(load)));
  if (load.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return Error("bottleneck_load", fmt::format("{} is too large", Show(load)));
  }
  s.bottleneck_load = load.get<int64_t>();

  if (const Json* combined = Member(doc, "host_combined")) {
    if (!combined->is_boolean())
      return Error("host_combined", fmt::format("expected true or false, got {}", Show(*combined)));
    s.host_combined = combined->get<bool>();
  }
  if (const Json* up_front = Member(doc, "receives_up_front")) {
    if (!up_front->is_boolean())
      return Error("receives_up_front", fmt::format("expected true or false, got {}", Show(*up_front)));
    s.receives_up_front = up_front->get<bool>();
  }
  return s;
}

}  // namespace topotune
