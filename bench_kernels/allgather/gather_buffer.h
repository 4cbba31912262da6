// The receive buffer of an MPI_Allgather as N blocks of contiguous bytes,
// shared by the allgather kernels.
//
// Block i (rank i's contribution) is recvcount elements of recvtype at
// recvbuf + i * recvcount * extent. Its size in bytes, recvcount x type
// size, is the same on every rank (MPI requires matching type signatures),
// which is why kernels may base uniform decisions on it, but not on the
// datatype itself, which ranks may choose differently.
//
// When recvtype is contiguous the blocks are recvbuf itself; otherwise they
// live in a scratch buffer that Finish() unpacks block by block. Init puts
// this rank's own block in place: copied from sendbuf (packed if needed), or
// under MPI_IN_PLACE taken from recvbuf, where MPI says it already is.
//
// Thread-safety: a GatherBuffer belongs to one call on one thread; it points
// into the caller's buffers, which must outlive it.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <optional>
#include <vector>

#include "bench_kernels/alltoallv/byte_p2p.h"
#include "bench_kernels/buffers.h"
#include "bench_kernels/kernel.h"

namespace topotune::kernels::allgather_detail {

using byte_p2p::IsIntercomm;
using byte_p2p::RequestList;

class GatherBuffer {
 public:
  int Init(const AllgatherArgs& a, int n, int me, MPI_Comm comm) {
    int rc = DescribeType(a.recvtype, &t_);
    if (rc != MPI_SUCCESS) return rc;
    a_ = a;
    comm_ = comm;
    n_ = n;
    block_ = static_cast<size_t>(a.recvcount) * static_cast<size_t>(t_.size);
    char* recv = static_cast<char*>(a.recvbuf);
    const MPI_Aint stride = static_cast<MPI_Aint>(a.recvcount) * t_.extent;
    if (t_.contiguous) {
      data_ = recv + t_.true_lb;
    } else {
      scratch_.resize(block_ * static_cast<size_t>(n));
      data_ = scratch_.data();
    }
    if (block_ == 0) return MPI_SUCCESS;
    if (a.sendbuf == MPI_IN_PLACE) {
      if (t_.contiguous) return MPI_SUCCESS;  // Already in place.
      int pos = 0;
      rc = MPI_Pack(recv + me * stride, a.recvcount, a.recvtype, block(me), static_cast<int>(block_), &pos, comm);
      if (rc == MPI_SUCCESS && static_cast<size_t>(pos) != block_) rc = MPI_ERR_INTERN;
      return rc;
    }
    SendView own;
    rc = own.Init(a.sendbuf, a.sendcount, a.sendtype, comm);
    if (rc != MPI_SUCCESS) return rc;
    std::memcpy(block(me), own.bytes(), std::min(block_, own.size_bytes()));
    return MPI_SUCCESS;
  }
  // Bytes of one block: the same on every rank.
  size_t block_bytes() const { return block_; }
  char* block(int i) { return data_ + static_cast<size_t>(i) * block_; }
  // Unpacks the scratch into recvbuf; a no-op for contiguous types.
  int Finish() {
    if (t_.contiguous || block_ == 0) return MPI_SUCCESS;
    char* recv = static_cast<char*>(a_.recvbuf);
    const MPI_Aint stride = static_cast<MPI_Aint>(a_.recvcount) * t_.extent;
    for (int i = 0; i < n_; ++i) {
      int pos = 0;
      int rc =
          MPI_Unpack(block(i), static_cast<int>(block_), &pos, recv + i * stride, a_.recvcount, a_.recvtype, comm_);
      if (rc != MPI_SUCCESS) return rc;
    }
    return MPI_SUCCESS;
  }

 private:
  AllgatherArgs a_{};
  MPI_Comm comm_ = MPI_COMM_NULL;
  TypeLayout t_;
  int n_ = 0;
  size_t block_ = 0;
  char* data_ = nullptr;
  std::vector<char> scratch_;
};

// The communicator a kernel runs on, its size and this rank.
struct KernelComm {
  MPI_Comm comm = MPI_COMM_NULL;
  int n = 0;
  int me = 0;
};

// The common start of the allgather kernels: falls back on an
// intercommunicator (every rank of a communicator sees the same), else fills
// *out. Returns the status to return at once, or nullopt to go on.
inline std::optional<KernelStatus> BeginAllgather(const AllgatherArgs& a, const KernelContext& ctx, KernelComm* out) {
  bool inter = false;
  int rc = IsIntercomm(a.comm, &inter);
  if (rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
  if (inter) return KernelStatus::Fallback("intercommunicator");
  out->comm = ctx.CommFor(a.comm);
  MPI_Comm_size(out->comm, &out->n);
  MPI_Comm_rank(out->comm, &out->me);
  return std::nullopt;
}

inline KernelStatus StatusFrom(int rc) { return rc == MPI_SUCCESS ? KernelStatus::Done() : KernelStatus::MpiError(rc); }

// True when `order` holds each of 0..n-1 exactly once.
inline bool IsPermutation(const std::vector<int>& order, int n) {
  if (static_cast<int>(order.size()) != n) return false;
  std::vector<char> seen(n, 0);
  for (int r : order) {
    if (r < 0 || r >= n || seen[r]) return false;
    seen[r] = 1;
  }
  return true;
}

}  // namespace topotune::kernels::allgather_detail
