// Byte views of the per-peer blocks of an MPI_Alltoallv call, shared by the
// alltoallv kernels.
//
// Block d of a side is counts[d] elements of the side's datatype starting at
// buf + displs[d] * extent (MPI counts displacements in extents). A block is
// used in place when the datatype is contiguous; otherwise it is packed
// (send side) or received into scratch and unpacked by Finish() (receive
// side), one block at a time, as bench_kernels/buffers.h does for whole
// buffers. With MPI_IN_PLACE the outgoing data lives in recvbuf, which the
// receives overwrite, so SendBlocks copies every block to scratch first.
//
// Thread-safety: a view belongs to one call on one thread. The views point
// into the caller's buffers, which must outlive them.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "bench_kernels/alltoallv/byte_p2p.h"
#include "bench_kernels/buffers.h"
#include "bench_kernels/kernel.h"

namespace topotune::kernels::alltoallv_detail {

using byte_p2p::IsIntercomm;
using byte_p2p::RequestList;

// What a rank sends: the send side, or the receive side under MPI_IN_PLACE.
struct AlltoallvSendSide {
  const void* buf;
  const int* counts;
  const int* displs;
  MPI_Datatype type;
};
inline AlltoallvSendSide SendSide(const AlltoallvArgs& a) {
  if (a.sendbuf == MPI_IN_PLACE) return {a.recvbuf, a.recvcounts, a.rdispls, a.recvtype};
  return {a.sendbuf, a.sendcounts, a.sdispls, a.sendtype};
}

// The bytes this rank sends to each of the n ranks (element counts times the
// type size), the row of the size pattern that phased schedules need.
inline int SendRowBytes(const AlltoallvArgs& a, int n, std::vector<int64_t>* row) {
  AlltoallvSendSide s = SendSide(a);
  int size = 0;
  int rc = MPI_Type_size(s.type, &size);
  if (rc != MPI_SUCCESS) return rc;
  row->assign(n, 0);
  for (int d = 0; d < n; ++d) (*row)[d] = int64_t{s.counts[d]} * size;
  return MPI_SUCCESS;
}
// The bytes this rank receives from each rank.
inline int RecvColumnBytes(const AlltoallvArgs& a, int n, std::vector<int64_t>* col) {
  int size = 0;
  int rc = MPI_Type_size(a.recvtype, &size);
  if (rc != MPI_SUCCESS) return rc;
  col->assign(n, 0);
  for (int s = 0; s < n; ++s) (*col)[s] = int64_t{a.recvcounts[s]} * size;
  return MPI_SUCCESS;
}

class SendBlocks {
 public:
  int Init(const AlltoallvArgs& a, int n, MPI_Comm comm) {
    AlltoallvSendSide s = SendSide(a);
    TypeLayout t;
    int rc = DescribeType(s.type, &t);
    if (rc != MPI_SUCCESS) return rc;
    const char* base = static_cast<const char*>(s.buf);
    ptr_.assign(n, nullptr);
    bytes_.assign(n, 0);
    size_t total = 0;
    for (int d = 0; d < n; ++d) {
      bytes_[d] = static_cast<size_t>(s.counts[d]) * static_cast<size_t>(t.size);
      total += bytes_[d];
    }
    const bool copy = a.sendbuf == MPI_IN_PLACE || !t.contiguous;
    if (!copy) {
      for (int d = 0; d < n; ++d) ptr_[d] = base + s.displs[d] * t.extent + t.true_lb;
      return MPI_SUCCESS;
    }
    scratch_.resize(total);
    size_t off = 0;
    for (int d = 0; d < n; ++d) {
      ptr_[d] = scratch_.data() + off;
      if (bytes_[d] > 0) {
        int pos = 0;
        rc = MPI_Pack(base + s.displs[d] * t.extent, s.counts[d], s.type, scratch_.data() + off,
                      static_cast<int>(bytes_[d]), &pos, comm);
        if (rc != MPI_SUCCESS) return rc;
        if (static_cast<size_t>(pos) != bytes_[d]) return MPI_ERR_INTERN;  // Packed form is not the raw bytes.
      }
      off += bytes_[d];
    }
    return MPI_SUCCESS;
  }
  const char* data(int d) const { return ptr_[d]; }
  size_t bytes(int d) const { return bytes_[d]; }

 private:
  std::vector<const char*> ptr_;
  std::vector<size_t> bytes_;
  std::vector<char> scratch_;
};

class RecvBlocks {
 public:
  int Init(const AlltoallvArgs& a, int n, MPI_Comm comm) {
    int rc = DescribeType(a.recvtype, &t_);
    if (rc != MPI_SUCCESS) return rc;
    a_ = a;
    comm_ = comm;
    char* base = static_cast<char*>(a.recvbuf);
    ptr_.assign(n, nullptr);
    bytes_.assign(n, 0);
    size_t total = 0;
    for (int s = 0; s < n; ++s) {
      bytes_[s] = static_cast<size_t>(a.recvcounts[s]) * static_cast<size_t>(t_.size);
      total += bytes_[s];
    }
    if (t_.contiguous) {
      for (int s = 0; s < n; ++s) ptr_[s] = base + a.rdispls[s] * t_.extent + t_.true_lb;
      return MPI_SUCCESS;
    }
    scratch_.resize(total);
    size_t off = 0;
    for (int s = 0; s < n; ++s) {
      ptr_[s] = scratch_.data() + off;
      off += bytes_[s];
    }
    return MPI_SUCCESS;
  }
  char* data(int s) { return ptr_[s]; }
  size_t bytes(int s) const { return bytes_[s]; }
  // Unpacks the scratch blocks into recvbuf; a no-op for contiguous types.
  int Finish() {
    if (t_.contiguous) return MPI_SUCCESS;
    char* base = static_cast<char*>(a_.recvbuf);
    for (size_t s = 0; s < ptr_.size(); ++s) {
      if (bytes_[s] == 0) continue;
      int pos = 0;
      int rc = MPI_Unpack(ptr_[s], static_cast<int>(bytes_[s]), &pos, base + a_.rdispls[s] * t_.extent,
                          a_.recvcounts[s], a_.recvtype, comm_);
      if (rc != MPI_SUCCESS) return rc;
    }
    return MPI_SUCCESS;
  }

 private:
  AlltoallvArgs a_{};
  MPI_Comm comm_ = MPI_COMM_NULL;
  TypeLayout t_;
  std::vector<char*> ptr_;
  std::vector<size_t> bytes_;
  std::vector<char> scratch_;
};

// Both views plus this rank's copy to itself, which uses no network.
struct AlltoallvBytes {
  SendBlocks send;
  RecvBlocks recv;
  int Init(const AlltoallvArgs& a, int n, int me, MPI_Comm comm) {
    int rc = send.Init(a, n, comm);
    if (rc != MPI_SUCCESS) return rc;
    rc = recv.Init(a, n, comm);
    if (rc != MPI_SUCCESS) return rc;
    size_t len = std::min(send.bytes(me), recv.bytes(me));
    if (len > 0 && send.data(me) != recv.data(me)) std::memmove(recv.data(me), send.data(me), len);
    return MPI_SUCCESS;
  }
};

}  // namespace topotune::kernels::alltoallv_detail
