#include "daemon/discovery/snmp_types.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <cctype>
#include <charconv>

namespace topotune::discovery {

std::optional<Oid> ParseOid(std::string_view text) {
  if (!text.empty() && text.front() == '.') text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  Oid oid;
  while (true) {
    size_t dot = text.find('.');
    std::string_view part = text.substr(0, dot);
    uint32_t v = 0;
    auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || p != part.data() + part.size()) return std::nullopt;
    oid.push_back(v);
    if (dot == std::string_view::npos) break;
    text.remove_prefix(dot + 1);
  }
  return oid;
}

std::string FormatOid(std::span<const uint32_t> oid) {
  std::string s;
  for (size_t i = 0; i < oid.size(); ++i) {
    if (i) s += '.';
    s += std::to_string(oid[i]);
  }
  return s;
}

bool HasPrefix(std::span<const uint32_t> oid, std::span<const uint32_t> prefix) {
  return oid.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), oid.begin());
}

std::optional<int64_t> AsInteger(const SnmpValue& v) {
  switch (v.type) {
    case SnmpType::kInteger:
    case SnmpType::kCounter32:
    case SnmpType::kGauge32:
    case SnmpType::kTimeTicks:
    case SnmpType::kCounter64:
      return v.integer;
    default:
      return std::nullopt;
  }
}

std::string AsText(const SnmpValue& v) {
  switch (v.type) {
    case SnmpType::kOctetString:
    case SnmpType::kOpaque:
      return std::string(TrimTrailingNuls(v.bytes));
    case SnmpType::kIpAddress:
      return FormatIpv4(v.bytes);
    case SnmpType::kObjectId:
      return FormatOid(v.oid);
    case SnmpType::kNull:
      return "";
    default:
      return std::to_string(v.integer);
  }
}

std::string AsBytes(const SnmpValue& v) {
  if (v.type == SnmpType::kOctetString || v.type == SnmpType::kOpaque) return v.bytes;
  return AsText(v);
}

std::string_view TrimTrailingNuls(std::string_view s) {
  while (!s.empty() && s.back() == '\0') s.remove_suffix(1);
  return s;
}

std::string FormatMac(const Mac& mac) {
  return fmt::format("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", mac.b[0], mac.b[1], mac.b[2], mac.b[3], mac.b[4],
                     mac.b[5]);
}

namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Parses a run of hex digits into bytes (an even count); false otherwise.
bool HexRun(std::string_view s, std::vector<uint8_t>& out) {
  if (s.size() % 2) return false;
  for (size_t i = 0; i < s.size(); i += 2) {
    int hi = HexDigit(s[i]), lo = HexDigit(s[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out.push_back(static_cast<uint8_t>(hi * 16 + lo));
  }
  return true;
}

}  // namespace

std::optional<Mac> ParseMac(std::string_view s) {
  Mac mac;
  if (s.size() == 6) {
    // Six raw bytes, unless all six are hex digits of a shorter text form
    // (which no valid text MAC is), so raw wins.
    for (int i = 0; i < 6; ++i) mac.b[i] = static_cast<uint8_t>(s[i]);
    return mac;
  }
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\0')) s.remove_suffix(1);
  std::vector<uint8_t> bytes;
  if (s.size() == 12) {
    if (!HexRun(s, bytes)) return std::nullopt;
  } else if (s.size() == 14 && s[4] == '.' && s[9] == '.') {  // 001b.21bb.e6f0
    if (!HexRun(s.substr(0, 4), bytes) || !HexRun(s.substr(5, 4), bytes) || !HexRun(s.substr(10, 4), bytes))
      return std::nullopt;
  } else {
    // Six groups of one or two hex digits with one separator kind.
    char sep = 0;
    size_t i = 0;
    while (i <= s.size()) {
      size_t j = i;
      while (j < s.size() && HexDigit(s[j]) >= 0) ++j;
      size_t n = j - i;
      if (n < 1 || n > 2) return std::nullopt;
      int v = 0;
      for (size_t k = i; k < j; ++k) v = v * 16 + HexDigit(s[k]);
      bytes.push_back(static_cast<uint8_t>(v));
      if (j == s.size()) break;
      char c = s[j];
      if (c != ':' && c != '-' && c != '.' && c != ' ') return std::nullopt;
      if (sep && c != sep) return std::nullopt;
      sep = c;
      i = j + 1;
    }
    if (bytes.size() != 6 || !sep) return std::nullopt;
  }
  if (bytes.size() != 6) return std::nullopt;
  for (int i = 0; i < 6; ++i) mac.b[i] = bytes[i];
  return mac;
}

std::optional<Mac> MacFromIndex(std::span<const uint32_t> oid, size_t pos) {
  if (oid.size() < pos + 6) return std::nullopt;
  Mac mac;
  for (int i = 0; i < 6; ++i) {
    if (oid[pos + i] > 255) return std::nullopt;
    mac.b[i] = static_cast<uint8_t>(oid[pos + i]);
  }
  return mac;
}

std::string FormatIpv4(std::string_view raw4) {
  if (raw4.size() != 4) return "";
  auto u = [&](int i) { return static_cast<unsigned>(static_cast<uint8_t>(raw4[i])); };
  return fmt::format("{}.{}.{}.{}", u(0), u(1), u(2), u(3));
}

std::string FormatIpv6(std::string_view raw16) {
  char text[INET6_ADDRSTRLEN];
  if (raw16.size() != 16 || !inet_ntop(AF_INET6, raw16.data(), text, sizeof text)) return "";
  return text;
}

std::string Printable(std::string_view bytes, size_t max_len) {
  std::string s;
  for (size_t i = 0; i < bytes.size() && i < max_len; ++i) {
    auto c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      s += static_cast<char>(c);
    } else {
      s += fmt::format("\\x{:02x}", c);
    }
  }
  if (bytes.size() > max_len) s += "...";
  return s;
}

std::string ScrubLine(std::string_view line) {
  std::string s(line);
  for (char& c : s)
    if (c < 0x20 || c > 0x7e) c = '?';
  return s;
}

}  // namespace topotune::discovery
