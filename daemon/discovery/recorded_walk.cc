#include "daemon/discovery/recorded_walk.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "daemon/discovery/warnings.h"

namespace topotune::discovery {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

template <typename Int>
std::optional<Int> ParseNumber(std::string_view s) {
  s = Trim(s);
  Int v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// Hex digits, optionally separated by spaces or newlines, to bytes.
std::optional<std::string> DecodeHex(std::string_view s) {
  std::string out;
  int hi = -1;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
            : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
            : (c >= 'A' && c <= 'F')                    ? c - 'A' + 10
                                                        : -1;
    if (d < 0) return std::nullopt;
    if (hi < 0) {
      hi = d;
    } else {
      out += static_cast<char>(hi * 16 + d);
      hi = -1;
    }
  }
  if (hi >= 0) return std::nullopt;
  return out;
}

// Python string escapes as snmpsim writes them ('e' encoding).
std::optional<std::string> DecodeEscaped(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out += s[i];
      continue;
    }
    if (++i == s.size()) return std::nullopt;
    switch (s[i]) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case '\\':
        out += '\\';
        break;
      case '\'':
        out += '\'';
        break;
      case '"':
        out += '"';
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'v':
        out += '\v';
        break;
      case 'x': {
        if (i + 2 >= s.size()) return std::nullopt;
        auto h = DecodeHex(s.substr(i + 1, 2));
        if (!h || h->size() != 1) return std::nullopt;
        out += *h;
        i += 2;
        break;
      }
      default:
        return std::nullopt;
    }
  }
  return out;
}

// Takes the next line off `text` (without its "\n" or "\r\n").
std::string_view NextLine(std::string_view& text) {
  size_t nl = text.find('\n');
  std::string_view line = text.substr(0, nl);
  text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

// Sorts by OID and drops later duplicates, reporting them to `warnings`.
void SortAndDedupe(ParsedWalk& walk, std::string_view source, WarningLog& warnings) {
  std::stable_sort(walk.vars.begin(), walk.vars.end(),
                   [](const VarBind& a, const VarBind& b) { return a.oid < b.oid; });
  auto last = std::unique(walk.vars.begin(), walk.vars.end(), [&](const VarBind& a, const VarBind& b) {
    if (a.oid != b.oid) return false;
    warnings.Add("duplicate OID",
                 fmt::format("{}: duplicate OID {} (the first value is kept)", source, FormatOid(a.oid)));
    return true;
  });
  walk.vars.erase(last, walk.vars.end());
}

// Builds a value of snmprec type `tag` from its (decoded) text.
std::optional<SnmpValue> MakeValue(int tag, std::string_view text, bool raw_bytes) {
  SnmpValue v;
  v.type = static_cast<SnmpType>(tag);
  switch (tag) {
    case 2: {
      auto n = ParseNumber<int64_t>(text);
      if (!n || *n < INT32_MIN || *n > INT32_MAX) return std::nullopt;
      v.integer = *n;
      return v;
    }
    case 65:
    case 66:
    case 67: {
      auto n = ParseNumber<uint64_t>(text);
      if (!n || *n > UINT32_MAX) return std::nullopt;
      v.integer = static_cast<int64_t>(*n);
      return v;
    }
    case 70: {
      auto n = ParseNumber<uint64_t>(text);
      if (!n) return std::nullopt;
      v.integer = static_cast<int64_t>(*n);
      return v;
    }
    case 4:
    case 68:
      v.bytes = std::string(text);
      return v;
    case 64:
      if (raw_bytes) {
        if (text.size() != 4) return std::nullopt;
        v.bytes = std::string(text);
        return v;
      } else {
        std::string raw;
        std::string_view rest = Trim(text);
        for (int i = 0; i < 4; ++i) {
          size_t dot = rest.find('.');
          if ((i < 3) != (dot != std::string_view::npos)) return std::nullopt;
          auto n = ParseNumber<unsigned>(rest.substr(0, dot));
          if (!n || *n > 255) return std::nullopt;
          raw += static_cast<char>(*n);
          rest = i < 3 ? rest.substr(dot + 1) : std::string_view();
        }
        v.bytes = raw;
        return v;
      }
    case 6: {
      auto oid = ParseOid(Trim(text));
      if (!oid) return std::nullopt;
      v.oid = *oid;
      return v;
    }
    case 5:
      return v;
    default:
      return std::nullopt;
  }
}

}  // namespace

ParsedWalk ParseSnmprec(std::string_view text, std::string_view source) {
  ParsedWalk walk;
  WarningLog warnings{std::string(source)};
  int line_no = 0;
  while (!text.empty()) {
    std::string_view line = NextLine(text);
    ++line_no;
    if (Trim(line).empty() || Trim(line).front() == '#') continue;
    auto bad = [&](std::string_view why) {
      warnings.Add(why, fmt::format("{}:{}: {}: '{}'", source, line_no, why, Printable(line, 80)));
    };
    size_t p1 = line.find('|');
    size_t p2 = p1 == std::string_view::npos ? p1 : line.find('|', p1 + 1);
    if (p2 == std::string_view::npos) {
      bad("not an snmprec record OID|TYPE|VALUE");
      continue;
    }
    auto oid = ParseOid(Trim(line.substr(0, p1)));
    if (!oid) {
      bad("malformed OID");
      continue;
    }
    std::string_view tag_text = Trim(line.substr(p1 + 1, p2 - p1 - 1));
    std::string_view value_text = line.substr(p2 + 1);
    char encoding = 0;
    if (!tag_text.empty() && (tag_text.back() == 'x' || tag_text.back() == 'e')) {
      encoding = tag_text.back();
      tag_text.remove_suffix(1);
    }
    auto tag = ParseNumber<int>(tag_text);
    if (!tag) {
      bad("unknown type tag (variation modules are not supported)");
      continue;
    }
    if (*tag >= 128 && *tag <= 130) continue;  // noSuchObject, noSuchInstance, endOfMibView.
    std::optional<std::string> decoded(std::in_place, value_text);
    if (encoding == 'x') decoded = DecodeHex(value_text);
    if (encoding == 'e') decoded = DecodeEscaped(value_text);
    if (!decoded) {
      bad(encoding == 'x' ? "malformed hex value" : "malformed escaped value");
      continue;
    }
    auto value = MakeValue(*tag, *decoded, encoding != 0);
    if (!value) {
      bad(fmt::format("value does not fit type {}", *tag));
      continue;
    }
    walk.vars.push_back({std::move(*oid), std::move(*value)});
  }
  SortAndDedupe(walk, source, warnings);
  walk.warnings = warnings.Lines();
  walk.lines = line_no;
  return walk;
}

namespace {

// One "OID = TYPE: VALUE" record of snmpwalk output, with its continuation lines.
struct WalkRecord {
  int line = 0;
  std::string_view oid;
  std::string value;  // Everything after " = ", continuation lines joined with '\n'.
};

// Drops a trailing MIB enumeration label: "up(1)" -> "1".
std::string_view EnumNumber(std::string_view s) {
  s = Trim(s);
  if (!s.empty() && s.back() == ')') {
    size_t open = s.rfind('(');
    if (open != std::string_view::npos) return s.substr(open + 1, s.size() - open - 2);
  }
  return s;
}

std::optional<SnmpValue> ParseWalkValue(std::string_view text, std::string* why) {
  text = Trim(text);
  if (text == "\"\"") return MakeValue(4, "", false);
  size_t colon = text.find(": ");
  std::string_view type = colon == std::string_view::npos ? Trim(text) : text.substr(0, colon);
  std::string_view rest = colon == std::string_view::npos ? std::string_view() : text.substr(colon + 2);
  if (type == "STRING" || type == "STRING:") {
    rest = Trim(rest);
    if (rest.size() >= 2 && rest.front() == '"' && rest.back() == '"') {
      std::string out;
      for (size_t i = 1; i + 1 < rest.size(); ++i) {
        if (rest[i] == '\\' && i + 2 < rest.size()) ++i;
        out += rest[i];
      }
      return MakeValue(4, out, false);
    }
    return MakeValue(4, rest, false);
  }
  if (type == "Hex-STRING" || type == "Hex-STRING:") {
    auto bytes = DecodeHex(rest);
    if (!bytes) {
      *why = "malformed Hex-STRING";
      return std::nullopt;
    }
    return MakeValue(4, *bytes, true);
  }
  if (type == "BITS") {
    // "BITS: 28 00 bridge(2) router(4)": the hex octets come first.
    std::string hex;
    for (std::string_view r = Trim(rest); !r.empty();) {
      size_t sp = r.find(' ');
      std::string_view word = r.substr(0, sp);
      if (word.size() != 2 || !DecodeHex(word)) break;
      hex += word;
      r = sp == std::string_view::npos ? std::string_view() : Trim(r.substr(sp));
    }
    auto bytes = DecodeHex(hex);
    return MakeValue(4, bytes ? *bytes : "", true);
  }
  if (type == "INTEGER") return MakeValue(2, EnumNumber(rest), false);
  if (type == "Gauge32" || type == "Unsigned32") return MakeValue(66, rest, false);
  if (type == "Counter32") return MakeValue(65, rest, false);
  if (type == "Counter64") return MakeValue(70, rest, false);
  if (type == "Timeticks") {
    // "(12345) 0:02:03.45"
    size_t open = rest.find('('), close = rest.find(')');
    if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
      *why = "malformed Timeticks";
      return std::nullopt;
    }
    return MakeValue(67, rest.substr(open + 1, close - open - 1), false);
  }
  if (type == "IpAddress" || type == "Network Address") {
    if (type == "Network Address") {
      std::string digits(rest);
      std::erase(digits, ':');
      auto bytes = DecodeHex(digits);
      if (bytes && bytes->size() == 4) return MakeValue(64, *bytes, true);
    }
    return MakeValue(64, rest, false);
  }
  if (type == "OID") return MakeValue(6, rest, false);
  if (type == "NULL") return MakeValue(5, "", false);
  *why = fmt::format("unknown value type '{}'", Printable(type, 32));
  return std::nullopt;
}

}  // namespace

ParsedWalk ParseSnmpwalkOutput(std::string_view text, std::string_view source) {
  ParsedWalk walk;
  WarningLog warnings{std::string(source)};
  std::vector<WalkRecord> records;
  int line_no = 0;
  while (!text.empty()) {
    std::string_view line = NextLine(text);
    ++line_no;
    size_t eq = line.find(" = ");
    std::string_view head = eq == std::string_view::npos ? std::string_view() : Trim(line.substr(0, eq));
    bool starts_record = !head.empty() && ParseOid(head).has_value();
    if (starts_record) {
      records.push_back({line_no, head, std::string(line.substr(eq + 3))});
    } else if (!records.empty() && !Trim(line).empty()) {
      records.back().value += '\n';
      records.back().value += line;
    } else if (!Trim(line).empty() && Trim(line).front() != '#') {
      warnings.Add("not a walk line", fmt::format("{}:{}: not a walk line 'OID = TYPE: VALUE': '{}'", source, line_no,
                                                  Printable(line, 80)));
    }
  }
  for (const WalkRecord& r : records) {
    std::string_view v = Trim(r.value);
    if (v.starts_with("No Such") || v.starts_with("No more variables")) continue;
    std::string why = "malformed value";
    auto value = ParseWalkValue(v, &why);
    if (!value) {
      warnings.Add(why, fmt::format("{}:{}: {}: '{}'", source, r.line, why, Printable(v, 80)));
      continue;
    }
    walk.vars.push_back({*ParseOid(r.oid), std::move(*value)});
  }
  SortAndDedupe(walk, source, warnings);
  walk.warnings = warnings.Lines();
  walk.lines = line_no;
  return walk;
}

ParsedWalk ParseRecordedWalk(std::string_view text, std::string_view source) {
  for (std::string_view rest = text; !rest.empty();) {
    std::string_view line = Trim(NextLine(rest));
    if (line.empty() || line.front() == '#') continue;
    if (line.find(" = ") != std::string_view::npos && line.find('|') == std::string_view::npos)
      return ParseSnmpwalkOutput(text, source);
    break;
  }
  return ParseSnmprec(text, source);
}

StatusOr<ParsedWalk> LoadRecordedWalk(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError(fmt::format("{}: cannot read the recorded walk: {}", path, std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ParseRecordedWalk(ss.str(), path);
}

std::string FormatSnmprec(const std::vector<VarBind>& vars) {
  std::vector<const VarBind*> sorted;
  for (const VarBind& v : vars) sorted.push_back(&v);
  std::stable_sort(sorted.begin(), sorted.end(), [](const VarBind* a, const VarBind* b) { return a->oid < b->oid; });
  std::string out;
  for (const VarBind* vb : sorted) {
    const SnmpValue& v = vb->value;
    int tag = static_cast<int>(v.type);
    std::string value;
    bool hex = false;
    switch (v.type) {
      case SnmpType::kOctetString:
      case SnmpType::kOpaque:
      case SnmpType::kIpAddress:
        hex = v.type == SnmpType::kIpAddress || v.bytes.empty() ||
              !std::all_of(v.bytes.begin(), v.bytes.end(), [](char c) {
                return std::isalnum(static_cast<unsigned char>(c)) || c == ' ' || c == '-' || c == '/' || c == '.' ||
                       c == ':' || c == '_';
              });
        if (v.bytes.empty()) hex = false;
        if (hex) {
          for (unsigned char c : v.bytes) value += fmt::format("{:02x}", c);
        } else {
          value = v.bytes;
        }
        break;
      case SnmpType::kObjectId:
        value = FormatOid(v.oid);
        break;
      case SnmpType::kNull:
        break;
      case SnmpType::kCounter64:
        value = std::to_string(static_cast<uint64_t>(v.integer));
        break;
      default:
        value = std::to_string(v.integer);
    }
    out += fmt::format("{}|{}{}|{}\n", FormatOid(vb->oid), tag, hex ? "x" : "", value);
  }
  return out;
}

RecordedSource::RecordedSource(std::string name, std::vector<VarBind> vars)
    : name_(std::move(name)), vars_(std::move(vars)) {
  std::stable_sort(vars_.begin(), vars_.end(), [](const VarBind& a, const VarBind& b) { return a.oid < b.oid; });
}

StatusOr<std::vector<VarBind>> RecordedSource::Walk(const std::vector<Oid>& roots) {
  std::vector<VarBind> out;
  for (const Oid& root : roots) {
    ++requests_;
    auto it =
        std::lower_bound(vars_.begin(), vars_.end(), root, [](const VarBind& v, const Oid& o) { return v.oid < o; });
    for (; it != vars_.end() && HasPrefix(it->oid, root); ++it) out.push_back(*it);
  }
  return out;
}

}  // namespace topotune::discovery
