// FNV-1a: the one stable hash of the tree. Its 64-bit form is the content
// hash of stored topologies (db/store.h), topotuned's placement hashes and
// plan ids (daemon/topotuned/plans.h) and the per-comparison bootstrap seeds
// (tuner/stats.h); its 32-bit form makes the short ID digests in discovered
// switch names (daemon/discovery/tree_identity.cc). These must be stable
// across builds, platforms and releases because they are stored in the
// database, in plans and in topology files and compared later; std::hash
// makes no such promise. FNV-1a is not cryptographic: a match is a hint that
// callers confirm by comparing the content itself.
//
// It lives in the tuner, the lowest library, so that every component (db,
// discovery, topotuned, the tuner itself) takes it without a new dependency.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace topotune {

inline constexpr uint64_t kFnv1a64OffsetBasis = 0xcbf29ce484222325ULL;
inline constexpr uint64_t kFnv1a64Prime = 0x100000001b3ULL;

// FNV-1a 64 of `bytes`. `h` is where to start: the offset basis for a new
// hash, or a previous result to go on hashing, so that data fed in pieces
// hashes as if in one: Fnv1a64(b, Fnv1a64(a)) == Fnv1a64(a + b).
constexpr uint64_t Fnv1a64(std::string_view bytes, uint64_t h = kFnv1a64OffsetBasis) {
  for (char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= kFnv1a64Prime;
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

// FNV-1a 32 of `bytes` (offset basis 2166136261, prime 16777619).
constexpr uint32_t Fnv1a32(std::string_view bytes) {
  uint32_t h = 2166136261u;
  for (char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return h;
}

}  // namespace topotune
