// What every alltoall kernel shares: the call's buffers seen as blocks of
// bytes, and point-to-point messages of any byte length.
//
// AlltoallBuffers::Init checks a call and prepares it without communicating:
//   * an intercommunicator declines (Fallback "intercommunicator"; every rank
//     of an intercommunicator sees the same, so all decline together);
//   * B = sendcount * size(sendtype) must equal recvcount * size(recvtype)
//     (MPI requires matching type signatures; a mismatch is a user error and
//     returns MPI_ERR_TRUNCATE); negative counts return MPI_ERR_COUNT;
//   * contiguous datatypes (all predefined ones) are used in place; other
//     derived datatypes are packed into scratch (SendView) and received into
//     scratch that Finish() unpacks (RecvView), in chunks that MPI's int
//     counts can express, so buffers above 2 GiB work too;
//   * MPI_IN_PLACE: the receive buffer's bytes are first copied into owned
//     scratch, which then serves as the send buffer.
// After Init, send_block(i) and recv_block(i) are B bytes each; a kernel
// fills every recv_block (its own with CopyOwnBlock) and calls Finish().
// When B == 0 there is nothing to move: kernels return Done right away (an
// alltoall implies no synchronisation, so no message is needed).
//
// Thread-safety: an AlltoallBuffers belongs to one call on one thread.
#pragma once

#include <mpi.h>

#include <climits>
#include <cstdint>
#include <memory>
#include <vector>

#include "bench_kernels/buffers.h"
#include "bench_kernels/kernel.h"

namespace topotune::kernels::alltoall_detail {

// Largest element count viewed (packed or unpacked) in one piece.
inline constexpr int64_t kWholeViewLimit = INT_MAX;

// `nblocks` consecutive blocks of `count` elements of `type` as
// nblocks * count * size(type) contiguous bytes, for reading.
class SendBytes {
 public:
  // With `copy`, the bytes are always owned scratch (MPI_IN_PLACE), never the
  // caller's memory. `view_limit`: largest element count per packing call
  // (tests lower it to exercise the chunked path).
  int Init(const void* buf, int count, MPI_Datatype type, int nblocks, MPI_Comm comm, bool copy, int64_t view_limit);
  const char* data() const { return data_; }

 private:
  std::unique_ptr<SendView> view_;  // Set when one view covers the whole buffer.
  std::vector<char> scratch_;
  const char* data_ = nullptr;
};

// The same, for writing: data() is where received bytes go; Finish() moves
// them into the caller's buffer when the datatype is not contiguous.
class RecvBytes {
 public:
  int Init(void* buf, int count, MPI_Datatype type, int nblocks, MPI_Comm comm, int64_t view_limit);
  char* data() { return data_; }
  int Finish();

 private:
  void* buf_ = nullptr;
  int64_t total_ = 0;  // Elements.
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  MPI_Comm comm_ = MPI_COMM_NULL;
  TypeLayout layout_;
  int64_t chunk_ = 0;
  std::unique_ptr<RecvView> view_;  // Set when one view covers the whole buffer.
  std::vector<char> scratch_;       // Chunked unpacking.
  char* data_ = nullptr;
};

class AlltoallBuffers {
 public:
  // Checks the call and prepares the byte views (see the file comment).
  // Returns Done when the kernel may proceed; communicates with nobody.
  KernelStatus Init(const AlltoallArgs& args, const KernelContext& ctx, int64_t view_limit = kWholeViewLimit);

  MPI_Comm comm() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  int64_t block_bytes() const { return block_; }
  bool empty() const { return block_ == 0; }
  const char* send_block(int i) const { return send_.data() + static_cast<int64_t>(i) * block_; }
  char* recv_block(int i) { return recv_.data() + static_cast<int64_t>(i) * block_; }
  void CopyOwnBlock();
  // Unpacks into the caller's buffer if needed; Done or an MPI error.
  KernelStatus Finish();

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 0;
  int64_t block_ = 0;
  SendBytes send_;
  RecvBytes recv_;
};

// Messages of any byte length: split into pieces of at most `piece` bytes
// (MPI counts are int) that the other side posts identically, so ordering
// between a pair of ranks stays first-in first-out. A zero-length message
// is one zero-byte message. Requests are appended to *reqs. (`piece` is a
// parameter so that tests can split small messages.)
inline constexpr int64_t kMaxPieceBytes = int64_t{1} << 30;
int PostSend(const char* data, int64_t bytes, int peer, int tag, MPI_Comm comm, std::vector<MPI_Request>* reqs,
             int64_t piece = kMaxPieceBytes);
int PostRecv(char* data, int64_t bytes, int peer, int tag, MPI_Comm comm, std::vector<MPI_Request>* reqs,
             int64_t piece = kMaxPieceBytes);
// Waits for all of *reqs and clears it.
int WaitAll(std::vector<MPI_Request>* reqs);
// One step of a phased algorithm: receives recv_block(from) from `from` and
// sends send_block(to) to `to` (tag kDataTag), both posted before waiting.
int ExchangeBlocks(AlltoallBuffers* b, int to, int from);

}  // namespace topotune::kernels::alltoall_detail
