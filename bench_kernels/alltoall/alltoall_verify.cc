#include "bench_kernels/alltoall/alltoall_verify.h"

#include <fmt/format.h>

#include <algorithm>

namespace topotune::kernels {
namespace {

constexpr uint8_t kSendGap = 0xA5;  // Gaps of the send buffer.
constexpr uint8_t kRecvGap = 0x5A;  // Gaps of the receive buffer, which must survive.

}  // namespace

std::string_view AlltoallCheckTypeName(AlltoallCheckType t) {
  switch (t) {
    case AlltoallCheckType::kByte:
      return "MPI_BYTE";
    case AlltoallCheckType::kInt:
      return "MPI_INT";
    case AlltoallCheckType::kDouble:
      return "MPI_DOUBLE";
    case AlltoallCheckType::kVector:
      return "vector";
    case AlltoallCheckType::kVectorToInt:
      return "vector->MPI_INT";
    case AlltoallCheckType::kIntToVector:
      return "MPI_INT->vector";
  }
  return "unknown";
}

uint8_t AlltoallPattern(uint32_t seed, int src, int dst, int64_t i) {
  uint32_t h = seed * 0x27D4EB2Fu ^ static_cast<uint32_t>(src) * 0x9E3779B1u ^
               static_cast<uint32_t>(dst) * 0x85EBCA77u ^ static_cast<uint32_t>(i) * 0xC2B2AE3Du ^
               static_cast<uint32_t>(i >> 32);
  h ^= h >> 15;
  h *= 0x2C1B3C6Du;
  h ^= h >> 12;
  return static_cast<uint8_t>(h);
}

AlltoallCheckData::~AlltoallCheckData() {
  if (vector_ != MPI_DATATYPE_NULL) MPI_Type_free(&vector_);
}

int AlltoallCheckData::Init(const AlltoallCheckCase& c, MPI_Comm comm) {
  case_ = c;
  comm_ = comm;
  if (int rc = MPI_Comm_rank(comm, &rank_); rc != MPI_SUCCESS) return rc;
  if (int rc = MPI_Comm_size(comm, &size_); rc != MPI_SUCCESS) return rc;
  // 2 x 3 ints at stride 5, extent 10 ints: gaps inside and at the end.
  MPI_Datatype v;
  MPI_Type_vector(2, 3, 5, MPI_INT, &v);
  MPI_Type_create_resized(v, 0, 10 * static_cast<MPI_Aint>(sizeof(int)), &vector_);
  MPI_Type_free(&v);
  if (int rc = MPI_Type_commit(&vector_); rc != MPI_SUCCESS) return rc;
  switch (c.type) {
    case AlltoallCheckType::kByte:
      send_type_ = recv_type_ = MPI_BYTE;
      break;
    case AlltoallCheckType::kInt:
      send_type_ = recv_type_ = MPI_INT;
      break;
    case AlltoallCheckType::kDouble:
      send_type_ = recv_type_ = MPI_DOUBLE;
      break;
    case AlltoallCheckType::kVector:
      send_type_ = recv_type_ = vector_;
      break;
    case AlltoallCheckType::kVectorToInt:
      send_type_ = vector_;
      recv_type_ = MPI_INT;
      break;
    case AlltoallCheckType::kIntToVector:
      send_type_ = MPI_INT;
      recv_type_ = vector_;
      break;
  }
  const bool mixed = c.type == AlltoallCheckType::kVectorToInt || c.type == AlltoallCheckType::kIntToVector;
  send_count_ = mixed && send_type_ == MPI_INT ? 6 * c.count : c.count;
  recv_count_ = mixed && recv_type_ == MPI_INT ? 6 * c.count : c.count;
  int send_size = 0, recv_size = 0;
  MPI_Type_size(send_type_, &send_size);
  MPI_Type_size(recv_type_, &recv_size);
  block_ = static_cast<int64_t>(recv_count_) * recv_size;
  MPI_Aint lb, send_extent, recv_extent;
  MPI_Type_get_extent(send_type_, &lb, &send_extent);
  MPI_Type_get_extent(recv_type_, &lb, &recv_extent);
  const int n = size_;

  // Packed send data of this rank, block d for rank d.
  std::vector<uint8_t> packed(static_cast<size_t>(n * block_) + 1);
  for (int d = 0; d < n; ++d)
    for (int64_t i = 0; i < block_; ++i) packed[d * block_ + i] = AlltoallPattern(c.seed, rank_, d, i);
  auto unpack = [&](const std::vector<uint8_t>& from, std::vector<uint8_t>* to, int count, MPI_Datatype type) {
    int pos = 0;
    return MPI_Unpack(from.data(), static_cast<int>(n * block_), &pos, to->data(), n * count, type, comm);
  };
  recv_.assign(static_cast<size_t>(n * recv_count_ * recv_extent) + 1, kRecvGap);
  if (c.in_place) {
    if (int rc = unpack(packed, &recv_, recv_count_, recv_type_); rc != MPI_SUCCESS) return rc;
  } else {
    send_.assign(static_cast<size_t>(n * send_count_ * send_extent) + 1, kSendGap);
    if (int rc = unpack(packed, &send_, send_count_, send_type_); rc != MPI_SUCCESS) return rc;
    send_before_ = send_;
  }
  // Which bytes of the receive buffer the receive type covers.
  recv_mask_.assign(recv_.size(), 0);
  std::fill(packed.begin(), packed.end(), 0xFF);
  return unpack(packed, &recv_mask_, recv_count_, recv_type_);
}

AlltoallArgs AlltoallCheckData::args() {
  if (case_.in_place)
    return AlltoallArgs{MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv_.data(), recv_count_, recv_type_, comm_};
  return AlltoallArgs{send_.data(), send_count_, send_type_, recv_.data(), recv_count_, recv_type_, comm_};
}

int64_t AlltoallCheckData::Verify(std::string* error) const {
  int64_t wrong = 0;
  // Counts a problem; true for the first one, which gets described.
  auto first = [&] { return wrong++ == 0; };
  const std::string who = fmt::format("rank {}: ", rank_);
  if (!case_.in_place) {
    for (size_t j = 0; j < send_.size(); ++j)
      if (send_[j] != send_before_[j] && first()) *error = who + fmt::format("send buffer byte {} was modified", j);
  }
  const int n = size_;
  std::vector<uint8_t> got(static_cast<size_t>(n * block_) + 1);
  int pos = 0;
  int rc = MPI_Pack(recv_.data(), n * recv_count_, recv_type_, got.data(), static_cast<int>(got.size()), &pos, comm_);
  if (rc != MPI_SUCCESS) {
    if (first()) *error = who + fmt::format("MPI_Pack of the receive buffer failed ({})", rc);
    return wrong;
  }
  for (int s = 0; s < n; ++s) {
    for (int64_t i = 0; i < block_; ++i) {
      const uint8_t want = AlltoallPattern(case_.seed, s, rank_, i);
      const uint8_t have = got[s * block_ + i];
      if (have != want && first())
        *error = who + fmt::format("block from rank {}, byte {} of {}: got 0x{:02x}, want 0x{:02x}", s, i, block_, have,
                                   want);
    }
  }
  for (size_t j = 0; j < recv_.size(); ++j)
    if (recv_mask_[j] == 0 && recv_[j] != kRecvGap && first())
      *error = who + fmt::format("receive buffer byte {} lies in a gap of the datatype but was written", j);
  return wrong;
}

AlltoallCheckResult CheckAlltoall(const KernelInfo& kernel, const KernelContext& ctx, MPI_Comm comm,
                                  const AlltoallCheckCase& c) {
  AlltoallCheckResult result;
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  AlltoallCheckData data;
  std::string error;
  int64_t wrong = 0, fallbacks = 0;
  int rc = data.Init(c, comm);
  if (rc != MPI_SUCCESS) {
    error = fmt::format("rank {}: preparing the buffers failed ({})", rank, rc);
  } else {
    FallbackLog log;
    log.sink = [](const std::string&) {};
    rc = RunAlltoall(kernel, data.args(), ctx, &log);
    for (const auto& [reason, count] : log.counts()) fallbacks += count;
    if (rc != MPI_SUCCESS)
      error = fmt::format("rank {}: RunAlltoall returned {}", rank, rc);
    else
      wrong = data.Verify(&error);
  }
  int64_t sums[2] = {wrong, fallbacks}, totals[2] = {0, 0};
  PMPI_Allreduce(sums, totals, 2, MPI_INT64_T, MPI_SUM, comm);
  result.wrong_bytes = totals[0];
  result.fallbacks = totals[1];
  PMPI_Allreduce(&rc, &result.rc, 1, MPI_INT, MPI_MAX, comm);
  int failing = error.empty() ? size : rank, first = size;
  PMPI_Allreduce(&failing, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first < size) {
    int length = static_cast<int>(error.size());
    PMPI_Bcast(&length, 1, MPI_INT, first, comm);
    error.resize(length);
    PMPI_Bcast(error.data(), length, MPI_CHAR, first, comm);
    result.first_error = error;
  }
  return result;
}

std::string DescribeAlltoallCase(const KernelInfo& kernel, const AlltoallCheckCase& c) {
  return fmt::format("{} {} count={}{} seed={}", kernel.name, AlltoallCheckTypeName(c.type), c.count,
                     c.in_place ? " in_place" : "", c.seed);
}

}  // namespace topotune::kernels
