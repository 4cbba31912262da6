// Test support shared by the alltoallv and allgather correctness checkers
// (alltoallv_check.h, allgather/allgather_check.h): the datatypes a case
// runs with, where each payload byte lands in a buffer of such a type, the
// expected value of every payload byte, and how a check compares buffers and
// agrees on its verdict across ranks. Not part of the kernel library.
//
// Counts in a case are in "units": 1 byte for kByte, one int for kInt, one
// double for kDouble, 8 bytes (two ints) for kVector and kMixed. kVector is
// two ints with a 4-byte gap between them and a 4-byte gap after them
// (vector(2, 1, 2, MPI_INT) resized to a 16-byte extent). kMixed pairs
// matching type signatures of different shape across ranks: even ranks send
// the vector type and receive MPI_INT (two per unit), odd ranks the reverse,
// so that kernels must not assume that all ranks use the same datatype.
//
// Thread-safety: CaseTypes owns committed MPI datatypes and belongs to one
// thread; the free functions are pure.
#pragma once

#include <fmt/format.h>
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace topotune::kernels::check {

enum class TypeCase { kByte, kInt, kDouble, kVector, kMixed };
inline constexpr TypeCase kAllTypeCases[] = {TypeCase::kByte, TypeCase::kInt, TypeCase::kDouble, TypeCase::kVector,
                                             TypeCase::kMixed};

inline std::string_view TypeCaseName(TypeCase t) {
  switch (t) {
    case TypeCase::kByte:
      return "byte";
    case TypeCase::kInt:
      return "int";
    case TypeCase::kDouble:
      return "double";
    case TypeCase::kVector:
      return "vector_with_gaps";
    case TypeCase::kMixed:
      return "mixed_vector_int";
  }
  return "?";
}

// Bytes of payload per unit.
inline int UnitBytes(TypeCase t) {
  switch (t) {
    case TypeCase::kByte:
      return 1;
    case TypeCase::kInt:
      return 4;
    default:
      return 8;
  }
}

// Where the payload of one element of a datatype lies within its extent.
struct TypeShape {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Aint extent = 0;
  int per_unit = 1;                           // Elements per unit.
  std::vector<std::pair<int, int>> segments;  // (offset, length) of the payload in one element.
  int payload = 0;                            // Sum of the segment lengths.
  // Offset in the buffer of payload byte k of a run of elements.
  size_t Offset(size_t k) const {
    size_t e = k / payload, w = k % payload;
    for (auto [off, len] : segments) {
      if (w < static_cast<size_t>(len)) return e * static_cast<size_t>(extent) + off + w;
      w -= len;
    }
    return 0;  // Unreachable.
  }
};

// The datatypes of one rank for one case; frees the derived ones.
class CaseTypes {
 public:
  CaseTypes(TypeCase t, int rank) {
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec_tmp_);
    MPI_Type_create_resized(vec_tmp_, 0, 16, &vec_);
    MPI_Type_commit(&vec_);
    TypeShape bytes{MPI_BYTE, 1, 1, {{0, 1}}, 1};
    TypeShape ints{MPI_INT, 4, 1, {{0, 4}}, 4};
    TypeShape ints2{MPI_INT, 4, 2, {{0, 4}}, 4};
    TypeShape dbl{MPI_DOUBLE, 8, 1, {{0, 8}}, 8};
    TypeShape vec{vec_, 16, 1, {{0, 4}, {8, 4}}, 8};
    switch (t) {
      case TypeCase::kByte:
        send_ = recv_ = bytes;
        break;
      case TypeCase::kInt:
        send_ = recv_ = ints;
        break;
      case TypeCase::kDouble:
        send_ = recv_ = dbl;
        break;
      case TypeCase::kVector:
        send_ = recv_ = vec;
        break;
      case TypeCase::kMixed:
        send_ = rank % 2 == 0 ? vec : ints2;
        recv_ = rank % 2 == 0 ? ints2 : vec;
        break;
    }
  }
  ~CaseTypes() {
    MPI_Type_free(&vec_);
    MPI_Type_free(&vec_tmp_);
  }
  CaseTypes(const CaseTypes&) = delete;
  CaseTypes& operator=(const CaseTypes&) = delete;
  const TypeShape& send() const { return send_; }
  const TypeShape& recv() const { return recv_; }

 private:
  MPI_Datatype vec_tmp_ = MPI_DATATYPE_NULL, vec_ = MPI_DATATYPE_NULL;
  TypeShape send_, recv_;
};

// What untouched buffer bytes hold.
inline constexpr unsigned char kSentinel = 0xA5;

// Expected payload byte k of the message from `src` to `dst` (dst = -1 for
// allgather, where a block goes to every rank alike). Never the sentinel, so
// that an unwritten byte is always caught.
inline unsigned char PayloadByte(uint64_t seed, int src, int dst, size_t k) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull ^ (uint64_t(uint32_t(src)) << 40) ^ (uint64_t(uint32_t(dst)) << 20) ^ k;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb3fe1a85ec53ull;
  x ^= x >> 33;
  unsigned char b = static_cast<unsigned char>(x);
  return b == kSentinel ? static_cast<unsigned char>(b ^ 0x5A) : b;
}

// Writes the payload of src -> dst (bytes bytes) into a run of `shape`
// elements at buf.
inline void FillPayload(char* buf, const TypeShape& shape, uint64_t seed, int src, int dst, size_t bytes) {
  for (size_t k = 0; k < bytes; ++k) buf[shape.Offset(k)] = static_cast<char>(PayloadByte(seed, src, dst, k));
}

// Compares got with want byte by byte; describes the first difference, with
// its block when block_span (bytes per block) is not 0. "" when equal.
inline std::string FirstDifference(const std::vector<char>& got, const std::vector<char>& want, const char* what,
                                   size_t block_span = 0) {
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    std::string block = block_span ? fmt::format(" (block {})", i / block_span) : "";
    return fmt::format("{} byte {}{}: expected 0x{:02x}, got 0x{:02x}", what, i, block,
                       static_cast<unsigned char>(want[i]), static_cast<unsigned char>(got[i]));
  }
  return "";
}

// Collective over comm: combines the ranks' outcomes (a Result with ok,
// fell_back and error) so that every rank returns the same verdict. It is ok
// only when every rank's bytes were right and either every rank fell back or
// none did.
template <typename Result>
void Agree(MPI_Comm comm, Result* r) {
  int local[3] = {r->ok ? 1 : 0, r->fell_back ? 1 : 0, r->fell_back ? 0 : 1};
  int all[3];
  MPI_Allreduce(local, all, 3, MPI_INT, MPI_MIN, comm);
  // all[1] == 1: everyone fell back; all[2] == 1: nobody did.
  if (all[1] == 0 && all[2] == 0 && r->error.empty())
    r->error = fmt::format("the fallback decision differs between ranks (this rank: {})",
                           r->fell_back ? "fell back" : "ran the kernel");
  int ok = (all[0] == 1 && r->error.empty()) ? 1 : 0, all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
  r->ok = all_ok == 1;
}

}  // namespace topotune::kernels::check
