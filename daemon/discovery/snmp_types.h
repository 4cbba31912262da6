// SNMP values as discovery sees them: object identifiers, typed values and
// variable bindings, independent of net-snmp so that recorded walks and live
// walks produce the same data. Also the value decoders that switch tables
// need: integers, text, MAC addresses in every form vendors use, IPv4
// addresses inside OID indexes.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace topotune::discovery {

using Oid = std::vector<uint32_t>;

// Parses "1.3.6.1.2.1.1.5.0" (a leading '.' is accepted). nullopt on an empty
// string, a non-digit, an empty component or a component above 2^32-1.
std::optional<Oid> ParseOid(std::string_view text);
// "1.3.6.1.2.1.1.5.0".
std::string FormatOid(std::span<const uint32_t> oid);
// True if `oid` starts with `prefix` (a prefix of itself included).
bool HasPrefix(std::span<const uint32_t> oid, std::span<const uint32_t> prefix);

// The SNMP types that switch MIBs use, numbered as in snmprec files and ASN.1.
enum class SnmpType : uint8_t {
  kInteger = 2,
  kOctetString = 4,
  kNull = 5,
  kObjectId = 6,
  kIpAddress = 64,
  kCounter32 = 65,
  kGauge32 = 66,
  kTimeTicks = 67,
  kOpaque = 68,
  kCounter64 = 70,
};

struct SnmpValue {
  SnmpType type = SnmpType::kNull;
  int64_t integer = 0;  // kInteger, kCounter32, kGauge32, kTimeTicks, kCounter64 (as unsigned bits).
  std::string bytes;    // kOctetString, kOpaque, kIpAddress (4 raw bytes).
  Oid oid;              // kObjectId.
};

struct VarBind {
  Oid oid;
  SnmpValue value;
};

// The value as an integer, for the numeric types; nullopt otherwise.
std::optional<int64_t> AsInteger(const SnmpValue& v);
// The value as text: octet strings as they are (trailing NULs dropped, as
// some agents pad names), numbers in decimal.
std::string AsText(const SnmpValue& v);
// The value's bytes: octet strings and opaque values verbatim, trailing NULs
// included (a MAC or an address ending in 0 is data, not padding); others as
// AsText. For IDs, which may be MACs or addresses, not text.
std::string AsBytes(const SnmpValue& v);
// `s` without trailing NULs.
std::string_view TrimTrailingNuls(std::string_view s);

// A MAC address, stored as its 6 bytes.
struct Mac {
  uint8_t b[6] = {};
  friend auto operator<=>(const Mac&, const Mac&) = default;
};
// "02:00:5e:10:00:01".
std::string FormatMac(const Mac& mac);
// Normalises a MAC in every form that switches report: 6 raw bytes; 12 hex
// digits ("001B21BBE6F0"); or 6 hex pairs (1 or 2 digits each) separated by
// ':', '-', '.' or ' ' ("0:1b:21:bb:e6:f0"); also Cisco's "001b.21bb.e6f0".
// Leading/trailing spaces are ignored. nullopt for anything else.
std::optional<Mac> ParseMac(std::string_view bytes_or_text);
// A MAC from 6 OID index components (each 0..255) starting at `pos`.
std::optional<Mac> MacFromIndex(std::span<const uint32_t> oid, size_t pos);

// "198.18.0.1" from 4 raw bytes; empty if not 4 bytes.
std::string FormatIpv4(std::string_view raw4);
// "2001:db8::1" from 16 raw bytes (RFC 5952 text); empty if not 16 bytes.
std::string FormatIpv6(std::string_view raw16);

// Printable text for messages: control and non-ASCII bytes as \xNN, at most
// `max_len` bytes then "...". Every string a switch sends goes through it (or
// through a normalisation that only keeps 0x20-0x7e) before it reaches a
// name, a message or an output file.
std::string Printable(std::string_view bytes, size_t max_len = 64);
// The last guard of a line of output (a YAML comment, a line on stderr):
// every byte outside 0x20-0x7e, a newline included, becomes '?'.
std::string ScrubLine(std::string_view line);

}  // namespace topotune::discovery
