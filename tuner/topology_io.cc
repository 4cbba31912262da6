#include "tuner/topology_io.h"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <exception>
#include <initializer_list>
#include <memory>
#include <optional>
#include <sstream>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tuner/read_file.h"

namespace topotune {
namespace {

constexpr const char* kTopLevelAllowed = "allowed keys are switches, hosts and links";
constexpr const char* kSpeedAllowed = "use a positive number with bps, Kbps, Mbps or Gbps (e.g. 1Gbps)";
constexpr const char* kLatencyAllowed = "use a number >= 0 with ns, us, ms or s (e.g. 5us), or 0";
constexpr const char* kLinkForms =
    "write a link as [n0, s0, 1Gbps], [n0, s0, 1Gbps, 5us] or {a: n0, b: s0, speed: 1Gbps, latency: 5us}, and a LAG "
    "of 4 x 25Gbps as {a: s0, b: core, speed: 100Gbps, members: 4}";
const std::string kMembersAllowed = "members must be an integer from 1 to " + std::to_string(kMaxLagMembers) +
                                    " (default 1), the LAG's member links; speed is their sum";
constexpr const char* kEndpointAllowed = "endpoints must be names declared under switches or hosts";
const std::string kSlotsAllowed = "slots must be an integer from 1 to " + std::to_string(kMaxSlots) + " (default 1)";

// Shows a value taken from the file inside a message: quoted, cut short and
// with control characters replaced, so that a bad file cannot flood or garble
// a terminal or a log line.
std::string Quote(std::string_view s) {
  constexpr size_t kMax = 40;
  size_t n = s.size();
  if (n > kMax) {
    n = kMax;
    // Do not cut a UTF-8 sequence in half.
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  }
  std::string out = "'";
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    out += (c < 0x20 || c == 0x7f) ? '?' : static_cast<char>(c);
  }
  if (n < s.size()) out += "...";
  out += "'";
  return out;
}

// "a list", "a map", "nothing" or the quoted scalar: what the file has where
// something else was expected.
std::string Found(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "nothing";
  if (n.IsSequence()) return fmt::format("a list of {} element{}", n.size(), n.size() == 1 ? "" : "s");
  if (n.IsMap()) return "a map";
  return Quote(n.Scalar());
}

// 1-based position of `n`, or `fallback` when yaml-cpp has none (an empty
// document, a missing value).
SourcePos PosOf(const YAML::Node& n, SourcePos fallback) {
  if (!n.IsDefined()) return fallback;
  const YAML::Mark m = n.Mark();
  if (m.line < 0) return fallback;
  return SourcePos{m.line + 1, m.column + 1};
}

// Names appear in messages, logs and dumped files; raw control characters or
// broken UTF-8 there are always a mistake, and yaml-cpp's emitter would
// rewrite invalid UTF-8 to U+FFFD, breaking the dump/load round trip.
bool IsPrintableUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f) return false;
      ++i;
      continue;
    }
    int len = 0;
    uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > s.size()) return false;
    for (int k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMinForLen[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinForLen[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    // C1 controls (U+0080..U+009F) and the byte-order mark are invisible and
    // are treated specially by YAML tools.
    if ((cp >= 0x80 && cp <= 0x9F) || cp == 0xFEFF) return false;
    i += len;
  }
  return true;
}

// True when `text` is a number and a unit that `parse` would accept if only
// the number were positive ("0Gbps", "-5us"), so that the message can say
// "not positive" rather than "not a speed".
bool IsWellFormedButNotPositive(std::string_view text, std::optional<double> (*parse)(std::string_view)) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || !std::isfinite(value) || value > 0) return false;
  std::string one = "1";  // Appended to, not "1" + std::string: GCC 12 -O3 warns (-Wrestrict) on that.
  one.append(ptr, text.data() + text.size());
  return parse(one).has_value();
}

// Records where each document starts and nothing else.
class DocumentStarts : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override { last_start = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

  YAML::Mark last_start = YAML::Mark::null_mark();
};

// yaml-cpp 0.7 does not consume a token that starts no node (a stray ',' at
// the top level): Parser::HandleNextDocument then reports an empty document at
// the same place for ever, and YAML::LoadAll fills memory until the process
// dies (jbeder/yaml-cpp#1040, fixed upstream by #1319 in 2024). Walking the
// documents without building them, and stopping when one starts where the
// previous one did, finds that place cheaply. Throws YAML::ParserException on
// syntax errors, like LoadAll.
std::optional<YAML::Mark> FindStuckDocument(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts starts;
  int last_pos = -1;
  while (parser.HandleNextDocument(starts)) {
    if (starts.last_start.pos <= last_pos) return starts.last_start;
    last_pos = starts.last_start.pos;
  }
  return std::nullopt;
}

// One key/value item of a YAML map, with the line to blame for its value.
struct Field {
  std::string key;
  YAML::Node value;
  SourcePos key_pos;
  SourcePos pos;  // Of the value; of the key when the value is empty.
};

class Parser {
 public:
  explicit Parser(std::string source) : source_(std::move(source)) {}

  StatusOr<Topology> Run(std::string_view text);

 private:
  Status Error(SourcePos pos, std::string_view field, std::string_view what) const {
    return Status::InvalidArgument(fmt::format("{}:{}: {}: {}", source_, pos.line > 0 ? pos.line : 1, field, what));
  }

  // Reads the items of `map`, rejecting keys that are not names, that repeat,
  // or that are not in `allowed`. `prefix` is the field path of the map ("" at
  // the top level); `allowed_text` says what is allowed, for messages.
  Status ReadFields(const YAML::Node& map, SourcePos map_pos, const std::string& prefix,
                    std::initializer_list<std::string_view> allowed, std::string_view allowed_text,
                    std::vector<Field>* out) const;
  Status ParseNodes(const YAML::Node& list, SourcePos list_pos, NodeKind kind);
  Status ParseLinks(const YAML::Node& list, SourcePos list_pos);
  StatusOr<int> ParseEndpoint(const YAML::Node& v, SourcePos pos, const std::string& field) const;
  StatusOr<double> ParseSpeedValue(const YAML::Node& v, SourcePos pos, const std::string& field) const;
  StatusOr<double> ParseLatencyValue(const YAML::Node& v, SourcePos pos, const std::string& field) const;
  // An integer 1..max named `name` (slots, members); `allowed` says what is.
  StatusOr<int> ParseCount(const YAML::Node& v, SourcePos pos, const std::string& field, std::string_view name, int max,
                           const std::string& allowed) const;

  std::string source_;
  std::vector<Node> nodes_;
  std::vector<Link> links_;
  // First declaration of each name; Topology::Create reports duplicates.
  std::unordered_map<std::string, int> by_name_;
};

Status Parser::ReadFields(const YAML::Node& map, SourcePos map_pos, const std::string& prefix,
                          std::initializer_list<std::string_view> allowed, std::string_view allowed_text,
                          std::vector<Field>* out) const {
  for (auto it = map.begin(); it != map.end(); ++it) {
    // Copies, not references: it->first lives in a proxy that yaml-cpp's
    // iterator returns by value, gone at the end of the statement.
    const YAML::Node key = it->first;
    const SourcePos key_pos = PosOf(key, map_pos);
    const std::string where = prefix.empty() ? "top level" : prefix;
    if (!key.IsScalar())
      return Error(key_pos, where, fmt::format("a key must be a name, found {}; {}", Found(key), allowed_text));
    const std::string& name = key.Scalar();
    const std::string field = prefix.empty() ? name : prefix + "." + name;
    bool known = false;
    for (std::string_view a : allowed) known = known || a == name;
    if (!known) {
      return Error(key_pos, prefix.empty() ? where : field,
                   fmt::format("unknown {}key {}; {}", prefix.empty() ? "top-level " : "", Quote(name), allowed_text));
    }
    for (const Field& f : *out) {
      if (f.key == name)
        return Error(
            key_pos, field,
            fmt::format("key {} appears twice (first at line {}); give each key once", Quote(name), f.key_pos.line));
    }
    const YAML::Node value = it->second;
    // yaml-cpp marks an empty value at the next token, often on a later line;
    // the key's line is the one the user needs to look at.
    const SourcePos pos = (!value.IsDefined() || value.IsNull()) ? key_pos : PosOf(value, key_pos);
    out->push_back(Field{name, value, key_pos, pos});
  }
  return Status::Ok();
}

StatusOr<Topology> Parser::Run(std::string_view text) {
  const std::string input(text);
  auto syntax_error = [&](const YAML::Mark& mark, std::string_view what) {
    return Status::InvalidArgument(
        fmt::format("{}:{}: column {}: YAML syntax error: {}; a topology file must be "
                    "valid YAML (or JSON)",
                    source_, mark.line >= 0 ? mark.line + 1 : 1, mark.column >= 0 ? mark.column + 1 : 1, what));
  };
  std::vector<YAML::Node> docs;
  try {
    if (std::optional<YAML::Mark> stuck = FindStuckDocument(input)) {
      const std::string_view here = stuck->pos >= 0 && static_cast<size_t>(stuck->pos) < input.size()
                                        ? std::string_view(input).substr(stuck->pos, 1)
                                        : std::string_view();
      return syntax_error(*stuck, fmt::format("unexpected {}", Quote(here)));
    }
    docs = YAML::LoadAll(input);
  } catch (const YAML::ParserException& e) {
    return syntax_error(e.mark, e.msg);
  }
  const SourcePos file_start{1, 1};
  // A trailing "---" leaves an empty document behind; only documents with
  // content count.
  std::vector<YAML::Node> content;
  for (const YAML::Node& d : docs)
    if (d.IsDefined() && !d.IsNull()) content.push_back(d);
  if (content.empty())
    return Error(file_start, "top level",
                 "the file is empty; a topology file is a map with the keys switches, hosts and links");
  if (content.size() > 1)
    return Error(PosOf(content[1], file_start), "top level",
                 fmt::format("the file holds {} YAML documents; a topology file holds exactly one", content.size()));
  const YAML::Node& root = content[0];
  const SourcePos root_pos = PosOf(root, file_start);
  if (!root.IsMap())
    return Error(root_pos, "top level",
                 fmt::format("expected a map with the keys switches, hosts and links, found {}", Found(root)));

  std::vector<Field> sections;
  TOPOTUNE_RETURN_IF_ERROR(ReadFields(root, root_pos, "", {"switches", "hosts", "links"}, kTopLevelAllowed, &sections));
  auto section = [&](std::string_view name) -> const Field* {
    for (const Field& f : sections)
      if (f.key == name) return &f;
    return nullptr;
  };
  const Field* switches = section("switches");
  const Field* hosts = section("hosts");
  const Field* links = section("links");
  // Switches first, then hosts: node numbering must not depend on the order of
  // the sections, so that dumping and reloading gives the same indices.
  if (switches) TOPOTUNE_RETURN_IF_ERROR(ParseNodes(switches->value, switches->pos, NodeKind::kSwitch));
  if (hosts) TOPOTUNE_RETURN_IF_ERROR(ParseNodes(hosts->value, hosts->pos, NodeKind::kHost));
  bool any_host = false;
  for (const Node& n : nodes_) any_host = any_host || n.kind == NodeKind::kHost;
  if (!any_host)
    return Error(hosts ? hosts->pos : root_pos, "hosts",
                 "the topology has no hosts; declare at least one under hosts (e.g. hosts: [{name: n0}])");
  if (links) TOPOTUNE_RETURN_IF_ERROR(ParseLinks(links->value, links->pos));
  return Topology::Create(std::move(nodes_), std::move(links_), source_);
}

Status Parser::ParseNodes(const YAML::Node& list, SourcePos list_pos, NodeKind kind) {
  const bool is_host = kind == NodeKind::kHost;
  const char* section = is_host ? "hosts" : "switches";
  const char* example = is_host ? "{name: n0, slots: 2}" : "{name: s0}";
  const char* allowed = is_host ? "a host allows the keys name and slots" : "a switch allows only the key name";
  if (list.IsNull()) return Status::Ok();  // "hosts:" with nothing after it.
  if (!list.IsSequence())
    return Error(list_pos, section,
                 fmt::format("expected a list of {} (e.g. - {}), found {}", section, example, Found(list)));
  int index = 0;
  for (auto it = list.begin(); it != list.end(); ++it, ++index) {
    const YAML::Node entry = *it;
    const std::string field = fmt::format("{}[{}]", section, index);
    const SourcePos pos = PosOf(entry, list_pos);
    if (!entry.IsMap())
      return Error(pos, field, fmt::format("expected a map such as {}, found {}", example, Found(entry)));
    std::vector<Field> fields;
    TOPOTUNE_RETURN_IF_ERROR(ReadFields(entry, pos, field,
                                        is_host ? std::initializer_list<std::string_view>{"name", "slots"}
                                                : std::initializer_list<std::string_view>{"name"},
                                        allowed, &fields));
    Node node;
    node.kind = kind;
    node.pos = pos;
    bool named = false;
    for (const Field& f : fields) {
      const std::string sub = field + "." + f.key;
      if (f.key == "name") {
        if (!f.value.IsScalar())
          return Error(f.pos, sub,
                       fmt::format("expected a name such as {}, found {}", is_host ? "n0" : "s0", Found(f.value)));
        node.name = f.value.Scalar();
        if (node.name.empty()) return Error(f.pos, sub, "the name is empty; a name is a non-empty string such as n0");
        if (!IsPrintableUtf8(node.name))
          return Error(f.pos, sub,
                       fmt::format("name {} has control characters or invalid UTF-8; a name is printable text "
                                   "such as n0",
                                   Quote(node.name)));
        // Errors about the node as a whole (duplicates, leaves, connectivity)
        // point at its name.
        node.pos = f.pos;
        named = true;
      } else {  // slots
        StatusOr<int> slots = ParseCount(f.value, f.pos, sub, "slots", kMaxSlots, kSlotsAllowed);
        if (!slots.ok()) return slots.status();
        node.slots = *slots;
      }
    }
    if (!named)
      return Error(pos, field + ".name",
                   fmt::format("missing; every {} needs a name (e.g. {})", is_host ? "host" : "switch", example));
    by_name_.emplace(node.name, static_cast<int>(nodes_.size()));
    nodes_.push_back(std::move(node));
  }
  return Status::Ok();
}

StatusOr<int> Parser::ParseEndpoint(const YAML::Node& v, SourcePos pos, const std::string& field) const {
  if (!v.IsScalar())
    return Error(pos, field, fmt::format("expected a node name, found {}; {}", Found(v), kEndpointAllowed));
  auto it = by_name_.find(v.Scalar());
  if (it == by_name_.end())
    return Error(pos, field, fmt::format("unknown node {}; {}", Quote(v.Scalar()), kEndpointAllowed));
  return it->second;
}

StatusOr<int> Parser::ParseCount(const YAML::Node& v, SourcePos pos, const std::string& field, std::string_view name,
                                 int max, const std::string& allowed) const {
  if (!v.IsScalar()) return Error(pos, field, fmt::format("expected an integer, found {}; {}", Found(v), allowed));
  const std::string& s = v.Scalar();
  int n = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && n > max))
    return Error(pos, field, fmt::format("{} is out of range; {}", Quote(s), allowed));
  if (ec != std::errc() || ptr != s.data() + s.size())
    return Error(pos, field, fmt::format("{} is not an integer; {}", Quote(s), allowed));
  if (n < 1) return Error(pos, field, fmt::format("{} is {}; {}", name, n, allowed));
  return n;
}

StatusOr<double> Parser::ParseSpeedValue(const YAML::Node& v, SourcePos pos, const std::string& field) const {
  if (!v.IsScalar())
    return Error(pos, field, fmt::format("expected a speed such as 1Gbps, found {}; {}", Found(v), kSpeedAllowed));
  const std::string& s = v.Scalar();
  std::optional<double> bps = ParseSpeed(s);
  if (!bps) {
    if (IsWellFormedButNotPositive(s, &ParseSpeed))
      return Error(pos, field, fmt::format("speed {} is not positive; {}", Quote(s), kSpeedAllowed));
    return Error(pos, field, fmt::format("speed {} is not a speed; {}", Quote(s), kSpeedAllowed));
  }
  if (!std::isfinite(*bps)) return Error(pos, field, fmt::format("speed {} is too large; {}", Quote(s), kSpeedAllowed));
  return *bps;
}

StatusOr<double> Parser::ParseLatencyValue(const YAML::Node& v, SourcePos pos, const std::string& field) const {
  if (!v.IsScalar())
    return Error(pos, field, fmt::format("expected a latency such as 5us, found {}; {}", Found(v), kLatencyAllowed));
  const std::string& s = v.Scalar();
  std::optional<double> seconds = ParseLatency(s);
  if (!seconds) {
    if (IsWellFormedButNotPositive(s, &ParseLatency))
      return Error(pos, field, fmt::format("latency {} is negative; {}", Quote(s), kLatencyAllowed));
    return Error(pos, field, fmt::format("latency {} is not a latency; {}", Quote(s), kLatencyAllowed));
  }
  if (!std::isfinite(*seconds))
    return Error(pos, field, fmt::format("latency {} is too large; {}", Quote(s), kLatencyAllowed));
  return *seconds;
}

Status Parser::ParseLinks(const YAML::Node& list, SourcePos list_pos) {
  if (list.IsNull()) return Status::Ok();
  if (!list.IsSequence())
    return Error(list_pos, "links", fmt::format("expected a list of links, found {}; {}", Found(list), kLinkForms));
  int index = 0;
  for (auto it = list.begin(); it != list.end(); ++it, ++index) {
    const YAML::Node entry = *it;
    const std::string field = fmt::format("links[{}]", index);
    const SourcePos pos = PosOf(entry, list_pos);
    // The four parts of a link, wherever they come from.
    struct Part {
      YAML::Node value;
      SourcePos pos;
      std::string field;
    };
    std::optional<Part> a, b, speed, latency, members;
    if (entry.IsSequence()) {
      if (entry.size() != 3 && entry.size() != 4)
        return Error(pos, field,
                     fmt::format("expected [endpoint, endpoint, speed] or [endpoint, endpoint, speed, latency], "
                                 "found {}; {}",
                                 Found(entry), kLinkForms));
      std::optional<Part>* parts[] = {&a, &b, &speed, &latency};
      int k = 0;
      for (auto e = entry.begin(); e != entry.end(); ++e, ++k) {
        const YAML::Node value = *e;
        *parts[k] = Part{value, PosOf(value, pos), fmt::format("{}[{}]", field, k)};
      }
    } else if (entry.IsMap()) {
      std::vector<Field> fields;
      TOPOTUNE_RETURN_IF_ERROR(ReadFields(entry, pos, field, {"a", "b", "speed", "latency", "members"},
                                          "a link map allows the keys a, b, speed, latency and members", &fields));
      for (const Field& f : fields) {
        std::optional<Part>* part = f.key == "a"         ? &a
                                    : f.key == "b"       ? &b
                                    : f.key == "speed"   ? &speed
                                    : f.key == "latency" ? &latency
                                                         : &members;
        *part = Part{f.value, f.pos, field + "." + f.key};
      }
      for (auto [part, name] : {std::pair{&a, "a"}, std::pair{&b, "b"}, std::pair{&speed, "speed"}}) {
        if (!*part)
          return Error(pos, field + "." + name, "missing; a link map needs a, b and speed (latency is optional)");
      }
    } else {
      return Error(pos, field, fmt::format("expected a list or a map, found {}; {}", Found(entry), kLinkForms));
    }
    Link link;
    link.pos = pos;
    StatusOr<int> ia = ParseEndpoint(a->value, a->pos, a->field);
    if (!ia.ok()) return ia.status();
    StatusOr<int> ib = ParseEndpoint(b->value, b->pos, b->field);
    if (!ib.ok()) return ib.status();
    StatusOr<double> bps = ParseSpeedValue(speed->value, speed->pos, speed->field);
    if (!bps.ok()) return bps.status();
    link.a = *ia;
    link.b = *ib;
    link.speed_bps = *bps;
    if (latency) {
      StatusOr<double> s = ParseLatencyValue(latency->value, latency->pos, latency->field);
      if (!s.ok()) return s.status();
      link.latency_s = *s;
    }
    if (members) {
      StatusOr<int> m =
          ParseCount(members->value, members->pos, members->field, "members", kMaxLagMembers, kMembersAllowed);
      if (!m.ok()) return m.status();
      link.members = *m;
    }
    links_.push_back(link);
  }
  return Status::Ok();
}

// FormatSpeed and FormatLatency keep six decimals, which is what people write
// but not always the exact double. When they lose bits, write the shortest
// decimal that reads back to the same double: first in the unit a person would
// pick ("1.2345678us"), and if the unit's scaling rounds differently, in the
// base unit, which reads back exactly.
struct TextUnit {
  double scale;
  const char* name;
};

// `units` run from largest to smallest; `base` has scale 1.
std::string ExactText(double value, std::string formatted, std::optional<double> (*parse)(std::string_view),
                      std::initializer_list<TextUnit> units, const char* base) {
  if (parse(formatted) == value) return formatted;
  for (const TextUnit& u : units) {
    if (value >= u.scale) {
      std::string s = fmt::format("{}{}", value / u.scale, u.name);
      if (parse(s) == value) return s;
      break;
    }
  }
  return fmt::format("{}{}", value, base);
}

std::string SpeedText(double bps) {
  return ExactText(bps, FormatSpeed(bps), &ParseSpeed, {{1e9, "Gbps"}, {1e6, "Mbps"}, {1e3, "Kbps"}}, "bps");
}

std::string LatencyText(double seconds) {
  return ExactText(seconds, FormatLatency(seconds), &ParseLatency, {{1, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}},
                   "s");
}

}  // namespace

StatusOr<Topology> ParseTopology(std::string_view text, std::string source_name) {
  // yaml-cpp reports errors by throwing; none of that may escape, since the
  // callers (daemon, tuner plugin) treat errors as values.
  try {
    Parser parser(source_name);
    return parser.Run(text);
  } catch (const YAML::Exception& e) {
    const int line = e.mark.line >= 0 ? e.mark.line + 1 : 1;
    return Status::InvalidArgument(
        fmt::format("{}:{}: top level: cannot read the YAML: {}; a topology file must be valid YAML (or JSON)",
                    source_name, line, e.msg));
  } catch (const std::exception& e) {
    return Status::Internal(fmt::format("{}:1: top level: cannot read the file: {}", source_name, e.what()));
  }
}

StatusOr<Topology> LoadTopologyFile(const std::string& path) {
  StatusOr<std::string> text = ReadWholeFile(path, "topology file");
  if (!text.ok()) return text.status();
  return ParseTopology(*text, path);
}

std::string DumpTopology(const Topology& t) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  for (NodeKind kind : {NodeKind::kSwitch, NodeKind::kHost}) {
    out << YAML::Key << (kind == NodeKind::kSwitch ? "switches" : "hosts") << YAML::Value;
    bool any = false;
    for (const Node& n : t.nodes()) any = any || n.kind == kind;
    if (!any) {
      out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
      continue;
    }
    out << YAML::BeginSeq;
    for (const Node& n : t.nodes()) {
      if (n.kind != kind) continue;
      out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << n.name;
      if (kind == NodeKind::kHost && n.slots != 1) out << YAML::Key << "slots" << YAML::Value << n.slots;
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  out << YAML::Key << "links" << YAML::Value;
  if (t.links().empty()) {
    out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
  } else {
    out << YAML::BeginSeq;
    for (const Link& l : t.links()) {
      if (l.members > 1) {  // A LAG: the map form, the only one with members.
        out << YAML::Flow << YAML::BeginMap << YAML::Key << "a" << YAML::Value << t.nodes()[l.a].name << YAML::Key
            << "b" << YAML::Value << t.nodes()[l.b].name << YAML::Key << "speed" << YAML::Value
            << SpeedText(l.speed_bps);
        if (l.latency_s != 0) out << YAML::Key << "latency" << YAML::Value << LatencyText(l.latency_s);
        out << YAML::Key << "members" << YAML::Value << l.members << YAML::EndMap;
        continue;
      }
      out << YAML::Flow << YAML::BeginSeq << t.nodes()[l.a].name << t.nodes()[l.b].name << SpeedText(l.speed_bps);
      if (l.latency_s != 0) out << LatencyText(l.latency_s);
      out << YAML::EndSeq;
    }
    out << YAML::EndSeq;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace topotune
