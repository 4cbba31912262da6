// FNV-1a 64: the content hash of stored topologies (and usable for placement
// hashes in the plan cache). It must be stable across builds, platforms and
// releases because hashes are stored in the database and compared later;
// std::hash makes no such promise. FNV-1a is not cryptographic: a match is a
// hint that callers confirm by comparing the content itself.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace topotune::db {

// FNV-1a 64 of `bytes` (offset basis 0xcbf29ce484222325, prime 0x100000001b3).
constexpr uint64_t Fnv1a64(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

// Fnv1a64 as 16 lower-case hex digits, the form stored in the database.
inline std::string Fnv1a64Hex(std::string_view bytes) {
  constexpr char kDigits[] = "0123456789abcdef";
  uint64_t h = Fnv1a64(bytes);
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4) out[static_cast<size_t>(i)] = kDigits[h & 0xf];
  return out;
}

}  // namespace topotune::db
