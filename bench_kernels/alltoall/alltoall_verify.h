// Byte-for-byte correctness check of an alltoall kernel, for the test
// matrix (tests/mpi, bench_kernels/alltoall/alltoall_check.cc) and for
// benchmark drivers that verify a kernel before timing it.
//
// CheckAlltoall runs one kernel through RunAlltoall on a communicator with
// send data AlltoallPattern(seed, src, dst, i) for byte i of the block from
// src to dst, then checks on every rank: every byte received, that gaps of
// a derived receive type were not written, that the send buffer was not
// modified, and whether the kernel fell back. Datatypes: MPI_BYTE, MPI_INT,
// MPI_DOUBLE, a vector type with gaps (2 blocks of 3 ints, stride 5,
// resized to an extent of 10 ints) on both sides, and mixed signatures
// (vector sent, ints received; ints sent, vector received). The byte index
// i is the index in the type signature (the packed form), so mixed types
// compare like for like.
//
// It is collective over `comm` (it calls PMPI_Allreduce and PMPI_Bcast to
// combine the verdicts), so every rank gets the same result.
//
// Thread-safety: one call per communicator at a time, as for any collective.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bench_kernels/kernel.h"

namespace topotune::kernels {

enum class AlltoallCheckType { kByte, kInt, kDouble, kVector, kVectorToInt, kIntToVector };
inline constexpr AlltoallCheckType kAllAlltoallCheckTypes[] = {
    AlltoallCheckType::kByte,   AlltoallCheckType::kInt,         AlltoallCheckType::kDouble,
    AlltoallCheckType::kVector, AlltoallCheckType::kVectorToInt, AlltoallCheckType::kIntToVector};
std::string_view AlltoallCheckTypeName(AlltoallCheckType t);

struct AlltoallCheckCase {
  AlltoallCheckType type = AlltoallCheckType::kByte;
  // Elements per block: of the type for kByte, kInt, kDouble and kVector; of
  // the vector side for the mixed ones (the int side then has 6 * count).
  int count = 0;
  // MPI_IN_PLACE: the receive buffer holds the send data (described by the
  // receive type) and gets the result.
  bool in_place = false;
  uint32_t seed = 0;  // Varies the data between calls.
};

struct AlltoallCheckResult {
  bool ok() const { return rc == MPI_SUCCESS && wrong_bytes == 0 && first_error.empty(); }
  int rc = MPI_SUCCESS;     // First non-success return code of RunAlltoall over the ranks.
  int64_t wrong_bytes = 0;  // Summed over ranks: wrong received bytes, written gaps, modified send bytes.
  int64_t fallbacks = 0;    // Summed over ranks: calls that ran PMPI_Alltoall instead.
  std::string first_error;  // From the lowest failing rank, "" when ok.
};

// Byte i of the block that rank src sends to rank dst.
uint8_t AlltoallPattern(uint32_t seed, int src, int dst, int64_t i);

// The buffers of one checked call: filled by Init, checked by Verify. For
// callers that run several calls before verifying any (which catches
// messages of one call matched by another), and used by CheckAlltoall.
class AlltoallCheckData {
 public:
  AlltoallCheckData() = default;
  AlltoallCheckData(const AlltoallCheckData&) = delete;
  AlltoallCheckData& operator=(const AlltoallCheckData&) = delete;
  ~AlltoallCheckData();

  // Builds the datatypes and fills the buffers for `c` on `comm` (which must
  // outlive this object). Returns an MPI error code.
  int Init(const AlltoallCheckCase& c, MPI_Comm comm);
  // The call's arguments; the buffers belong to this object.
  AlltoallArgs args();
  // Checks this rank's buffers after the call: returns the number of wrong
  // bytes and describes the first in *error.
  int64_t Verify(std::string* error) const;

 private:
  AlltoallCheckCase case_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 0;
  MPI_Datatype vector_ = MPI_DATATYPE_NULL;  // Owned.
  MPI_Datatype send_type_ = MPI_DATATYPE_NULL, recv_type_ = MPI_DATATYPE_NULL;
  int send_count_ = 0, recv_count_ = 0;
  int64_t block_ = 0;
  std::vector<uint8_t> send_, send_before_, recv_, recv_mask_;
};

// Runs `kernel` once on `comm` (an intracommunicator) with `ctx` and checks
// the result (see the file comment). Collective over comm.
AlltoallCheckResult CheckAlltoall(const KernelInfo& kernel, const KernelContext& ctx, MPI_Comm comm,
                                  const AlltoallCheckCase& c);

// "linear MPI_INT count=13 in_place seed=0".
std::string DescribeAlltoallCase(const KernelInfo& kernel, const AlltoallCheckCase& c);

}  // namespace topotune::kernels
