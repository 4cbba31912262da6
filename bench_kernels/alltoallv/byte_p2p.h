// Point-to-point helpers shared by the alltoallv and allgather kernels: byte
// messages of any size, intercommunicator detection, and request lists.
//
// Kernels move bytes (see bench_kernels/buffers.h). A message of `bytes`
// bytes is sent as ceil(bytes / kMaxMessageBytes) MPI_BYTE messages with the
// same tag, so that sizes beyond INT_MAX need no special case; the receiver
// splits its receive the same way from the same byte count, and MPI's
// non-overtaking rule keeps the pieces in order. A zero-byte message is not
// sent at all: sender and receiver agree on every size (MPI requires matching
// type signatures), so both skip it.
//
// Thread-safety: stateless functions; a RequestList belongs to one call.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "bench_kernels/kernel.h"

namespace topotune::kernels::byte_p2p {

// Largest single MPI message. Tests may build the kernels with a tiny value
// (-DTOPOTUNE_MAX_MESSAGE_BYTES=7) to exercise the splitting on small data;
// the library and everything linked with it must then agree on it.
#ifndef TOPOTUNE_MAX_MESSAGE_BYTES
#define TOPOTUNE_MAX_MESSAGE_BYTES (size_t{1} << 30)
#endif
inline constexpr size_t kMaxMessageBytes = TOPOTUNE_MAX_MESSAGE_BYTES;

// Pending nonblocking requests of one step of a kernel.
class RequestList {
 public:
  int Send(const void* buf, size_t bytes, int peer, MPI_Comm comm) {
    const char* p = static_cast<const char*>(buf);
    for (size_t off = 0; off < bytes; off += kMaxMessageBytes) {
      int len = static_cast<int>(std::min(kMaxMessageBytes, bytes - off));
      reqs_.push_back(MPI_REQUEST_NULL);
      int rc = MPI_Isend(p + off, len, MPI_BYTE, peer, kDataTag, comm, &reqs_.back());
      if (rc != MPI_SUCCESS) return rc;
    }
    return MPI_SUCCESS;
  }
  int Recv(void* buf, size_t bytes, int peer, MPI_Comm comm) {
    char* p = static_cast<char*>(buf);
    for (size_t off = 0; off < bytes; off += kMaxMessageBytes) {
      int len = static_cast<int>(std::min(kMaxMessageBytes, bytes - off));
      reqs_.push_back(MPI_REQUEST_NULL);
      int rc = MPI_Irecv(p + off, len, MPI_BYTE, peer, kDataTag, comm, &reqs_.back());
      if (rc != MPI_SUCCESS) return rc;
    }
    return MPI_SUCCESS;
  }
  // Waits for every posted request and empties the list.
  int WaitAll() {
    if (reqs_.empty()) return MPI_SUCCESS;
    int rc = MPI_Waitall(static_cast<int>(reqs_.size()), reqs_.data(), MPI_STATUSES_IGNORE);
    reqs_.clear();
    return rc;
  }
  size_t size() const { return reqs_.size(); }

 private:
  std::vector<MPI_Request> reqs_;
};

// Sets *inter to whether `comm` is an intercommunicator. Every rank of a
// communicator gets the same answer, so a fallback on it is uniform.
inline int IsIntercomm(MPI_Comm comm, bool* inter) {
  int flag = 0;
  int rc = MPI_Comm_test_inter(comm, &flag);
  *inter = flag != 0;
  return rc;
}

}  // namespace topotune::kernels::byte_p2p
