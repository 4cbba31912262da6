#include "bench_kernels/host_segments.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "bench_kernels/alltoall/alltoall_buffers.h"

namespace topotune::kernels {

HostSegments::~HostSegments() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) Free();
}

void HostSegments::Free() {
#ifdef TOPOTUNE_SMPI
  if (folded_ != nullptr) SMPI_SHARED_FREE(folded_);
#endif
  folded_ = nullptr;
  if (win_ != MPI_WIN_NULL) {
    PMPI_Win_unlock_all(win_);
    PMPI_Win_free(&win_);
  }
  if (host_ != MPI_COMM_NULL) PMPI_Comm_free(&host_);
  host_size_ = 0;
  base_ = nullptr;
  bytes_ = 0;
}

namespace {

// Why `program` cannot run as `rank` of `size` ranks; empty when it can.
std::string HostProgramMismatch(const HostProgram& program, int rank, int size) {
  const bool allgather = program.allgather;
  if (program.rank != rank) return fmt::format("the host program is for rank {}, not for rank {}", program.rank, rank);
  if (static_cast<int>(program.host_of_rank.size()) != size || static_cast<int>(program.local_index.size()) != size ||
      program.num_hosts() < 1 || program.first_rank_of_host.back() != size)
    return fmt::format("the host program places {} ranks, not the communicator's {}", program.host_of_rank.size(),
                       size);
  if (allgather && static_cast<int>(program.stream_origin.size()) != size)
    return fmt::format("the host program's stream has {} blocks, not {}", program.stream_origin.size(), size);
  const int host = program.host_of_rank[rank];
  const int64_t limit = allgather ? size : static_cast<int64_t>(program.host_size(host)) * size;
  for (const auto* list : {&program.sends, &program.recvs})
    for (const HostTransfer& t : *list)
      if (t.peer < 0 || t.peer >= size || program.host_of_rank[t.peer] == host || t.blocks < 1 || t.offset < 0 ||
          t.offset + t.blocks > limit)
        return fmt::format("the host program has a message with rank {} outside the host layout in phase {}", t.peer,
                           t.phase);
  return {};
}

}  // namespace

// Splits `comm` by host (the file comment) and says in unusable_ why the
// kernels cannot run on it. Returns an MPI error code.
int HostSegments::Split(MPI_Comm comm, const HostProgram& program) {
  Free();
  parent_ = comm;
  unusable_.clear();
  int me = 0;
  PMPI_Comm_rank(comm, &me);
  const int host = program.host_of_rank[me];
  int rc = PMPI_Comm_split(comm, host, me, &host_);
  int shared_size = -1;
  if (rc == MPI_SUCCESS) rc = PMPI_Comm_size(host_, &host_size_);
  MPI_Comm shm = MPI_COMM_NULL;
  if (rc == MPI_SUCCESS) rc = PMPI_Comm_split_type(host_, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm);
  if (rc == MPI_SUCCESS) rc = PMPI_Comm_size(shm, &shared_size);
  if (shm != MPI_COMM_NULL) PMPI_Comm_free(&shm);
  if (rc != MPI_SUCCESS) return rc;
  int ok = shared_size == host_size_ && host_size_ == program.host_size(host) ? 1 : 0;
  if (rc = PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm); rc != MPI_SUCCESS) return rc;
  if (!ok)
    unusable_ =
        "the ranks the plan places on one host do not all share memory (the placement is not the nodes MPI runs on)";
  return MPI_SUCCESS;
}

const HostSegments::Checked* HostSegments::Find(const HostProgram& program) const {
  for (const Checked& c : checked_)
    if (c.program == &program) return &c;
  return nullptr;
}

KernelStatus HostSegments::Prepare(MPI_Comm comm, const HostProgram& program) {
  if (comm != parent_) checked_.clear();
  const Checked* found = Find(program);
  if (found == nullptr) {
    Checked checked;
    checked.program = &program;
    int me = 0, size = 0;
    PMPI_Comm_rank(comm, &me);
    PMPI_Comm_size(comm, &size);
    checked.why = HostProgramMismatch(program, me, size);
    if (checked.why.empty() && comm != parent_) {
      if (int rc = Split(comm, program); rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
    }
    if (checked.why.empty() && unusable_.empty() && host_size_ > 1) {
      // Sends and receives are in phase order: their last entries are the latest.
      int32_t mine = std::max(program.sends.empty() ? -1 : program.sends.back().phase,
                              program.recvs.empty() ? -1 : program.recvs.back().phase);
      int rc = PMPI_Allreduce(&mine, &checked.host_last_phase, 1, MPI_INT32_T, MPI_MAX, host_);
      if (rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
    }
    checked_.push_back(std::move(checked));
    found = &checked_.back();
  }
  if (!found->why.empty()) return KernelStatus::Fallback(found->why);
  if (!unusable_.empty()) return KernelStatus::Fallback(unusable_);
  return KernelStatus::Done();
}

HostSegments::Pace HostSegments::Together(const HostProgram& program) const {
  const Checked* c = Find(program);
  if (host_size_ < 2 || c == nullptr) return {};
  return {host_, c->host_last_phase};
}

int HostSegments::Reserve(int64_t bytes) {
  if (bytes <= bytes_) return MPI_SUCCESS;
#ifdef TOPOTUNE_SMPI
  if (fold_) {
    if (folded_ != nullptr) SMPI_SHARED_FREE(folded_);
    folded_ = SMPI_SHARED_MALLOC(static_cast<size_t>(bytes));
    base_ = static_cast<char*>(folded_);
    bytes_ = bytes;
    return MPI_SUCCESS;
  }
#endif
  if (win_ != MPI_WIN_NULL) {
    PMPI_Win_unlock_all(win_);
    PMPI_Win_free(&win_);
    base_ = nullptr;
    bytes_ = 0;
  }
  int local = 0;
  PMPI_Comm_rank(host_, &local);
  void* mine = nullptr;
  int rc =
      PMPI_Win_allocate_shared(local == 0 ? static_cast<MPI_Aint>(bytes) : 0, 1, MPI_INFO_NULL, host_, &mine, &win_);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Aint size = 0;
  int disp = 0;
  void* first = nullptr;
  if (rc = PMPI_Win_shared_query(win_, 0, &size, &disp, &first); rc != MPI_SUCCESS) return rc;
  if (size < bytes) return MPI_ERR_NO_MEM;
  if (rc = PMPI_Win_lock_all(MPI_MODE_NOCHECK, win_); rc != MPI_SUCCESS) return rc;
  base_ = static_cast<char*>(first);
  bytes_ = bytes;
  return MPI_SUCCESS;
}

int HostSegments::Barrier() {
  if (win_ == MPI_WIN_NULL) return PMPI_Barrier(host_);  // Folded: no window.
  int rc = PMPI_Win_sync(win_);
  if (rc == MPI_SUCCESS) rc = PMPI_Barrier(host_);
  if (rc == MPI_SUCCESS) rc = PMPI_Win_sync(win_);
  return rc;
}

namespace {

constexpr int32_t kNoPhase = INT32_MAX;

// The phase of the next send or receive of `program` after the first s sends
// and r receives; kNoPhase when none is left.
int32_t NextPhase(const HostProgram& program, size_t s, size_t r) {
  return std::min(s < program.sends.size() ? program.sends[s].phase : kNoPhase,
                  r < program.recvs.size() ? program.recvs[r].phase : kNoPhase);
}

}  // namespace

int RunHostTransfers(const HostProgram& program, const char* send_base, char* recv_base, int64_t block_bytes,
                     MPI_Comm comm, HostSegments::Pace together, PhaseTrace* trace) {
  // Receives up front; recv_end[i] is one past the requests of program.recvs[i].
  std::vector<MPI_Request> recvs, sends;
  std::vector<size_t> recv_end;
  recv_end.reserve(program.recvs.size());
  for (const HostTransfer& t : program.recvs) {
    int rc = alltoall_detail::PostRecv(recv_base + t.offset * block_bytes, t.blocks * block_bytes, t.peer, kDataTag,
                                       comm, &recvs);
    if (rc != MPI_SUCCESS) return rc;
    recv_end.push_back(recvs.size());
  }
  size_t s = 0, r = 0, waited = 0;  // Next send, next receive, receive requests completed.
  // Alone, a rank visits the phases it has transfers in; together, the ranks
  // of a host visit every phase up to the host's last.
  const bool gated = together.host != MPI_COMM_NULL;
  const int32_t last = together.last_phase;
  for (int32_t phase = gated ? (last >= 0 ? 0 : kNoPhase) : NextPhase(program, s, r); phase != kNoPhase;
       phase = gated ? (phase < last ? phase + 1 : kNoPhase) : NextPhase(program, s, r)) {
    Mark(trace, TraceEvent::kPhaseBegin, phase);
    for (; s < program.sends.size() && program.sends[s].phase == phase; ++s) {
      const HostTransfer& t = program.sends[s];
      int rc = alltoall_detail::PostSend(send_base + t.offset * block_bytes, t.blocks * block_bytes, t.peer, kDataTag,
                                         comm, &sends);
      if (rc != MPI_SUCCESS) return rc;
    }
    Mark(trace, TraceEvent::kSendsPosted, phase);
    while (r < program.recvs.size() && program.recvs[r].phase == phase) ++r;
    if (int rc = alltoall_detail::WaitAll(&sends); rc != MPI_SUCCESS) return rc;
    Mark(trace, TraceEvent::kSendsDone, phase);
    const size_t until = r > 0 ? recv_end[r - 1] : 0;
    if (until > waited) {
      int rc = MPI_Waitall(static_cast<int>(until - waited), recvs.data() + waited, MPI_STATUSES_IGNORE);
      if (rc != MPI_SUCCESS) return rc;
      waited = until;
    }
    Mark(trace, TraceEvent::kRecvsDone, phase);
    if (gated && phase < last) {
      if (int rc = PMPI_Barrier(together.host); rc != MPI_SUCCESS) return rc;
    }
  }
  return MPI_SUCCESS;
}

}  // namespace topotune::kernels
