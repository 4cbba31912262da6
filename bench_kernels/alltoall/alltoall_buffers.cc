#include "bench_kernels/alltoall/alltoall_buffers.h"

#include <algorithm>
#include <cstring>

namespace topotune::kernels::alltoall_detail {
namespace {

// Elements per packing call: at most `view_limit`, and few enough that their
// bytes fit in an int.
int64_t ChunkElements(const TypeLayout& t, int64_t view_limit) {
  const int64_t by_bytes = t.size > 0 ? INT_MAX / t.size : INT_MAX;
  return std::max<int64_t>(1, std::min(view_limit, by_bytes));
}

}  // namespace

int SendBytes::Init(const void* buf, int count, MPI_Datatype type, int nblocks, MPI_Comm comm, bool copy,
                    int64_t view_limit) {
  TypeLayout t;
  if (int rc = DescribeType(type, &t); rc != MPI_SUCCESS) return rc;
  const int64_t total = static_cast<int64_t>(count) * nblocks;
  const int64_t bytes = total * t.size;
  if (t.contiguous) {
    const char* p = static_cast<const char*>(buf) + t.true_lb;
    if (!copy) {
      data_ = p;
      return MPI_SUCCESS;
    }
    scratch_.assign(p, p + bytes);
    data_ = scratch_.data();
    return MPI_SUCCESS;
  }
  // Not contiguous: SendView packs, so its bytes are owned scratch anyway.
  const int64_t chunk = ChunkElements(t, view_limit);
  if (total <= chunk) {
    view_ = std::make_unique<SendView>();
    if (int rc = view_->Init(buf, static_cast<int>(total), type, comm); rc != MPI_SUCCESS) return rc;
    if (static_cast<int64_t>(view_->size_bytes()) != bytes) return MPI_ERR_TYPE;
    data_ = view_->bytes();
    return MPI_SUCCESS;
  }
  scratch_.resize(static_cast<size_t>(bytes));
  for (int64_t first = 0; first < total; first += chunk) {
    const int64_t n = std::min(chunk, total - first);
    SendView v;
    const char* at = static_cast<const char*>(buf) + first * t.extent;
    if (int rc = v.Init(at, static_cast<int>(n), type, comm); rc != MPI_SUCCESS) return rc;
    if (static_cast<int64_t>(v.size_bytes()) != n * t.size) return MPI_ERR_TYPE;
    std::memcpy(scratch_.data() + first * t.size, v.bytes(), static_cast<size_t>(n * t.size));
  }
  data_ = scratch_.data();
  return MPI_SUCCESS;
}

int RecvBytes::Init(void* buf, int count, MPI_Datatype type, int nblocks, MPI_Comm comm, int64_t view_limit) {
  if (int rc = DescribeType(type, &layout_); rc != MPI_SUCCESS) return rc;
  buf_ = buf;
  type_ = type;
  comm_ = comm;
  total_ = static_cast<int64_t>(count) * nblocks;
  if (layout_.contiguous) {
    data_ = static_cast<char*>(buf) + layout_.true_lb;
    return MPI_SUCCESS;
  }
  chunk_ = ChunkElements(layout_, view_limit);
  if (total_ <= chunk_) {
    view_ = std::make_unique<RecvView>();
    if (int rc = view_->Init(buf, static_cast<int>(total_), type, comm); rc != MPI_SUCCESS) return rc;
    if (static_cast<int64_t>(view_->size_bytes()) != total_ * layout_.size) return MPI_ERR_TYPE;
    data_ = view_->bytes();
    return MPI_SUCCESS;
  }
  scratch_.resize(static_cast<size_t>(total_ * layout_.size));
  data_ = scratch_.data();
  return MPI_SUCCESS;
}

int RecvBytes::Finish() {
  if (view_) return view_->Finish();
  if (scratch_.empty()) return MPI_SUCCESS;
  for (int64_t first = 0; first < total_; first += chunk_) {
    const int64_t n = std::min(chunk_, total_ - first);
    RecvView v;
    char* at = static_cast<char*>(buf_) + first * layout_.extent;
    if (int rc = v.Init(at, static_cast<int>(n), type_, comm_); rc != MPI_SUCCESS) return rc;
    if (static_cast<int64_t>(v.size_bytes()) != n * layout_.size) return MPI_ERR_TYPE;
    std::memcpy(v.bytes(), scratch_.data() + first * layout_.size, static_cast<size_t>(n * layout_.size));
    if (int rc = v.Finish(); rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

KernelStatus AlltoallBuffers::Init(const AlltoallArgs& args, const KernelContext& ctx, int64_t view_limit) {
  int inter = 0;
  if (int rc = MPI_Comm_test_inter(args.comm, &inter); rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
  if (inter) return KernelStatus::Fallback("intercommunicator");
  comm_ = ctx.CommFor(args.comm);
  if (int rc = MPI_Comm_rank(comm_, &rank_); rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
  if (int rc = MPI_Comm_size(comm_, &size_); rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
  const bool in_place = args.sendbuf == MPI_IN_PLACE;
  if (args.recvcount < 0 || (!in_place && args.sendcount < 0)) return KernelStatus::MpiError(MPI_ERR_COUNT);
  MPI_Count recv_size = 0;
  if (int rc = MPI_Type_size_x(args.recvtype, &recv_size); rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
  block_ = static_cast<int64_t>(args.recvcount) * recv_size;
  if (!in_place) {
    MPI_Count send_size = 0;
    if (int rc = MPI_Type_size_x(args.sendtype, &send_size); rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
    if (static_cast<int64_t>(args.sendcount) * send_size != block_) return KernelStatus::MpiError(MPI_ERR_TRUNCATE);
  }
  if (block_ == 0) return KernelStatus::Done();
  if (int rc = recv_.Init(args.recvbuf, args.recvcount, args.recvtype, size_, comm_, view_limit); rc != MPI_SUCCESS)
    return KernelStatus::MpiError(rc);
  int rc = in_place ? send_.Init(args.recvbuf, args.recvcount, args.recvtype, size_, comm_, true, view_limit)
                    : send_.Init(args.sendbuf, args.sendcount, args.sendtype, size_, comm_, false, view_limit);
  if (rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
  return KernelStatus::Done();
}

void AlltoallBuffers::CopyOwnBlock() {
  // memmove: MPI forbids aliased buffers, but a wrong call should not turn
  // into undefined behaviour here.
  std::memmove(recv_block(rank_), send_block(rank_), static_cast<size_t>(block_));
}

KernelStatus AlltoallBuffers::Finish() {
  if (block_ == 0) return KernelStatus::Done();
  int rc = recv_.Finish();
  return rc == MPI_SUCCESS ? KernelStatus::Done() : KernelStatus::MpiError(rc);
}

int PostSend(const char* data, int64_t bytes, int peer, int tag, MPI_Comm comm, std::vector<MPI_Request>* reqs,
             int64_t piece) {
  int64_t offset = 0;
  do {
    const int n = static_cast<int>(std::min(bytes - offset, piece));
    MPI_Request r;
    if (int rc = MPI_Isend(data + offset, n, MPI_BYTE, peer, tag, comm, &r); rc != MPI_SUCCESS) return rc;
    reqs->push_back(r);
    offset += n;
  } while (offset < bytes);
  return MPI_SUCCESS;
}

int PostRecv(char* data, int64_t bytes, int peer, int tag, MPI_Comm comm, std::vector<MPI_Request>* reqs,
             int64_t piece) {
  int64_t offset = 0;
  do {
    const int n = static_cast<int>(std::min(bytes - offset, piece));
    MPI_Request r;
    if (int rc = MPI_Irecv(data + offset, n, MPI_BYTE, peer, tag, comm, &r); rc != MPI_SUCCESS) return rc;
    reqs->push_back(r);
    offset += n;
  } while (offset < bytes);
  return MPI_SUCCESS;
}

int WaitAll(std::vector<MPI_Request>* reqs) {
  int rc = MPI_Waitall(static_cast<int>(reqs->size()), reqs->data(), MPI_STATUSES_IGNORE);
  reqs->clear();
  return rc;
}

int ExchangeBlocks(AlltoallBuffers* b, int to, int from) {
  std::vector<MPI_Request> reqs;
  reqs.reserve(4);
  const int64_t bytes = b->block_bytes();
  if (int rc = PostRecv(b->recv_block(from), bytes, from, kDataTag, b->comm(), &reqs); rc != MPI_SUCCESS) return rc;
  if (int rc = PostSend(b->send_block(to), bytes, to, kDataTag, b->comm(), &reqs); rc != MPI_SUCCESS) return rc;
  return WaitAll(&reqs);
}

}  // namespace topotune::kernels::alltoall_detail
